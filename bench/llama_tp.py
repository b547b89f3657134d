"""Tensor-parallel decode: the Llama decoder of `bench/llama_e2e.py` (transformers
LlamaForCausalLM from a config, 7B-shaped layers, random weights pruned 2:4, fp16) sharded over
the GPUs of one host with `parallelize_module` and NCCL: sparse TP (`sparsify_`, then
`sparse_plan(plan)`) against dense TP (torch's ColwiseParallel / RowwiseParallel on the same
pruned weights), same run.

    torchrun --nproc_per_node 2 bench/llama_tp.py --out bench/results
    python bench/llama_tp.py --cpu-check          # 2 gloo processes, a tiny config, eager, on the CPU

The plan is Megatron's: q/k/v and gate/up column-parallel (each rank holds half the heads and half
the MLP), o_proj and down_proj row-parallel (an all-reduce after each), lm_head column-parallel
with its logits gathered; embeddings and norms replicated. The -swiglu variants also compute
silu(gate) * up in the sparse gate_up kernel's epilogue (one launch a layer fewer; the dense side
has no such epilogue in cuBLAS). By default (`--fuse on`) q/k/v run as
one fused layer and gate/up as one (llama_e2e's `fuse_llama_`), sharded with
`FusedColwiseParallel` so that each rank's shard is its own q, k, v (gate, up) rows: 4 weight
launches a layer instead of 7, for dense TP and sparse TP alike; `--fuse off` runs the separate
projections of the tables before 2026-11-26. Each step is measured as
llama_e2e's decode (its `measure_decode`): an eager prompt into a StaticCache (which takes each
rank's heads from the first keys it sees), then `--steps` one-token steps, each
`torch.compile(fullgraph=True)` captured in one CUDA graph with its collectives and replayed;
median of `--reps` runs; a rank's time is its CUDA events', the table's the slowest rank's.
Where compiling fails (or would not fit the time budget) the step runs eagerly in the CUDA graph,
and where that fails too, eagerly without a graph; the table says which. Both variants of one batch
size run one after the other, in the same mode unless one of them had to fall back.

`--single` also measures the unsharded models on rank 0 (the others wait) and compares the TP
logits with them; `--cpu-check` turns it on and exits non-zero when sparse TP's logits differ
from the unsharded sparse model's beyond fp16 tolerance. The whole run keeps to `--budget`
seconds (default 210): measurements that would not fit are skipped and said so, a watchdog ends a
hung run at the budget + 60 s, and rank 0 rewrites the table after every measurement.

`--allreduce nccl,symm` measures each variant twice, same run: `nccl` (the default) is torch's
styles' all-reduce after o_proj and down_proj (DTensor Partial -> Replicate, NCCL); `symm` shards
those two layers with a Partial output and sums it in a forward hook through torch's symmetric
memory (`SymmAllReduce`: one one-shot kernel reading the peers' buffers over NVLink), for dense and
sparse TP alike. `--breakdown` adds a table that splits each step into its weight GEMMs (a CUDA
graph of the step's linear layers alone, same shapes and kernels), its row-parallel all-reduces
(a graph of them alone) and the rest, and computes from these the ratio sparse TP could reach if
only its GEMMs differed from dense TP's.

    torchrun --nproc_per_node 2 bench/llama_tp.py --allreduce nccl,symm --breakdown --budget 420
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from typing import Any

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
if __package__ in (None, ""):
    sys.path.insert(0, os.path.join(_HERE, ".."))
    sys.path.insert(0, _HERE)

import llama_e2e as e2e  # noqa: E402

from sparsecc.nn import SparseLinear, sparse_plan, sparsify_  # noqa: E402

VARIANTS = ("dense", "sparse", "sparse-w4", "sparse-swiglu", "sparse-w4-swiglu")
ALLREDUCES = ("nccl", "symm")
TAG = "[llama_tp]"
START = time.perf_counter()
RANK = int(os.environ.get("RANK", "0"))


def log(*parts: Any, all_ranks: bool = False) -> None:
    if RANK == 0 or all_ranks:
        print(f"{TAG} {time.perf_counter() - START:6.1f}s r{RANK}", *parts, flush=True)


def llama_config(layers: int, tiny: bool):
    """llama_e2e's config; the tiny one with intermediate 768 (its 688 halves into 344 columns,
    not a multiple of 16 or of w4g128's groups: row-parallel down_proj would be refused)."""
    config = e2e.llama_config(layers, tiny)
    if tiny:
        config.intermediate_size = 768
    return config


def tp_plan(config, fuse: bool, partial_rows: bool = False) -> dict:
    """Megatron's plan for torch's styles; with `fuse`, qkv_proj and gate_up_proj (fuse_llama_'s)
    are FusedColwiseParallel over their parts, for dense and sparse layers alike (sparse_plan
    keeps that style as it is). With `partial_rows` o_proj and down_proj leave their partial sums
    unreduced (output Partial, the local tensor): the caller reduces them (`SymmAllReduce`)."""
    from torch.distributed.tensor import Partial, Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    from sparsecc.nn.parallel import FusedColwiseParallel

    layer = "model.layers.*."
    if fuse:
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        q, kv = config.num_attention_heads * head_dim, config.num_key_value_heads * head_dim
        plan = {layer + "self_attn.qkv_proj": FusedColwiseParallel((q, kv, kv)),
                layer + "mlp.gate_up_proj": FusedColwiseParallel((config.intermediate_size,) * 2)}
    else:
        plan = {layer + f"self_attn.{p}": ColwiseParallel() for p in ("q_proj", "k_proj", "v_proj")}
        plan |= {layer + f"mlp.{p}": ColwiseParallel() for p in ("gate_proj", "up_proj")}
    rows = {"output_layouts": Partial()} if partial_rows else {}
    plan |= {layer + "self_attn.o_proj": RowwiseParallel(**rows), layer + "mlp.down_proj": RowwiseParallel(**rows)}
    plan["lm_head"] = ColwiseParallel(output_layouts=Replicate())  # every rank gets the full logits
    return plan


