"""Conversions to and from PyTorch's SparseSemiStructuredTensor (CUDA-only on PyTorch's side)."""

from __future__ import annotations

import pytest
import torch

import sparsecc


def test_errors_on_the_cpu():
    s = sparsecc.compress(sparsecc.prune_2to4(torch.randn(64, 64, dtype=torch.float16)))
    with pytest.raises(ValueError, match="lives on CUDA only; this SparseTensor is on cpu"):
        sparsecc.to_semi_structured(s)
    with pytest.raises(TypeError, match="expects a sparsecc.SparseTensor, got Tensor"):
        sparsecc.to_semi_structured(torch.zeros(4, 4))
    with pytest.raises(TypeError, match="expects a torch.sparse.SparseSemiStructuredTensor, got Tensor .*compress"):
        sparsecc.from_semi_structured(torch.zeros(4, 4))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])  # int8: PyTorch cannot densify its own
def test_round_trip_on_the_gpu(dtype):
    g = torch.Generator().manual_seed(1)
    dense = torch.randn(128, 256, generator=g) * 8
    dense = sparsecc.prune_2to4(dense.to(dtype)).cuda()
    theirs = torch.sparse.to_sparse_semi_structured(dense)
    ours = sparsecc.from_semi_structured(theirs)
    assert ours.encoding == "NV24" and torch.equal(ours.to_dense(), dense)
    back = sparsecc.to_semi_structured(ours)
    assert torch.equal(back.to_dense(), dense)
    x = torch.randn(256, 64, device="cuda").to(dtype)  # and the converted weight computes: y = W @ x
    torch.testing.assert_close(sparsecc.ops.sparse_mm(ours, x), (dense.float() @ x.float()).to(dtype),
                               rtol=2e-2, atol=2e-1)
