"""A launch that falls back to the CPU interpreter says so, once per kernel; asking for the
interpreter (SPARSECC_INTERPRET=1) is silent."""

from __future__ import annotations

import warnings

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.jit import InterpreterFallbackWarning


@sparsecc.jit
def scale_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 2.0, mask=offs < n)


def test_the_cpu_fallback_warns_once(monkeypatch):
    monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
    x = torch.randn(100)
    y = torch.empty_like(x)
    with pytest.warns(InterpreterFallbackWarning, match="scale_kernel.*CPU interpreter"):
        scale_kernel[(1,)](x, y, 100, BLOCK=128)
    torch.testing.assert_close(y, x * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InterpreterFallbackWarning)
        scale_kernel[(1,)](x, y, 100, BLOCK=128)  # once per kernel


def test_asking_for_the_interpreter_is_silent(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")

    @sparsecc.jit
    def copy_kernel(X, Y, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(Y + offs, tl.load(X + offs))

    x = torch.randn(16)
    y = torch.empty_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InterpreterFallbackWarning)
        copy_kernel[(1,)](x, y, BLOCK=16)
    assert torch.equal(x, y)
