"""The mbarrier protocol of tritongpu-pipeline{tma=true}, checked by running the pass's own ttgir
on a model of the hardware (no GPU needed).

A small interpreter executes the pipelined function as the warp-specialized kernel does: one
producer agent (the TMA warp: prologue copies, empty-slot waits, copies) and one agent per
compute warp (full-slot waits, reads, dots, `ttg.dot_wait`, slot releases), interleaved by a
random scheduler; TMA copies complete at random later points. Without specialization every
warp runs the whole loop and warp 0 (its thread 0) issues the copies. mbarriers follow the PTX rules
(arrival count + transaction bytes complete a phase; `try_wait.parity p` passes once the phase
of parity p is over, a fresh barrier counting as having finished the phase of parity 1).

Checked over many schedules, trip counts and stage counts: nobody deadlocks; every read of a
slot sees the copy of the step being computed; no copy is issued into a slot while a compute
warp's unretired dot group may still read it. GPU runs of the same kernels:
test_gpu_sparse_mm.py::test_mbarrier_pipeline_matches_torch.
"""

from __future__ import annotations

import functools
import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sgemm_ir import sparse_gemm_ttir
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.parser import Parser

from sparsecc.analysis.dtypes import esize
from sparsecc.compiler import run_passes
from sparsecc.dialects import make_context, tt
from sparsecc.dialects import ttg as ttgd
from sparsecc.passes.tritongpu_wgmma_unroll import unroll_by_two


class ProtocolError(AssertionError):
    pass


@dataclass
class Barrier:
    count: int
    phase: int = 0  # phases completed so far
    arrivals: int = 0
    tx: int = 0

    def arrive(self, expect: int = 0) -> None:
        self.tx += expect
        self.arrivals += 1
        self._maybe_complete()

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._maybe_complete()

    def _maybe_complete(self) -> None:
        if self.arrivals > self.count:
            raise ProtocolError("more arrivals than the barrier expects in one phase")
        if self.arrivals == self.count and self.tx == 0:
            self.phase += 1
            self.arrivals = 0

    def passed(self, parity: int) -> bool:
        # the phase of parity p is over: the current (running) phase has the other parity
        return self.phase % 2 != parity


@dataclass
class World:
    barriers: dict[tuple[int, int], Barrier] = field(default_factory=dict)
    contents: dict[tuple[int, int], int] = field(default_factory=dict)  # (ring, slot) -> step
    in_use: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (warp, ring, slot) -> step
    copies: list[tuple[tuple[int, int], int, tuple[int, int], int]] = field(default_factory=list)
    reads: int = 0


@dataclass
class Agent:
    role: str
    warp: int = 0
    step: int = 0  # consumer: the step its next dot computes
    base: int = 0  # the outer trip's first step (TRIP * its index): block pointers made in it start there
    groups: list[list[tuple[int, int]]] = field(default_factory=list)  # slots read by each dot group


TRIP = 10_000
"""Step numbers of an outer loop's trips: trip t's K steps are TRIP * t + j (its block pointers
are made in the trip), so a read of an earlier trip's data in a slot is caught."""


def _ring_id(v) -> int:
    return id(v)


_BIN = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.divui": lambda a, b: a // b, "arith.divsi": lambda a, b: int(a / b), "arith.remui": lambda a, b: a % b,
    "arith.remsi": lambda a, b: a - b * int(a / b), "arith.andi": lambda a, b: a & b, "arith.xori": lambda a, b: a ^ b,
    "arith.ori": lambda a, b: a | b, "arith.maxsi": max, "arith.minsi": min,
}
_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b,
        "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b, "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
        "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b}


