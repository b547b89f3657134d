"""allocate-shared-memory and tritongpu-insert-barriers on the lit inputs of the lowering: the
barriers the pass places lower to the same `ptx` module as the lowering's own lazy placement,
running either pass twice changes nothing, and the allocation never overlaps two buffers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.parser import Parser

from sparsecc.analysis.shared_memory import SMEM_ALIGN, WGMMA_ALIGN, shared_size
from sparsecc.dialects import make_context, tt, ttg
from sparsecc.passes.allocate_shared_memory import allocate_shared_memory
from sparsecc.passes.tritongpu_insert_barriers import insert_barriers

LIT = Path(__file__).resolve().parents[2] / "lit"
INPUTS = sorted(
    p for p in (LIT / "convert-ttg-to-ptx").glob("*.mlir")
    if "-p convert-ttg-to-ptx |" in p.read_text().splitlines()[0] and "explicit_barriers" not in p.read_text()
) + [LIT / "tritongpu-sink-local-loads" / "sink.mlir", LIT / "tritongpu-insert-barriers" / "if-convert-loop.mlir"]
"""ttgir the lowering accepts as is (the barrier test's input is already explicit)."""


def _opt(path: Path, passes: str) -> str:
    res = subprocess.run([sys.executable, "-m", "sparsecc.tools.sparsecc_opt", str(path), "--split-input-file",
                          "-p", passes], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _modules(path: Path) -> list[ModuleOp]:
    return [Parser(make_context(), chunk).parse_module() for chunk in path.read_text().split("// -----")]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_explicit_barriers_lower_like_the_lazy_ones(path: Path) -> None:
    lazy = _opt(path, "tritongpu-sink-local-loads,convert-ttg-to-ptx")
    explicit = _opt(path, "tritongpu-sink-local-loads,tritongpu-insert-barriers,convert-ttg-to-ptx")
    shared = any(f'"ptx.{op}' in lazy for op in ("st.shared", "ld.shared", "ldmatrix", "cp.async", "wgmma"))
    assert "bar.sync" in lazy or not shared, "a lowering that uses shared memory placed no barrier"
    assert _less_barriers(lazy, explicit)


def _less_barriers(lazy: str, explicit: str) -> bool:
    """`explicit` is `lazy` with zero or more `bar.sync` lines left out (and nothing else)."""
    rest = iter(explicit.splitlines())
    want = next(rest, None)
    for line in lazy.splitlines():
        if line == want:
            want = next(rest, None)
        elif "bar.sync" not in line:
            return False
    return want is None


def test_explicit_drops_the_barrier_between_two_private_scratches() -> None:
    """Regression (issue 30): two convert_layouts in a row each write their own scratch; the
    second needs no barrier (the lazy lowering, which does not track buffers, places one)."""
    path = LIT / "tritongpu-insert-barriers" / "if-convert-loop.mlir"
    lazy = _opt(path, "tritongpu-sink-local-loads,convert-ttg-to-ptx")
    explicit = _opt(path, "tritongpu-sink-local-loads,tritongpu-insert-barriers,convert-ttg-to-ptx")
    assert _less_barriers(lazy, explicit) and explicit != lazy
    assert explicit.count("ptx.bar.sync") == lazy.count("ptx.bar.sync") - 1


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_both_passes_are_idempotent(path: Path) -> None:
    once = _opt(path, "tritongpu-insert-barriers,allocate-shared-memory")
    assert "ttg.explicit_barriers" in once and "ttg.shared = " in once
    assert _opt(path, "tritongpu-insert-barriers,allocate-shared-memory,tritongpu-insert-barriers,"
                      "allocate-shared-memory") == once


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_allocation_is_aligned_and_disjoint(path: Path) -> None:
    for module in _modules(path):
        insert_barriers(next(op for op in module.ops if isinstance(op, tt.FuncOp)))
        allocate_shared_memory(module)
        total = module.attributes[ttg.SHARED_TOTAL]
        assert isinstance(total, IntegerAttr)
        wgmma = "versionMajor = 3" in str(module)
        align = WGMMA_ALIGN if wgmma else SMEM_ALIGN
        spans = []
        for op in module.walk():
            size = shared_size(op)
            off = op.attributes.get(ttg.SHARED_OFFSET)
            assert (off is not None) == bool(size), op.name
            if size:
                assert off.value.data % align == 0
                spans.append((off.value.data, off.value.data + size))
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        end = spans[-1][1] if spans else 0
        assert total.value.data >= end + (WGMMA_ALIGN if wgmma and spans else 0)
        assert total.value.data % align == 0


def test_stale_plan_is_one_located_error(tmp_path: Path) -> None:
    """An op added after the allocation is refused at that op, not given a guessed offset."""
    src = (LIT / "allocate-shared-memory" / "stale-plan.mlir").read_text()
    f = tmp_path / "k.mlir"
    f.write_text(src)
    res = subprocess.run([sys.executable, "-m", "sparsecc.tools.sparsecc_opt", str(f), "-p", "convert-ttg-to-ptx"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert res.stderr.count("error:") == 1 and "run allocate-shared-memory" in res.stderr
