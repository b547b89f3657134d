"""K-loop analyses: which `scf.for` loops accumulate a dot's sum across iterations, and how.

A GEMM main loop carries its accumulator as an iter_arg: each trip feeds it to a `tt.dot` (or a
chain of dots, one per K step of an unrolled body) and yields the last result back. These
queries recognise that shape on ttgir so that both the passes that restructure the loop and
the lowering that issues wgmma groups (which may stay in flight across such a chain) agree on
it:

- `accumulation_chains(loop)`: the dot chains that carry an iter_arg's sum around the loop;
- `epilogue_if` / `zero_restart`: a persistent kernel's per-tile epilogue `scf.if` that stores
  the sum and restarts it from zeros;
- `only_feeds_next_iteration(dot)`: whether a dot's result is read only by the next dot;
- `carried_in_flight(dot)`: whether a dot's group may run on into the next iteration anyway;
- `ring_in_flight(loop)`: whether an mbarrier ring loop's CTA barriers may keep a group in flight;
- `uses_wgmma` / `reads_wgmma_result` / `wgmma_loops`: where Hopper wgmma accumulators live.

Example (the accumulation of a plain K loop)::

    %r = scf.for %k = ... iter_args(%acc = %zero) {
      %d = tt.dot %a, %b, %acc
      scf.yield %d
    }
    accumulation_chains(loop) == [[the tt.dot]]
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Block, Operation, SSAValue

from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd


def uses_wgmma(root: Operation) -> bool:
    """Whether a tt.dot under `root` has a #ttg.mma version 3 (wgmma) result."""
    return any(
        isinstance(o, tt.DotOp) and isinstance(enc := o.result.type.encoding, ttgd.MmaEncodingAttr)
        and enc.version_major == 3
        for o in root.walk()
    )


def reads_wgmma_result(op: Operation) -> bool:
    """Whether `op` reads a wgmma accumulator's registers (anything but the next dot, or a
    yield that only passes them on): the group that writes them must have landed first."""
    if isinstance(op, tt.DotOp | scf.YieldOp | scf.IfOp | scf.ForOp):
        return False
    if isinstance(op, tt.DequantizeOp):  # its scales may sit in the accumulator layout: loaded, no wgmma writes them
        return False
    return any(isinstance(t := v.type, TensorType) and isinstance(enc := t.encoding, ttgd.MmaEncodingAttr)
               and enc.version_major == 3 for v in op.operands)


def carried_advance(loop: scf.ForOp, load: tt.LoadOp) -> tt.AdvanceOp | None:
    """The `tt.advance` that makes the next iteration's pointer of `load`, a load of `loop`'s body
    through a block pointer the loop carries: the body's yield passes on that advance of it, and
    nothing but the load and the advance uses it. None otherwise (the tile is not a stream the
    pipeline can run ahead of the loop).

    Example: in `for ... iter_args(%p = %p0) { %t = tt.load %p; %q = tt.advance %p, [0, 64];
    scf.yield %q }`, the advance is `%q`'s."""
    body = loop.body.block
    ptr = load.ptr
    if ptr.owner is not body or not (isinstance(ptr.type, tt.PointerType) and ptr.type.is_block):
        return None
    idx = body.args.index(ptr) - 1  # type: ignore[arg-type]
    y = body.last_op
    if idx < 0 or not isinstance(y, scf.YieldOp):
        return None
    adv = y.operands[idx].owner
    if not isinstance(adv, tt.AdvanceOp) or adv.ptr is not ptr:
        return None
    if any(u.operation is not load and u.operation is not adv for u in ptr.uses):
        return None
    return adv


