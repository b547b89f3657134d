"""lit configuration: every .mlir under test/lit, run through our sparsecc-opt and filecheck.

`sparsecc-opt` runs as `python -m sparsecc.tools.sparsecc_opt` with the repo root on
PYTHONPATH, so the suite works whether or not the console script is installed.
"""

import os
import shlex
import sys

import lit.formats

config.name = "sparsecc"  # noqa: F821 - `config` is injected by lit
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(os.path.abspath(__file__))  # noqa: F821
_repo_root = os.path.dirname(os.path.dirname(config.test_source_root))  # noqa: F821
# Scratch files (%t, lit's timing cache) go to the git-ignored .lit_out, not the source tree.
config.test_exec_root = os.path.join(_repo_root, ".lit_out")  # noqa: F821

_bin_dir = os.path.dirname(sys.executable)

_pythonpath = [_repo_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
config.environment["PYTHONPATH"] = os.pathsep.join(_pythonpath)  # noqa: F821
# filecheck lives in the venv's bin, next to the interpreter that runs lit.
config.environment["PATH"] = os.pathsep.join([_bin_dir, os.environ.get("PATH", "")])  # noqa: F821

_opt = f"{shlex.quote(sys.executable)} -m sparsecc.tools.sparsecc_opt"
# Only whole words: a path such as .../sparsecc-opt-x.mlir is left alone. `not` is lit's builtin.
config.substitutions.append((r"(?<![\w/.-])sparsecc-opt(?![\w/.-])", _opt))  # noqa: F821
_filecheck = os.path.join(_bin_dir, "filecheck")
config.substitutions.append(  # noqa: F821
    (r"(?<![\w/.-])filecheck(?![\w/.-])", shlex.quote(_filecheck) if os.path.exists(_filecheck) else "filecheck")
)