def _skip(agent: Agent, op, full_rings: set[int]) -> bool:
    """What each side of the warp-specialized kernel leaves to the other (lower_async.skipped);
    without specialization ("warp" agents) every warp runs everything."""
    if agent.role == "warp":
        return False
    if agent.role == "consumer":
        return isinstance(op, scf.IfOp) and any(isinstance(o, ttgd.AsyncTmaCopyOp) for o in op.true_region.block.ops)
    if ttgd.CONSUMER_ONLY in op.attributes:  # an outer ring loop's epilogue
        return True
    if isinstance(op, ttgd.LocalLoadOp | ttgd.DotWaitOp | tt.DotOp):
        return True
    if isinstance(op, ttgd.WaitBarrierOp):
        return _ring_id(op.ring) in full_rings
    return isinstance(op, scf.IfOp) and any(
        isinstance(o, ttgd.ArriveBarrierOp) and o.kind.data == "warps" for o in op.walk())


def _run(agent: Agent, block, env: dict, world: World, full_rings: set[int]):
    """Execute `block` for `agent`; yields a predicate while it must wait. Returns the yield's values."""
    for op in block.ops:
        if _skip(agent, op, full_rings):
            if isinstance(op, tt.DotOp):
                env[op.result] = None
            continue
        name = op.name
        if isinstance(op, scf.YieldOp):
            return [env.get(v) for v in op.operands]
        if isinstance(op, scf.ConditionOp):
            return [env[op.condition], *(env.get(v) for v in op.args)]
        if isinstance(op, arith.ConstantOp):
            env[op.result] = op.value.value.data if isinstance(op.value, IntegerAttr) else None
        elif name in _BIN:
            a, b = env[op.operands[0]], env[op.operands[1]]
            env[op.results[0]] = None if a is None or b is None else _BIN[name](a, b)
        elif isinstance(op, arith.CmpiOp):
            a, b = env[op.operands[0]], env[op.operands[1]]
            pred = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"][op.predicate.value.data]
            env[op.results[0]] = _CMP[pred](a, b)
        elif isinstance(op, arith.SelectOp):  # the ring slots wrap with one (x + 1 < S ? x + 1 : 0)
            cond = env[op.cond]
            env[op.result] = None if cond is None else env.get(op.lhs if cond else op.rhs)
        elif name.startswith("arith."):
            env[op.results[0]] = env.get(op.operands[0]) if op.operands else None
        elif isinstance(op, scf.ForOp):
            lb, ub, st = env[op.lb], env[op.ub], env[op.step]
            vals = [env.get(v) for v in op.iter_args]
            body = op.body.block
            tiles = any(isinstance(o, scf.ForOp) and o is not op for o in op.walk())  # an outer loop over tiles
            for trip, iv in enumerate(range(lb, ub, st)):
                if tiles:
                    agent.base = agent.step = TRIP * trip
                env[body.args[0]] = iv
                for a, v in zip(body.args[1:], vals):
                    env[a] = v
                vals = yield from _run(agent, body, env, world, full_rings)
            for r, v in zip(op.results, vals):
                env[r] = v
        elif isinstance(op, scf.WhileOp):  # an outer loop over tiles: each trip's steps start at TRIP * trip
            vals = [env.get(v) for v in op.arguments]
            before, after = op.before_region.block, op.after_region.block
            trip = 0
            while True:
                for a, v in zip(before.args, vals):
                    env[a] = v
                cond, *vals = yield from _run(agent, before, env, world, full_rings)
                if not cond:
                    break
                for a, v in zip(after.args, vals):
                    env[a] = v
                agent.base = agent.step = TRIP * trip
                trip += 1
                vals = yield from _run(agent, after, env, world, full_rings)
            for r, v in zip(op.results, vals):
                env[r] = v
        elif isinstance(op, scf.IfOp):
            region = op.true_region if env[op.cond] else op.false_region
            vals = (yield from _run(agent, region.block, env, world, full_rings)) if region.blocks else []
            for r, v in zip(op.results, vals or []):
                env[r] = v
        elif isinstance(op, tt.MakeTensorPtrOp):
            env[op.result] = (id(op), agent.base)
        elif isinstance(op, tt.AdvanceOp):
            root, k = env[op.ptr]
            env[op.result] = (root, k + 1)
        elif isinstance(op, ttgd.LocalAllocOp):
            env[op.result] = id(op)
        elif isinstance(op, ttgd.MemDescSubviewOp):
            env[op.result] = (env[op.src], env[op.offsets[0]])
        elif isinstance(op, ttgd.WaitBarrierOp):
            key = (env[op.ring], env[op.slot])
            parity = env[op.parity]
            yield lambda key=key, parity=parity: world.barriers[key].passed(parity)
        elif isinstance(op, ttgd.ArriveBarrierOp):
            key = (env[op.ring], env[op.slot])
            if op.kind.data == "tma":
                if agent.role != "warp" or agent.warp == 0:  # the TMA thread's warp only
                    world.barriers[key].arrive(op.bytes.value.data)
            elif op.kind.data == "warps":
                world.barriers[key].arrive()
            else:
                raise ProtocolError(f"unexpected arrival kind {op.kind.data}")
        elif isinstance(op, ttgd.AsyncTmaCopyOp):
            if agent.role == "warp" and agent.warp != 0:
                continue  # issued by thread 0 alone
            ring, slot = env[op.dst]
            _, k = env[op.src]
            for (w, r, s), step in world.in_use.items():
                if (r, s) == (ring, slot):
                    raise ProtocolError(f"copy of step {k} into slot {slot} while warp {w}'s dot of step {step} "
                                        "may still read it")
            ty = op.dst.type
            nbytes = math.prod(ty.get_shape()) * esize(ty.element_type)
            world.copies.append(((ring, slot), k, (env[op.ring], env[op.slot]), nbytes))
        elif isinstance(op, ttgd.LocalLoadOp):
            ring, slot = env[op.src]
            got = world.contents.get((ring, slot))
            if got != agent.step:
                raise ProtocolError(f"warp {agent.warp} reads slot {slot} for step {agent.step} but it holds "
                                    f"step {got}")
            world.in_use[(agent.warp, ring, slot)] = agent.step
            world.reads += 1
            env[op.result] = ("frag", ring, slot)
        elif isinstance(op, tt.DotOp):
            slots = [env[v][1:] for v in (op.a, op.b, op.meta) if isinstance(env.get(v), tuple)]
            agent.groups.append([(agent.warp, r, s) for r, s in slots])
            agent.step += 1
            env[op.result] = None
        elif isinstance(op, ttgd.DotWaitOp):
            keep = op.pendings.value.data
            groups = [g for g in agent.groups if g]
            for g in groups[:len(groups) - keep]:
                for key in g:
                    world.in_use.pop(key, None)
            agent.groups = groups[len(groups) - keep:]
        else:  # everything else (program ids, loads of other data, stores, ...) does not touch the protocol
            for r in op.results:
                env[r] = None
    return []