def build(variant: str, args: argparse.Namespace, mesh, reducer: SymmAllReduce | None = None
          ) -> tuple[torch.nn.Module, list[str]]:
    """The variant's model (sharded over `mesh`, or whole where mesh is None) and table notes;
    with a `reducer`, the row-parallel layers' partial sums are reduced by it (in a forward hook)
    instead of by torch's styles."""
    from torch.distributed.tensor.parallel import parallelize_module

    config = llama_config(args.layers, args.tiny)
    model = e2e.build_pruned(config, args.device, args.seed)
    notes = []
    if args.fuse:
        e2e.fuse_llama_(model)
    if variant.startswith("sparse"):
        w4 = variant.startswith("sparse-w4")
        sparsify_(model, prune=False, quant="w4g128" if w4 else None)
        n = sum(1 for m in model.modules() if isinstance(m, SparseLinear))
        notes.append(f"{n} SparseLinear" + (" (NV24.w4g128)" if w4 else " (NV24)"))
        if variant.endswith("-swiglu"):  # before sharding: FusedColwiseParallel keeps it on each rank's halves
            notes += e2e.swiglu_epilogue_(model)
    if mesh is not None:
        plan = tp_plan(config, args.fuse, partial_rows=reducer is not None)
        model = parallelize_module(model, mesh, sparse_plan(plan) if variant.startswith("sparse") else plan)
        if reducer is not None:
            for layer in model.model.layers:  # after the styles' own hooks: these get the local partial sum
                for row_parallel in (layer.self_attn.o_proj, layer.mlp.down_proj):
                    row_parallel.register_forward_hook(reducer.hook)
            notes.append(f"all-reduce: {reducer.describe()}")
        if args.tune and variant.startswith("sparse") and args.device == "cuda":
            from sparsecc.nn.tuning import tune

            t0 = time.perf_counter()
            tune(model, tokens=tuple(args.batches))  # this rank's shard shapes, into its own cache folder
            notes.append(f"dispatch tuned at M = {', '.join(map(str, args.batches))} "
                         f"({time.perf_counter() - t0:.0f} s, `sparsecc.nn.tuning.tune`)")
        name = "qkv_proj" if args.fuse else "q_proj"
        q = getattr(model.model.layers[0].self_attn, name)
        width = q.out_features if isinstance(q, SparseLinear) else q.weight.to_local().shape[0]
        notes.append(f"{name} {width} rows a rank")
    return model, notes


# ---------------------------------------------------------------------------------------------
# the row-parallel all-reduce through symmetric memory (--allreduce symm)

SYMM_OP = "sparsecc_bench::symm_all_reduce"
_SYMM: dict[str, SymmAllReduce] = {}  # group name -> its reducer, for the custom op's body
_SYMM_OP_DEFINED: list[bool] = []


def _define_symm_op() -> None:
    """`torch.ops.sparsecc_bench.symm_all_reduce(x, group_name)`: a custom op around
    `SymmAllReduce.reduce`, so that torch.compile(fullgraph) keeps it as one opaque call (its fake
    is a new tensor of x's shape): inductor then neither lowers it nor moves the symmetric buffer,
    and a CUDA graph captured around the compiled step records the kernel its body launches."""
    if _SYMM_OP_DEFINED:
        return

    def body(x: torch.Tensor, group_name: str) -> torch.Tensor:
        return _SYMM[group_name].reduce(x)

    op = torch.library.custom_op(SYMM_OP, body, mutates_args=(), schema="(Tensor x, str group_name) -> Tensor")
    op.register_fake(lambda x, group_name: torch.empty_like(x))
    _SYMM_OP_DEFINED.append(True)


