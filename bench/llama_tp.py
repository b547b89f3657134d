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
from typing import Any

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
if __package__ in (None, ""):
    sys.path.insert(0, os.path.join(_HERE, ".."))
    sys.path.insert(0, _HERE)

import llama_e2e as e2e  # noqa: E402

from sparsecc.nn import SparseLinear, sparse_plan, sparsify_  # noqa: E402

VARIANTS = ("dense", "sparse", "sparse-w4", "sparse-swiglu", "sparse-w4-swiglu")
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


def tp_plan(config, fuse: bool) -> dict:
    """Megatron's plan for torch's styles; with `fuse`, qkv_proj and gate_up_proj (fuse_llama_'s)
    are FusedColwiseParallel over their parts, for dense and sparse layers alike (sparse_plan
    keeps that style as it is)."""
    from torch.distributed.tensor import Replicate
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
    plan |= {layer + "self_attn.o_proj": RowwiseParallel(), layer + "mlp.down_proj": RowwiseParallel()}
    plan["lm_head"] = ColwiseParallel(output_layouts=Replicate())  # every rank gets the full logits
    return plan


def build(variant: str, args: argparse.Namespace, mesh) -> tuple[torch.nn.Module, list[str]]:
    """The variant's model (sharded over `mesh`, or whole where mesh is None) and table notes."""
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
        plan = tp_plan(config, args.fuse)
        model = parallelize_module(model, mesh, sparse_plan(plan) if variant.startswith("sparse") else plan)
        name = "qkv_proj" if args.fuse else "q_proj"
        q = getattr(model.model.layers[0].self_attn, name)
        width = q.out_features if isinstance(q, SparseLinear) else q.weight.to_local().shape[0]
        notes.append(f"{name} {width} rows a rank")
    return model, notes


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
    rows = [v for v in [f"{x}-tp" for x in args.variants] + [f"{x}-1gpu" for x in args.variants] if v in notes]
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
    if any(r.endswith("-1gpu") for r in rows):
        lines.append("- *-1gpu: the unsharded model on rank 0's device alone, same steps (the other ranks idle).")
    titles = [f"decode b={b} tok/s" for b in args.batches]
    lines += ["", "| variant | " + " | ".join(titles) + " | logits | notes |", "|---" * (len(titles) + 3) + "|"]
    for row in rows:
        # each row against its own unsharded model where that ran, and the TP rows against dense TP
        # (sparse-w4's difference to dense is its quantization error)
        variant, single = row.rsplit("-", 1)
        refs = [f"{variant}-1gpu"] if single == "tp" else []
        refs += ["dense-tp"] if single == "tp" and variant != "dense" else ["dense-1gpu"] if variant != "dense" else []
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
    if footnotes:
        lines += ["", "Notes on cells:", ""] + [f"- {f}" for f in footnotes]
    return "\n".join(lines) + "\n"


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

    models = {}
    for variant in args.variants:
        t0 = time.perf_counter()
        try:
            models[variant], notes[f"{variant}-tp"] = build(variant, args, mesh)
            err = None
        except Exception as e:  # noqa: BLE001
            err = e2e._short(e)
            traceback.print_exc()
        if not ranks.all_ok(err is None):
            notes[f"{variant}-tp"] = [f"could not build: {err or 'failed on another rank'}"]
            models.pop(variant, None)
        log(f"{variant}-tp built in {time.perf_counter() - t0:.1f} s: {'; '.join(notes[f'{variant}-tp'])}")
    publish()
    for batch in args.batches:
        # one mode for the batch's cells where the budget allows: compile only if all of them fit
        fits = left() > compile_s() * 1.15 * len(models) + 10
        want_compile = args.compile and fits
        for variant, model in models.items():
            row = f"{variant}-tp"
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
                    cells[(row, batch)] = measure(model, batch, args, None, want)
                    log(f"{row} b={batch}: {cells[(row, batch)].get('tok_s', 'failed')}")
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
