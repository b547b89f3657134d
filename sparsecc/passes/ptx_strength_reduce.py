"""`ptx-strength-reduce`: a loop carries the 64-bit addresses it steps through, instead of
recomputing each from an offset every iteration.

The lowering addresses a block pointer's tile from its i32 offsets: base + (sext(offset) *
stride + thread term) * element size, rebuilt in every iteration of a K loop (a sign
extension, 64-bit multiplies and adds: ~20 SASS instructions per copied tile) although the
address only moves by a loop-invariant amount. Triton's loops keep a running pointer instead.
This pass does that for any `scf.for` of a `ptx.kernel` (after ptx-hoist-loop-invariants):

- induction variables: the loop's counter, and every carried integer the body advances by a
  loop-invariant amount (`scf.yield ..., x + s, ...` with `x` the carried value);
- affine values: built from induction variables and loop-invariant values by `addi`, `subi`,
  `muli`/`shli` by an invariant and `extsi`; one's step per iteration follows from the steps
  of the induction variables it is built from (the same ops applied to the steps);
- an affine i64 value that costs two or more ops to rebuild from the induction variables or a
  value already carried, and that an op outside the arith dialect uses (a copy's or a store's
  address) outside the slow path of a `COLD_ELSE` branch, becomes a carried value: its value on entry computed before the loop, advanced by its step
  (one add) at the end of the body;
- not in a loop that loads registers from global memory on its fast path (`_loads_registers`);
- afterwards a carried value that only feeds its own update, and that nothing reads after the
  loop, is no longer carried (what the recomputed offsets leave behind, and the block pointers
  the pipeline no longer loads from).

    sparsecc-opt kernel.mlir -p "convert-ttg-to-ptx,ptx-hoist-loop-invariants,ptx-strength-reduce" --emit ptx

Assumes, as the lowering's bounds tests already do, that an i32 induction variable an address
is sign-extended from does not wrap around (block pointer coordinates stay below 2**31).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from sparsecc.analysis.dead_code import drop_dead_arith
from sparsecc.dialects import ptx
from sparsecc.passes.ptx_hoist_loop_invariants import in_cold

_AFFINE = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ShLIOp, arith.ExtSIOp)
"""The ops an affine value is built with (see `_affine_ops` for which operand may vary)."""

MIN_SAVED = 2
"""An affine address is carried when rebuilding it costs at least this many ops per iteration:
carrying it costs one add and two registers."""


def _inside(loop: Operation, v: SSAValue) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    return op is not None and loop.is_ancestor(op)


def _induction_steps(loop: scf.ForOp) -> tuple[dict[SSAValue, SSAValue], dict[SSAValue, SSAValue]]:
    """(induction variable -> its step, induction variable -> its value on entry): the loop's
    counter and the carried integers the body advances by a loop-invariant amount."""
    body = loop.body.block
    iv, *carried = body.args
    steps, inits = {iv: loop.step}, {iv: loop.lb}
    y = body.last_op
    assert isinstance(y, scf.YieldOp)
    for arg, init, nxt in zip(carried, loop.iter_args, y.operands):
        upd = nxt.owner
        if not isinstance(arg.type, IntegerType) or not isinstance(upd, arith.AddiOp) or upd.parent is not body:
            continue
        x, s = (upd.lhs, upd.rhs) if upd.lhs is arg else (upd.rhs, upd.lhs)
        if x is arg and not _inside(loop, s):
            steps[arg], inits[arg] = s, init
    return steps, inits


def _affine_ops(loop: scf.ForOp, ivs: dict[SSAValue, SSAValue]) -> dict[SSAValue, Operation]:
    """Every value of the loop body affine in the induction variables `ivs` -> its op, in
    program order. Which operands may vary: either or both of addi's, subi's, muli's one (the
    other invariant), shli's shifted value, extsi's."""
    varying: set[SSAValue] = set(ivs)
    ops: dict[SSAValue, Operation] = {}
    for op in loop.body.walk():
        if not isinstance(op, _AFFINE):
            continue
        var = [v in varying for v in op.operands]
        if not any(var) or any(not x and _inside(loop, v) for v, x in zip(op.operands, var)):
            continue
        if isinstance(op, arith.MuliOp) and all(var):
            continue
        if isinstance(op, arith.ShLIOp | arith.SubiOp) and not var[0]:
            continue
        varying.add(op.results[0])
        ops[op.results[0]] = op
    return ops


@dataclass
class _Builder:
    """Builds, in front of the loop, the entry value and the step of affine values."""

    loop: scf.ForOp
    ivs: dict[SSAValue, SSAValue]
    inits: dict[SSAValue, SSAValue]
    ops: dict[SSAValue, Operation]

    def __post_init__(self) -> None:
        self._init: dict[SSAValue, SSAValue] = dict(self.inits)
        self._step: dict[SSAValue, SSAValue | None] = dict(self.ivs)

    def _put(self, op: Operation) -> SSAValue:
        block = self.loop.parent_block()
        assert block is not None
        block.insert_op_before(op, self.loop)
        return op.results[0]

    def init(self, v: SSAValue) -> SSAValue:
        """`v`'s value in the first iteration: its ops again, on the entry values."""
        if v in self._init:
            return self._init[v]
        op = self.ops.get(v)
        if op is None:
            return v  # loop-invariant
        mapper = {o: self.init(o) for o in op.operands}
        r = self._init[v] = self._put(op.clone(value_mapper=mapper, clone_name_hints=False))
        return r

    def step(self, v: SSAValue) -> SSAValue | None:
        """How much `v` grows per iteration (None: not at all)."""
        if v in self._step:
            return self._step[v]
        op = self.ops.get(v)
        r: SSAValue | None = None
        if op is not None:
            a = self.step(op.operands[0])
            b = self.step(op.operands[1]) if len(op.operands) > 1 else None
            if isinstance(op, arith.AddiOp):
                r = a if b is None else b if a is None else self._put(arith.AddiOp(a, b))
            elif isinstance(op, arith.SubiOp):
                if b is None:
                    r = a
                else:
                    lhs = a if a is not None else self._put(arith.ConstantOp(IntegerAttr(0, v.type)))
                    r = self._put(arith.SubiOp(lhs, b))
            elif isinstance(op, arith.MuliOp):
                r = self._put(arith.MuliOp(a, op.operands[1]) if a is not None else arith.MuliOp(op.operands[0], b))
            elif isinstance(op, arith.ShLIOp):
                r = self._put(arith.ShLIOp(a, op.operands[1])) if a is not None else None
            elif isinstance(op, arith.ExtSIOp):
                r = self._put(arith.ExtSIOp(a, v.type)) if a is not None else None
        self._step[v] = r
        return r


