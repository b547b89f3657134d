"""End to end: a Llama-architecture decoder (transformers' LlamaForCausalLM built from a config,
random weights, nothing downloaded) with every linear layer 2:4 sparse — dense vs sparsecc vs
PyTorch's `to_sparse_semi_structured` (vs torchao where it imports), fp16.

Variants (all from the same seeded weights, pruned 2:4 by magnitude):
  dense      the pruned model as built: dense kernels (cuBLAS through inductor) — the reference
  sparsecc   `sparsecc.nn.sparsify_(model, prune=False)`: every fitting nn.Linear, lm_head included
  sparsecc-fp8  the same with `weight_dtype=torch.float8_e4m3fn` (8-bit weights and activations)
  sparsecc-w4   the same with `quant="w4g128"`: 4-bit 2:4 weights, one fp16 scale per 128 columns
                (x and the outputs stay fp16; the logits move by the quantization error)
  sparsecc-w8   the same with `quant="w8g128"`: 8-bit codes, one fp16 scale per 128 columns
  dense-w4   dense kernels on every pruned Linear weight after the w4g128 round trip
             (`compress(w, quant="w4g128").to_dense()`): the values sparsecc-w4 computes with,
             so its logits are sparsecc-w4's reference (and its own Δ to dense is the
             quantization error alone)
  dense-w8   the same for sparsecc-w8 (`quant="w8g128"`)
  sparsecc-swiglu, sparsecc-w4-swiglu   sparsecc / sparsecc-w4 with the SwiGLU activation in the
             fused gate_up kernel's epilogue (`swiglu_epilogue_`; needs `--fuse on`)
  torch-2:4  every Linear's weight as `to_sparse_semi_structured(weight)` (cuSPARSELt), its input
             flattened to 2-D (`SemiStructuredLinear`)
  torchao    `torchao.sparsity.sparsify_(model, semi_sparse_weight())`, only if torchao imports

By default each decoder layer's q/k/v projections run as one fused layer (qkv_proj) and gate/up as
one (gate_up_proj), in every variant alike (`fuse_llama_`: the weights concatenated after pruning,
so the numbers computed are the same; one launch instead of three, and two); `--fuse off` keeps
transformers' separate projections, as the tables before 2026-11-26 ran.

On CUDA each measured step is `torch.compile(fullgraph=True, dynamic=False)` (inductor, default
mode) of the model's forward with a transformers StaticCache, captured in one torch.cuda.CUDAGraph
and replayed (where compiling fails, eager + CUDA graph is tried and the cell says so):
  decode   a short eager prompt prefill, then `--steps` replays of a one-token step at each of
           `--batches` (default 1, 4, 16, 64, 256; the argmax is fed back inside the graph; the
           StaticCache advances its own position); median of `--reps` timed runs (CUDA events);
           tokens/s = batch x steps / time
  prefill  one forward of each of `--prefill` token counts (default 512, 2048, 8192) at batch 1
           into a StaticCache of that length (logits_to_keep=1, as generate does); tokens/s =
           tokens / median time
  logits   the compiled outputs (prefill's last-token logits, the first decode step's logits at
           each batch, same inputs) against the dense variant's: max |diff|, ||diff|| / ||ref||,
           top-1 agreement
Each variant runs in its own process on CUDA (`--isolate off`: in this one), so that a crash or a
sticky CUDA error costs one row, not the table; each gets at most `--variant-timeout` seconds and
all together `--budget` (default 480 s; each variant gets a fair share of what is left, and a
variant cut off keeps the measurements it finished). Each layer's path (the 2:4 kernel, the
16-bit kernel on dequantized values, or dense) is the dispatcher's (`sparsecc.ops.dispatch`); the
notes say which it took where it was not the 2:4 kernel.

`--compile auto` compiles for runs of at most 12 cells (variants x measurements; `--quick` is 9)
and runs eager + CUDA graph for the full matrix (5 variants x 8 measurements), whose compiles
alone would not fit the budget; `--compile on` compiles every cell.

    python bench/llama_e2e.py                     # dense, fp16 2:4, w4g128, w8g128, fp8; ~8 minutes
    python bench/llama_e2e.py --quick             # dense, fp16 2:4, w4g128 at decode 1, 16 and prefill 2048
    python bench/llama_e2e.py [--layers 8] [--variants dense,sparsecc,torch-2:4,torchao | all]
                              [--batches 1,16] [--prefill 2048] [--out bench/results]
    python bench/llama_e2e.py --tiny        # hidden 256, 2 layers, vocab 1000, on the CPU, eager
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any

import torch
from torch import nn

if __package__ in (None, ""):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import sparsecc  # noqa: E402
from sparsecc.nn import SparseLinear, sparsify_  # noqa: E402

VARIANTS = ("dense", "sparsecc", "sparsecc-fp8", "sparsecc-w4", "sparsecc-w8", "dense-w4", "dense-w8", "torch-2:4",
            "torchao", "sparsecc-swiglu", "sparsecc-w4-swiglu")
DEFAULT_VARIANTS = ("dense", "sparsecc", "sparsecc-w4", "sparsecc-w8", "sparsecc-fp8")  # issue 26's matrix
QUICK = {"variants": "dense,sparsecc,sparsecc-w4", "batches": "1,16", "prefill": "2048", "steps": 64, "reps": 3}
REFERENCE_OF = {"sparsecc-w4": "dense-w4", "sparsecc-w8": "dense-w8", "sparsecc-w4-swiglu": "dense-w4"}  # a variant's logits reference where it is not dense
QUANT_OF = {"sparsecc-w4": "w4g128", "sparsecc-w8": "w8g128", "dense-w4": "w4g128", "dense-w8": "w8g128",
            "sparsecc-w4-swiglu": "w4g128"}
TAG = "[llama_e2e]"


class Skip(Exception):
    """A variant that cannot run here (said in the table, not a failure of the script)."""


def log(*parts: Any) -> None:
    print(TAG, *parts, flush=True)


def _short(e: BaseException, limit: int = 200) -> str:
    text = " ".join(str(e).split()) or "(no message)"
    text = f"{type(e).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# the model


def llama_config(layers: int, tiny: bool, positions: int = 4096):
    from transformers import LlamaConfig

    positions = max(positions, 4096)  # prefill 8192 needs rotary positions beyond Llama-2's 4096
    if tiny:
        return LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=4, vocab_size=1000,
                           max_position_embeddings=positions, rms_norm_eps=1e-5, tie_word_embeddings=False)
    return LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=layers,
                       num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                       max_position_embeddings=positions, rms_norm_eps=1e-5, tie_word_embeddings=False)


def positions(args: argparse.Namespace) -> int:
    """Rotary positions the runs need: the longest prefill, or a decode prompt plus its steps."""
    return max([*args.prefill, args.prompt + args.steps + 8])


def prunable(module: nn.Module) -> bool:
    """The linear layers every variant makes 2:4 (those sparsecc.nn.sparsify_ takes by default)."""
    return (isinstance(module, nn.Linear) and module.in_features % 16 == 0
            and module.weight.dtype in (torch.float16, torch.bfloat16))


def build_pruned(config, device: str, seed: int) -> nn.Module:
    """The dense-pruned model: seeded random init (deterministic per device), fp16, every prunable
    Linear's weight pruned 2:4 by magnitude, no grad."""
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, dtype=torch.float16)
    model = model.to(device).eval()
    model.requires_grad_(False)
    with torch.no_grad():
        for module in model.modules():
            if prunable(module):
                module.weight.copy_(sparsecc.prune_2to4(module.weight))
    return model


_FUSED_CLASSES: dict[str, type] = {}


def _fused_classes() -> tuple[type, type]:
    """LlamaAttention / LlamaMLP subclasses whose forward runs one fused projection (qkv_proj,
    gate_up_proj) and splits its output; made on first use (transformers loads lazily)."""
    if _FUSED_CLASSES:
        return _FUSED_CLASSES["attn"], _FUSED_CLASSES["mlp"]
    import inspect

    from transformers.models.llama import modeling_llama as ml

    # transformers 5.17 names the cache `past_key_values` and updates it with (k, v, layer); later
    # ones name it `cache` and pass the attention's kwargs on to update: do as the installed one does
    cache_takes_kwargs = "cache" in inspect.signature(ml.LlamaAttention.forward).parameters

    class FusedLlamaAttention(ml.LlamaAttention):
        """transformers' LlamaAttention.forward (5.17 to 5.24) with q/k/v from one fused layer. Its
        output is [q | k | v], or under FusedColwiseParallel this rank's [q_r | k_r | v_r]: split
        in the proportions of the heads, which holds for both."""

        def forward(self, hidden_states: torch.Tensor, position_embeddings=None, attention_mask=None,  # noqa: ANN001
                    cache=None, past_key_values=None, **kwargs):  # noqa: ANN001, ANN003, ANN201
            cache = cache if cache is not None else past_key_values
            input_shape = hidden_states.shape[:-1]
            hidden_shape = (*input_shape, -1, self.head_dim)
            qkv = self.qkv_proj(hidden_states)
            heads, kv_heads = self.config.num_attention_heads, self.config.num_key_value_heads
            width, total = qkv.shape[-1], heads + 2 * kv_heads
            q, k, v = qkv.split([width * heads // total, width * kv_heads // total, width * kv_heads // total], -1)
            query_states = q.view(hidden_shape).transpose(1, 2)
            key_states = k.view(hidden_shape).transpose(1, 2)
            value_states = v.view(hidden_shape).transpose(1, 2)
            cos, sin = position_embeddings
            query_states, key_states = ml.apply_rotary_pos_emb(query_states, key_states, cos, sin)
            if cache is not None and cache_takes_kwargs:
                key_states, value_states = cache.update(key_states, value_states, self.layer_idx, kwargs=kwargs)
            elif cache is not None:
                key_states, value_states = cache.update(key_states, value_states, self.layer_idx)
            attention_interface = ml.ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation,
                                                                           ml.eager_attention_forward)
            attn_output, attn_weights = attention_interface(
                self, query_states, key_states, value_states, attention_mask,
                dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling, **kwargs)
            attn_output = attn_output.reshape(*input_shape, -1).contiguous()
            return self.o_proj(attn_output), attn_weights

    class FusedLlamaMLP(ml.LlamaMLP):
        """LlamaMLP with gate/up from one fused layer: [gate | up] (per rank: [gate_r | up_r])."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if getattr(self.gate_up_proj, "activation", None) == "swiglu":  # silu(gate) * up in the layer
                return self.down_proj(self.gate_up_proj(x))
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
            return self.down_proj(self.act_fn(gate) * up)

    _FUSED_CLASSES.update(attn=FusedLlamaAttention, mlp=FusedLlamaMLP)
    return FusedLlamaAttention, FusedLlamaMLP


def fuse_llama_(model: nn.Module) -> list[str]:
    """In place: every decoder layer's q/k/v projections become one `qkv_proj` and gate/up one
    `gate_up_proj` (`sparsecc.nn.parallel.fuse_linears`: rows concatenated, nothing recomputed),
    the modules' forward the fused one (`_fused_classes`). Run on the dense-pruned model before
    a variant converts its layers; returns a note for the table."""
    from transformers.models.llama import modeling_llama as ml

    from sparsecc.nn.parallel import fuse_linears

    attn_cls, mlp_cls = _fused_classes()
    layers = model.model.layers
    for layer in layers:
        attn, mlp = layer.self_attn, layer.mlp
        if type(attn) is not ml.LlamaAttention or type(mlp) is not ml.LlamaMLP:
            raise TypeError(f"fuse_llama_: expects transformers' LlamaAttention / LlamaMLP, got "
                            f"{type(attn).__name__} / {type(mlp).__name__}")
        attn.qkv_proj = fuse_linears([attn.q_proj, attn.k_proj, attn.v_proj])
        del attn.q_proj, attn.k_proj, attn.v_proj
        attn.__class__ = attn_cls
        mlp.gate_up_proj = fuse_linears([mlp.gate_proj, mlp.up_proj])
        del mlp.gate_proj, mlp.up_proj
        mlp.__class__ = mlp_cls
    return [f"q/k/v fused (qkv_proj) and gate/up fused (gate_up_proj) in {len(layers)} layers"]


def swiglu_epilogue_(model: nn.Module) -> list[str]:
    """In place: every fused gate_up_proj that is a SparseLinear computes silu(gate) * up in its
    kernel's epilogue (activation "swiglu": one launch, no separate activation kernel); the
    model must be fuse_llama_'s, with SiLU MLPs. Returns a note for the table."""
    if getattr(model.config, "hidden_act", None) != "silu":
        raise ValueError(f"swiglu_epilogue_: the MLPs' activation is {model.config.hidden_act!r}, not silu")
    layers = [layer.mlp.gate_up_proj for layer in model.model.layers if hasattr(layer.mlp, "gate_up_proj")]
    if not layers or not all(isinstance(m, SparseLinear) for m in layers):
        raise ValueError("swiglu_epilogue_: needs fused (--fuse on) gate_up_proj layers that are SparseLinear")
    for layer in layers:
        layer.activation = "swiglu"
    return [f"SwiGLU in the gate_up kernel's epilogue ({len(layers)} layers)"]


class SemiStructuredLinear(nn.Module):
    """A Linear whose weight is PyTorch's SparseSemiStructuredTensor. Its ops take 2-D inputs only
    (F.linear on a 3-D input needs `expand`, which the subclass refuses), so the input is
    flattened to (tokens, features) and the output shaped back: what torchao's 2:4 layers do."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.bias = None if bias is None else nn.Parameter(bias.detach(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.linear(x.reshape(-1, x.shape[-1]), self.weight, self.bias)
        return y.reshape(*x.shape[:-1], y.shape[-1])


def apply_variant(variant: str, model: nn.Module, device: str) -> list[str]:
    """Turn the dense-pruned model into `variant` in place; returns notes for the table."""
    n_linear = sum(1 for m in model.modules() if prunable(m))
    if variant == "dense":
        return [f"{n_linear} Linear layers pruned 2:4, dense kernels"]
    if variant == "sparsecc":
        sparsify_(model, prune=False)
        n = sum(1 for m in model.modules() if isinstance(m, SparseLinear))
        lm = "lm_head included" if isinstance(model.lm_head, SparseLinear) else "lm_head dense"
        return [f"{n}/{n_linear} Linear layers SparseLinear ({lm})"]
    if variant in ("sparsecc-swiglu", "sparsecc-w4-swiglu"):
        sparsify_(model, prune=False, quant=QUANT_OF.get(variant))
        n = sum(1 for m in model.modules() if isinstance(m, SparseLinear))
        return [f"{n}/{n_linear} Linear layers SparseLinear" + (" (NV24.w4g128)" if variant in QUANT_OF else ""),
                *swiglu_epilogue_(model)]
    if variant == "sparsecc-fp8":
        if device != "cuda":
            raise Skip("fp8 tensor cores need CUDA (the CPU path is the same model in float64)")
        sparsify_(model, prune=False, weight_dtype=torch.float8_e4m3fn)
        n = sum(1 for m in model.modules() if isinstance(m, SparseLinear))
        return [f"{n}/{n_linear} Linear layers SparseLinear with fp8 e4m3 weights (per-channel scales) and "
                "per-token fp8 activations"]
    if variant in ("sparsecc-w4", "sparsecc-w8"):
        quant = QUANT_OF[variant]
        sparsify_(model, prune=False, quant=quant)
        n = sum(1 for m in model.modules() if isinstance(m, SparseLinear))
        return [f"{n}/{n_linear} Linear layers SparseLinear with {quant[1]}-bit weights (NV24.{quant})"]
    if variant in ("dense-w4", "dense-w8"):
        quant = QUANT_OF[variant]
        sparsify_(model, prune=False, quant=quant)  # the layers, and the values, sparsecc-wN has
        layers = [(name, m) for name, m in model.named_modules() if isinstance(m, SparseLinear)]
        for name, layer in layers:
            dense = nn.Linear(layer.in_features, layer.out_features, bias=layer.bias is not None,
                              device=device, dtype=layer.weight().dtype)
            with torch.no_grad():
                dense.weight.copy_(layer.weight().to_dense())
                if layer.bias is not None:
                    dense.bias.copy_(layer.bias)
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, child, dense)
        return [f"{len(layers)}/{n_linear} Linear weights after sparsecc-w{quant[1]}'s quantization round trip, "
                "dense kernels"]
    if variant == "torch-2:4":
        if device != "cuda":
            raise Skip("to_sparse_semi_structured needs CUDA")
        from torch.sparse import to_sparse_semi_structured

        failed: list[str] = []
        for name, module in list(model.named_modules()):
            if prunable(module):
                try:
                    semi = SemiStructuredLinear(to_sparse_semi_structured(module.weight.detach()), module.bias)
                except Exception as e:  # noqa: BLE001 - a shape it refuses stays dense, said in the notes
                    failed.append(f"{name}: {_short(e, 120)}")
                    continue
                parent, _, child = name.rpartition(".")
                setattr(model.get_submodule(parent) if parent else model, child, semi)
        notes = [f"{n_linear - len(failed)}/{n_linear} Linear layers SparseSemiStructuredTensor "
                 "(inputs flattened to 2-D, as cuSPARSELt needs)"]
        if failed:
            notes.append(f"left dense ({len(failed)}): " + "; ".join(failed[:3]))
        return notes
    if variant == "torchao":
        try:
            from torchao.sparsity import semi_sparse_weight
            from torchao.sparsity import sparsify_ as ao_sparsify
        except Exception as e:  # noqa: BLE001 - not installed is the common case
            raise Skip(f"torchao not importable ({_short(e, 80)})") from None
        if device != "cuda":
            raise Skip("torchao's semi_sparse_weight needs CUDA")
        ao_sparsify(model, semi_sparse_weight())
        return ["torchao.sparsity.sparsify_(model, semi_sparse_weight())"]
    raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")


# ---------------------------------------------------------------------------------------------
# running one step: compiled or eager, in a CUDA graph or not


class Mode:
    def __init__(self, compile: bool, graph: bool) -> None:  # noqa: A002
        self.compile, self.graph = compile, graph

    def __str__(self) -> str:
        return f"{'compile' if self.compile else 'eager'}{'+graph' if self.graph else ''}"


def modes_for(args: argparse.Namespace) -> list[Mode]:
    first = Mode(args.compile, args.graphs)
    modes = [first]
    if args.fallback_eager and first.compile:
        modes.append(Mode(False, first.graph))
    return modes


def maybe_compile(fn, mode: Mode):
    if not mode.compile:
        return fn
    return torch.compile(fn, fullgraph=True, dynamic=False)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def prepare(step, mode: Mode, device: str, warmup: int | None = None):
    """Warm `step` up (the first call compiles) and, with graphs, capture one call; returns
    (run, seconds of warm-up). `run()` executes one step and returns its (static) output."""
    warmup = warmup or (3 if mode.compile or mode.graph else 1)
    t0 = time.perf_counter()
    if mode.graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                step()
        torch.cuda.current_stream().wait_stream(side)
        sync(device)
        warm_s = time.perf_counter() - t0
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):  # compile workers may be about
            out = step()
        sync(device)

        def run():
            graph.replay()
            return out

        run.graph = graph  # keep it alive with the closure
        return run, warm_s
    for _ in range(warmup):
        step()
    sync(device)
    return step, time.perf_counter() - t0


def timed(fn, device: str) -> float:
    """Seconds that fn() takes (CUDA events on the GPU)."""
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _cache_layers(cache) -> list:
    layers = getattr(cache, "layers", None)
    if not layers or not all(isinstance(getattr(la, "cumulative_length", None), torch.Tensor) for la in layers):
        raise RuntimeError("this transformers' StaticCache has no per-layer cumulative_length tensors "
                           "(written against transformers 5.17)")
    return layers


def print_kernels(run, what: str, steps: int = 16) -> None:
    """The GPU kernels of `steps` calls of `run` (torch.profiler, CUPTI), per step: the time each
    kind of kernel takes and how many launches it makes, longest first (`--profile`)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            run()
        torch.cuda.synchronize()
    rows = [(e.device_time_total / steps, e.count / steps, e.key) for e in prof.key_averages() if e.device_time_total > 0]
    rows.sort(reverse=True)
    total = sum(us for us, _, _ in rows)
    print(f"{TAG} kernels of {what}, per step: {total:.1f} us in {sum(c for _, c, _ in rows):.0f} launches",
          file=sys.stderr)
    for us, count, name in rows[:24]:
        print(f"{TAG}   {us:8.1f} us {count:5.1f}x  {name[:110]}", file=sys.stderr)


def measure_decode(model: nn.Module, batch: int, args: argparse.Namespace, mode: Mode) -> dict:
    from transformers import StaticCache

    device, vocab, prompt_len, steps = args.device, model.config.vocab_size, args.prompt, args.steps
    gen = torch.Generator().manual_seed(args.seed + batch)
    prompt = torch.randint(0, vocab, (batch, prompt_len), generator=gen).to(device)
    first = torch.randint(0, vocab, (batch, 1), generator=gen).to(device)
    cache = StaticCache(config=model.config, max_cache_len=prompt_len + steps + 8)
    with torch.no_grad():  # the prompt, eager: initialises the cache (static addresses) and fills it
        model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
    layers = _cache_layers(cache)
    ids = first.clone()

    def forward(ids: torch.Tensor) -> torch.Tensor:
        return model(input_ids=ids, past_key_values=cache, use_cache=True).logits

    fwd = maybe_compile(forward, mode)

    def step() -> torch.Tensor:
        logits = fwd(ids)
        ids.copy_(logits[:, -1:].argmax(-1))
        return logits

    def rewind() -> None:  # back to the first generated position, same input tokens
        for layer in layers:
            layer.cumulative_length.fill_(prompt_len)
        ids.copy_(first)

    with torch.no_grad():
        run, warm_s = prepare(step, mode, device)
        rewind()
        logits = run()[:, -1].float().cpu()

        def generate():
            for _ in range(steps):
                run()

        times = []
        for _ in range(args.reps + 1):  # the first: warm-up
            rewind()
            sync(device)
            times.append(timed(generate, device))
        if getattr(args, "profile", False) and device == "cuda":  # llama_tp.py builds its own args
            rewind()
            print_kernels(run, f"decode b={batch} [{mode}]")
    t = statistics.median(times[1:])
    run = cache = None  # frees the graph's pool and the cache (the closures hold these cells)
    return {"tok_s": batch * steps / t, "ms_per_step": t / steps * 1e3, "warm_s": warm_s, "logits": logits}


def measure_prefill(model: nn.Module, tokens: int, args: argparse.Namespace, mode: Mode) -> dict:
    from transformers import StaticCache

    device, cfg = args.device, model.config
    gen = torch.Generator().manual_seed(args.seed + 7)
    ids = torch.randint(0, cfg.vocab_size, (1, tokens), generator=gen).to(device)
    cache = StaticCache(config=cfg, max_cache_len=tokens)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    cache.early_initialization(batch_size=1, num_heads=cfg.num_key_value_heads, head_dim=head_dim,
                               dtype=torch.float16, device=ids.device)
    layers = _cache_layers(cache)

    def forward(ids: torch.Tensor) -> torch.Tensor:
        return model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits

    fwd = maybe_compile(forward, mode)

    def step() -> torch.Tensor:
        for layer in layers:  # every replay fills the cache from position 0
            layer.cumulative_length.zero_()
        return fwd(ids)

    with torch.no_grad():
        run, warm_s = prepare(step, mode, device)
        logits = run()[:, -1].float().cpu()
        times = [timed(run, device) for _ in range(2 * args.reps + 1)][1:]  # the first: warm-up
    t = statistics.median(times)
    run = cache = None  # frees the graph's pool and the cache (the closures hold these cells)
    return {"tok_s": tokens / t, "ms": t * 1e3, "warm_s": warm_s, "logits": logits}


def run_variant(variant: str, args: argparse.Namespace, checkpoint=None) -> dict:
    """Build, convert and measure one variant; every failure becomes a note, never an exception.
    `checkpoint(result)`, if given, is called after the build and after every measurement (the
    worker saves the partial result, so that a time-out still leaves the finished cells)."""
    checkpoint = checkpoint or (lambda result: None)
    result: dict[str, Any] = {"variant": variant, "notes": [], "cells": {}, "logits": {}}
    t0 = time.perf_counter()
    try:
        result["device_name"] = device_name(args.device)
        model = build_pruned(llama_config(args.layers, args.tiny, positions(args)), args.device, args.seed)
        if args.fuse:
            result["notes"] += fuse_llama_(model)
        result["notes"] += apply_variant(variant, model, args.device)
    except Skip as e:
        result["skipped"] = str(e)
        log(f"{variant}: skipped: {e}")
        return result
    except Exception as e:  # noqa: BLE001
        result["failed"] = _short(e)
        log(f"{variant}: could not build: {_short(e)}")
        traceback.print_exc()
        return result
    log(f"{variant}: built in {time.perf_counter() - t0:.1f} s; {'; '.join(result['notes'])}")
    checkpoint(result)
    jobs = [(f"decode_b{b}", b, lambda b=b, mode=None: measure_decode(model, b, args, mode)) for b in args.batches]
    jobs += [(f"prefill_{t}", t, lambda t=t, mode=None: measure_prefill(model, t, args, mode)) for t in args.prefill]
    for i, (key, tokens, job) in enumerate(jobs):
        tried = []
        for mode in modes_for(args):
            try:
                t1 = time.perf_counter()
                out = job(mode=mode)
            except Exception as e:  # noqa: BLE001 - one line here, the traceback on stderr
                tried.append(f"{mode}: {_short(e)}")
                log(f"{variant} {key} [{mode}] failed: {_short(e)}")
                traceback.print_exc(limit=-8)  # the innermost frames
                _recover(args.device)
                continue
            result["logits"][key] = out.pop("logits")
            out.update(mode=str(mode), tried=tried, dispatch=dispatch_summary(model, tokens, args.device))
            result["cells"][key] = out
            log(f"[{i + 1}/{len(jobs)}] {variant} {key} [{mode}]: {out['tok_s']:,.0f} tokens/s (warm-up incl. "
                f"compile {out['warm_s']:.1f} s, {time.perf_counter() - t1:.1f} s in all; {time.perf_counter() - t0:.0f} s "
                f"since the build started){'; paths ' + out['dispatch'] if out['dispatch'] else ''}")
            break
        else:
            result["cells"][key] = {"tried": tried}
        checkpoint(result)
    model = None  # noqa: F841 - frees the weights (the jobs' closures hold this cell)
    _recover(args.device)
    return result


def dispatch_summary(model: nn.Module, tokens: int, device: str) -> str:
    """The dispatcher's paths for the model's SparseLinear layers at `tokens` tokens, where any is
    not the 2:4 kernel: "sparse16 (4096x4096, 11008x4096), sparse (4096x11008)"; "" otherwise."""
    from sparsecc.nn.dispatch import layer_scheme
    from sparsecc.ops import dispatch

    paths: dict[str, list[str]] = {}
    for layer in {id(m): m for m in model.modules() if isinstance(m, SparseLinear)}.values():
        choice = dispatch.choose(tokens, layer.out_features, layer.in_features, layer.dtype, layer_scheme(layer),
                                 torch.device(device), layer.dispatch, layer.keeps_dense)
        shape = f"{layer.out_features}x{layer.in_features}"
        if shape not in paths.setdefault(choice.mode, []):
            paths[choice.mode].append(shape)
    if set(paths) <= {"sparse"}:
        return ""
    return ", ".join(f"{mode} ({', '.join(shapes)})" for mode, shapes in paths.items())


def _recover(device: str) -> None:
    gc.collect()
    if device == "cuda":
        try:
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a sticky error: later measurements will say so
            log(f"CUDA after a failure: {_short(e)}")
        torch.cuda.empty_cache()


def device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device == "cuda" else f"CPU ({platform.machine()})"


def result_device(results: list[dict], args: argparse.Namespace) -> str:
    """The device the workers reported (the parent need not touch CUDA), else this process's."""
    for r in results:
        if r.get("device_name"):
            return r["device_name"]
    try:
        return device_name(args.device)
    except Exception:  # noqa: BLE001
        return args.device


# ---------------------------------------------------------------------------------------------
# one process per variant


def run_isolated(variant: str, args: argparse.Namespace, timeout: float) -> dict:
    if variant == "torchao" and importlib.util.find_spec("torchao") is None:  # no process for a skip
        log("torchao: skipped: not installed")
        return {"variant": variant, "notes": [], "cells": {}, "logits": {}, "skipped": "torchao not installed"}
    if timeout < 20:
        log(f"{variant}: not run, the time budget (--budget {args.budget} s) is spent")
        return {"variant": variant, "notes": [], "cells": {}, "logits": {},
                "failed": f"not run: the --budget of {args.budget} s was spent"}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.pt")
        cmd = [sys.executable, os.path.abspath(__file__), "--variants", variant, "--worker", path,
               "--layers", str(args.layers), "--batches", ",".join(map(str, args.batches)),
               "--prompt", str(args.prompt), "--steps", str(args.steps),
               "--prefill", ",".join(map(str, args.prefill)) or "0",
               "--reps", str(args.reps), "--seed", str(args.seed),
               "--compile", "on" if args.compile else "off", "--graphs", "on" if args.graphs else "off"]
        cmd += ["--tiny"] if args.tiny else []
        cmd += ["--fuse", "on" if args.fuse else "off"]
        cmd += ["--profile"] if args.profile else []
        cmd += [] if args.fallback_eager else ["--no-fallback-eager"]
        try:
            proc = subprocess.run(cmd, timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        why = f"timed out after {timeout:.0f} s" if rc is None else f"worker exited with {rc}"
        if os.path.exists(path):
            result = torch.load(path, weights_only=False)
            if rc != 0:  # the cells it finished stand; the rest say why they are missing
                log(f"{variant}: {why}; keeping the {len(result['cells'])} measurements it finished")
                result["notes"].append(f"{why} after {len(result['cells'])} measurements")
            return result
        log(f"{variant}: {why}, no result")
        return {"variant": variant, "notes": [], "cells": {}, "logits": {}, "failed": why}


# ---------------------------------------------------------------------------------------------
# the table


def logit_diff(result: dict, reference: dict) -> dict | None:
    keys = [k for k in result["logits"] if k in reference["logits"]]
    if not keys:
        return None
    a = torch.cat([result["logits"][k].reshape(-1, result["logits"][k].shape[-1]) for k in keys])
    b = torch.cat([reference["logits"][k].reshape(-1, reference["logits"][k].shape[-1]) for k in keys])
    d = (a - b).double()
    return {"max_abs": d.abs().max().item(), "rel": (d.norm() / b.double().norm().clamp_min(1e-30)).item(),
            "top1": (a.argmax(-1) == b.argmax(-1)).double().mean().item(), "rows": a.shape[0],
            "finite": bool(torch.isfinite(a).all()), "ref_max": b.abs().max().item(), "keys": keys}


def build_table(results: list[dict], args: argparse.Namespace) -> str:
    by_name = {r["variant"]: r for r in results}
    reference = by_name.get("dense")
    gpu = result_device(results, args)
    import transformers

    cols = [f"decode_b{b}" for b in args.batches] + [f"prefill_{t}" for t in args.prefill]
    titles = [f"decode b={b} tok/s" for b in args.batches] + [f"prefill {t} tok/s" for t in args.prefill]
    footnotes: list[str] = []

    def cell(r: dict, key: str) -> str:
        c = r["cells"].get(key)
        if r.get("skipped"):
            return "skipped"
        if not c or "tok_s" not in c:
            for why in (c or {}).get("tried", []) or [r.get("failed", "not run")]:
                footnotes.append(f"{r['variant']} {key}: {why}")
            return "failed" if c or r.get("failed") else "—"
        for why in c.get("tried", []):
            footnotes.append(f"{r['variant']} {key}: {why} (then {c['mode']})")
        suffix = "" if c["mode"] == str(modes_for(args)[0]) else f" ({c['mode']})"
        return f"{c['tok_s']:,.0f}{suffix}"

    def ratio(num: str, den: str, key: str) -> str:
        a, b = by_name.get(num), by_name.get(den)
        ca, cb = (r["cells"].get(key, {}) if r else {} for r in (a, b))
        if not (ca.get("tok_s") and cb.get("tok_s")):
            return "—"
        mixed = "†" if ca.get("mode") != cb.get("mode") else ""  # one of them fell back to eager
        return f"{ca['tok_s'] / cb['tok_s']:.2f}×{mixed}"

    rows = []
    for r in results:
        own = by_name.get(REFERENCE_OF.get(r["variant"], ""))
        ref = own if own is not None else reference
        d = logit_diff(r, ref) if ref and r is not reference else None
        if d is not None and own is not None:
            r["notes"] = list(r["notes"]) + [f"logits against {own['variant']}"]
        if r is reference:
            diff = ["reference", "—", "—"]
        elif d is None:
            diff = ["—", "—", "—"]
        else:
            diff = [f"{d['max_abs']:.3g}", f"{d['rel']:.2e}", f"{100 * d['top1']:.0f}% of {d['rows']}"]
            if not d["finite"]:
                diff[0] += " (non-finite!)"
        notes = list(r["notes"]) + [r[k] for k in ("skipped", "failed") if r.get(k)]
        notes += [f"{key}: {c['dispatch']}" for key, c in r["cells"].items() if c.get("dispatch")]
        rows.append([r["variant"]] + [cell(r, k) for k in cols] + diff + ["; ".join(notes)])
    speedups = [(f"{num} ÷ {den}", [ratio(num, den, k) for k in cols])
                for num in ("sparsecc", "sparsecc-fp8", "sparsecc-w4", "sparsecc-w8", "sparsecc-swiglu",
                            "sparsecc-w4-swiglu")
                for den in ("dense", "torch-2:4", "torchao")]
    speedups = [(name, vals) for name, vals in speedups if any(v != "—" for v in vals)]

    cfg = llama_config(args.layers, args.tiny, positions(args))
    what = ("tiny config" if args.tiny else "Llama-2-7B-shaped layers") + (
        f": hidden {cfg.hidden_size}, intermediate {cfg.intermediate_size}, {cfg.num_attention_heads} heads, "
        f"vocab {cfg.vocab_size}, {cfg.num_hidden_layers} layers")
    if args.compile or args.graphs:
        how = (f"each step {'torch.compile(fullgraph=True, dynamic=False), inductor default mode' if args.compile else 'eager'}"
               f"{', captured in one torch.cuda.CUDAGraph and replayed' if args.graphs else ''}"
               f"{' (a cell marked (eager+graph): compiling failed, see the notes)' if args.fallback_eager and args.compile else ''}")
        if args.graphs and not args.compile and args.device == "cuda":
            how += (" (not compiled: eager steps are not how a model is served, and their non-GEMM "
                    "kernels weigh on both sides; `--compile on` compiles every cell, ~15 s each)")
    else:
        how = "eager, no CUDA graph (CPU smoke run: the numbers say nothing about speed)"
    lines = [
        f"# Llama end to end: dense vs sparsecc vs torch 2:4, {datetime.date.today().isoformat()}",
        "",
        f"- GPU/device: {gpu}; torch {torch.__version__}, transformers {transformers.__version__}, "
        f"python {platform.python_version()}.",
        f"- Model: transformers LlamaForCausalLM, {what}; fp16, random weights (seed {args.seed}) "
        "pruned 2:4 by magnitude in every Linear (q/k/v/o, gate/up/down, lm_head); SDPA attention; "
        + ("q/k/v and gate/up fused into one layer each (`--fuse on`)." if args.fuse
           else "separate q/k/v, gate/up projections (`--fuse off`)."),
        f"- Timing: {how}. Decode: eager prompt of {args.prompt} tokens into a transformers StaticCache, "
        f"then {args.steps} one-token steps (argmax fed back in the graph), median of {args.reps} runs "
        f"({'CUDA events' if args.device == 'cuda' else 'wall clock'}); tokens/s = batch × steps / time. "
        f"Prefill: one forward of {', '.join(map(str, args.prefill)) or 'no'} tokens at batch 1 into a StaticCache, "
        "logits_to_keep=1.",
        "- Logits: the variant's outputs against the dense-pruned reference on the same inputs (prefill's "
        "last-token logits and the first decode step's at each batch): max |Δ|, ‖Δ‖₂/‖ref‖₂, top-1 agreement"
        + (f"; the reference's max |logit| is {logit_diff(reference, reference)['ref_max']:.3g}."
           if reference and reference["logits"] else "."),
    ]
    if any("†" in v for _, vals in speedups for v in vals):
        lines.append("- † the two variants ran in different modes (one fell back from compile to eager).")
    for name, vals in speedups:
        lines.append(f"- Speed-up {name}: " + ", ".join(f"{t.replace(' tok/s', '')} {v}" for t, v in zip(titles, vals)) + ".")
    lines += ["", "| variant | " + " | ".join(titles) + " | logits max abs Δ | rel Δ | top-1 agree | notes |",
              "|---" * (len(titles) + 5) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    for name, vals in speedups:
        lines.append(f"| {name} | " + " | ".join(vals) + " | | | | |")
    if footnotes:
        lines += ["", "Failures:", ""] + [f"- {f}" for f in footnotes]
    return "\n".join(lines) + "\n"


def write_table(table: str, out: str, gpu: str) -> str:
    if out.endswith(".md"):
        path = out
    else:
        os.makedirs(out, exist_ok=True)
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in gpu.replace(" ", "_"))
        path = os.path.join(out, f"llama-e2e-current-{safe}.md")
        if os.path.exists(path):  # the table it replaces goes to history/, named by its date
            with open(path) as f:
                date = f.readline().rsplit(",", 1)[-1].strip() or "undated"
            os.makedirs(os.path.join(out, "history"), exist_ok=True)
            stem, n = os.path.join(out, "history", f"llama-e2e-{date}-{safe}"), 1
            target = f"{stem}.md"
            while os.path.exists(target):
                n += 1
                target = f"{stem}-{n}.md"
            os.replace(path, target)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(table)
    return path


# ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=8, help="decoder layers of the 7B-shaped model (default 8)")
    p.add_argument("--tiny", action="store_true", help="hidden 256, 2 layers, vocab 1000; the CPU by default")
    p.add_argument("--quick", action="store_true",
                   help=f"variants {QUICK['variants']}, batches {QUICK['batches']}, prefill {QUICK['prefill']}, "
                        f"{QUICK['steps']} steps, {QUICK['reps']} reps (any of them given explicitly wins)")
    p.add_argument("--variants", default=None,
                   help=f"comma-separated subset of {','.join(VARIANTS)}, or all (default {','.join(DEFAULT_VARIANTS)})")
    p.add_argument("--batches", default=None, help="decode batch sizes (default 1,4,16,64,256; tiny 2)")
    p.add_argument("--prompt", type=int, default=None, help="decode prompt tokens (default 32; tiny 8)")
    p.add_argument("--steps", type=int, default=None, help="timed decode steps per run (default 128; tiny 8)")
    p.add_argument("--prefill", default=None, help="prefill token counts, 0 to skip (default 512,2048,8192; tiny 128)")
    p.add_argument("--reps", type=int, default=None, help="timed runs per measurement (default 5; tiny 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda unless --tiny or none")
    p.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                   help="torch.compile (auto: on CUDA for runs of at most 12 cells, see above)")
    p.add_argument("--graphs", choices=("auto", "on", "off"), default="auto", help="CUDA graphs (auto: on CUDA)")
    p.add_argument("--fuse", choices=("on", "off"), default="on",
                   help="q/k/v and gate/up as one fused layer each, every variant (default on; off: "
                        "transformers' separate projections, as the tables before 2026-11-26)")
    p.add_argument("--no-fallback-eager", dest="fallback_eager", action="store_false",
                   help="where compiling fails, do not retry eager (+ graph)")
    p.add_argument("--isolate", choices=("auto", "on", "off"), default="auto",
                   help="one process per variant (auto: on CUDA)")
    p.add_argument("--variant-timeout", type=int, default=None,
                   help="seconds per isolated variant (default: a fair share of what is left of --budget)")
    p.add_argument("--budget", type=int, default=480,
                   help="seconds for all isolated variants together (default 480): a variant gets at most "
                        "its share of what is left, so that the table always comes out")
    p.add_argument("--profile", action="store_true",
                   help="after each decode cell, print its kernels per step (torch.profiler)")
    p.add_argument("--out", default=None, help="a .md file, or a folder for llama-e2e-current-<GPU>.md")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.device = args.device or ("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    args.fuse = args.fuse == "on"
    tiny = args.tiny
    quick = QUICK if args.quick else {}
    args.prompt = args.prompt if args.prompt is not None else (8 if tiny else 32)
    args.steps = args.steps if args.steps is not None else (8 if tiny else quick.get("steps", 128))
    prefill = args.prefill if args.prefill is not None else ("128" if tiny else quick.get("prefill", "512,2048,8192"))
    args.prefill = [int(t) for t in prefill.split(",") if t.strip() and int(t) > 0]
    args.reps = max(1, args.reps if args.reps is not None else (1 if tiny else quick.get("reps", 5)))
    batches = args.batches if args.batches is not None else ("2" if tiny else quick.get("batches", "1,4,16,64,256"))
    args.batches = [int(b) for b in batches.split(",") if b]
    variants = args.variants or quick.get("variants") or ",".join(DEFAULT_VARIANTS)
    args.variants = list(VARIANTS) if variants == "all" else [v.strip() for v in variants.split(",") if v.strip()]
    cuda = args.device == "cuda"
    cells = len(args.variants) * (len(args.batches) + len(args.prefill))
    args.compile = {"auto": cuda and cells <= 12, "on": True, "off": False}[args.compile]
    args.graphs = {"auto": cuda, "on": True, "off": False}[args.graphs]
    args.isolate = {"auto": cuda, "on": True, "off": False}[args.isolate]
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variants {unknown}; choose from {VARIANTS}")
    if not args.fuse and any(v.endswith("-swiglu") for v in args.variants):
        p.error("the -swiglu variants put the SwiGLU in the fused gate_up layer's epilogue: they need --fuse on")
    if args.graphs and not cuda:
        p.error("CUDA graphs need --device cuda")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but no CUDA device")
    return args


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; returns {"results": [...per variant...], "table": markdown, "path": out}."""
    args = parse_args(argv)
    for knob in ("recompile_limit", "cache_size_limit"):  # b=1, b=16 and prefill: distinct graphs
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, max(64, getattr(torch._dynamo.config, knob)))
    if args.worker:
        def save(result: dict) -> None:
            torch.save(result, args.worker + ".tmp")
            os.replace(args.worker + ".tmp", args.worker)

        save(run_variant(args.variants[0], args, checkpoint=save))
        return {}
    log(f"{'tiny' if args.tiny else f'{args.layers}-layer 7B-shaped'} Llama on {args.device}; variants "
        f"{','.join(args.variants)}; batches {args.batches}; prefill {args.prefill}; "
        f"compile {args.compile}, graphs {args.graphs}, one process per variant {args.isolate}")
    results = []
    start = time.perf_counter()
    for i, variant in enumerate(args.variants):
        t0 = time.perf_counter()
        if args.isolate:
            left = args.budget - (t0 - start)
            share = left / (len(args.variants) - i)  # what one finishing early leaves goes to the rest
            log(f"[{i + 1}/{len(args.variants)}] {variant}: up to {share:.0f} s ({left:.0f} s of the budget left)")
            results.append(run_isolated(variant, args, min(args.variant_timeout or share, share)))
        else:
            results.append(run_variant(variant, args))
            torch._dynamo.reset()
        log(f"{variant}: done in {time.perf_counter() - t0:.1f} s")
    table = build_table(results, args)
    print(table, flush=True)
    path = None
    if args.out:
        path = write_table(table, args.out, result_device(results, args))
        log(f"wrote {path}")
    return {"results": results, "table": table, "path": path}


if __name__ == "__main__":
    main()
    sys.exit(0)