def _simulate(module, k_steps: int, warps: int, seed: int, specialized: bool = True,
              values: dict[int, int] | None = None, loads: tuple[int, ...] = ()) -> World:
    """Run the function on the model. `values`: its scalar arguments by index (default: the
    sgemm_ir GEMM's M, N, K for `k_steps`); `loads`: the values of its top-level scalar
    tt.loads in order (a grouped GEMM's token range)."""
    func = next(op for op in module.walk() if isinstance(op, tt.FuncOp))
    world = World()
    rng = random.Random(seed)
    args = {a: None for a in func.body.block.args}
    if values is None:
        # %M, %N, %K of sgemm_ir: K = k_steps * BLOCK_K (+ a tail half the time)
        m_arg, n_arg, k_arg = func.body.block.args[4:7]
        bk = 64
        args[m_arg], args[n_arg], args[k_arg] = 256, 256, k_steps * bk - (16 if seed % 2 and k_steps > 0 else 0)
    else:
        for i, v in values.items():
            args[func.body.block.args[i]] = v
    loaded = list(loads)
    env = dict(args)
    full_rings: set[int] = set()
    for op in func.walk():
        if isinstance(op, ttgd.AsyncTmaCopyOp):
            full_rings.add(id(op.ring.owner))
    # the common part: everything before the first TMA copy group, run once
    ops = list(func.body.block.ops)
    first = next(i for i, op in enumerate(ops) if any(isinstance(o, ttgd.AsyncTmaCopyOp) for o in op.walk()))
    for op in ops[:first]:
        if isinstance(op, ttgd.InitBarrierOp):
            ring = op.ring.owner
            for s in range(ring.result.type.get_shape()[0]):
                world.barriers[(id(ring), s)] = Barrier(op.count.value.data)
            continue
        if isinstance(op, tt.LoadOp) and loaded:
            env[op.result] = loaded.pop(0)
            continue
        gen = _run(Agent("common"), _Block([op]), env, world, full_rings)
        for _ in gen:
            raise ProtocolError("the common part waited")
    rest = _Block(ops[first:])
    if specialized:
        agents = [Agent("producer", warp=warps)] + [Agent("consumer", warp=w) for w in range(warps)]
    else:
        agents = [Agent("warp", warp=w) for w in range(warps)]
    runs = {id(a): _run(a, rest, dict(env), world, full_rings) for a in agents}
    waiting = {id(a): None for a in agents}
    live = list(agents)
    while live or world.copies:
        choices = [a for a in live if waiting[id(a)] is None or waiting[id(a)]()]
        options = len(choices) + (1 if world.copies else 0)
        if options == 0:
            raise ProtocolError(f"deadlock: {[a.role + str(a.warp) for a in live]} all wait")
        pick = rng.randrange(options)
        if pick == len(choices):  # a TMA copy lands
            (dst, step, bar, nbytes) = world.copies.pop(rng.randrange(len(world.copies)))
            world.contents[dst] = step
            world.barriers[bar].complete_tx(nbytes)
            continue
        agent = choices[pick]
        try:
            waiting[id(agent)] = next(runs[id(agent)])
        except StopIteration:
            live.remove(agent)
    return world


