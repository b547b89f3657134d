"""The language's GPU kernels that use shared memory or barriers beyond a GEMM's ring, for
memory checkers:

    compute-sanitizer --tool racecheck python bench/sanitize_kernels.py [-k EXPR]

It runs a chosen set of the GPU tests in this process (so each test's own check against torch
still decides correctness) on small ragged shapes: the cross-warp exchanges of reductions and
scans (4 and 8 warps, dot results), fused attention (the K/V cp.async ring, P in registers, head
dim 64 and 128), the MoE GEMM (a K loop nested in a `while` loop over token tiles, under each
pipeline switch), the coalesced store of a transposed MMA tile (a swizzled scratch), the
tutorials and the control-flow kernels. bench/sanitize_small.py covers sparse_mm's rings.
Exits with pytest's status (0: every selected test passed).
"""

from __future__ import annotations

import os
import sys

TESTS = (
    "test/python/codegen/test_gpu_reductions.py",
    "test/python/conformance/test_scans.py::test_on_the_gpu_against_torch_and_the_interpreter",
    "test/python/conformance/test_attention_fwd_codegen.py::test_masked_attention_matches_sdpa_on_the_gpu",
    "test/python/conformance/test_moe_gemm.py::test_moe_gemm_on_the_gpu_matches_torch",
    "test/python/conformance/test_moe_gemm.py::test_moe_gemm_under_the_sweeps_switches_on_the_gpu_matches_torch",
    "test/python/passes/test_coalesce_mma_stores.py::test_transposed_gemm_store_on_the_gpu_matches_torch",
    "test/python/conformance/test_tutorials.py::test_tutorial_on_the_gpu_matches_torch_and_the_interpreter",
    "test/python/conformance/test_control_flow.py::test_on_the_gpu",
)
"""The selection (pytest node ids, relative to the repository root)."""

def main(argv: list[str]) -> int:
    import pytest

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    keyword = ["-k", argv[1]] if len(argv) >= 2 and argv[0] == "-k" else []
    return int(pytest.main(["-q", "-m", "gpu", "-p", "no:cacheprovider", *keyword, *TESTS]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
