"""Packaging hook: the wheel carries the C launcher's source (lib/launch.c) inside the package.

`sparsecc/runtime/native.py` compiles that source on first use, so an installed sparsecc needs it
next to the module as `sparsecc/runtime/launch.c`; in a source checkout it reads `lib/launch.c`
directly. Everything else about the package is declared in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

NATIVE_SOURCE = Path(__file__).resolve().parent / "lib" / "launch.c"


class BuildPyWithLauncher(build_py):
    """build_py that also copies lib/launch.c to sparsecc/runtime/launch.c in the build tree."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable install reads lib/launch.c in place
            target = Path(self.build_lib) / "sparsecc" / "runtime" / "launch.c"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(NATIVE_SOURCE, target)


setup(cmdclass={"build_py": BuildPyWithLauncher})
