"""Host-side costs of sparsecc vs Triton on one GPU, in one run.

Prints one table:
  cold compile     sparsecc.compile(sparse_mm_kernel, its default H100 tile, sm_90a) with a fresh
                   SPARSECC_CACHE_DIR (Python stages and ptxas separately), and time to first
                   result of sparse_mm (compile + launch + sync); Triton: time to first result of
                   a dense tl.dot matmul with the same tile config and a fresh TRITON_CACHE_DIR
  cache hit        sparsecc.compile again (disk hit): in this process, and the first compile
                   in a fresh process (one-time costs included, imports excluded)
  launch overhead  µs per `kernel[grid](...)`: median of 5 rounds of 10k launches (a sync each):
                   a tiny kernel (1 tensor + 1 int) and sparse_mm_kernel (9 parameters, 11 after
                   the SparseTensor splits), vs the same tiny kernel and the matmul in Triton

    python bench/host.py [--launches 10000] [--bare]

sparsecc is measured as installed: its modules byte-compiled first, as `pip install` leaves them
(and as Triton's are), xDSL's too. `--bare` skips that, so that with PYTHONDONTWRITEBYTECODE=1 every module
the compile imports is compiled from source inside the timing (a fresh clone's very first run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

# Byte-compile sparsecc as an install does (unless --bare), before anything imports it.
if "--bare" not in sys.argv:
    import compileall
    import importlib.util

    compileall.compile_dir(os.path.join(os.path.dirname(_HERE), "sparsecc"), quiet=1)
    _xdsl = importlib.util.find_spec("xdsl")  # installed with --no-compile on the GPU machine
    for _where in (_xdsl.submodule_search_locations or []) if _xdsl else []:
        compileall.compile_dir(_where, quiet=1)

# Fresh caches before anything imports sparsecc or triton.
os.environ["SPARSECC_CACHE_DIR"] = tempfile.mkdtemp(prefix="sparsecc-host-")
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-host-")

import torch  # noqa: E402

import sparsecc  # noqa: E402
import sparsecc.language as tl  # noqa: E402
from sparsecc.ops.sparse_mm import default_config, sparse_mm, sparse_mm_kernel  # noqa: E402

# What sparse_mm's launch specializes to for contiguous operands with M, N, K multiples of 16.
SIG = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16",
       **{n: "i32:16" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_dm")},
       "stride_bn": "i32:1", "stride_dn": "i32:1"}
# sparse_mm's own pick for a large fp16 problem on the H100 (sm_90a: wgmma.mma_async.sp tiles)
TARGET = "sm_90a"
_CFG = default_config(8192, 8192, 8192, torch.float16, "cuda", TARGET)
CONSTS = {"BLOCK_M": _CFG.block_m, "BLOCK_N": _CFG.block_n, "BLOCK_K": _CFG.block_k, "GROUP_M": _CFG.group_m}


@sparsecc.jit
def tiny_kernel(X, n, BLOCK: tl.constexpr):
    # A block pointer with boundary_check (the masked `X + offs` form compiles too now; this one
    # stays so that launch numbers compare with earlier runs).
    p = tl.make_block_ptr(X, shape=(n,), strides=(1,), offsets=(tl.program_id(0) * BLOCK,),
                          block_shape=(BLOCK,), order=(0,))
    tl.store(p, tl.load(p, boundary_check=(0,)) + 1.0, boundary_check=(0,))


def compile_sparse_mm() -> sparsecc.CompiledKernel:
    return sparsecc.compile(sparse_mm_kernel, signature=SIG, constexprs=CONSTS, target=TARGET,
                            num_warps=_CFG.num_warps, num_stages=_CFG.num_stages)


def cold_compile() -> dict[str, float]:
    """Seconds: the whole compile; ptxas (a subprocess, its CPU time); the time the compile
    waited for it (it prints the IR stages while ptxas runs); Python = whole less the wait."""
    import resource

    from sparsecc.codegen import ptxas

    spent = {"wait": 0.0}
    real = ptxas.start_assemble

    def timed_start(*a, **k):
        pending = real(*a, **k)
        result = pending.result

        def timed_result():
            t = time.perf_counter()
            try:
                return result()
            finally:
                spent["wait"] += time.perf_counter() - t

        pending.result = timed_result
        return pending

    ptxas.start_assemble = timed_start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        t0 = time.perf_counter()
        ck = compile_sparse_mm()
        total = time.perf_counter() - t0
    finally:
        ptxas.start_assemble = real
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert not ck.cache_hit
    ptxas_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return {"total": total, "ptxas": ptxas_cpu, "wait": spent["wait"], "python": total - spent["wait"],
            "ptx_lines": ck.asm["ptx"].count("\n")}


def sparsecc_first_result() -> float:
    """sparse_mm at a new shape config: compile (fresh cache dir) + launch + sync."""
    os.environ["SPARSECC_CACHE_DIR"] = tempfile.mkdtemp(prefix="sparsecc-host-")
    dense = sparsecc.prune_2to4(torch.randn(512, 512, dtype=torch.float16, device="cuda"))
    a, b = sparsecc.compress(dense), torch.randn(512, 512, dtype=torch.float16, device="cuda")
    torch.cuda.synchronize()
    sparse_mm_kernel.cache.clear()
    t0 = time.perf_counter()
    out = sparse_mm(a, b)
    torch.cuda.synchronize()
    t = time.perf_counter() - t0
    ref = dense.float() @ b.float()
    assert torch.allclose(out.float(), ref, atol=0.5, rtol=2e-2), "sparse_mm gave a wrong result"
    return t


def cache_hits(n: int = 20) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        ck = compile_sparse_mm()
        times.append(time.perf_counter() - t0)
        assert ck.cache_hit
    return sorted(times)[len(times) // 2]


_FRESH_HIT = """
import sys, time
sys.path.insert(0, {root!r})
import sparsecc
from sparsecc.ops.sparse_mm import sparse_mm_kernel
sig, consts = {sig!r}, {consts!r}
t0 = time.perf_counter()
ck = sparsecc.compile(sparse_mm_kernel, signature=sig, constexprs=consts, target={target!r},
                      num_warps={warps}, num_stages={stages})