class _Block:
    """A stand-in block over a list of ops (the interpreter only iterates `.ops`)."""

    def __init__(self, ops):
        self.ops = ops


def _pipelined(stages: int, unroll: bool):
    src = sparse_gemm_ttir(256, 128, 64).replace("%N: i32, %K: i32)",
                                                 "%N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32})")
    module = Parser(make_context(), src).parse_module()
    run_passes(module, ["convert-tt-to-ttg{num-warps=8 target=sm_90a}", "sparse-gpu-encoding",
                        f"tritongpu-pipeline{{num-stages={stages} tma=true}}", "canonicalize", "cse"])
    assert any(isinstance(o, ttgd.AsyncTmaCopyOp) for o in module.walk())
    if unroll:
        loop = next(o for o in module.walk() if isinstance(o, scf.ForOp))
        unroll_by_two(loop)
    return module


@pytest.mark.parametrize("specialized", [True, False], ids=["producer-warp", "thread-0-copies"])
@pytest.mark.parametrize("unroll", [False, True], ids=["loop", "unrolled"])
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_tma_pipeline_protocol_holds_under_random_schedules(stages, unroll, specialized):
    module = _pipelined(stages, unroll)
    for k_steps in (1, 2, stages, 2 * stages + 1, 9):
        for seed in range(12):
            world = _simulate(module, k_steps, warps=8, seed=seed * 31 + k_steps, specialized=specialized)
            assert world.reads == 8 * k_steps * 3  # every warp read values, metadata and B each step
            assert not world.in_use or all(step == k_steps - 1 for step in world.in_use.values())


def test_the_model_catches_a_missing_release():
    """The check can fail: without the compute warps' slot releases the producer waits forever
    once the ring wraps (and with a wrong parity it would overwrite a slot in use)."""
    module = _pipelined(3, False)
    for op in list(module.walk()):
        if isinstance(op, ttgd.ArriveBarrierOp) and op.kind.data == "warps":
            op.detach()
            op.erase()
    with pytest.raises(ProtocolError, match="deadlock"):
        _simulate(module, 5, warps=8, seed=1)


# --------------------------------------------------------------------------------------
# One ring across an outer loop's trips (tritongpu-pipeline{continue-rings}, issue 29)
# --------------------------------------------------------------------------------------


