"""ptxas and cuobjdump: PTX text -> cubin (+ resource report) and cubin -> SASS text.

Tools are looked up in this order (`find_ptxas`, `find_cuobjdump`):
  1. $SPARSECC_PTXAS / $SPARSECC_CUOBJDUMP (a path to the binary),
  2. the CUDA toolkit: $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, then $PATH,
  3. NVIDIA's wheels of the tools alone, under site-packages/nvidia/*/bin/: ptxas from
     `nvidia-cuda-nvcc-cu12` (nvidia/cuda_nvcc/bin; 40 MB), cuobjdump from `nvidia-cuda-cuobjdump`
     and the nvdisasm its `-sass` runs from `nvidia-cuda-nvdisasm` (both nvidia/cu13/bin; 6 MB).
     The `ptx` extra installs them: how CI gets them without CUDA,
  4. the binaries the `triton` wheel ships in triton/backends/nvidia/bin/ (1 GB installed; the
     `gpu` extra brings it, and torch's CUDA builds depend on it).

All temporary files live in a `TemporaryDirectory` that is removed on return.

A process remembers its last `_MEMO_SIZE` assemblies (`_MEMO`): the same PTX, arch, options and
ptxas binary give the same cubin, so a second request (a compile whose options did not change
the PTX, a test that assembles a kernel's PTX again to read its SASS) is answered without
running ptxas. `SPARSECC_CACHE=0`, which turns the compile cache off, turns this off too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

_HOW_TO_GET = (
    "install the CUDA toolkit (and set CUDA_HOME), or `pip install 'sparsecc[ptx]'` (NVIDIA's wheels "
    "of ptxas and cuobjdump alone), or `pip install triton` (its wheel ships both), or point {env} at "
    "the binary"
)


class ToolNotFoundError(RuntimeError):
    """No ptxas/cuobjdump could be found."""


class PtxasError(RuntimeError):
    """ptxas rejected the PTX; `log` is ptxas's own output, `ptx` the input."""

    def __init__(self, message: str, log: str = "", ptx: str = ""):
        super().__init__(message)
        self.log = log
        self.ptx = ptx


@dataclass(frozen=True)
class KernelResources:
    """What `ptxas -v` reports for one entry function."""

    registers: int = 0
    shared_bytes: int = 0  # static shared memory (dynamic `smem[]` is not counted by ptxas)
    spill_stores: int = 0
    spill_loads: int = 0
    stack_bytes: int = 0
    barriers: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CompiledCubin:
    """A cubin, the arch it was built for, and ptxas's resource report per kernel."""

    data: bytes
    arch: str
    resources: dict[str, KernelResources] = field(default_factory=dict)
    log: str = ""

    def kernel_resources(self, name: str | None = None) -> KernelResources:
        """The report of kernel `name` (or of the only kernel)."""
        if name is None:
            if len(self.resources) != 1:
                raise KeyError(f"cubin has kernels {sorted(self.resources)}: name one")
            return next(iter(self.resources.values()))
        return self.resources[name]


# ----------------------------------------------------------------------------------------------
# Finding the tools


