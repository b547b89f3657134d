"""lit configuration: every .mlir under test/lit, run through our sparsecc-opt and filecheck.

`sparsecc-opt` runs as `python -m sparsecc.tools.sparsecc_opt` with the repo root on
PYTHONPATH, so the suite works whether or not the console script is installed. Each run is
handed to a fork server (`tools/opt_server.py`, started here, ended with lit) that has imported
the tool once: the same program in the same environment, without ~0.6 s of start-up a run.
SPARSECC_LIT_SERVER=0 runs every `sparsecc-opt` as its own process instead.
"""

import atexit
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

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


def _start_opt_server() -> str | None:
    """The fork server's socket, once it accepts runs; None where it cannot run."""
    if os.environ.get("SPARSECC_LIT_SERVER", "1").strip().lower() in ("0", "false", "off", "no") \
            or not hasattr(socket, "send_fds") or not hasattr(os, "fork"):
        return None
    tools = os.path.join(config.test_source_root, "tools")  # noqa: F821
    scratch = tempfile.mkdtemp(prefix="sparsecc-lit-")
    path = os.path.join(scratch, "opt.sock")
    env = dict(os.environ, PYTHONPATH=config.environment["PYTHONPATH"])  # noqa: F821
    server = subprocess.Popen([sys.executable, os.path.join(tools, "opt_server.py"), path, str(os.getpid())],
                              env=env, stdin=subprocess.DEVNULL)

    def stop() -> None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(scratch, ignore_errors=True)

    atexit.register(stop)
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        if server.poll() is not None or time.monotonic() > deadline:
            return None
        time.sleep(0.05)
    return path


_server_socket = _start_opt_server()
if _server_socket is not None:
    config.environment["SPARSECC_OPT_SERVER"] = _server_socket  # noqa: F821
    _client = os.path.join(config.test_source_root, "tools", "opt_client.py")  # noqa: F821
    _opt = f"{shlex.quote(sys.executable)} -S -E {shlex.quote(_client)}"
# Only whole words: a path such as .../sparsecc-opt-x.mlir is left alone. `not` is lit's builtin.
config.substitutions.append((r"(?<![\w/.-])sparsecc-opt(?![\w/.-])", _opt))  # noqa: F821
_filecheck = os.path.join(_bin_dir, "filecheck")
config.substitutions.append(  # noqa: F821
    (r"(?<![\w/.-])filecheck(?![\w/.-])", shlex.quote(_filecheck) if os.path.exists(_filecheck) else "filecheck")
)