print((time.perf_counter() - t0) if ck.cache_hit else -1.0)
"""


def fresh_process_hit() -> float:
    code = _FRESH_HIT.format(root=os.path.dirname(_HERE), sig=SIG, consts=CONSTS, target=TARGET,
                             warps=_CFG.num_warps, stages=_CFG.num_stages)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def per_launch_us(fn, n: int, rounds: int = 5) -> float:
    """µs per call: the median of `rounds` rounds of n calls each (one sync per round), so one
    noisy stretch of this shared VM does not decide the row."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return sorted(times)[rounds // 2]


def triton_parts():
    import triton
    import triton.language as ttl

    @triton.jit
    def tiny(X, n, BLOCK: ttl.constexpr):
        offs = ttl.program_id(0) * BLOCK + ttl.arange(0, BLOCK)
        mask = offs < n
        ttl.store(X + offs, ttl.load(X + offs, mask=mask, other=0.0) + 1.0, mask=mask)

    @triton.jit
    def matmul(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: ttl.constexpr, BN: ttl.constexpr, BK: ttl.constexpr):
        pm, pn = ttl.program_id(0), ttl.program_id(1)
        rm = pm * BM + ttl.arange(0, BM)
        rn = pn * BN + ttl.arange(0, BN)
        rk = ttl.arange(0, BK)
        acc = ttl.zeros((BM, BN), dtype=ttl.float32)
        for k in range(0, ttl.cdiv(K, BK)):
            kk = k * BK + rk
            a = ttl.load(A + rm[:, None] * sam + kk[None, :] * sak,
                         mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            b = ttl.load(B + kk[:, None] * sbk + rn[None, :] * sbn,
                         mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = ttl.dot(a, b, acc)
        ttl.store(C + rm[:, None] * scm + rn[None, :] * scn, acc.to(ttl.float16),
                  mask=(rm[:, None] < M) & (rn[None, :] < N))

    return triton, tiny, matmul


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=10_000)
    ap.add_argument("--bare", action="store_true", help="no byte-compiling first (see the docstring)")
    args = ap.parse_args()
    n = args.launches
    rows: list[tuple[str, str, str]] = []
    print("| what | sparsecc | triton |\n|---|---|---|", flush=True)

    class Rows(list):  # print each row as soon as it is measured (partial runs still report)
        def append(self, row: tuple[str, str, str]) -> None:
            print("| " + " | ".join(row) + " |", flush=True)
            super().append(row)

    rows = Rows()

    cold = cold_compile()
    how = "bare tree" if args.bare else "byte-compiled"
    rows.append((f"cold compile sparse_mm (fresh cache, {how})", f"{cold['total']:.2f} s "
                 f"(Python {cold['python']:.2f} s + waiting for ptxas {cold['wait']:.2f} s; "
                 f"ptxas CPU {cold['ptxas']:.2f} s; "
                 f"{cold['ptx_lines']} PTX lines)", ""))
    hit = cache_hits()
    fresh = fresh_process_hit()
    rows.append(("cache hit: sparsecc.compile (disk)", f"{hit * 1e3:.2f} ms in-process median; "
                 f"{fresh * 1e3:.1f} ms first in a fresh process", ""))
    first = sparsecc_first_result()

    triton, tiny, matmul = triton_parts()
    a16 = torch.randn(512, 512, dtype=torch.float16, device="cuda")
    b16 = torch.randn(512, 512, dtype=torch.float16, device="cuda")
    c16 = torch.empty(512, 512, dtype=torch.float16, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    matmul[(4, 4)](a16, b16, c16, 512, 512, 512, 512, 1, 512, 1, 512, 1, BM=128, BN=128, BK=64,
                   num_warps=4, num_stages=3)
    torch.cuda.synchronize()
    triton_first = time.perf_counter() - t0
    assert torch.allclose(c16.float(), a16.float() @ b16.float(), atol=0.5, rtol=2e-2)
    rows.append(("time to first result (compile+launch+sync)", f"{first:.2f} s (sparse_mm 512³)",
                 f"{triton_first:.2f} s (dense tl.dot 512³)"))

    x = torch.zeros(1024, device="cuda")
    sc_tiny = per_launch_us(lambda: tiny_kernel[(8,)](x, 1024, BLOCK=128), n)
    assert torch.equal(x, torch.full_like(x, 5 * n + 1)), "tiny kernel gave a wrong result"
    tr_tiny = per_launch_us(lambda: tiny[(8,)](x, 1024, BLOCK=128), n)
    rows.append(("launch overhead, tiny kernel (2 args)", f"{sc_tiny:.1f} µs", f"{tr_tiny:.1f} µs"))

    dense = sparsecc.prune_2to4(torch.randn(128, 128, dtype=torch.float16, device="cuda"))
    sa, sb = sparsecc.compress(dense), torch.randn(128, 128, dtype=torch.float16, device="cuda")
    sd = torch.empty(128, 128, dtype=torch.float16, device="cuda")
    sc_mm = per_launch_us(lambda: sparse_mm_kernel[(1,)](
        sd, sa, sb, 128, 128, 128, 128, 128, 1, 128, 1, **CONSTS, num_warps=4, num_stages=3), n)
    tr_mm = per_launch_us(lambda: matmul[(1, 1)](
        a16, b16, c16, 128, 128, 128, 512, 1, 512, 1, 512, 1, BM=128, BN=128, BK=64,
        num_warps=4, num_stages=3), n)
    rows.append(("launch overhead, matmul (9 / 12 params)", f"{sc_mm:.1f} µs (sparse_mm_kernel)",
                 f"{tr_mm:.1f} µs (tl.dot matmul)"))
    ref = dense.float() @ sb.float()
    assert torch.allclose(sd.float(), ref, atol=0.5, rtol=2e-2), "launch loop gave a wrong result"
    op_us = per_launch_us(lambda: sparse_mm(sa, sb), n)  # the library call: checks, output, launch
    tm_us = per_launch_us(lambda: torch.mm(dense, sb), n)
    rows.append(("host cost per call, 128³", f"{op_us:.1f} µs (sparsecc.ops.sparse_mm)",
                 f"{tm_us:.1f} µs (torch.mm, for scale)"))

    from sparsecc.runtime import launcher

    ck = next(c for c in tiny_kernel.cache.values() if c.target is not None)
    direct = per_launch_us(lambda: launcher.launch(ck, (8, 1, 1), [x, 1024], 4), n)
    rows.append(("  of which launcher.launch (no specialization)", f"{direct:.1f} µs", ""))
    plan = launcher.plan_for(ck)
    raw = plan.raw_launch(x.get_device())
    stream = torch.cuda.current_stream().cuda_stream
    values = [x.data_ptr(), 1024]
    from sparsecc.runtime import driver, native

    how = "C launcher (lib/launch.c)" if native.load() else f"ctypes; no C launcher: {native.why_not()}"
    raw_us = per_launch_us(lambda: raw(8, 1, 1, values, stream), n)
    rows.append((f"  of which pack + cuLaunchKernel, {how}", f"{raw_us:.1f} µs", ""))
    k = plan.kernels[x.get_device()]
    by_ctypes = k.raw_launcher(plan.block, plan.shared_bytes, native=False)
    ct_us = per_launch_us(lambda: by_ctypes(8, 1, 1, values, stream), n)
    rows.append(("  of which pack + cuLaunchKernel through ctypes (the path before the C launcher)",
                 f"{ct_us:.1f} µs", ""))
    device = x.get_device()
    plan.raw[device] = by_ctypes  # the whole kernel[grid] path once more, ctypes instead of C
    sc_tiny_ct = per_launch_us(lambda: tiny_kernel[(8,)](x, 1024, BLOCK=128), n)
    plan.raw[device] = raw
    rows.append(("launch overhead, tiny kernel, ctypes launcher instead of C", f"{sc_tiny_ct:.1f} µs", ""))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        try:
            native.build(Path(tmp) / "probe.so")
            rows.append(("C launcher build (once per machine, cached)", f"{time.perf_counter() - t0:.2f} s", ""))
        except Exception as e:  # a bench row, not a failure: launches fall back to ctypes
            rows.append(("C launcher build", f"failed: {e}", ""))
    cu = driver.libcuda_launch()
    floor = per_launch_us(lambda: cu(k._handle, 8, 1, 1, plan.block[0], 1, 1, plan.shared_bytes, stream,
                                     k._params_addr, None), n) if cu else float("nan")
    rows.append(("  of which bare cuLaunchKernel (ctypes, prebuilt params)", f"{floor:.1f} µs", ""))

    name = torch.cuda.get_device_name()
    print(f"\n(host costs on {name}, torch {torch.__version__}, triton {triton.__version__}, "
          f"python {sys.version.split()[0]}, {len(rows)} rows)")


if __name__ == "__main__":
    main()