def _to_carry(loop: scf.ForOp, ops: dict[SSAValue, Operation]) -> list[SSAValue]:
    """The affine i64 values worth carrying: addresses (an operand of an op outside the arith
    dialect: a load, a store, a copy) `MIN_SAVED` or more ops away from an induction variable
    or a value carried before, and not only on the slow path of a `COLD_ELSE` branch (the
    per-element addresses of an unaligned copy: hundreds of registers for the whole loop)."""
    depth: dict[SSAValue, int] = {}
    out = []
    for v, op in ops.items():
        depth[v] = 1 + max((depth.get(o, 0) for o in op.operands if o in ops), default=0)
        if (v.type == i64 and depth[v] >= MIN_SAVED and not in_cold(loop, op)
                and any(u.operation.dialect_name() != "arith" for u in v.uses)):
            out.append(v)
            depth[v] = 0
    return out


def _with_carried(loop: scf.ForOp, keep: list[int], inits: list[SSAValue], nexts: list[SSAValue]) -> scf.ForOp:
    """The loop again with the carried values at positions `keep` and new ones (`inits`, their
    body args already appended; `nexts` yielded for them); the others' args must be unused."""
    body = loop.body.block
    y = body.last_op
    assert isinstance(y, scf.YieldOp)
    n = len(loop.iter_args)
    yielded = [y.operands[i] for i in keep] + nexts
    body.erase_op(y)
    for i in reversed(range(n)):
        if i not in keep:
            body.erase_arg(body.args[1 + i])
    body.add_op(scf.YieldOp(*yielded))
    region = loop.detach_region(loop.body)
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [loop.iter_args[i] for i in keep] + inits, region)
    new.attributes.update(loop.attributes)
    parent = loop.parent_block()
    assert parent is not None
    parent.insert_op_before(new, loop)
    for pos, i in enumerate(keep):
        loop.results[i].replace_all_uses_with(new.results[pos])
    parent.erase_op(loop)
    return new