def _nvidia_wheel_bin(tool: str) -> Path | None:
    """`tool` from one of NVIDIA's pip wheels (namespace package `nvidia`: nvidia/cuda_nvcc/bin,
    nvidia/cu13/bin, ...), the first in name order; None without one."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for p in sorted(Path(root).glob(f"*/bin/{tool}")):
            if p.is_file() and os.access(p, os.X_OK):
                return p
    return None


def _triton_bin(tool: str) -> Path | None:
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        p = Path(root) / "backends" / "nvidia" / "bin" / tool
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def _find_tool(tool: str, env: str) -> str:
    override = os.environ.get(env)
    if override:
        if Path(override).is_file() and os.access(override, os.X_OK):
            return override
        raise ToolNotFoundError(f"${env}={override!r} is not an executable file")
    dirs = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for d in dirs:
        if d:
            p = Path(d) / "bin" / tool
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
    on_path = shutil.which(tool)
    if on_path:
        return on_path
    for wheel_bin in (_nvidia_wheel_bin, _triton_bin):
        found = wheel_bin(tool)
        if found is not None:
            return str(found)
    raise ToolNotFoundError(f"{tool} not found: " + _HOW_TO_GET.format(env=f"${env}"))


def find_ptxas() -> str:
    """Path of a ptxas binary (see the module docstring for the search order)."""
    return _find_tool("ptxas", "SPARSECC_PTXAS")


def find_cuobjdump() -> str:
    """Path of a cuobjdump binary (same search order as ptxas, with $SPARSECC_CUOBJDUMP)."""
    return _find_tool("cuobjdump", "SPARSECC_CUOBJDUMP")


# ----------------------------------------------------------------------------------------------
# ptxas


_FUNC_RE = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_STACK_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RE = re.compile(r"Used (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")
_BARRIERS_RE = re.compile(r"used (\d+) barriers")


def parse_resource_report(log: str) -> dict[str, KernelResources]:
    """Per-kernel numbers from `ptxas -v` output (lines follow the function they describe)."""
    fields: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in log.splitlines():
        if m := _FUNC_RE.search(line):
            current = m.group(1)
            fields.setdefault(current, {})
            continue
        if current is None:
            continue
        f = fields[current]
        if m := _STACK_RE.search(line):
            f["stack_bytes"], f["spill_stores"], f["spill_loads"] = map(int, m.groups())
        if m := _USED_RE.search(line):
            f["registers"] = int(m.group(1))
            if s := _SMEM_RE.search(line):
                f["shared_bytes"] = int(s.group(1))
            if b := _BARRIERS_RE.search(line):
                f["barriers"] = int(b.group(1))
    return {name: KernelResources(**f) for name, f in fields.items()}


def _ptxas_arch(arch: str) -> str:
    arch = arch.strip()
    if re.fullmatch(r"[0-9]+", arch):  # [0-9], not isdigit(): ASCII digits only
        arch = f"sm_{arch}"
    if not re.fullmatch(r"sm_[0-9]+a?", arch):
        raise ValueError(f"bad ptxas arch {arch!r}: expected e.g. sm_80 or sm_90a")
    return arch


def assemble(
    ptx: str,
    arch: str,
    *,
    opt_level: int = 3,
    extra_args: list[str] | tuple[str, ...] = (),
    timeout: float = 300.0,
) -> CompiledCubin:
    """Run `ptxas -v -arch=<arch>` on `ptx`; raise `PtxasError` with ptxas's message on failure."""
    return start_assemble(ptx, arch, opt_level=opt_level, extra_args=extra_args, timeout=timeout).result()


def start_assemble(
    ptx: str,
    arch: str,
    *,
    opt_level: int = 3,
    extra_args: list[str] | tuple[str, ...] = (),
    timeout: float = 300.0,
) -> PendingCubin:
    """Start `ptxas` on `ptx` and return at once: the caller does other work while ptxas runs
    (a cold compile prints its IR stages meanwhile) and then asks for the `result()`.

        pending = start_assemble(ptx_text, "sm_90a")
        ...                                  # work that does not need the cubin
        cubin = pending.result()             # waits; raises PtxasError as `assemble` does
    """
    arch = _ptxas_arch(arch)
    ptxas = find_ptxas()
    key = _memo_key(ptxas, arch, opt_level, extra_args, ptx)
    if key is not None and key in _MEMO:
        _MEMO.move_to_end(key)
        return PendingCubin.ready(_copy(_MEMO[key]))
    tmp = tempfile.TemporaryDirectory(prefix="sparsecc-ptxas-")
    src, out = Path(tmp.name) / "kernel.ptx", Path(tmp.name) / "kernel.cubin"
    try:
        src.write_text(ptx)
        cmd = [ptxas, "-v", f"-arch={arch}", f"-O{opt_level}", *extra_args, str(src), "-o", str(out)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except BaseException:
        tmp.cleanup()
        raise
    return PendingCubin(proc, tmp, src, out, arch, ptx, timeout, memo_key=key)


_MEMO: OrderedDict[tuple, CompiledCubin] = OrderedDict()
"""The cubins of this process's latest successful assemblies, by `_memo_key` (oldest first)."""
_MEMO_SIZE = 32


def _memo_key(ptxas: str, arch: str, opt_level: int, extra_args: list[str] | tuple[str, ...],
              ptx: str) -> tuple | None:
    """What decides an assembly's result: the ptxas binary (its path, size and modification
    time), the arch, the options and the PTX; None when caching is off (SPARSECC_CACHE=0) or
    the binary cannot be read."""
    if os.environ.get("SPARSECC_CACHE", "1").strip().lower() in ("0", "false", "off", "no"):
        return None
    try:
        st = os.stat(ptxas)
    except OSError:
        return None
    return ptxas, st.st_size, st.st_mtime_ns, arch, opt_level, tuple(extra_args), ptx


def _remember(key: tuple, cubin: CompiledCubin) -> None:
    _MEMO[key] = _copy(cubin)
    _MEMO.move_to_end(key)
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)


