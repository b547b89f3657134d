"""The main job: compile a 2:4-sparse GEMM written with @sparsecc.jit, run it, check it.

    python -m sparsecc.demo [--m 512 --n 256 --k 512] [--dtype fp16|bf16] [--dump ttir,ttgir,ptx]

On a GPU (sm_80+) it runs the compiled cubin and prints its time next to dense torch.mm;
without one it runs the decomposed IR through the CPU interpreter, and says so.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.jit import InterpreterFallbackWarning


@sparsecc.jit
def sparse_gemm_kernel(
    D, A, B, M, N, K,
    stride_am, stride_bk, stride_dm,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """D[M, N] = A[M, K] @ B[K, N], A 2:4 sparse along K (a SparseTensor at launch)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_ptr = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, 1),
                              offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K),
                              order=(1, 0))
    b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, 1),
                              offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N),
                              order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_ptr = tl.advance(a_ptr, (0, BLOCK_K))
        b_ptr = tl.advance(b_ptr, (BLOCK_K, 0))
    d_ptr = tl.make_block_ptr(D, shape=(M, N), strides=(stride_dm, 1),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(d_ptr, acc.to(D.dtype.element_ty), boundary_check=(0, 1))


DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sparsecc.demo", description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=None, help="rows of A (default 512 on GPU, 96 on CPU)")
    p.add_argument("--n", type=int, default=None, help="columns of B")
    p.add_argument("--k", type=int, default=None, help="reduction size (multiple of 16)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    p.add_argument("--dump", default="", help="comma-separated stages to print: " + ",".join(sparsecc.STAGES))
    p.add_argument("--cpu", action="store_true", help="use the CPU interpreter even if a GPU is present")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    gpu = torch.cuda.is_available() and not args.cpu
    device = "cuda" if gpu else "cpu"
    m = args.m or (4096 if gpu else 96)
    n = args.n or (4096 if gpu else 80)
    k = args.k or (4096 if gpu else 128)
    dtype = DTYPES[args.dtype]
    block = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64} if gpu else {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
    dumps = [s for s in args.dump.split(",") if s]
    for s in dumps:
        if s not in sparsecc.STAGES:
            print(f"error: unknown stage '{s}' (stages: {', '.join(sparsecc.STAGES)})", file=sys.stderr)
            return 2

    if not gpu:
        print("No CUDA GPU found: running the decomposed IR through sparsecc's CPU interpreter.")
    torch.manual_seed(0)
    dense = sparsecc.prune_2to4(torch.randn(m, k, dtype=dtype, device=device))
    a = sparsecc.compress(dense)
    b = torch.randn(k, n, dtype=dtype, device=device)
    d = torch.full((m, n), float("nan"), dtype=dtype, device=device)

    signature = {
        "D": f"*{args.dtype}", "A": f"*{args.dtype}:NV24", "B": f"*{args.dtype}",
        "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_dm": "i32",
    }
    target = None
    if gpu or any(s in dumps for s in ("ttgir", "ptx", "cubin")):
        major, minor = torch.cuda.get_device_capability() if gpu else (8, 0)
        target = f"sm_{major}{minor}"
    t0 = time.perf_counter()
    ck = sparsecc.compile(sparse_gemm_kernel, signature=signature, constexprs=block, target=target)
    compile_s = time.perf_counter() - t0
    for s in dumps:
        text = ck.asm.get(s)
        print(f"// ----- {s} -----")
        print(text if isinstance(text, str) else f"<{len(text or b'')} bytes of cubin>")

    grid = (triton_cdiv(m, block["BLOCK_M"]), triton_cdiv(n, block["BLOCK_N"]))
    launch_args = (d, a, b, m, n, k, a.stride(0), b.stride(0), d.stride(0))
    with warnings.catch_warnings():  # the demo said above where it runs
        warnings.simplefilter("ignore", InterpreterFallbackWarning)
        sparse_gemm_kernel[grid](*launch_args, **block)
    ref = torch.mm(dense.float(), b.float())
    err = (d.float() - ref).abs().max().item()
    tol = 2e-2 * (k ** 0.5)
    ok = bool(torch.isfinite(d).all()) and err <= tol
    print(f"{m}x{n}x{k} {args.dtype} sparse GEMM on {'GPU' if gpu else 'CPU (interpreter)'}: "
          f"max |error| vs torch.mm = {err:.3g} ({'OK' if ok else 'MISMATCH'}); compile {compile_s:.2f} s")
    if gpu and ok:
        from triton.testing import do_bench

        ms_sparse = do_bench(lambda: sparse_gemm_kernel[grid](*launch_args, **block))
        ms_dense = do_bench(lambda: torch.mm(dense, b))
        tflops = lambda ms: 2 * m * n * k / (ms * 1e-3) / 1e12  # noqa: E731
        print(f"sparsecc 2:4: {ms_sparse:.3f} ms ({tflops(ms_sparse):.0f} TFLOP/s)   "
              f"dense torch.mm: {ms_dense:.3f} ms ({tflops(ms_dense):.0f} TFLOP/s)   "
              f"speed-up {ms_dense / ms_sparse:.2f}x")
    return 0 if ok else 1


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


if __name__ == "__main__":
    sys.exit(main())
