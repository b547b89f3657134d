"""A CUDA graph capture survives the garbage collector (regression: a collected kernel's
`__del__` unloaded its module during a capture, and the next launch failed with
CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: the parity benchmark's CUDA-graph timing, after
other tests had dropped their kernels)."""

from __future__ import annotations

import gc

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.runtime import driver


@sparsecc.jit
def _add_one(X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs, mask=offs < n) + 1.0, mask=offs < n)


def test_collected_kernels_wait_for_the_next_load(monkeypatch):
    """Without a GPU: `__del__` only queues the module; the next load unloads it, unless a
    capture is under way."""
    unloaded: list[object] = []

    class FakeDriver:
        def cuModuleUnload(self, module):  # noqa: N802 - the driver's name
            unloaded.append(module)

    monkeypatch.setattr(driver, "_RELEASED", [])
    k = object.__new__(driver.CudaKernel)
    k._module, k._drv = "module-1", FakeDriver()
    del k
    gc.collect()
    assert unloaded == [] and driver._RELEASED[0][1] == "module-1"
    monkeypatch.setattr(driver, "_capturing", lambda: True)
    driver._unload_released()
    assert unloaded == []
    monkeypatch.setattr(driver, "_capturing", lambda: False)
    driver._unload_released()
    assert unloaded == ["module-1"] and driver._RELEASED == []


def test_a_kernel_collected_at_interpreter_exit_raises_nothing(monkeypatch):
    """At interpreter exit a kernel can be collected after the driver module's globals were
    cleared to None: its `__del__` must not raise (bench scripts printed one "Exception
    ignored in CudaKernel.__del__" traceback per kernel at exit)."""
    monkeypatch.setattr(driver, "_RELEASED", None)
    k = object.__new__(driver.CudaKernel)
    k._module, k._drv = "module-1", object()
    k.__del__()
    k._module = None  # (collected later, with _RELEASED restored)


@pytest.mark.gpu
def test_a_capture_survives_collected_kernels():
    x = torch.zeros(1000, device="cuda")
    _add_one[(8,)](x, 1000, BLOCK=128)
    ck = next(c for c in _add_one.cache.values() if c.target is not None)
    doomed = driver.load_kernel(ck.asm["cubin"], ck.name, ["ptr", "i32"])
    del doomed  # garbage, collected inside the capture below
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gc.collect()
        _add_one[(8,)](x, 1000, BLOCK=128)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(x, torch.full_like(x, 2.0))  # once before the capture, once replayed