class SymmAllReduce:
    """The sum over the TP group of a row-parallel layer's partial outputs through torch's
    symmetric memory (`torch.distributed._symmetric_memory`) instead of NCCL: each rank's buffer is
    mapped into its peers' address space once (`empty` + `rendezvous`, here, outside any graph), and
    one kernel (`symm_mem.one_shot_all_reduce_copy`) copies the local partial sum into it, waits
    at a barrier on the signal pads, reads every peer's buffer over NVLink, adds, and waits again
    (so that the next call may overwrite the buffer).

    torch's symmetric-memory reductions take float32 and bfloat16 only (their
    AT_DISPATCH_FLOAT_AND_BFLOAT16 in CUDASymmetricMemoryOps.cu), and the model is fp16: the partial
    sum goes in as float32 and the sum comes back as fp16. Over 2 ranks that is the fp16 sum NCCL
    computes: rounding a + b to float32, then to fp16, gives the correctly rounded fp16 sum (24
    bits >= 2 x 11 + 2: the double rounding is harmless), and `check_reducer` compares the two.
    The buffer holds `capacity` floats (the prompt's tokens x hidden); a larger tensor is reduced
    by the process group's all-reduce instead. Needs CUDA: the constructor raises where symmetric
    memory is not usable.

        reducer = SymmAllReduce(mesh.get_group(), capacity=16 * 32 * 4096, device=torch.device("cuda", 0))
        o_proj.register_forward_hook(reducer.hook)     # o_proj sharded RowwiseParallel(output_layouts=Partial())
    """

    def __init__(self, group, capacity: int, device: torch.device) -> None:
        if device.type != "cuda":
            raise ValueError(f"--allreduce symm needs CUDA tensors (symmetric memory maps GPU memory between "
                             f"processes), got device {device}")
        # NVLink multicast stays off (the machines' rule; one-shot does not use it anyway)
        os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        import torch.distributed._symmetric_memory as symm_mem

        self.group, self.group_name, self.capacity = group, group.group_name, capacity
        if "TORCH_SYMMMEM" not in os.environ and hasattr(symm_mem, "set_backend"):
            try:  # CUDA's own IPC mapping, no NVSHMEM start-up; kept as is where it cannot be chosen
                symm_mem.set_backend("CUDA")
            except Exception:  # noqa: BLE001 - the default backend then
                pass
        # the NCCL rows share this group: inductor must not lower their all-reduces onto its symmetric
        # memory (`_collective.auto_select`, off by default; kept off here)
        import torch._inductor.config as inductor_config

        if hasattr(getattr(inductor_config, "_collective", None), "auto_select"):
            inductor_config._collective.auto_select = False
        enable = getattr(symm_mem, "enable_symm_mem_for_group", None)  # older torch needs it; newer: deprecated
        if enable is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                enable(self.group_name)
        self.buffer = symm_mem.empty(capacity, dtype=torch.float32, device=device)
        self.handle = symm_mem.rendezvous(self.buffer, self.group_name)  # collective: every rank of the group
        # one_shot_all_reduce_copy copies the local input in its own kernel; without it, copy_ first
        self.copy_in_kernel = hasattr(torch.ops.symm_mem, "one_shot_all_reduce_copy")
        backend = getattr(symm_mem, "get_backend", None)
        self.backend = (backend(device) if backend is not None else None) or "default"
        _SYMM[self.group_name] = self
        _define_symm_op()

    def describe(self) -> str:
        op = "one_shot_all_reduce_copy" if self.copy_in_kernel else "copy_ + one_shot_all_reduce"
        return f"symmetric memory ({self.backend} backend), {op} in float32 ({self.group.size()} ranks)"

    def reduce(self, x: torch.Tensor) -> torch.Tensor:
        """The custom op's body: the sum of x (float32, contiguous) over the group."""
        flat = x.reshape(-1)
        buf = self.buffer[: flat.numel()]  # the kernel reduces the symmetric tensor's numel: exactly x's
        if self.copy_in_kernel:
            out = torch.ops.symm_mem.one_shot_all_reduce_copy(buf, flat, "sum", self.group_name)
        else:
            buf.copy_(flat)
            out = torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", self.group_name)
        return out.view(x.shape)

    def __call__(self, y: torch.Tensor) -> torch.Tensor:
        """The sum of y (this rank's partial output) over the group, in y's dtype."""
        if y.numel() > self.capacity:  # not in decode; the process group's all-reduce, as torch's styles
            c10d = torch.ops._c10d_functional
            return c10d.wait_tensor(c10d.all_reduce(y.contiguous(), "sum", self.group_name))
        return torch.ops.sparsecc_bench.symm_all_reduce(y.float().contiguous(), self.group_name).to(y.dtype)

    def hook(self, module: torch.nn.Module, inputs: tuple, y: torch.Tensor) -> torch.Tensor:
        return self(y)


def make_reducer(args: argparse.Namespace, mesh, ranks: Ranks) -> SymmAllReduce | None:
    """The run's SymmAllReduce (sized for the largest prompt) where `--allreduce` asks for symm;
    every rank builds it (a collective). A failure on any rank is a RuntimeError naming it."""
    if "symm" not in args.allreduce:
        return None
    config = llama_config(args.layers, args.tiny)
    capacity = max(args.batches) * max(args.prompt, 1) * config.hidden_size
    reducer, err = None, None
    try:
        reducer = SymmAllReduce(mesh.get_group(), capacity, torch.device(args.device, torch.cuda.current_device()))
    except Exception as e:  # noqa: BLE001 - one line for the user, the traceback on stderr
        err = e2e._short(e, 400)
        traceback.print_exc()
    errors = ranks.gather(err)
    if any(errors):
        first = next(e for e in errors if e)
        raise RuntimeError(f"--allreduce symm: torch {torch.__version__}'s symmetric memory is not usable here "
                           f"(rank {errors.index(first)}: {first}); run --allreduce nccl")
    check_reducer(reducer, config.hidden_size, max(args.batches), ranks)
    return reducer


