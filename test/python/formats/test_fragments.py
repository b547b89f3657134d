"""The register layouts the formats state for `mma.sp` / `wgmma.sp` (`Instruction`,
`MetaFragment`): each format answers, for its element types, the instruction's shape and K
step, the sparsity selector of a step and where a thread's metadata words come from; the
answers agree with the PTX dialect and with the layouts the PTX ISA and the H100 measurements
give (ptx.py's docstring); and a new format or instruction is data the lowering reads, no code.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from xdsl.dialects import arith
from xdsl.parser import Parser

from sparsecc import formats
from sparsecc.compiler import run_passes
from sparsecc.dialects import make_context, ptx
from sparsecc.formats import META_8BIT, META_16BIT, NV12, NV24, Instruction, MetaFragment

QUANTIZED = formats.lookup("NV24.w4g128")


def _meta_words(meta: MetaFragment, g: int, t: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(16-column chunk, row) of the words in bits 15:0 and 31:16 of thread (g, t)'s metadata
    register, as ldmatrix.trans delivers them: rows 2t and 2t + 1 of the 8x8 matrix, column g,
    row r starting `word_offset(r)` words into the 64-word group (word 16 c + m: chunk c, row m)."""
    low, high = (divmod(meta.word_offset(r) + g, 16) for r in (2 * t, 2 * t + 1))
    return low, high


@pytest.mark.parametrize("fmt", [NV24, NV12, QUANTIZED], ids=lambda f: f.name)
def test_every_element_type_has_an_instruction_that_agrees_with_ptx(fmt):
    for element in fmt.runtime_element_types:
        ab = ptx.mma_ab_type(element.ir)
        assert ab is not None, element
        for warpgroup in (False, True):
            instr = fmt.instruction(element.bits, warpgroup)
            assert instr is not None and element in instr.elements
            assert instr.warpgroup == warpgroup
            assert instr.shape[2] == ptx.mma_sp_k(ab)  # the K step the ops verify against
            assert instr.shape[0] == (64 if warpgroup else 16)
    assert fmt.instruction(64, False) is None


def test_the_k_step_and_selector_of_each_width():
    assert NV24.instruction(16, False).shape == (16, 8, 32)
    assert NV24.instruction(8, False).shape == (16, 8, 64)
    assert NV24.instruction(8, True).shape == (64, 256, 64)
    assert NV12.instruction(32, False).shape == (16, 8, 16)
    # 16- and 32-bit values: one register feeds two steps, selector 0 then 1
    assert [NV24.instruction(16, True).meta.step(s) for s in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert NV12.instruction(32, True).meta is META_16BIT
    # 8-bit: one register per k64 step, selector 0
    assert [NV24.instruction(8, False).meta.step(s) for s in range(3)] == [(0, 0), (1, 0), (2, 0)]
    assert QUANTIZED.instruction(8, False) is None  # its values reach the dot as fp16/bf16


@pytest.mark.parametrize("meta", [META_16BIT, META_8BIT])
def test_each_ldmatrix_row_reads_its_own_8_words(meta):
    assert sorted(meta.word_offset(r) for r in range(8)) == list(range(0, 64, 8))


def test_metadata_registers_match_the_isa_and_the_h100():
    for g in range(8):
        for t in range(4):
            # 16-bit (and tf32): chunk t of rows g (low half) and g + 8 (high half)
            assert _meta_words(META_16BIT, g, t) == ((t, g), (t, g + 8))
            # 8-bit: chunks 2 (t // 2) and 2 (t // 2) + 1 of one row, g + 8 (t % 2)
            row = g + 8 * (t % 2)
            assert _meta_words(META_8BIT, g, t) == ((2 * (t // 2), row), (2 * (t // 2) + 1, row))


def test_a_new_format_or_instruction_is_data():
    """A format with another instruction (here: 16-bit values with the 8-bit register layout,
    a hypothetical) answers through the same lookups the lowering uses."""
    odd = Instruction("mma.sp::ordered_metadata", (16, 8, 64), "sm_100", "hypothetical",
                      NV24.instruction(16, False).elements, META_8BIT)
    fmt = dataclasses.replace(NV24, name="NV24X", instructions=(odd,))
    got = fmt.instruction(16, warpgroup=False)
    assert got is odd and got.meta.step(1) == (1, 0) and got.shape[2] == 64
    assert fmt.instruction(16, warpgroup=True) is None
    swapped = MetaFragment(selectors=4, row_fields=((1, 2, 8), (0, 1, 32)))
    assert [swapped.word_offset(r) for r in range(4)] == [0, 32, 8, 40]
    assert swapped.step(6) == (1, 2)


def test_ptx_type_names_are_one_map():
    from xdsl.dialects.builtin import bf16, f8E4M3FN, f8E5M2, f16, f32, i1, i8, i32

    assert [ptx.type_name(t) for t in (f16, bf16, f32, f8E4M3FN, f8E5M2, i8, i32)] == [
        "f16", "bf16", "f32", "e4m3", "e5m2", "s8", "s32"]
    assert ptx.type_name(i1) is None
    assert [ptx.mma_ab_type(t) for t in (f16, bf16, f32, f8E4M3FN, i8, i32)] == [
        "f16", "bf16", "tf32", "e4m3", "s8", None]
    assert [ptx.mma_acc_name(t) for t in ("f16", "s8", "tf32", "e5m2")] == ["f32", "s32", "f32", "f32"]


TF32_DOT = Path(__file__).resolve().parents[2] / "lit" / "convert-ttg-to-ptx" / "mma-sp-tf32-fragments.mlir"
PIPELINE = ["decompose-sparse-tensors", "convert-tt-to-ttg{num-warps=4 target=sm_80}", "sparse-gpu-encoding",
            "convert-ttg-to-ptx"]


def _lower_tf32_dot() -> tuple[list[int], int]:
    """(selector of each mma.sp, multiplications before the metadata ldmatrix.trans) of the
    lit test's NV12 dot, lowered to the ptx dialect."""
    module = run_passes(Parser(make_context(), TF32_DOT.read_text()).parse_module(), PIPELINE)
    ops = list(module.walk())
    trans = next(i for i, op in enumerate(ops) if isinstance(op, ptx.LdMatrixOp) and op.trans is not None)
    since = max(i for i, op in enumerate(ops[:trans]) if isinstance(op, ptx.BarSyncOp))
    muls = sum(isinstance(op, arith.MuliOp) for op in ops[since:trans])
    return [op.selector.value.data for op in ops if isinstance(op, ptx.MmaSpOp)], muls


def test_the_lowering_reads_the_layout_from_the_format(monkeypatch):
    """NV12's instructions given the 8-bit metadata rows (three bit fields instead of one) lower
    to their address arithmetic, with no change to the code: the lowering asks the format."""
    assert _lower_tf32_dot() == ([0, 1], 3)  # row 8 r: one multiply (and the tile row, the bytes)
    rows = dataclasses.replace(META_16BIT, row_fields=META_8BIT.row_fields)
    patched = dataclasses.replace(NV12, instructions=tuple(dataclasses.replace(i, meta=rows)
                                                           for i in NV12.instructions))
    monkeypatch.setitem(formats._FORMATS, "NV12", patched)
    assert _lower_tf32_dot() == ([0, 1], 5)