def _copy(cubin: CompiledCubin) -> CompiledCubin:
    """A cubin whose resource dict is its own (the memo's entry stays as ptxas made it)."""
    return replace(cubin, resources=dict(cubin.resources))


@dataclass
class PendingCubin:
    """A running ptxas (`start_assemble`); `result()` waits for it once and cleans up.
    `PendingCubin.ready(cubin)` wraps a cubin that is already there (a stand-in assembler)."""

    proc: subprocess.Popen[str] | None
    tmp: tempfile.TemporaryDirectory[str] | None
    src: Path
    out: Path
    arch: str
    ptx: str
    timeout: float
    memo_key: tuple | None = field(default=None, repr=False)
    """Where `result()` remembers the cubin (`_MEMO`); None: nowhere."""
    _done: CompiledCubin | None = field(default=None, init=False, repr=False)

    @classmethod
    def ready(cls, cubin: CompiledCubin) -> PendingCubin:
        """A finished assembly: `result()` returns `cubin` at once."""
        pending = cls(None, None, Path(), Path(), cubin.arch, "", 0.0)
        pending._done = cubin
        return pending

    def result(self) -> CompiledCubin:
        """The cubin, waiting for ptxas to finish; `PtxasError` if it failed or timed out."""
        if self._done is not None:
            return self._done
        assert self.proc is not None and self.tmp is not None
        try:
            try:
                output, _ = self.proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired as e:
                raise PtxasError(f"ptxas timed out after {self.timeout:.0f} s ({self.arch})", ptx=self.ptx) from e
            log = output.replace(str(self.src), "<ptx>")
            if self.proc.returncode != 0 or not self.out.is_file():
                errors = [ln for ln in log.splitlines() if "error" in ln.lower() or "fatal" in ln.lower()]
                summary = "\n".join(errors or log.splitlines()[-10:])
                raise PtxasError(f"ptxas failed for {self.arch} (exit {self.proc.returncode}):\n{summary}",
                                 log=log, ptx=self.ptx)
            data = self.out.read_bytes()
        finally:
            self.cancel()
        self._done = CompiledCubin(data=data, arch=self.arch, resources=parse_resource_report(log), log=log)
        if self.memo_key is not None:
            _remember(self.memo_key, self._done)
        return self._done

    def cancel(self) -> None:
        """Stop ptxas if it still runs and remove its files (also what `result` ends with)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
            self.proc = None
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None


# ----------------------------------------------------------------------------------------------
# cuobjdump


def dump_sass(cubin: bytes | CompiledCubin, *, timeout: float = 120.0) -> str:
    """`cuobjdump -sass` of a cubin, as text."""
    data = cubin.data if isinstance(cubin, CompiledCubin) else cubin
    tool = find_cuobjdump()
    with tempfile.TemporaryDirectory(prefix="sparsecc-sass-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(data)
        proc = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout
