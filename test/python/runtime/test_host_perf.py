"""Host-side speed: compile time of sparse_mm, the disk cache behind `sparsecc.compile`, and the
`kernel[grid](...)` fast path (a prebuilt launch function per specialization)."""

from __future__ import annotations

import importlib
import sys
import time
import types

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.codegen import ptx_printer, ptxas
from sparsecc.ops.sparse_mm import sparse_mm_kernel
from sparsecc.runtime import cache, launcher

compile_mod = importlib.import_module("sparsecc.frontend.compile")
jit_mod = importlib.import_module("sparsecc.frontend.jit")

SIG = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", **{n: "i32" for n in (
    "M", "N", "K", "stride_am", "stride_bk", "stride_bn", "stride_dm", "stride_dn")}}
CONSTS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}


@pytest.fixture(autouse=True)
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARSECC_CACHE", raising=False)
    monkeypatch.delenv("SPARSECC_DEBUG", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def fake_ptxas(monkeypatch):
    """ptxas stand-in: the tests time and check the Python stages, not the assembler."""
    calls: list[str] = []

    def assemble(ptx: str, arch: str, **_: object) -> ptxas.CompiledCubin:
        calls.append(ptx)
        return ptxas.CompiledCubin(data=b"\x7fELF" + ptx[-64:].encode(), arch=arch,
                                   resources={"sparse_mm_kernel": ptxas.KernelResources(registers=168)})

    monkeypatch.setattr(ptxas, "start_assemble", lambda *a, **k: ptxas.PendingCubin.ready(assemble(*a, **k)))
    return calls


def compile_mm() -> sparsecc.CompiledKernel:
    return sparsecc.compile(sparse_mm_kernel, signature=SIG, constexprs=CONSTS, target="sm_90",
                            num_warps=4, num_stages=3)


# ---- compile time ------------------------------------------------------------------------


def test_cold_compile_python_part_is_fast(fake_ptxas, tmp_cache):
    compile_mm()  # warm imports and the compiler digest
    for f in tmp_cache.rglob("*" + cache.SUFFIX):
        f.unlink()
    t0 = time.process_time()
    ck = compile_mm()
    spent = time.process_time() - t0
    print(f"\nsparse_mm 128x128x64 cold compile, Python part: {spent:.2f} s CPU "
          f"({ck.asm['ptx'].count(chr(10))} PTX lines)")
    assert not ck.cache_hit and len(fake_ptxas) == 2
    assert "mma.sp::ordered_metadata" in ck.asm["ptx"]
    assert spent < 3.0, f"the Python stages took {spent:.2f} s (was 4 s before verify was skipped)"


def test_ptx_module_is_verified_only_in_debug_mode(fake_ptxas, monkeypatch):
    seen: list[bool] = []
    real = ptx_printer.emit_ptx

    def spy(module, *, verify=True):
        seen.append(verify)
        return real(module, verify=verify)

    monkeypatch.setattr(ptx_printer, "emit_ptx", spy)
    monkeypatch.setenv("SPARSECC_CACHE", "0")
    fast = compile_mm()
    monkeypatch.setenv("SPARSECC_DEBUG", "1")
    checked = compile_mm()
    assert seen == [False, True]
    assert fast.asm["ptx"] == checked.asm["ptx"]  # verification never changes the output


def test_printer_output_is_independent_of_verification():
    from sparsecc.compiler import CompileOptions, lower_to_ptx, make_ttgir, make_ttir, run_passes
    from sparsecc.frontend import to_ttir

    small = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 1}
    module = to_ttir(sparse_mm_kernel, SIG, small)
    opts = CompileOptions(target="sm_80", num_warps=2, num_stages=2)
    run_passes(module, make_ttir(opts))
    run_passes(module, make_ttgir(opts))
    pmod, _, _ = lower_to_ptx(module, opts)
    text = ptx_printer.emit_ptx(pmod, verify=False)
    assert text == ptx_printer.emit_ptx(pmod, verify=True)
    assert text.count(".entry sparse_mm_kernel(") == 1 and text.rstrip().endswith("}")


# ---- the disk cache behind sparsecc.compile ----------------------------------------------