def accumulation_chains(loop: scf.ForOp) -> list[list[tt.DotOp]]:
    """K-loop accumulations of `loop`: for an iter_arg used only as the accumulator of a dot,
    the dots that pass the sum along (each result used only as the next dot's accumulator)
    until one result goes straight back to that iter_arg through the yield (or through an
    epilogue scf.if, `epilogue_if`)."""
    body = loop.body.block
    y = body.last_op
    chains = []
    for j, arg in enumerate(body.args[1:]):
        uses = list(arg.uses)
        if len(uses) != 1 or not isinstance(d := uses[0].operation, tt.DotOp) or d.c is not arg:
            continue
        chain: list[tt.DotOp] = []
        while isinstance(d, tt.DotOp) and d.parent_block() is body:
            chain.append(d)
            out = list(d.result.uses)
            if y is not None and epilogue_if(d.result, body, y, j) is not None:
                chains.append(chain)
                break
            if len(out) != 1:
                break
            nxt = out[0].operation
            if nxt is y and out[0].index == j:
                chains.append(chain)
                break
            if not (isinstance(nxt, tt.DotOp) and nxt.c is d.result):
                break
            d = nxt
    return chains


def epilogue_if(result: SSAValue, body: Block, y: Operation, j: int) -> tuple[scf.IfOp, int] | None:
    """(the scf.if, its result index) when `result` goes back to iter_arg j through an scf.if
    of `body` that passes it on unchanged in its else branch (and may read it in its then
    branch: a persistent GEMM's per-tile epilogue, which stores the sum and restarts it)."""
    ifs = {u.operation.parent_op() for u in result.uses if isinstance(u.operation, scf.YieldOp)}
    if len(ifs) != 1 or not isinstance(e := ifs.pop(), scf.IfOp) or e.parent_block() is not body:
        return None
    if not e.false_region.blocks:
        return None
    else_yield = e.false_region.block.last_op
    assert isinstance(else_yield, scf.YieldOp)
    r = [i for i, v in enumerate(else_yield.operands) if v is result]
    if len(r) != 1:
        return None
    for u in result.uses:
        user = u.operation
        while user is not None and user is not e:
            user = user.parent_op()
        if user is None:
            return None
    out = list(e.results[r[0]].uses)
    return (e, r[0]) if len(out) == 1 and out[0].operation is y and out[0].index == j else None


def is_zero_splat(v: SSAValue) -> bool:
    """Whether `v` is an `arith.constant` dense splat of zero (a fresh accumulator)."""
    c = v.owner
    if not isinstance(c, arith.ConstantOp) or not isinstance(val := c.value, DenseIntOrFPElementsAttr):
        return False
    return val.is_splat() and float(next(iter(val.get_values()))) == 0.0


def zero_restart(loop: scf.ForOp) -> tuple[tt.DotOp, scf.IfOp, int] | None:
    """(first dot, epilogue scf.if, result index) when the loop's only wgmma accumulation
    restarts from zeros in an epilogue scf.if (`epilogue_if` whose then branch yields a zero
    constant: a persistent GEMM's next tile). The lowering then carries a `fresh` flag and
    issues that dot's first wgmmas with scale-d = !fresh instead of zeroing registers."""
    body = loop.body.block
    chains = accumulation_chains(loop)
    if len(chains) != 1 or body.last_op is None:
        return None
    chain = chains[0]
    j = next(i for i, arg in enumerate(body.args[1:]) if chain[0].c is arg)
    found = epilogue_if(chain[-1].result, body, body.last_op, j)
    if found is None:
        return None
    e, index = found
    restarted = e.true_region.block.last_op
    if not isinstance(restarted, scf.YieldOp) or not is_zero_splat(restarted.operands[index]):
        return None
    return chain[0], e, index


def only_feeds_next_iteration(dot: tt.DotOp) -> bool:
    """Whether `dot` is part of a K-loop accumulation (`accumulation_chains`): nothing but the
    next dot of the chain (maybe in the next iteration) reads its result inside the loop, so a
    wgmma may stay in flight past it (the lowering waits for it before shared writes, before
    its registers are rewritten and after the loop)."""
    loop = dot.parent_op()
    if not isinstance(loop, scf.ForOp):
        return False
    return any(dot in chain for chain in accumulation_chains(loop))


