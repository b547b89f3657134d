"""The back half as passes (no GPU needed): make_ttgir's rewrites and make_ptx's pass list
follow the options, the warp-specialization decision is recorded in the ttgir stage's IR, the launch contract travels as the
module's `sparsecc.launch` attribute, and the ptx dialect the compiler builds prints and parses
back to the same PTX on real kernels (wgmma + TMA + producer warp, persistent, CTA pairs,
mma.sp)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from xdsl.parser import Parser

import sparsecc
from sparsecc.codegen.launch import LAUNCH, launch_metadata
from sparsecc.codegen.ptx_printer import emit_ptx
from sparsecc.compiler import EMIT_PTX, CompileOptions, make_ptx, make_ttgir, print_ir, run_passes
from sparsecc.dialects import make_context
from sparsecc.dialects import ttg as ttgd
from sparsecc.ops.sparse_mm import sparse_mm_kernel
from sparsecc.passes import TOOL_PASSES, get_all_passes

ALIGNED = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", "M": "i32:16", "N": "i32:16", "K": "i32:16",
           "stride_am": "i32:16", "stride_bk": "i32:16", "stride_bn": "i32:1", "stride_dm": "i32:16",
           "stride_dn": "i32:1"}
HOPPER = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 16}
AMPERE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
KERNELS = {
    "tma-ws-sm_90a": (HOPPER, {"target": "sm_90a", "num_warps": 8, "num_stages": 3}),
    "persistent-sm_90a": (HOPPER | {"PERSISTENT": True}, {"target": "sm_90a", "num_warps": 8, "num_stages": 3}),
    "pair-sm_90a": (HOPPER | {"CLUSTER_M": 2}, {"target": "sm_90a", "num_warps": 8, "num_stages": 3, "num_ctas": 2}),
    "mma-sp-sm_80": (AMPERE, {"target": "sm_80", "num_warps": 4, "num_stages": 3}),
}


def _compile(name: str, **switches: bool):
    consts, opts = KERNELS[name]
    return sparsecc.compile(sparse_mm_kernel, signature=ALIGNED, constexprs=consts, **opts, **switches)


def test_stage_pass_lists_follow_the_options():
    """The ttgir -> ttgir rewrites end make_ttgir (after canonicalize + cse, in the order they
    always ran); make_ptx places the barriers and the shared memory, then converts."""
    default, other_opts = CompileOptions(target="sm_90a"), CompileOptions(
        target="sm_90a", wgmma_unroll=True, warp_specialize=False, wgmma_a_smem=True)
    coalesce = "tritongpu-coalesce-mma-stores{target=sm_90a}"
    assert make_ttgir(default)[-5:] == ["cse", "tritongpu-scale-after-dot", coalesce, "tritongpu-sink-local-loads",
                                        "tritongpu-warp-specialize"]
    assert make_ttgir(other_opts)[-5:] == ["cse", "tritongpu-scale-after-dot", coalesce, "tritongpu-wgmma-unroll",
                                           "tritongpu-sink-local-loads"]
    assert make_ptx(default) == ["tritongpu-insert-barriers", "allocate-shared-memory",
                                 "convert-ttg-to-ptx{target=sm_90a a-from-shared=false}",
                                 "ptx-hoist-loop-invariants", "ptx-strength-reduce", EMIT_PTX]
    assert make_ptx(other_opts)[2] == "convert-ttg-to-ptx{target=sm_90a a-from-shared=true}"
    no_narrow = CompileOptions(target="sm_90a", narrow_copies=False)
    assert make_ptx(no_narrow)[2] == "convert-ttg-to-ptx{target=sm_90a a-from-shared=false narrow-copies=false}"
    passes = get_all_passes()
    for spec in make_ttgir(default) + make_ttgir(other_opts) + make_ptx(default)[:-1]:
        assert spec.split("{")[0] in passes


def test_every_pass_is_in_a_stage_or_a_tool_pass():
    """A registered pass that no stage runs (for any switch setting) is listed in TOOL_PASSES
    with what it is for, and a tool pass is in no stage."""
    from dataclasses import fields

    from sparsecc.compiler import STAGE_TABLE
    from sparsecc.switches import SWITCHES

    staged = set()
    for on in (False, True):
        opts = CompileOptions(target="sm_90a", num_ctas=2, **{f.name: on for f in fields(CompileOptions)
                                                              if f.name in SWITCHES})
        staged |= {spec.split("{")[0] for _, make in STAGE_TABLE for spec in make(opts)}
    registered = set(get_all_passes())
    assert registered - staged == set(TOOL_PASSES) == {"expand-dequantize"}
    assert not staged & set(TOOL_PASSES)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_ptx_dialect_round_trips_to_the_same_ptx(name):
    """The ptx stage's module, printed and parsed back with make_context (wgmma and mbarrier
    ops included), prints the compiler's PTX byte for byte and carries its launch metadata."""
    ck = _compile(name)
    module = Parser(make_context(), ck.asm["ttgir"]).parse_module()
    run_passes(module, make_ptx(CompileOptions.create(**KERNELS[name][1]))[:-1])
    again = Parser(make_context(), print_ir(module)).parse_module()
    assert emit_ptx(again) == ck.asm["ptx"]
    meta = launch_metadata(again)
    assert {"name", "num_warps", "threads", "shared", "params", "target"} <= set(meta)
    assert meta == {k: ck.metadata[k] for k in meta}
    assert LAUNCH in again.attributes and not any(k.startswith("ttg.") for k in again.attributes)


def test_warp_specialization_is_recorded_in_the_ir():
    """The persistent TMA kernel's ttgir stage (the pass runs in make_ttgir): one producer warp,
    the loop nest marked ttg.producer, the per-tile epilogue inside it ttg.consumer_only; without
    the pass nothing is marked and the kernel has no producer warp."""
    ck = _compile("persistent-sm_90a")
    module = Parser(make_context(), ck.asm["ttgir"]).parse_module()
    func = next(op for op in module.walk() if op.name == "tt.func")
    assert func.attributes[ttgd.PRODUCER_WARPS].value.data == 1
    marked = [op for op in func.body.block.ops if ttgd.PRODUCER in op.attributes]
    assert marked and any(op.name == "scf.for" for op in marked)
    skipped = [op for op in func.walk() if ttgd.CONSUMER_ONLY in op.attributes]
    assert skipped and all(op.name == "scf.if" and any(o.name == "tt.store" for o in op.walk()) for op in skipped)
    assert ck.metadata["threads"] == 32 * 9
    plain = _compile("persistent-sm_90a", warp_specialize=False)
    assert plain.metadata["threads"] == 32 * 8 and ttgd.PRODUCER not in plain.asm["ttgir"]


def test_dialects_do_not_import_the_backend():
    """Dialects describe their PTX (`ptx.TemplateOp`); the printer finds it, not the reverse."""
    root = Path(sparsecc.__file__).parent / "dialects"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(("sparsecc.codegen", "sparsecc.passes")), (path.name, node.module)