def test_cache_hit_returns_the_same_kernel_fast(fake_ptxas, tmp_cache):
    first = compile_mm()
    assert not first.cache_hit and first.module is not None
    assert len(list(tmp_cache.rglob("*" + cache.SUFFIX))) == 1  # SPARSECC_CACHE_DIR honoured
    times = []
    for _ in range(9):
        t0 = time.perf_counter()
        hit = compile_mm()
        times.append(time.perf_counter() - t0)
    median_ms = sorted(times)[len(times) // 2] * 1e3
    print(f"\nsparsecc.compile cache hit: {median_ms:.2f} ms median")
    assert len(fake_ptxas) == 1 and hit.cache_hit and hit.module is None
    assert hit.asm == first.asm and hit.metadata == first.metadata
    assert hit.flat_signature == first.flat_signature == ["*fp16", "*fp16", "*i16", "*fp16", *["i32"] * 8]
    assert hit.flat_arg_names == first.flat_arg_names and hit.contiguous == first.contiguous
    assert hit.metadata["ptxas"]["sparse_mm_kernel"].registers == 168
    assert hit.metadata["params"] == first.metadata["params"]
    assert median_ms < 50.0


def test_cache_key_covers_constexprs_and_options(fake_ptxas):
    compile_mm()
    sparsecc.compile(sparse_mm_kernel, signature=SIG, constexprs={**CONSTS, "GROUP_M": 4},
                     target="sm_90", num_warps=4, num_stages=3)
    sparsecc.compile(sparse_mm_kernel, signature=SIG, constexprs=CONSTS, target="sm_90",
                     num_warps=4, num_stages=2)
    assert len(fake_ptxas) == 3
    compile_mm()
    assert len(fake_ptxas) == 3


def test_corrupt_entry_is_recompiled(fake_ptxas, tmp_cache):
    good = compile_mm()
    (entry,) = tmp_cache.rglob("*" + cache.SUFFIX)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0x40
    entry.write_bytes(bytes(data))
    again = compile_mm()
    assert not again.cache_hit and len(fake_ptxas) == 2 and again.asm["ptx"] == good.asm["ptx"]
    assert compile_mm().cache_hit and len(fake_ptxas) == 2


def test_compiles_without_a_cubin_are_not_stored(monkeypatch, tmp_cache):
    from sparsecc.compiler import StageResult

    calls = []

    def partial(ttir, opts):
        calls.append(opts.target)
        return StageResult(asm={"ttir": "", "ttir-decomposed": "", "ptx": "//"}, module=ttir)

    monkeypatch.setattr(compile_mod, "compile_module", partial)
    compile_mm()
    compile_mm()
    assert calls == ["sm_90", "sm_90"] and not list(tmp_cache.rglob("*" + cache.SUFFIX))


def test_disabled_cache_and_cpu_compiles_skip_the_disk(fake_ptxas, tmp_cache, monkeypatch):
    sparsecc.compile(sparse_mm_kernel, signature=SIG, constexprs=CONSTS)  # no target: no cache
    assert not tmp_cache.exists()
    monkeypatch.setenv("SPARSECC_CACHE", "0")
    compile_mm()
    compile_mm()
    assert len(fake_ptxas) == 2 and not tmp_cache.exists()


# ---- the kernel[grid](...) fast path ------------------------------------------------------


@sparsecc.jit
def scale(X, Y, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n, other=0.0) * alpha, mask=offs < n)


class FakeSparse:
    def __init__(self, m: int, k: int):
        self.values = torch.empty(m, k // 2, dtype=torch.float16, device="meta")
        self.meta = torch.empty((m + 15) // 16, k, dtype=torch.int16, device="meta")
        self.encoding = "NV24"


@pytest.fixture
def fake_gpu(monkeypatch):
    """GPU dispatch with stand-ins: compile_module without passes, a launcher module whose
    `fast_launcher` counts the closures it builds and records every launch."""
    from sparsecc.compiler import StageResult

    compiles, built, launches, slow = [], [], [], []

    def fake_compile(ttir, opts):
        compiles.append(opts)
        return StageResult(asm={"ttir": "", "ttir-decomposed": ""}, module=ttir)

    mod = types.ModuleType("sparsecc.runtime.launcher")

    def fast_launcher(ck, num_warps):
        built.append(ck)
        return lambda gx, gy, gz, flat: launches.append((ck, (gx, gy, gz), list(flat)))

    mod.fast_launcher = fast_launcher
    mod.launch = lambda ck, grid, flat, nw: slow.append((ck, grid, list(flat)))
    monkeypatch.setitem(sys.modules, "sparsecc.runtime.launcher", mod)
    monkeypatch.setattr(compile_mod, "compile_module", fake_compile)
    monkeypatch.setattr(jit_mod, "current_target", lambda: "sm_90")
    monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
    return compiles, built, launches, slow


def meta_tensor(n: int, dtype=torch.float32) -> torch.Tensor:
    return torch.empty(n, dtype=dtype, device="meta")  # not on the CPU: the GPU path


def test_fast_path_reuses_one_launch_function_per_specialization(fake_gpu):
    compiles, built, launches, slow = fake_gpu
    scale.cache.clear()
    x, y = meta_tensor(64), meta_tensor(64)
    for i in range(50):
        scale[(2,)](x, y, 65 + 2 * i, 0.5, BLOCK=32)  # odd: one specialization ("i32")
    assert len(compiles) == 1 and len(built) == 1 and len(scale.fast) == 1
    assert len(slow) == 1 and len(launches) == 49  # the first launch took the full path
    assert launches[-1][1:] == ((2, 1, 1), [x, y, 163, 0.5])
    scale[(3,)](x, y, 2**40 + 1, 0.5, BLOCK=32)  # i64: a new specialization
    scale[(3,)](x, y, 7, 0.5, BLOCK=64)  # new constexpr
    scale[(3,)](x, y, 7, 0.5, BLOCK=64, num_warps=8)  # new option
    scale[(3,)](meta_tensor(64, torch.float16), y, 7, 0.5, BLOCK=64)  # new dtype
    assert len(compiles) == 5 and len(scale.fast) == 5 and len(slow) == 5
    for _ in range(3):
        scale[(3,)](x, y, 2**40 + 1, 0.5, BLOCK=32)
    assert len(compiles) == 5 and len(slow) == 5 and launches[-1][2][2] == 2**40 + 1
    scale[(3,)](x, y, 64, 0.5, BLOCK=32)  # a multiple of 16: "i32:16"
    scale[(3,)](x, y, 1, 0.5, BLOCK=32)  # equal to 1: "i32:1"
    scale[(3,)](x, y, 4096, 0.5, BLOCK=32)  # "i32:16" again: no compile
    assert len(compiles) == 7 and len(slow) == 7 and launches[-1][2][2] == 4096
    scale.cache.clear()  # clearing the compiled kernels drops their launch functions too
    assert scale.fast == {}


def test_fast_path_flattens_sparse_tensors_and_calls_callable_grids(fake_gpu):
    _, _, launches, slow = fake_gpu
    from kernels import dot_kernel

    dot_kernel.cache.clear()
    d, b = meta_tensor(32 * 16, torch.float16), meta_tensor(64 * 16, torch.float16)
    metas = []

    def grid(meta):
        metas.append(meta)
        return (meta["BLOCK_M"] // 16,)

    for _ in range(3):
        a = FakeSparse(32, 64)
        dot_kernel[grid](d, a, b, BLOCK_M=32, BLOCK_N=16, BLOCK_K=64)
    assert len(slow) == 1 and len(launches) == 2
    assert [x is y for x, y in zip(launches[-1][2], [d, a.values, a.meta, b])] == [True] * 4
    assert launches[-1][1] == (2, 1, 1)
    assert metas[-1]["A"] is a and metas[-1]["BLOCK_K"] == 64 and metas[-1]["num_warps"] == 4


def test_fast_path_sees_sparsecc_interpret_and_errors_still_name_the_argument(fake_gpu, monkeypatch):
    compiles, _, launches, slow = fake_gpu
    scale.cache.clear()
    x, y = meta_tensor(64), meta_tensor(64)
    scale[(1,)](x, y, 64, 0.5, BLOCK=32)
    scale[(1,)](x, y, 64, 0.5, BLOCK=32)
    ran = []
    interp = types.ModuleType("sparsecc.runtime.interpreter")
    interp.run = lambda module, name, grid, args: ran.append((name, grid, list(args)))
    monkeypatch.setitem(sys.modules, "sparsecc.runtime.interpreter", interp)
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    scale[(1,)](x, y, 64, 0.5, BLOCK=32)
    scale[(1,)](x, y, 64, 0.5, BLOCK=32)
    assert [r[0] for r in ran] == ["scale", "scale"] and compiles[-1].target is None
    monkeypatch.setenv("SPARSECC_INTERPRET", "0")
    scale[(1,)](x, y, 64, 0.5, BLOCK=32)
    assert len(launches) == 2 and len(slow) == 1
    with pytest.raises(TypeError, match="argument 'alpha' of type str cannot be passed"):
        scale[(1,)](x, y, 64, "0.5", BLOCK=32)
    with pytest.raises(ValueError, match=r"scale\[grid\]: grid extent x must be non-negative, got -1"):
        scale[(-1,)](x, y, 64, 0.5, BLOCK=32)


def test_fast_path_key_is_generated_per_argument_count_and_wrong_counts_take_the_full_path(fake_gpu):
    _, _, launches, slow = fake_gpu
    scale.cache.clear()
    x, y = meta_tensor(64), meta_tensor(64)
    scale[(1,)](x, y, 64, 0.5, BLOCK=32)
    scale[(1,)](x, y, 64, 0.5, 32)  # BLOCK positionally: a second count, a second key function
    scale[(1,)](x, y, 64, 0.5, 32)
    assert sorted(scale._key_fns) == [4, 5] and len(slow) == 2 and len(launches) == 1
    assert scale.fast_key((x, y, 64, 0.5, 32), {}) != scale.fast_key((x, y, 64, 0.5), {"BLOCK": 32})
    with pytest.raises(TypeError, match=r"scale\[grid\]\(\.\.\.\): too many positional arguments"):
        scale[(1,)](x, y, 64, 0.5, 32, 7)
    with pytest.raises(TypeError, match="missing a required argument: 'alpha'"):
        scale[(1,)](x, y, 64, BLOCK=32)
    assert scale.fast_key((x, y, 64), {"BLOCK": 32}) is None  # too few: no key, the full path


def test_fast_path_host_cost(fake_gpu):
    """The Python work per launch on the fast path (the launcher closure itself is a no-op here)."""
    _, _, launches, _ = fake_gpu
    scale.cache.clear()
    x, y = meta_tensor(64), meta_tensor(64)
    run = scale[(4,)]
    run(x, y, 64, 0.5, BLOCK=32)
    n, best = 2000, float("inf")
    for _ in range(5):
        launches.clear()
        t0 = time.perf_counter()
        for _ in range(n):
            scale[(4,)](x, y, 64, 0.5, BLOCK=32)
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    print(f"\nkernel[grid](...) fast path, Python part: {best:.2f} µs per launch")
    assert len(launches) == n and best < 40.0


def test_launcher_fast_launcher_uses_the_drivers_raw_launch(monkeypatch):
    """launcher.fast_launcher packs once and calls the driver's raw launch (or launch())."""
    calls = []

    class Kernel:
        def __init__(self, cubin, name, kinds, *, shared_bytes=0):
            self.kinds = kinds

        def raw_launcher(self, block, smem):
            return lambda gx, gy, gz, values, stream: calls.append(("raw", (gx, gy, gz), block, smem,
                                                                    list(values), stream))

        def launch(self, grid, block, args, smem, stream):
            calls.append(("launch", grid, block, smem, list(args), stream))

    monkeypatch.setattr(launcher, "_load_kernel", lambda cubin, name, kinds, smem, device: Kernel(
        cubin, name, kinds, shared_bytes=smem))
    monkeypatch.setattr(launcher, "_raw_stream", lambda device: 77)
    def compiled() -> types.SimpleNamespace:
        return types.SimpleNamespace(
            name="k", asm={"cubin": b"\x7fELF"}, metadata={"name": "k", "num_warps": 2, "shared": 1024},
            flat_signature=["i32", "fp32"], flat_arg_names=["n", "a"], module=None, contiguous=[],
            target="sm_90", num_warps=2)

    go = launcher.fast_launcher(compiled(), 2)
    go(3, 1, 1, [5, 2.0])
    go(0, 1, 1, [5, 2.0])  # empty grid: checked, not launched
    with pytest.raises(ValueError, match="argument 'n' = 4294967296 does not fit in i32"):
        go(1, 1, 1, [2**32, 2.0])
    assert calls == [("raw", (3, 1, 1), (64, 1, 1), 1024, [5, 2.0], 77)]
    del Kernel.raw_launcher
    launcher.fast_launcher(compiled(), 2)(1, 2, 3, [True, 1])
    assert calls[-1] == ("launch", (1, 2, 3), (64, 1, 1), 1024, [1, 1.0], 77)
    # CUDA's grid limits, the interpreter's own check (sparsecc.runtime.grid), before the driver
    before = list(calls)
    with pytest.raises(ValueError, match=r"k: grid extent y = 65536 exceeds CUDA's limit of 65535"):
        launcher.launch(compiled(), (1, 65536, 1), [5, 2.0], 2)
    with pytest.raises(ValueError, match=r"k: grid extent x = 2147483648 exceeds CUDA's limit of 2147483647"):
        launcher.fast_launcher(compiled(), 2)(2**31, 1, 1, [5, 2.0])
    with pytest.raises(TypeError, match=r"k: grid extent z must be an int, got float 2.0"):
        launcher.launch(compiled(), (1, 1, 2.0), [5, 2.0], 2)
    assert calls == before
    launcher.launch(compiled(), (2**31 - 1, 65535, 65535), [5, 2.0], 2)  # the limits themselves pass
    assert calls[-1][1] == (2**31 - 1, 65535, 65535)