def _loads_registers(loop: scf.ForOp) -> bool:
    """Whether the loop's fast path loads global memory into registers (`ptx.ld.global` outside
    a `COLD_ELSE` slow path): sparse_linear's dequantizing loops, whose ~100 scalar loads ptxas
    scheduled around carried copy addresses with 248 registers instead of 168 (no address is
    carried there; the cp.async loops of the GEMMs and of attention load no registers)."""
    return any(isinstance(op, ptx.LdGlobalOp) and not in_cold(loop, op) for op in loop.body.walk())


def _carry_addresses(loop: scf.ForOp) -> tuple[scf.ForOp, int]:
    """Carry the affine addresses of `loop` (`_to_carry`); returns the loop and how many."""
    if _loads_registers(loop):
        return loop, 0
    ivs, inits = _induction_steps(loop)
    ops = _affine_ops(loop, ivs)
    carry = _to_carry(loop, ops)
    if not carry:
        return loop, 0
    b = _Builder(loop, ivs, inits, ops)
    entry = [b.init(v) for v in carry]
    steps = [b.step(v) for v in carry]
    body = loop.body.block
    y = body.last_op
    assert y is not None
    nexts = []
    for v, s in zip(carry, steps):
        arg = body.insert_arg(v.type, len(body.args))
        v.replace_all_uses_with(arg)
        if s is None:
            nexts.append(arg)
            continue
        upd = arith.AddiOp(arg, s)
        body.insert_op_before(upd, y)
        nexts.append(upd.result)
    return _with_carried(loop, list(range(len(loop.iter_args))), entry, nexts), len(carry)


def _self_only(loop: scf.ForOp, i: int) -> bool:
    """Whether carried value `i` only feeds its own next value (through pure arith ops) and
    is not read after the loop."""
    if loop.results[i].uses:
        return False
    body = loop.body.block
    y = body.last_op
    arg = body.args[1 + i]
    seen, work = {arg}, [arg]
    while work:
        for use in list(work.pop().uses):
            u = use.operation
            if u is y:
                if use.index != i:
                    return False
            elif u.dialect_name() == "arith" and len(u.results) == 1 and not u.regions:
                if u.results[0] not in seen:
                    seen.add(u.results[0])
                    work.append(u.results[0])
            else:
                return False
    return True


def _drop_self_only(loop: scf.ForOp) -> tuple[scf.ForOp, int]:
    dead = [i for i in range(len(loop.iter_args)) if _self_only(loop, i)]
    if not dead:
        return loop, 0
    body = loop.body.block
    keep = [i for i in range(len(loop.iter_args)) if i not in dead]
    y = body.last_op
    assert isinstance(y, scf.YieldOp)
    body.erase_op(y)  # the chains feeding only the dead values go with their last use
    body.add_op(scf.YieldOp(*[y.operands[i] if i in keep else body.args[1 + i] for i in range(len(loop.iter_args))]))
    drop_dead_arith(loop)
    return _with_carried(loop, keep, [], []), len(dead)


def strength_reduce(root: Operation) -> int:
    """Carry the affine 64-bit addresses of every scf.for under `root` (inner loops first) and
    drop the carried values that only feed themselves. Returns the number of carried values
    added plus dropped."""
    changed = 0
    for loop in reversed([op for op in root.walk() if isinstance(op, scf.ForOp)]):
        loop, n_added = _carry_addresses(loop)
        if n_added:
            drop_dead_arith(loop)
        loop, n_dropped = _drop_self_only(loop)
        changed += n_added + n_dropped
    return changed


@dataclass(frozen=True)
class StrengthReducePass(ModulePass):
    """Carry the loop-affine 64-bit addresses of every `ptx.kernel`'s loops (`strength_reduce`).

    Accepts: any module; only the bodies of its `ptx.kernel`s change. Guarantees: the same
    values computed (an address in iteration k = its entry value + k * its step).
    """

    name = "ptx-strength-reduce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, ptx.KernelOp)]:
            strength_reduce(kernel)


__all__ = ["StrengthReducePass", "strength_reduce", "MIN_SAVED"]