def carried_in_flight(dot: tt.DotOp) -> bool:
    """Whether `dot`'s wgmma group may stay in flight into the next iteration although its
    result is not fed straight to the next dot (attention's `acc = tl.dot(p, v, acc * alpha)`,
    read by the rescale first). Issue 30: P @ V then runs under the next iteration's barrier,
    copy issue and Q @ K^T, as in Triton's loop.

    Why that is safe, when all of this holds:
    - the loop's top `ttg.async_wait` is marked `ttg.wgmma_in_flight` (tritongpu-pipeline
      {wgmma-in-flight}, num_stages >= 3): its barrier waits with `wgmma.wait_group 1`, so at
      the barrier of iteration i only the group committed last in iteration i-1 may run, and
      the copies of iteration i go to ring slot (i-2) % S, never to slot (i-1) % S, which that
      group reads (older groups were retired by every warp before the barrier);
    - the result's only use is the loop's `scf.yield`: in the next iteration the lowering
      drains the group (`wgmma.wait_group 0`) before any op reads the carried accumulator
      (`reads_wgmma_result`, `LoweringState.lower_op`), before any other barrier (`bar()`
      keeps nothing in flight), and after the loop (`_for`);
    - the dot is a wgmma of the loop body (not nested), and every shared buffer it reads is
      either a ring slot (`ttg.memdesc_subview` in the body of a buffer allocated before the
      loop) whose only writers in the loop are the pipeline's guarded copies
      (`ttg.slot_guarded`, the ones the first point is about), or a buffer nothing in the loop
      writes (Q in attention). Scratch of reductions or layout conversions cannot be one of
      them: allocate-shared-memory gives every buffer and scratch bytes of its own.
    """
    loop = dot.parent_op()
    if not isinstance(loop, scf.ForOp) or dot.parent_block() is not loop.body.block or not uses_wgmma(dot):
        return False
    body = loop.body.block
    if not any(isinstance(o, ttgd.AsyncWaitOp) and ttgd.WGMMA_IN_FLIGHT in o.attributes for o in body.ops):
        return False
    out = list(dot.result.uses)
    if len(out) != 1 or out[0].operation is not body.last_op:
        return False
    for operand in (dot.a, dot.b):
        src = operand.owner
        if not isinstance(src, ttgd.LocalLoadOp):
            continue  # in registers (P)
        if not _read_stays_put(loop, src):
            return False
    return True


