"""GPU: sparse GEMM kernels lowered by sparsecc.codegen.lower vs torch on random 2:4 data.

The ttgir comes from the decomposed tt IR in sgemm_ir.py through the real passes
(convert-tt-to-ttg, sparse-gpu-encoding, [tritongpu-pipeline]); the output is poisoned with
NaN before each launch, so every element the kernel fails to write fails the comparison.
Run as a script for a table of max errors: `python test/python/codegen/test_gpu_lower.py`.
"""

from __future__ import annotations

import os

import pytest
import torch
from sgemm_ir import WGMMA_CONFIGS, sparse_gemm_ttir

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
CONFIGS = [  # (BM, BN, BK, num_warps, num_stages)
    (64, 64, 32, 4, 1),
    (64, 64, 64, 4, 1),
    (128, 128, 64, 4, 1),
    (128, 64, 64, 8, 1),
]
SHAPES = [(64, 64, 64), (200, 136, 192), (37, 70, 48), (256, 512, 1024), (130, 9, 320)]


def build_kernel(bm: int, bn: int, bk: int, dtype: str, num_warps: int, num_stages: int, target: str):
    """(cubin bytes, launch metadata) of the sparse GEMM through the whole GPU back half."""
    from xdsl.parser import Parser

    from sparsecc.codegen.ptxas import assemble
    from sparsecc.compiler import CompileOptions, lower_to_ptx, run_passes, ttgir_rewrites
    from sparsecc.dialects import make_context

    module = Parser(make_context(), sparse_gemm_ttir(bm, bn, bk, dtype)).parse_module()
    passes = [f"convert-tt-to-ttg{{num-warps={num_warps} target={target}}}", "sparse-gpu-encoding"]
    if num_stages > 1:
        passes.append(f"tritongpu-pipeline{{num-stages={num_stages}}}")
    opts = CompileOptions(target=target)
    run_passes(module, passes + ["canonicalize", "cse", *ttgir_rewrites(opts)])
    _, ptx, meta = lower_to_ptx(module, opts)
    cubin = assemble(ptx, target)
    meta["resources"] = cubin.kernel_resources().as_dict()
    return cubin.data, meta


def run_case(cfg, dtype: str, shape, seed: int = 0, target: str | None = None) -> float:
    """Launch one config on one shape; returns max |D - ref| / max(1, |ref|)."""
    from sparsecc.runtime.compress import compress, prune_2to4
    from sparsecc.runtime.driver import load_kernel

    bm, bn, bk, nw, ns = cfg
    major, minor = torch.cuda.get_device_capability()
    cubin, meta = build_kernel(bm, bn, bk, dtype, nw, ns, target or f"sm_{major}{minor}")
    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    tdt = DTYPES[dtype]
    a = prune_2to4(torch.randn(m, k, device="cuda", generator=g).to(tdt))
    b = torch.randn(k, n, device="cuda", generator=g).to(tdt)
    st = compress(a)
    d = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
    kern = load_kernel(cubin, meta["name"], [kind for _, kind in meta["params"]], shared_bytes=meta["shared"])
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn, 1)
    kern.launch(grid, (meta["threads"], 1, 1), [d, st.values, st.meta, b, m, n, k])
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    err = (d.float() - ref).abs().max().item()
    return err / max(1.0, ref.abs().max().item())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sparse_gemm_matches_torch(cfg, dtype, shape):
    tol = 2e-2 if dtype == "bf16" else 4e-3
    err = run_case(cfg, dtype, shape)
    assert err == err and err < tol, f"relative max error {err}"


def _is_hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


@pytest.mark.gpu
@pytest.mark.skipif(not _is_hopper(), reason="wgmma.mma_async.sp needs sm_90a (H100)")
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("cfg", WGMMA_CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma_gemm_matches_torch(cfg, dtype, shape):
    tol = 2e-2 if dtype == "bf16" else 4e-3
    err = run_case(cfg, dtype, shape, target="sm_90a")
    assert err == err and err < tol, f"relative max error {err}"


def main() -> None:
    stages = [1] + [int(s) for s in os.environ.get("STAGES", "").split(",") if s]
    for ns in stages:
        for bm, bn, bk, nw, _ in CONFIGS:
            cfg = (bm, bn, bk, nw, ns)
            for dtype in DTYPES:
                try:
                    _, meta = build_kernel(bm, bn, bk, dtype, nw, ns, "sm_90")
                    res = meta["resources"]
                except Exception as e:  # report and go on
                    print(f"{cfg} {dtype}: BUILD FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                errs = []
                for shape in SHAPES:
                    try:
                        errs.append(f"{'x'.join(map(str, shape))}={run_case(cfg, dtype, shape):.2e}")
                    except Exception as e:
                        errs.append(f"{shape}=FAIL({type(e).__name__}: {str(e)[:120]})")
                print(f"{cfg} {dtype} regs={res['registers']} spills={res['spill_stores']} "
                      f"smem={meta['shared']}: " + " ".join(errs), flush=True)


if __name__ == "__main__":
    main()
