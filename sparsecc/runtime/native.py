"""Build and load the C launcher (`launch.c`) on first use, the way Triton builds its own.

The module is compiled once per machine with the system C compiler (`$CC`, else `cc`) against
this Python's headers and kept next to the kernel cache (`<cache>/native/`), under a name that
hashes the source, the Python version and the platform; a later process only loads it. The
build is written to a temporary file and moved into place, so concurrent processes never load a
half-written library.

Where it cannot be built (no compiler, no Python headers) or `SPARSECC_NATIVE_LAUNCH=0`, `load()`
returns None and launches go through ctypes (runtime/driver.py), which is slower by a few
microseconds but otherwise the same; `why_not()` says why.
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

__all__ = ["SOURCE", "build", "load", "reset", "why_not"]

SOURCE = Path(__file__).with_name("launch.c")
MODULE = "_sparsecc_launch"
_state: dict[str, object] = {}


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
    """Compile launch.c into `target` (atomically); CalledProcessError/OSError on failure."""
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
        subprocess.run([compiler, "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", tmp],
                       check=True, capture_output=True, text=True)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _import(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(MODULE, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load() -> ModuleType | None:
    """The compiled `_sparsecc_launch` module, building it if needed; None where it cannot be had
    (remembered for the process, so a failed build is tried once)."""
    if "module" in _state:
        return _state["module"]  # type: ignore[return-value]
    module: ModuleType | None = None
    if not _wanted():
        _state["why"] = "SPARSECC_NATIVE_LAUNCH=0"
    else:
        try:
            path = _library_path(SOURCE.read_bytes())
            if not path.exists():
                build(path)
            module = _import(path)
        except subprocess.CalledProcessError as e:
            _state["why"] = f"building {SOURCE.name} failed: {(e.stderr or '').strip()[:500]}"
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