def check_reducer(reducer: SymmAllReduce, hidden: int, tokens: int, ranks: Ranks) -> None:
    """The symmetric-memory sum of random fp16 partials (eager) against the functional all-reduce's
    (NCCL) on every rank, before anything is measured: equal over 2 ranks (one fp16 rounding of an
    exact sum either way), within fp16 rounding over more. A RuntimeError (an internal error:
    the reducer is wrong, not the user's input) otherwise."""
    gen = torch.Generator(device="cuda").manual_seed(1234 + ranks.dist.get_rank())
    y = torch.randn(tokens, 1, hidden, generator=gen, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        got, want = reducer(y), functional_all_reduce(reducer.group_name)(y)
    err = (got.float() - want.float()).abs().max().item()
    worst = max(ranks.gather(err))
    bound = 0.0 if reducer.group.size() == 2 else 1e-2 * want.float().abs().max().item()
    if not worst <= bound:
        raise RuntimeError(f"internal error: the symmetric-memory all-reduce differs from NCCL's by {worst:.3g} "
                           f"(allowed {bound:.3g}) on {tokens} x {hidden} fp16")
    log(f"symm all-reduce checked against NCCL on {tokens} x {hidden} fp16: max difference {worst:.3g}")


# ---------------------------------------------------------------------------------------------
# agreement between ranks (a CPU gloo group: it works when CUDA does not)


class Ranks:
    def __init__(self, world: int) -> None:
        import torch.distributed as dist

        self.dist, self.world = dist, world
        self.cpu = dist.new_group(backend="gloo") if dist.get_backend() != "gloo" else None

    def all_ok(self, ok: bool) -> bool:
        flag = torch.tensor([0 if ok else 1], dtype=torch.int32)
        self.dist.all_reduce(flag, group=self.cpu)
        return int(flag.item()) == 0

    def gather(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world
        self.dist.all_gather_object(out, obj, group=self.cpu)
        return out

    def barrier(self) -> None:
        self.dist.barrier(group=self.cpu)


def decode_args(args: argparse.Namespace) -> argparse.Namespace:
    """The fields llama_e2e.measure_decode reads."""
    return argparse.Namespace(device=args.device, prompt=args.prompt, steps=args.steps, seed=args.seed,
                              reps=args.reps)


def measure(model, batch: int, args: argparse.Namespace, ranks: Ranks | None, want_compile: bool) -> dict:
    """One decode cell: compiled + graph, else eager + graph, else eager without a graph (should
    capturing the collectives be what fails); every rank tries the same mode, and all of them
    move on together when any failed."""
    modes = [e2e.Mode(want_compile, args.graphs)]
    if want_compile:
        modes.append(e2e.Mode(False, args.graphs))
    if args.graphs:
        modes.append(e2e.Mode(False, False))
    tried = []
    for mode in modes:
        t0 = time.perf_counter()
        try:
            out, err = e2e.measure_decode(model, batch, decode_args(args), mode), None
        except Exception as e:  # noqa: BLE001 - one line in the table, the traceback on stderr
            out, err = None, e2e._short(e)
            log(f"b={batch} [{mode}] failed: {err}", all_ranks=True)
            traceback.print_exc(limit=-6)
            e2e._recover(args.device)
        ok = ranks.all_ok(out is not None) if ranks else out is not None
        if not ok:
            tried.append(f"{mode}: {err or 'failed on another rank'}")
            continue
        seconds = batch * args.steps / out["tok_s"]
        if ranks:  # the slowest rank's time sets the pace
            seconds = max(ranks.gather(seconds))
        return {"tok_s": batch * args.steps / seconds, "ms_per_step": seconds / args.steps * 1e3,
                "mode": str(mode), "warm_s": out["warm_s"], "tried": tried, "logits": out["logits"],
                "cell_s": time.perf_counter() - t0}
    return {"tried": tried}


def tp_row(variant: str, allreduce: str) -> str:
    """The table's row of a TP variant: `sparse-tp` (torch's NCCL all-reduce), `sparse-tp+symm`."""
    return f"{variant}-tp" + ("" if allreduce == "nccl" else f"+{allreduce}")


# ---------------------------------------------------------------------------------------------
# --breakdown: one step's weight GEMMs alone and its all-reduces alone


def weight_gemms(model: torch.nn.Module) -> list[tuple[Any, int]]:
    """(run, K) of every weight layer one decode step runs (q/k/v or qkv, o, gate/up, down in each
    layer; lm_head), as this rank runs it: the local GEMM of a sharded layer without the styles'
    hooks (no redistribution, no all-reduce), the same kernel the step launches; K is its input
    width."""
    from torch.distributed.tensor import DTensor

    def local(t: torch.Tensor | None) -> torch.Tensor | None:
        return t.to_local() if isinstance(t, DTensor) else t

    out = []
    for m in model.modules():
        if isinstance(m, SparseLinear):  # forward, not __call__: the layer's kernel, not its hooks
            out.append((lambda x, m=m: SparseLinear.forward(m, x), m.in_features))
        elif isinstance(m, torch.nn.Linear):
            w, b = local(m.weight), local(m.bias)
            out.append((lambda x, w=w, b=b: torch.nn.functional.linear(x, w, b), w.shape[1]))
    return out


def graph_ms(fn, args: argparse.Namespace, inner: int = 10) -> float:
    """Milliseconds one call of fn takes, captured in a CUDA graph on the GPU (eager on the CPU):
    median over `reps` timings of `inner` replays each."""
    import statistics

    run, _ = e2e.prepare(fn, e2e.Mode(False, args.graphs), args.device, warmup=2)
    inner = inner if args.device == "cuda" else 1

    def replays() -> None:
        for _ in range(inner):
            run()

    times = [e2e.timed(replays, args.device) / inner for _ in range(max(3, args.reps))]
    return statistics.median(times) * 1e3


def functional_all_reduce(group_name: str):
    """y -> the sum of y over the group by torch's functional all_reduce (what the styles'
    DTensor redistribution from Partial to Replicate runs: NCCL on GPUs)."""
    c10d = torch.ops._c10d_functional

    def reduce(y: torch.Tensor) -> torch.Tensor:
        return c10d.wait_tensor(c10d.all_reduce(y, "sum", group_name))

    return reduce


def breakdown(model: torch.nn.Module, batch: int, args: argparse.Namespace, ranks: Ranks | None,
              reduce=None) -> dict:  # noqa: ANN001
    """One decode step's parts at `batch` tokens, in ms (the slowest rank's): `gemm`, the step's
    weight GEMMs alone (`weight_gemms`, back to back in one graph, on random inputs of the step's
    shapes); with `reduce` (TP: the all-reduce the step's row-parallel layers run, on every rank
    of `ranks`), `allreduce`, the step's 2 a layer of them alone (batch x hidden fp16).
    {"failed": why} where a rank failed."""
    out, err = {}, None
    try:
        with torch.no_grad():
            gemms = weight_gemms(model)
            gen = torch.Generator(device=args.device).manual_seed(args.seed)
            xs = {k: torch.randn(batch, 1, k, generator=gen, device=args.device, dtype=torch.float16)
                  for k in sorted({k for _, k in gemms})}

            def run_gemms() -> None:
                for fn, k in gemms:
                    fn(xs[k])

            out["gemm"], out["gemms"] = graph_ms(run_gemms, args), len(gemms)
            if reduce is not None:
                x = torch.randn(batch, 1, model.config.hidden_size, generator=gen, device=args.device,
                                dtype=torch.float16)
                count = 2 * len(model.model.layers)

                def run_reduces() -> None:
                    for _ in range(count):
                        reduce(x)

                out["allreduce"], out["allreduces"] = graph_ms(run_reduces, args), count
    except Exception as e:  # noqa: BLE001 - a note in the table, the traceback on stderr
        err = e2e._short(e)
        traceback.print_exc()
        e2e._recover(args.device)
    if ranks is None:
        return out if err is None else {"failed": err}
    everyone = ranks.gather(out if err is None else {"failed": err})
    failed = [f"rank {r}: {o['failed']}" for r, o in enumerate(everyone) if "failed" in o]
    if failed:
        return {"failed": "; ".join(failed)}
    return {k: max(o[k] for o in everyone) for k in out}


# ---------------------------------------------------------------------------------------------
# the table


def diff(a: torch.Tensor, b: torch.Tensor) -> str:
    d = (a.double() - b.double())
    rel = (d.norm() / b.double().norm().clamp_min(1e-30)).item()
    top1 = (a.argmax(-1) == b.argmax(-1)).double().mean().item()
    return f"max {d.abs().max().item():.3g}, rel {rel:.2e}, top-1 {100 * top1:.0f}%"


def table(cells: dict, notes: dict, args: argparse.Namespace, world: int, device_name: str) -> str:
    import transformers

    cfg = llama_config(args.layers, args.tiny)
    first_mode = str(e2e.Mode(args.compile, args.graphs))
    rows = [tp_row(x, a) for a in args.allreduce for x in args.variants] + [f"{x}-1gpu" for x in args.variants]
    rows = [r for r in rows if r in notes]
    ranks_are = "GPUs" if args.device == "cuda" else "CPU processes"
    footnotes: list[str] = []

    def cell(row: str, b: int) -> str:
        c = cells.get((row, b))
        if c is None:
            return "—"
        if "tok_s" not in c:
            footnotes.extend([f"{row} b={b}: {why}" for why in c["tried"]] or [f"{row} b={b}: not run"])
            return c.get("skipped", "failed")
        footnotes.extend(f"{row} b={b}: {why} (then {c['mode']})" for why in c["tried"])
        return f"{c['tok_s']:,.0f}" + ("" if c["mode"] == first_mode else f" ({c['mode']})")

    def ratio(num: str, den: str, b: int) -> str:
        a, d = cells.get((num, b), {}), cells.get((den, b), {})
        if not (a.get("tok_s") and d.get("tok_s")):
            return "—"
        return f"{a['tok_s'] / d['tok_s']:.2f}×" + ("†" if a["mode"] != d["mode"] else "")

    def logits_vs(row: str, ref: str) -> str:
        out = [f"b={b}: {diff(cells[(row, b)]['logits'], cells[(ref, b)]['logits'])}" for b in args.batches
               if "logits" in cells.get((row, b), {}) and "logits" in cells.get((ref, b), {})]
        return "; ".join(out) or "—"

    lines = [
        f"# Llama tensor-parallel decode: sparse TP vs dense TP over {world} {ranks_are}, {datetime.date.today().isoformat()}",
        "",
        f"- Device: {world} × {device_name}, {'NCCL' if args.device == 'cuda' else 'gloo'}; torch {torch.__version__}, "
        f"transformers {transformers.__version__}, python {platform.python_version()}.",
        f"- Model: transformers LlamaForCausalLM, {'tiny config' if args.tiny else 'Llama-2-7B-shaped layers'}: hidden "
        f"{cfg.hidden_size}, intermediate {cfg.intermediate_size}, {cfg.num_attention_heads} heads, vocab "
        f"{cfg.vocab_size}, {cfg.num_hidden_layers} layers; fp16, random weights (seed {args.seed}) pruned 2:4 by "
        "magnitude in every Linear (q/k/v/o, gate/up/down, lm_head).",
        "- TP plan (Megatron's): q/k/v, gate/up column-parallel; o_proj, down_proj row-parallel (all-reduce); lm_head "
        "column-parallel, logits gathered; embeddings and norms replicated. dense: torch's ColwiseParallel / "
        "RowwiseParallel (DTensor weights); sparse: `sparsify_(prune=False)` then `sparse_plan(plan)` "
        "(SparseColwiseParallel / SparseRowwiseParallel: each rank's shard compressed on its own).",
        "- Projections: " + ("q/k/v fused into one layer (qkv_proj) and gate/up into one (gate_up_proj) in every "
                             "variant, sharded with FusedColwiseParallel (each rank holds its own q, k, v rows "
                             "contiguous; dense: DTensor weights, sparse: each rank's shard compressed on its own): "
                             "4 weight launches a layer (`--fuse on`)." if args.fuse else
                             "separate q, k, v, gate, up layers: 7 weight launches a layer (`--fuse off`)."),
        f"- Timing: llama_e2e's decode: eager prompt of {args.prompt} tokens into a StaticCache, then {args.steps} "
        f"one-token steps, each {first_mode.replace('compile', 'torch.compile(fullgraph=True)').replace('+graph', ' in one CUDA graph (collectives included)')}"
        f", median of {args.reps} runs, the slowest rank's time; tokens/s = batch × steps / time. A cell marked "
        "(eager+graph) ran without torch.compile (it failed, or the time budget left no room; see below), (eager) "
        "without the CUDA graph too; † the two numbers of a ratio ran in different modes.",
    ]
    if "symm" in args.allreduce:
        lines.append("- All-reduce: rows without a suffix sum the row-parallel partial outputs as torch's RowwiseParallel "
                     "does (DTensor Partial -> Replicate: functional all_reduce, NCCL); *+symm rows shard o_proj and "
                     "down_proj with output Partial and sum in a forward hook through torch's symmetric memory "
                     "(`SymmAllReduce`: the partial sum cast to float32, one `one_shot_all_reduce_copy` kernel, cast "
                     "back to fp16; torch's symmetric-memory reductions take float32 and bfloat16 only), dense and "
                     "sparse alike. The lm_head's all-gather stays NCCL in both.")
    if any(r.endswith("-1gpu") for r in rows):
        lines.append("- *-1gpu: the unsharded model on rank 0's device alone, same steps (the other ranks idle).")
    titles = [f"decode b={b} tok/s" for b in args.batches]
    lines += ["", "| variant | " + " | ".join(titles) + " | logits | notes |", "|---" * (len(titles) + 3) + "|"]
    for row in rows:
        # each row against its own unsharded model where that ran, and the TP rows against dense TP
        # (sparse-w4's difference to dense is its quantization error); a +symm row against its NCCL row
        base, _, allreduce = row.partition("+")
        variant, single = base.rsplit("-", 1)
        refs = [base] if allreduce else []
        refs += [f"{variant}-1gpu"] if single == "tp" else []
        if single == "tp" and variant != "dense":
            refs.append(tp_row("dense", allreduce or "nccl"))
        elif variant != "dense":
            refs.append("dense-1gpu")
        refs = [r for r in refs if r in notes]
        lg = "; ".join(f"vs {r}: {logits_vs(row, r)}" for r in refs) or "reference"
        lines.append(f"| {row} | " + " | ".join(cell(row, b) for b in args.batches) + f" | {lg} | "
                     + "; ".join(notes[row]) + " |")
    for num, den in (("sparse-tp", "dense-tp"), ("sparse-w4-tp", "dense-tp"), ("sparse-swiglu-tp", "dense-tp"),
                     ("sparse-w4-swiglu-tp", "dense-tp"), ("sparse-1gpu", "dense-1gpu"),
                     ("sparse-swiglu-1gpu", "dense-1gpu"), ("dense-tp", "dense-1gpu"), ("sparse-tp", "sparse-1gpu"),
                     ("sparse-swiglu-tp", "sparse-tp")):
        if num in notes and den in notes:
            lines.append(f"| {num} ÷ {den} | " + " | ".join(ratio(num, den, b) for b in args.batches) + " | | |")
    for allreduce in [a for a in args.allreduce if a != "nccl"]:
        pairs = [(tp_row(v, allreduce), tp_row("dense", allreduce)) for v in args.variants if v != "dense"]
        pairs += [(tp_row(v, allreduce), tp_row(v, "nccl")) for v in args.variants]
        for num, den in pairs:
            if num in notes and den in notes:
                lines.append(f"| {num} ÷ {den} | " + " | ".join(ratio(num, den, b) for b in args.batches) + " | | |")
    if args.breakdown:
        lines += breakdown_table(cells, rows, args)
    if footnotes:
        lines += ["", "Notes on cells:", ""] + [f"- {f}" for f in footnotes]
    return "\n".join(lines) + "\n"


def breakdown_table(cells: dict, rows: list[str], args: argparse.Namespace) -> list[str]:
    """--breakdown's table (each cell's step split into GEMM / all-reduce / rest) and the caps it
    gives for each sparse row against the dense row of the same all-reduce (or of one GPU)."""
    lines = [
        "", "## Step breakdown (`--breakdown`)", "",
        "Each decode step, in ms (the slowest rank's), split in three: **GEMM**, the step's weight layers alone "
        "(every Linear / SparseLinear of the model, this rank's shard, its own kernel without the styles' hooks, "
        "at the step's shapes on random inputs, back to back in one CUDA graph on GPUs); **all-reduce**, the "
        "step's row-parallel all-reduces alone (2 a layer, batch × hidden fp16, by the row's path, in one graph); "
        "**rest** = step − GEMM − all-reduce: attention, norms, RoPE, the cache update, the lm_head's gather, "
        "launch gaps, and whatever the two parts cost more inside the step than alone (an all-reduce there also "
        "waits for the slower rank). **cap**: the ratio sparse would reach over dense if it differed from it only "
        "by its GEMMs, dense step / (dense step − dense GEMM + sparse GEMM); **zero-GEMM cap**: dense step / "
        "(dense step − dense GEMM), GEMMs of no time at all.",
        "", "| row | batch | mode | step ms | GEMM ms | all-reduce ms | rest ms | parts |", "|---" * 8 + "|"]
    for row in rows:
        for b in args.batches:
            c = cells.get((row, b), {})
            if "tok_s" not in c:
                continue
            bd, step = c.get("breakdown", {}), c["ms_per_step"]
            if "gemm" not in bd:
                lines.append(f"| {row} | {b} | {c['mode']} | {step:.3f} | — | — | — | {bd.get('failed', 'not measured')} |")
                continue
            ar = bd.get("allreduce")
            parts = f"{bd['gemms']} GEMMs" + (f", {bd['allreduces']} all-reduces" if ar is not None else "")
            lines.append(f"| {row} | {b} | {c['mode']} | {step:.3f} | {bd['gemm']:.3f} | "
                         + (f"{ar:.3f}" if ar is not None else "—") + f" | {step - bd['gemm'] - (ar or 0):.3f} | {parts} |")
    pairs = [(tp_row(v, a), tp_row("dense", a)) for a in args.allreduce for v in args.variants if v != "dense"]
    pairs += [(f"{v}-1gpu", "dense-1gpu") for v in args.variants if v != "dense"]
    caps = []
    for num, den in pairs:
        for b in args.batches:
            sp, d = cells.get((num, b), {}), cells.get((den, b), {})
            if "gemm" not in sp.get("breakdown", {}) or "gemm" not in d.get("breakdown", {}):
                continue
            ds, dg, sg = d["ms_per_step"], d["breakdown"]["gemm"], sp["breakdown"]["gemm"]
            mixed = "†" if sp["mode"] != d["mode"] else ""

            cap, zero = (f"{ds / x:.2f}×" if x > 0 else "—" for x in (ds - dg + sg, ds - dg))
            caps.append(f"| {num} ÷ {den} | {b} | {ds / sp['ms_per_step']:.2f}×{mixed} | {cap} | {zero} | "
                        f"{dg / sg:.2f}× |")
    if caps:
        lines += ["", "| sparse ÷ dense | batch | measured | cap | zero-GEMM cap | GEMM dense ÷ sparse |",
                  "|---" * 6 + "|"] + caps
    return lines


_MOVED: set[str] = set()  # tables of an earlier run already moved to history/ by this one


def write(text: str, out: str | None, device_name: str, world: int) -> str | None:
    """Write the table (again: after every measurement); a folder's llama-tp<N>-current-<GPU>.md
    of an earlier run first moves to history/, named by its date, as llama_e2e's does."""
    if not out:
        return None
    if out.endswith(".md"):
        path = out
    else:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in device_name.replace(" ", "_"))
        path = os.path.join(out, f"llama-tp{world}-current-{safe}.md")
        if os.path.exists(path) and path not in _MOVED:
            with open(path) as f:
                date = f.readline().rsplit(",", 1)[-1].strip() or "undated"
            os.makedirs(os.path.join(out, "history"), exist_ok=True)
            stem, n = os.path.join(out, "history", f"llama-tp{world}-{date}-{safe}"), 1
            target = f"{stem}.md"
            while os.path.exists(target):
                n += 1
                target = f"{stem}-{n}.md"
            os.replace(path, target)
        _MOVED.add(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    return path


# ---------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", RANK))
    if args.tune:  # each rank tunes its own shards: a cache folder each, so no two write one file
        from sparsecc.runtime.cache import cache_dir

        os.environ["SPARSECC_CACHE_DIR"] = str(cache_dir() / f"tp-rank{RANK}")
    if args.device == "cuda":
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local),
                                timeout=datetime.timedelta(seconds=args.budget + 60))
    else:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.budget + 60))
    for knob in ("recompile_limit", "cache_size_limit"):  # b=1 and b=16 are distinct graphs
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, max(64, getattr(torch._dynamo.config, knob)))
    ranks = Ranks(world)
    mesh = init_device_mesh(args.device, (world,))
    device_name = e2e.device_name(args.device)
    log(f"{world} ranks on {device_name}; variants {args.variants}; batches {args.batches}; "
        f"compile {args.compile}, graphs {args.graphs}; budget {args.budget} s")
    cells: dict = {}
    notes: dict = {}
    path = None
    compiled: list[float] = []  # seconds of each compiled cell (warm-up and compile included)

    def compile_s() -> float:  # one compiled cell's cost: a guess until one is measured
        return max(compiled, default=60.0)

    def left() -> float:
        return args.budget - (time.perf_counter() - START)

    def publish() -> None:
        nonlocal path
        if RANK != 0:
            return
        try:  # a bug in the table must not stop the other ranks' collectives
            path = write(table(cells, notes, args, world, device_name), args.out, device_name, world)
        except Exception as e:  # noqa: BLE001
            log(f"could not write the table: {e2e._short(e)}")
            traceback.print_exc()

    try:
        reducer = make_reducer(args, mesh, ranks)
    except RuntimeError as e:
        log(str(e), all_ranks=True)
        dist.destroy_process_group()
        return 2
    models = {}  # row -> (model, all-reduce)
    for allreduce in args.allreduce:
        for variant in args.variants:
            row, t0 = tp_row(variant, allreduce), time.perf_counter()
            try:
                model, notes[row] = build(variant, args, mesh, reducer if allreduce == "symm" else None)
                models[row] = (model, allreduce)
                err = None
            except Exception as e:  # noqa: BLE001
                err = e2e._short(e)
                traceback.print_exc()
            if not ranks.all_ok(err is None):
                notes[row] = [f"could not build: {err or 'failed on another rank'}"]
                models.pop(row, None)
            log(f"{row} built in {time.perf_counter() - t0:.1f} s: {'; '.join(notes[row])}")
    publish()
    for batch in args.batches:
        # one mode for the batch's cells where the budget allows: compile only if all of them fit
        fits = left() > compile_s() * 1.15 * len(models) + 10
        want_compile = args.compile and fits
        for row, (model, allreduce) in models.items():
            if left() < 10:
                cells[(row, batch)] = {"tried": [], "skipped": "not run (budget)"}
                log(f"{row} b={batch}: skipped, {left():.0f} s of the budget left")
                continue
            c = measure(model, batch, args, ranks, want_compile)
            if args.compile and not want_compile:
                c.setdefault("tried", []).insert(0, f"not compiled: {left():.0f} s of the budget left")
            cells[(row, batch)] = c
            if c.get("mode", "").startswith("compile"):
                compiled.append(c["cell_s"])
            log(f"{row} b={batch}: " + (f"{c['tok_s']:,.0f} tok/s [{c['mode']}] ({c['ms_per_step']:.2f} ms a step, "
                                        f"{c['cell_s']:.1f} s)" if "tok_s" in c else f"failed: {c['tried']}"))
            if args.breakdown and "tok_s" in c:
                reduce = reducer if allreduce == "symm" else functional_all_reduce(mesh.get_group().group_name)
                c["breakdown"] = breakdown(model, batch, args, ranks, reduce)
                log(f"{row} b={batch} breakdown: {c['breakdown']}")
            publish()
    models.clear()
    gc.collect()
    e2e._recover(args.device)

    if args.single:
        if RANK == 0:
            for variant in args.variants:
                row = f"{variant}-1gpu"
                try:
                    model, notes[row] = build(variant, args, None)
                except Exception as e:  # noqa: BLE001
                    notes[row] = [f"could not build: {e2e._short(e)}"]
                    continue
                for batch in args.batches:
                    if left() < 10:
                        cells[(row, batch)] = {"tried": [], "skipped": "not run (budget)"}
                        continue
                    want = args.compile and left() > compile_s() * 1.15 + 10
                    cells[(row, batch)] = c = measure(model, batch, args, None, want)
                    log(f"{row} b={batch}: {c.get('tok_s', 'failed')}")
                    if args.breakdown and "tok_s" in c:
                        c["breakdown"] = breakdown(model, batch, args, None)
                    publish()
                model = None
                gc.collect()
                e2e._recover(args.device)
        ranks.barrier()

    status = 0
    if RANK == 0:
        publish()
        text = table(cells, notes, args, world, device_name)
        print(text, flush=True)
        if path:
            log(f"wrote {path}")
        if args.cpu_check:
            status = check(cells, args)
    dist.destroy_process_group()
    return status


