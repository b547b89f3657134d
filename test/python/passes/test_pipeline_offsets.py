"""tritongpu-pipeline on a loop whose block pointers advance by offsets computed from the
induction variable (the persistent sparse_mm's flat (tile, K step) loop).

The prefetch pointers run S-1 iterations ahead, so their advances must use the offsets of
iteration iv + (S-1)*step, and the prologue's those of lb + s*step. The test evaluates the
integer arithmetic of the pipelined ttgir (the offsets of the loop's own pointer chain, of the
prefetch chain and of the prologue) at concrete arguments and compares them.
"""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, SSAValue
from xdsl.parser import Parser

import sparsecc
from sparsecc.dialects import make_context, tt
from sparsecc.ops.sparse_mm import sparse_mm_kernel

SIG = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16",
       **{n: "i32:16" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_dm")},
       "stride_bn": "i32:1", "stride_dn": "i32:1"}


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINARY = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.divsi": _trunc_div, "arith.remsi": lambda a, b: a - _trunc_div(a, b) * b,
    "arith.divui": lambda a, b: a // b, "arith.remui": lambda a, b: a % b,
    "arith.minsi": min, "arith.maxsi": max, "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b,
}
_CMP = {"eq": int.__eq__, "ne": int.__ne__, "slt": int.__lt__, "sle": int.__le__, "sgt": int.__gt__,
        "sge": int.__ge__}


class Evaluator:
    """Integer values of SSA values: function arguments, program id and count bound, one
    induction variable bound, everything else computed from its arith definition."""

    def __init__(self, args: dict[SSAValue, int], pid: int, programs: int):
        self.bound = dict(args)
        self.pid, self.programs = pid, programs

    def __call__(self, v: SSAValue, iv: SSAValue | None = None, at: int = 0) -> int:
        if v is iv:
            return at
        if v in self.bound:
            return self.bound[v]
        op = v.owner
        assert not isinstance(op, BlockArgument), f"unbound block argument {v}"
        if isinstance(op, arith.ConstantOp):
            assert isinstance(op.value, IntegerAttr)
            return op.value.value.data
        if isinstance(op, tt.GetProgramIdOp):
            return self.pid
        if isinstance(op, tt.GetNumProgramsOp):
            return self.programs
        ops = [self(o, iv, at) for o in op.operands]
        if op.name in _BINARY:
            return _BINARY[op.name](*ops)
        if isinstance(op, arith.CmpiOp):
            return int(_CMP[arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]](ops[0], ops[1]))
        if isinstance(op, arith.SelectOp):
            return ops[1] if ops[0] else ops[2]
        if isinstance(op, arith.ExtUIOp | arith.ExtSIOp | arith.TruncIOp | arith.IndexCastOp):
            return ops[0]
        raise AssertionError(f"no evaluation rule for {op.name}")


def _pipelined_ttgir(target: str, warps: int, tile: tuple[int, int, int], stages: int):
    bm, bn, bk = tile
    ck = sparsecc.compile(sparse_mm_kernel, signature=SIG, target=target, num_warps=warps, num_stages=stages,
                          constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 4,
                                      "PERSISTENT": True})
    return Parser(make_context(), ck.asm["ttgir"]).parse_module()


# (the 256x128x128 tile's 4 stages would need 272 KiB of shared memory, more than sm_90a has)
@pytest.mark.parametrize("target,warps,tile", [("sm_90a", 8, (128, 128, 128)), ("sm_80", 4, (128, 128, 64))],
                         ids=["tma-mbarriers", "cp.async-barriers"])
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_prefetch_pointers_advance_by_the_offsets_of_their_iteration(target, warps, tile, stages):
    module = _pipelined_ttgir(target, warps, tile, stages)
    func = next(op for op in module.walk() if isinstance(op, tt.FuncOp))
    loop = next(op for op in func.walk() if isinstance(op, scf.ForOp))
    body = loop.body.block
    iv = body.args[0]
    names = [a.name_hint for a in func.body.block.args]
    # 5 x 7 tiles of the tile shape, K = 5 K steps; 3 programs: several tiles each
    bm, bn, bk = tile
    values = {"M": 5 * bm - 3, "N": 7 * bn - 16, "K": 5 * bk - 32}
    args = {a: values.get(n, 64) for a, n in zip(func.body.block.args, names)}
    ev = Evaluator(args, pid=1, programs=3)
    # the loop's own pointers (iter_args advanced by themselves) and the prefetch pointers,
    # both carried: tell them apart by what they start from (the prefetch chain starts from
    # the prologue's last advance)
    yield_op = body.last_op
    advances = {i: yield_op.operands[i].owner for i in range(len(yield_op.operands))
                if isinstance(yield_op.operands[i].owner, tt.AdvanceOp)}
    own = [i for i, adv in advances.items() if adv.ptr is body.args[i + 1]
           and not isinstance(loop.iter_args[i].owner, tt.AdvanceOp)]
    ahead = [i for i, adv in advances.items() if adv.ptr is body.args[i + 1]
             and isinstance(loop.iter_args[i].owner, tt.AdvanceOp)]
    assert len(own) == len(ahead) == 3, "values, metadata and B: one own and one prefetch chain each"
    trips = ev(loop.ub) - ev(loop.lb)
    assert trips > 2 * stages, "the walk must cross tiles within the evaluated range"
    for j_own, j_ahead in zip(own, ahead):
        own_adv, ahead_adv = advances[j_own], advances[j_ahead]
        for it in range(trips):
            expect = [ev(o, iv, it + stages - 1) for o in own_adv.offsets]
            assert [ev(o, iv, it) for o in ahead_adv.offsets] == expect, (
                f"iteration {it}: the prefetch pointer of iteration {it + stages - 1} advances wrongly")
        # the prologue: stage s advances by the offsets of iteration s
        chain, v = [], loop.iter_args[j_ahead]
        while isinstance(v.owner, tt.AdvanceOp):
            chain.append(v.owner)
            v = v.owner.ptr
        chain.reverse()
        assert len(chain) == stages - 1
        for s, adv in enumerate(chain):
            assert [ev(o) for o in adv.offsets] == [ev(o, iv, s) for o in own_adv.offsets]
