"""Build and load the C launcher (`lib/launch.c`) on first use, the way Triton builds its own.

Where the module comes from, first match wins:

1. `SPARSECC_NATIVE_LIB=/path/to/_sparsecc_launch....so`: a module built ahead of time, for
   example by the top-level CMakeLists.txt (`cmake -S . -B build && cmake --build build`); it is
   loaded as it is, never rebuilt.
2. Otherwise the source is compiled on first use: `lib/launch.c` in a source checkout (the GPU
   machine runs sparsecc from the tree with PYTHONPATH, without an install step), or the copy
   that packaging puts next to this file (`sparsecc/runtime/launch.c`, see setup.py) in an
   installed wheel.

The module is compiled once per machine with the system C compiler (`$CC`, else `cc`) against
this Python's headers and kept next to the kernel cache (`<cache>/native/`), under a name that
hashes the source, the Python version and the platform; a later process only loads it. The
build is written to a temporary file and moved into place, so concurrent processes never load a
half-written library.

Where it cannot be built or loaded (no compiler, no Python headers, a SPARSECC_NATIVE_LIB that
does not import) or `SPARSECC_NATIVE_LAUNCH=0`, `load()` returns None and launches go through
ctypes (runtime/driver.py), which is slower by a few microseconds but otherwise the same;
`why_not()` says why.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

__all__ = ["LIBRARY_ENV", "SOURCE", "build", "load", "reset", "source", "why_not"]

#: The launcher's source in a source checkout (`<repo>/lib/launch.c`).
SOURCE = Path(__file__).resolve().parents[2] / "lib" / "launch.c"
#: Where packaging puts the same source inside an installed package.
PACKAGED_SOURCE = Path(__file__).with_name("launch.c")
#: Names a prebuilt module (e.g. from CMake) to load instead of building one.
LIBRARY_ENV = "SPARSECC_NATIVE_LIB"
MODULE = "_sparsecc_launch"
_state: dict[str, object] = {}


def source() -> Path:
    """The launcher's C source: lib/launch.c in a checkout, else the copy inside the package.

    OSError when neither exists (a package built without its native source)."""
    for candidate in (SOURCE, PACKAGED_SOURCE):
        if candidate.is_file():
            return candidate
    raise OSError(f"the C launcher's source is missing (looked for {SOURCE} and {PACKAGED_SOURCE})")


def _wanted() -> bool:
    raw = os.environ.get("SPARSECC_NATIVE_LAUNCH", "").strip().lower()
    return raw not in ("0", "false", "off", "no")


def _library_path(source: bytes) -> Path:
    from sparsecc.runtime import cache

    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    tag = hashlib.sha256(source + sys.version.encode() + sys.platform.encode()).hexdigest()[:16]
    folder = cache.cache_dir() if cache.enabled() else Path(tempfile.gettempdir()) / "sparsecc"
    return folder / "native" / f"{MODULE}-{tag}{suffix}"


def build(target: Path) -> None:
    """Compile the launcher's source into `target` (atomically); CalledProcessError/OSError on
    failure."""
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise OSError(f"no Python.h under {include} (install the Python development headers)")
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise OSError("no C compiler (set CC or install cc/gcc)")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=target.suffix, dir=target.parent)
    os.close(fd)
    try:
        subprocess.run([compiler, "-O2", "-shared", "-fPIC", f"-I{include}", str(source()), "-o", tmp],
                       check=True, capture_output=True, text=True)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _import(path: Path) -> ModuleType:
    if not path.is_file():
        raise OSError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python extension module (expected a name ending in "
                          f"{importlib.machinery.EXTENSION_SUFFIXES[0]})")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load() -> ModuleType | None:
    """The compiled `_sparsecc_launch` module, building it if needed; None where it cannot be had
    (remembered for the process, so a failed build is tried once)."""
    if "module" in _state:
        return _state["module"]  # type: ignore[return-value]
    module: ModuleType | None = None
    prebuilt = os.environ.get(LIBRARY_ENV, "").strip()
    if not _wanted():
        _state["why"] = "SPARSECC_NATIVE_LAUNCH=0"
    elif prebuilt:
        try:
            module = _import(Path(prebuilt))
        except (OSError, ImportError) as e:
            _state["why"] = f"{LIBRARY_ENV}={prebuilt}: {type(e).__name__}: {e}"
    else:
        try:
            path = _library_path(source().read_bytes())
            if not path.exists():
                build(path)
            module = _import(path)
        except subprocess.CalledProcessError as e:
            _state["why"] = f"building launch.c failed: {(e.stderr or '').strip()[:500]}"
        except (OSError, ImportError) as e:
            _state["why"] = f"{type(e).__name__}: {e}"
    _state["module"] = module
    return module


def why_not() -> str | None:
    """Why `load()` returned None (None when it did not, or has not run yet)."""
    return _state.get("why")  # type: ignore[return-value]


def reset() -> None:
    """Forget the loaded module (tests switch SPARSECC_NATIVE_LAUNCH between cases)."""
    _state.clear()