@functools.cache
def _moe(stages: int, unroll: bool, form: str = "while"):
    """bench/moe.py's grouped GEMM (a K loop inside `while t0 < end`; `form="for"`: inside a
    `for` over the token tiles, test_moe_gemm.moe_for_kernel) as the compiler leaves its ttgir
    under tma_extents: one TMA ring for all token tiles, and a producer warp."""
    here = Path(__file__).resolve()
    sys.path.insert(0, str(here.parents[3] / "bench"))
    sys.path.insert(0, str(here.parents[1] / "conformance"))
    import moe
    import test_moe_gemm

    import sparsecc

    tile = moe.Tile(128, 256, 64, 8, stages)
    kernel = test_moe_gemm.KERNEL if form == "while" else test_moe_gemm.moe_for_kernel
    ck = sparsecc.compile(kernel, moe.sparsecc_signature(), tile.constexprs,
                          target="sm_90a", num_warps=8, num_stages=stages, tma_extents=True, wgmma_unroll=unroll)
    module = Parser(make_context(), ck.asm["ttgir"]).parse_module()
    func = next(op for op in module.walk() if isinstance(op, tt.FuncOp))
    assert ttgd.PRODUCER_WARPS in func.attributes, "the grouped GEMM was not warp-specialized"
    loop = next(op for op in func.body.block.ops if isinstance(op, scf.WhileOp | scf.ForOp))
    assert not any(isinstance(o, ttgd.InitBarrierOp) for o in loop.walk()), "barriers initialised per token tile"
    return module


MOE_ROUTINGS = [(0, 0), (5, 6), (0, 256), (100, 100 + 2 * 256 + 17), (0, 4 * 256)]
"""(start, end) of one expert's token rows (BLOCK_T = 256): none, one token, one full tile,
three tiles the last of which is ragged, four full tiles."""


@pytest.mark.parametrize("specialized", [True, False], ids=["producer-warp", "thread-0-copies"])
@pytest.mark.parametrize("unroll", [False, True], ids=["loop", "unrolled"])
@pytest.mark.parametrize("stages,form", [(2, "while"), (3, "while"), (4, "while"), (3, "for")])
def test_one_ring_across_token_tiles_holds_under_random_schedules(stages, form, unroll, specialized):
    """The ring's phases continue from one token tile to the next (no re-initialisation, no CTA
    barrier between tiles): every read sees the copy of its own tile and step, no copy
    overwrites a slot a dot may still read, nobody deadlocks, whatever the K steps per tile
    (fewer than the stages, a multiple of them, or not) and the number of tiles. Without a
    producer warp (thread-0-copies) the same IR runs correctly too."""
    module = _moe(stages, unroll, form)
    for k_steps in (1, 2, stages, 2 * stages + 1, 7):
        k = 64 * k_steps
        for start, end in MOE_ROUTINGS:
            trips = -(-(end - start) // 256)
            for seed in range(4):
                world = _simulate(module, k_steps, warps=8, seed=seed * 17 + k_steps + start, specialized=specialized,
                                  values={5: 512, 6: k, 7: k, 8: k, 9: 512}, loads=(start, end))
                assert world.reads == 8 * trips * k_steps * 3
                assert not world.in_use


def test_the_model_catches_a_ring_not_released_between_token_tiles():
    """The check can fail: without the release of each tile's last slot after its K loop, the
    next tile's copy into that slot waits forever."""
    module = _moe(3, False).clone()
    func = next(op for op in module.walk() if isinstance(op, tt.FuncOp))
    loop = next(op for op in func.body.block.ops if isinstance(op, scf.WhileOp))
    for op in list(loop.after_region.block.ops):
        if isinstance(op, scf.IfOp) and any(isinstance(o, ttgd.ArriveBarrierOp) and o.kind.data == "warps"
                                            for o in op.walk()):
            op.detach()
            op.erase()
            break
    else:
        raise AssertionError("no release after the K loop")
    with pytest.raises(ProtocolError, match="deadlock"):
        _simulate(module, 3, warps=8, seed=1, values={5: 512, 6: 192, 7: 192, 8: 192, 9: 512}, loads=(0, 512))
