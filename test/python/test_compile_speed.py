"""The cold-compile shortcuts give what the slow paths gave: the stage printer's splat fast path
prints what xDSL prints, the lowering's `cast` builds the op the builder builds, and
`gc_paused` leaves the collector as it found it (also when the compile fails)."""

from __future__ import annotations

import gc
import io
import math
import sys

import pytest
from kernels import SEED_BLOCKS, SEED_SIG, dot_kernel
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IndexType,
    ModuleOp,
    TensorType,
    f16,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Block
from xdsl.printer import Printer

import sparsecc
from sparsecc.codegen.lower_base import cast
from sparsecc.compiler import CompileOptions, compile_module, gc_paused, print_ir


def _xdsl_text(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def _constant(elt: object, shape: list[int], values: list[float] | list[int]) -> arith.ConstantOp:
    ty = TensorType(elt, shape)
    return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(ty, values))


DENSE_CASES = [
    (f32, [256, 128], [0.0]),                      # the accumulator splat
    (f32, [4], [1.5, 1.5, 1.5, 1.5]),
    (f32, [2], [0.0, -0.0]),                       # equal values, different bytes: xDSL's splat
    (f32, [3], [-0.0]),
    (f32, [2], [math.nan]),                        # a NaN splat: xDSL prints it as a list
    (f32, [2], [math.inf]),
    (f16, [8, 8], [-2.25]),
    (f32, [3], [1.0, 2.0, 3.0]),                   # no splat
    (f32, [200], [float(i) for i in range(200)]),  # no splat, printed as hex
    (i32, [16], [-7]),
    (i8, [5], [127]),
    (i1, [4], [1]),
    (i64, [2], [1, 2]),
    (IndexType(), [3], [5]),
]


@pytest.mark.parametrize(("elt", "shape", "values"), DENSE_CASES)
def test_stage_printer_dense_constants_print_as_xdsl_prints_them(elt, shape, values) -> None:
    n = math.prod(shape)
    full = values * n if len(values) == 1 else values
    module = ModuleOp([_constant(elt, shape, full)])
    assert print_ir(module) == _xdsl_text(module)


@pytest.mark.parametrize(("cls", "src", "dst"), [
    (arith.ExtSIOp, i32, i64), (arith.ExtUIOp, i32, i64), (arith.TruncIOp, i64, i32),
    (arith.TruncFOp, f32, f16), (arith.ExtFOp, f16, f32), (arith.SIToFPOp, i32, f32),
    (arith.FPToSIOp, f32, i32), (arith.BitcastOp, f32, i32),
])
def test_cast_builds_what_the_builder_builds(cls, src, dst) -> None:
    value = Block(arg_types=[src]).args[0]
    for _ in range(2):  # the first through the builder, the next via create
        fast, built = cast(cls, value, dst), cls(value, dst)
        assert type(fast) is type(built)
        assert fast.properties == built.properties and fast.attributes == built.attributes
        assert [r.type for r in fast.results] == [dst] and list(fast.operands) == [value]
        fast.verify()


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: the outer block turns it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # the caller's choice stands
    finally:
        gc.enable()


def test_gc_is_back_on_after_a_failing_compile() -> None:
    with pytest.raises(Exception):  # noqa: B017 (any error: only the collector's state matters)
        compile_module(ModuleOp([]), CompileOptions(target="sm_1000"))
    assert gc.isenabled()



def test_a_whole_compile_runs_without_collections(tmp_path, monkeypatch) -> None:
    """sparsecc.compile (cache key, frontend, the ttir-decomposed stage) runs with the collector
    paused, and leaves it on."""
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        frame = sys._getframe(1)
        while frame is not None and phase == "start":  # a collection from inside the compile?
            if frame.f_code.co_name == "_compile_with_options":
                collections.append(info["generation"])
                return
            frame = frame.f_back

    thresholds = gc.get_threshold()
    gc.callbacks.append(count)
    gc.set_threshold(1)  # without the pause, about every allocation would collect
    try:
        ck = sparsecc.compile(dot_kernel, signature=SEED_SIG, constexprs=SEED_BLOCKS)
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(count)
    assert ck.asm["ttir-decomposed"] and collections == [] and gc.isenabled()