def check(cells: dict, args: argparse.Namespace) -> int:
    """--cpu-check: sparse TP's logits must be the unsharded sparse model's within fp16 rounding
    (and dense TP's the unsharded dense model's)."""
    bad = []
    for variant in args.variants:
        for batch in args.batches:
            a, b = cells.get((f"{variant}-tp", batch), {}), cells.get((f"{variant}-1gpu", batch), {})
            if "logits" not in a or "logits" not in b:
                bad.append(f"{variant} b={batch}: no logits (tp: {a.get('tried')}, 1gpu: {b.get('tried')})")
                continue
            la, lb = a["logits"].double(), b["logits"].double()
            err, scale = (la - lb).abs().max().item(), lb.abs().max().item()
            if not (torch.isfinite(la).all() and err <= 2e-2 * max(scale, 1.0) and scale > 0):
                bad.append(f"{variant} b={batch}: TP logits differ from the unsharded model's by {err:.3g} "
                           f"(max |logit| {scale:.3g})")
    for line in bad:
        log(f"CHECK FAILED: {line}")
    if not bad:
        log("check passed: the TP logits match the unsharded models'")
    return 1 if bad else 0


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    """Without torchrun: start `--nproc` ranks of this script (torchrun's environment), wait for
    them (a run over budget + 90 s is killed), return rank 0's status."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, WORLD_SIZE=str(args.nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if args.device == "cpu":
        env.setdefault("OMP_NUM_THREADS", "1")
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(args.nproc)]
    deadline = time.monotonic() + args.budget + 90
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            codes.append(None)
    for p in procs:
        if p.poll() is None:
            p.kill()
    if any(c != 0 for c in codes):
        print(f"{TAG} rank exit codes {codes}", flush=True)
    return codes[0] if codes[0] is not None else 124


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=8, help="decoder layers of the 7B-shaped model (default 8)")
    p.add_argument("--variants", default="dense,sparse", help=f"comma-separated subset of {','.join(VARIANTS)}")
    p.add_argument("--batches", default="1,16", help="decode batch sizes (default 1,16)")
    p.add_argument("--prompt", type=int, default=None, help="prompt tokens (default 32; tiny 8)")
    p.add_argument("--steps", type=int, default=None, help="timed decode steps a run (default 128; tiny 4)")
    p.add_argument("--reps", type=int, default=None, help="timed runs a cell (default 5; tiny 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compile", choices=("on", "off"), default=None, help="torch.compile each step (default: on CUDA)")
    p.add_argument("--fuse", choices=("on", "off"), default="on",
                   help="q/k/v and gate/up as one fused layer each, dense and sparse alike (default on; off: "
                        "separate projections, as the tables before 2026-11-26)")
    p.add_argument("--single", action="store_true", help="also the unsharded models on rank 0, and their logits")
    p.add_argument("--allreduce", default="nccl",
                   help="the row-parallel layers' all-reduce, comma-separated to measure several in one run: nccl "
                        "(torch's styles: DTensor Partial -> Replicate; the default), symm (torch's symmetric memory, "
                        "one-shot; CUDA only)")
    p.add_argument("--breakdown", action="store_true",
                   help="also time each step's weight GEMMs alone and its all-reduces alone (a second table, with "
                        "the cap sparse TP could reach from its GEMMs)")
    p.add_argument("--tune", action="store_true",
                   help="tune the sparse layers' dispatch (tile configs, split-K) for each rank's shard shapes at "
                        "the decode batch sizes before measuring (`sparsecc.nn.tuning.tune`)")
    p.add_argument("--budget", type=int, default=210, help="seconds for the whole run (default 210)")
    p.add_argument("--cpu-check", action="store_true",
                   help="gloo on the CPU, tiny config, eager, --single: checks the TP path end to end")
    p.add_argument("--nproc", type=int, default=2, help="ranks to start when not run under torchrun (default 2)")
    p.add_argument("--out", default=None, help="a .md file, or a folder for llama-tp<N>-current-<GPU>.md")
    args = p.parse_args(argv)
    args.tiny = args.cpu_check
    args.fuse = args.fuse == "on"
    args.device = "cpu" if args.cpu_check else "cuda"
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("no CUDA device: run on a multi-GPU machine, or --cpu-check")
    args.single = args.single or args.cpu_check
    args.prompt = args.prompt if args.prompt is not None else (8 if args.tiny else 32)
    args.steps = args.steps if args.steps is not None else (4 if args.tiny else 128)
    args.reps = max(1, args.reps if args.reps is not None else (1 if args.tiny else 5))
    args.compile = (args.compile or ("off" if args.device == "cpu" else "on")) == "on"
    args.graphs = args.device == "cuda"
    args.batches = [int(b) for b in args.batches.split(",") if b]
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variants {unknown}; choose from {VARIANTS}")
    args.allreduce = list(dict.fromkeys(a.strip() for a in args.allreduce.split(",") if a.strip()))
    unknown = [a for a in args.allreduce if a not in ALLREDUCES]
    if unknown or not args.allreduce:
        p.error(f"--allreduce: unknown {unknown or 'empty list'}; choose from {','.join(ALLREDUCES)}")
    if "symm" in args.allreduce and args.device != "cuda":
        p.error("--allreduce symm: torch's symmetric memory is CUDA-only (it maps each GPU's buffer into its peers'), "
                "and --cpu-check runs gloo on the CPU; use --allreduce nccl there")
    if not args.fuse and any(v.endswith("-swiglu") for v in args.variants):
        p.error("the -swiglu variants put the SwiGLU in the fused gate_up layer's epilogue: they need --fuse on")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if "RANK" not in os.environ:
        return launch(args, argv)

    def expire() -> None:  # a hung collective must not hold the machine: the table so far stays
        log(f"watchdog: past the budget + 60 s ({args.budget + 60} s); exiting", all_ranks=True)
        os._exit(3)

    timer = threading.Timer(args.budget + 60, expire)
    timer.daemon = True
    timer.start()
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