def ring_in_flight(loop: scf.ForOp) -> bool:
    """Whether the CTA barriers and shared-memory scratch stores of `loop`'s body may leave the
    wgmma group committed last in flight (`wgmma.wait_group 1`) instead of draining every group
    (`LoweringState.bar`, `lower_mem.store_shared`). Issue 26: a bf16 quantized weight's
    dequantized tile reaches the register-A fragments through a layout convert (store to a
    scratch, CTA barrier, ldmatrix); draining there empties the tensor cores once per K step,
    although the group in flight reads nothing the convert touches.

    The ordering argument, for the cp.async mbarrier ring of tritongpu-pipeline (its
    `_pipeline_mbarriers`, unrolled by two under `wgmma_unroll` or not), when all of this holds:
    - the loop is that ring and the pipeline marked it (`ring-in-flight`): the top
      `ttg.wait_barrier` carries `ttg.wgmma_in_flight`, and no `ttg.async_wait` (the CTA-barrier
      form) is in the body;
    - every wgmma dot of the loop sits in its body (none in a nested region) and is a sparse
      dot: its A values and metadata are registers (register-A `wgmma.mma_async.sp`; the
      lowering applies this only without `a-from-shared`), and every operand that comes from
      shared memory (B by descriptor) is a slot of a ring allocated before the loop whose only
      writers in the loop are `ttg.slot_guarded` copies, or a buffer nothing in the loop writes.

    What is in flight when: each dot commits one group. Group g_j (dot j) reads A/metadata
    registers R_j and B slot s_j. At a CTA barrier or scratch store between the commit of g_j and
    the issue of g_{j+1}, at most g_j and older groups may run before the wait; keeping one
    (`wait_group 1`) leaves at most g_j. Nothing it reads is written there: its registers R_j
    are rewritten only by the fragment loads of a later dot, which wait on their own
    (`load_frag` / `lower_quant._fragments` drain to `frag_keep`: 0 with one dot per body, so g_j
    is retired before R_j is reused; 1 with the unrolled body, whose two dots have register
    sets of their own, so g_j is retired before the dot after next rewrites R_j); slot s_j is
    written only by guarded copies, which first wait on the slot's `empty` mbarrier, completed
    only after every thread arrived behind a `wgmma.wait_group 1` that retired g_j
    (`_release_and_refill`); and the scratch the barrier orders (a convert's, a reduction's) is
    no ring slot: allocate-shared-memory gives every buffer and scratch bytes of its own, and
    no wgmma of the loop reads a scratch (B is a ring slot, A registers). After the loop the
    lowering drains every group (`wgmma.wait_group 0`) before the accumulators are read.
    """
    body = loop.body.block
    top_waits = [o for o in body.ops if isinstance(o, ttgd.WaitBarrierOp)]
    if not top_waits or ttgd.WGMMA_IN_FLIGHT not in top_waits[0].attributes:
        return False
    if any(isinstance(o, ttgd.AsyncWaitOp) for o in loop.walk()):
        return False
    dots = [o for o in loop.walk() if isinstance(o, tt.DotOp) and uses_wgmma(o)]
    if not dots:
        return False
    for dot in dots:
        if dot.parent_block() is not body or dot.meta is None:
            return False
        for operand in (dot.a, dot.b):
            src = operand.owner
            if not isinstance(src, ttgd.LocalLoadOp):
                if operand is dot.b:
                    return False  # B through a descriptor of a convert's scratch
                continue  # A in registers (a dequantize's fragments, a convert's ldmatrix)
            if not _read_stays_put(loop, src):
                return False
    return True


def _read_stays_put(loop: scf.ForOp, load: ttgd.LocalLoadOp) -> bool:
    """Whether the shared buffer a wgmma operand's `load` reads is allocated before `loop` and,
    in it, written only by `ttg.slot_guarded` copies (a ring slot) or not at all: what a group
    kept in flight may read while the loop goes on."""
    buf = load.src
    if isinstance(buf.owner, ttgd.MemDescSubviewOp):
        buf = buf.owner.src
    return isinstance(buf.owner, Operation) and not loop.is_ancestor(buf.owner) and _only_guarded_writes(loop, buf)


def _only_guarded_writes(loop: scf.ForOp, buf: SSAValue) -> bool:
    """Whether every op of `loop` that uses shared buffer `buf` (or a subview of it) only reads
    it (`local_load`, `memdesc_subview`, `tt.dot`) or is a `ttg.slot_guarded` async copy."""
    views = [buf]
    while views:
        v = views.pop()
        for use in v.uses:
            op = use.operation
            if not loop.is_ancestor(op):
                continue
            if isinstance(op, ttgd.MemDescSubviewOp):
                views.append(op.result)
            elif isinstance(op, ttgd.AsyncCopyGlobalToLocalOp):
                if ttgd.SLOT_GUARDED not in op.attributes:
                    return False
            elif not isinstance(op, ttgd.LocalLoadOp | tt.DotOp):
                return False
    return True


def wgmma_loops(root: Operation) -> list[scf.ForOp]:
    """scf.for loops whose body accumulates with a deferred wgmma dot (one per body)."""
    out = []
    for op in root.walk():
        if isinstance(op, scf.ForOp):
            chains = accumulation_chains(op)
            if len(chains) == 1 and len(chains[0]) == 1 and uses_wgmma(chains[0][0]):
                out.append(op)
    return out


__all__ = [
    "accumulation_chains",
    "carried_advance",
    "carried_in_flight",
    "epilogue_if",
    "is_zero_splat",
    "only_feeds_next_iteration",
    "reads_wgmma_result",
    "ring_in_flight",
    "uses_wgmma",
    "wgmma_loops",
    "zero_restart",
]
