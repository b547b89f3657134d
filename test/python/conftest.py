"""Skip `@pytest.mark.gpu` tests, with the reason, where no CUDA GPU or cuda-python is usable."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator

import pytest

# Tests of the kernels test the kernels: the dispatcher (sparsecc.ops.dispatch) would otherwise
# send some shapes to the dense path once a measured table says so. test_dispatch*.py set their own.
os.environ.setdefault("SPARSECC_DISPATCH", "sparse")


def _has_cuda_python() -> bool:
    """cuda-python ships `cuda.bindings.driver` (12.6+) and the older `cuda.cuda`."""
    for name in ("cuda.bindings.driver", "cuda.cuda"):
        try:
            if importlib.util.find_spec(name) is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


def gpu_unavailable_reason() -> str | None:
    """None when GPU tests can run here, else why not."""
    try:
        import torch
    except ImportError:
        return "gpu test: torch is not installed"
    if not torch.cuda.is_available():
        return "gpu test: torch.cuda is not available (no CUDA device or a CPU-only torch build)"
    if not _has_cuda_python():
        return "gpu test: cuda-python is not installed (pip install 'sparsecc[gpu]')"
    major, _ = torch.cuda.get_device_capability()
    if major < 8:
        return f"gpu test: the GPU is sm_{major}x; sparse tensor cores need sm_80 or newer"
    return None


SLOW_FIRST = (
    "tools/test_lit.py",
    "fuzz/test_fuzz.py",
    "nn/test_llama_tp_smoke.py",
    "codegen/test_wgmma_ring_in_flight.py",
    "ops/test_sparse_mm_8bit.py",
    "codegen/test_quant_wgmma_fragments.py",
    "nn/test_quant_wgmma_linear.py",
    "passes/test_pipeline_protocol.py",
    "nn/test_llama_e2e_smoke.py",
)
"""The files whose tests take longest on a CPU machine (a minute or more each; `--durations`),
slowest first. They run before everything else, so that pytest-xdist (`-n auto`) deals them out
among its workers at the start instead of leaving one worker with a long test at the end while
the others wait."""


def _slow_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: the tests of `SLOW_FIRST`'s files first, in that order, then
    the rest; each file keeps its own order. (Every xdist worker computes the same order.)"""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    here = os.path.dirname(os.path.abspath(__file__))

    def key(item: pytest.Item) -> int:
        rel = os.path.relpath(str(item.path), here).replace(os.sep, "/")
        return rank.get(rel, len(SLOW_FIRST))
    items.sort(key=key)  # stable: each group keeps its collection order


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _slow_first(items)
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(autouse=True, scope="module")
def _fresh_dynamo_per_file() -> Iterator[None]:
    """Each test file starts without the compiled code of the files before it: dynamo's recompile
    limit (8 per code object) counts across files, so a file's `fullgraph=True` compiles would
    fail (FailOnRecompileLimitHit) depending on which files ran first in the process."""
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None:
        dynamo.reset()
    yield
