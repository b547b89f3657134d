"""`SparseLinear` and `sparsify_`: nn.Linear layers with 2:4 sparse weights, the shape of
torchao's `sparsify_(model, ...)` and PyTorch's semi-structured path.

    model = sparsecc.nn.sparsify_(model)                  # every nn.Linear that fits, pruned by magnitude
    model = torch.compile(model, fullgraph=True)          # no graph break: a torch custom op
    torch.save(model.state_dict(), "sparse.pt")           # ships compressed (values + metadata)
    sparsify_(model, weight_dtype=torch.float8_e4m3fn)    # 8-bit 2:4 weights, activations per token
    sparsify_(model, quant="w4g128")                      # 4-bit 2:4 weights, a scale per 128 columns
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
from torch import nn

from sparsecc.formats import QuantScheme, SparseFormat
from sparsecc.nn import dispatch as _dispatch
from sparsecc.nn.quantize import QUANT_MAX, quantize_rows
from sparsecc.nn.torch_ops import (
    sparse_linear_8bit_op,
    sparse_linear_op,
    sparse_linear_q_op,
    sparse_swiglu_op,
)
from sparsecc.ops.dispatch import activate as _activate  # noqa: F401 - sparsecc.nn.parallel imports it from here
from sparsecc.ops.dispatch import resolve as _resolve_dispatch
from sparsecc.ops.sparse_linear import ACTIVATIONS
from sparsecc.runtime.compress import compress, prune_2to4
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor, quant_format
from sparsecc.runtime.sparse_tensor import SparseTensor

LAYER_ACTIVATIONS = (*ACTIVATIONS, "swiglu")
"""`SparseLinear` activations: the kernels' epilogue activations, and "swiglu" (the weight's rows
are [gate | up], two equal halves; the output is silu(gate) * up, half as wide)."""

SWIGLU_MAX_TOKENS = 0
"""Tokens up to which a "swiglu" layer runs the one-launch kernel (`sparsecc.ops.sparse_glu`,
silu(gate) * up in its epilogue). 0: its untuned tiles made tensor-parallel decode at batch 1
slower than the product and the activation done apart (0.93x, H200, NOTES stop 21 run 10), so a
"swiglu" layer computes them apart until the kernel's tiles are measured; raise it to try it."""

WEIGHT_DTYPES = (None, *QUANT_MAX)
"""`weight_dtype` choices: None (the weight in the layer's fp16/bf16) or an 8-bit type."""


class SparseLinear(nn.Module):
    """A linear layer whose weight is stored 2:4 compressed (buffers `values`, `meta`), with an
    optional activation fused into the kernel's epilogue.

        layer = SparseLinear.from_linear(nn.Linear(4096, 4096, dtype=torch.float16), activation="silu")
        y = layer(x)        # == silu(x @ prune_2to4(W).T + b)

    With `weight_dtype` torch.int8 or torch.float8_e4m3fn the kept weights are quantized per
    output channel (symmetric; fp32 buffer `weight_scale`) and each forward quantizes x per
    token the same way, so that the 8-bit sparse tensor cores compute `x @ W.T` with both
    scales applied in the kernel's epilogue (the layer's fp16/bf16 stays its input and output
    dtype; bias and activation then run in torch, not fused):

        layer = SparseLinear.from_linear(linear, weight_dtype=torch.float8_e4m3fn)

    With `quant` (a scheme such as "w4g128", "w8c", "w4g64z"; `sparsecc.formats.quant`) the
    kept weights are stored as 4- or 8-bit codes with an fp16/bf16 scale per group of in_features
    (buffers `values` int8, `meta`, `scales`, and `zeros` for a `z` scheme): the kernel
    dequantizes W tile by tile and x stays in the layer's dtype, so bias and activation stay fused
    (`torch.ops.sparsecc.sparse_linear_q`). in_features must be a multiple of the group.
    `quant` and `weight_dtype` are exclusive.

        layer = SparseLinear.from_linear(nn.Linear(4096, 4096, dtype=torch.float16), quant="w4g128")
        layer.weight()      # a QuantizedSparseTensor (NV24.w4g128)

    `activation="swiglu"` makes the layer a fused gate/up projection: its weight's rows are the
    gate rows then as many up rows, and forward returns `silu(gate) * up` (out_features / 2
    wide), computed in the 2:4 kernel's epilogue in one launch (`sparsecc.ops.sparse_glu`) at up
    to 64 tokens where the dispatcher takes the 2:4 path and each half is a multiple of 16 rows;
    otherwise the product, then the activation in torch. 8-bit `weight_dtype` layers always take the latter.

        mlp.gate_up_proj = fuse_linears([gate_proj, up_proj])     # sparsecc.nn.parallel
        mlp.gate_up_proj.activation = "swiglu"                    # h = mlp.gate_up_proj(x)

    `dispatch` ("auto", "sparse", "sparse16", "dense"; None: the global setting) forces a path
    or leaves it to the measured cost model (`sparsecc.ops.dispatch`); `keep_dense_weight()`
    keeps a dense copy for the dense path (memory for speed). The repr shows the choices made.

        layer = SparseLinear(4096, 4096, dispatch="dense")    # decompress + F.linear, always
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: torch.dtype = torch.float16, device: torch.device | str | None = None,
                 activation: str = "none", weight_dtype: torch.dtype | None = None,
                 quant: str | QuantScheme | None = None, dispatch: str | None = None) -> None:
        super().__init__()
        _check_device(device)
        if dispatch is not None:
            _resolve_dispatch(dispatch)  # a ValueError naming the choices
        if activation not in LAYER_ACTIVATIONS:
            raise ValueError(f"SparseLinear: activation must be one of {LAYER_ACTIVATIONS}, got {activation!r}")
        if activation == "swiglu" and out_features % 2:
            raise ValueError(f"SparseLinear: activation 'swiglu' takes [gate | up] rows, two equal halves; "
                             f"out_features = {out_features} is odd")
        if weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(f"SparseLinear: weight_dtype must be one of {WEIGHT_DTYPES}, got {weight_dtype}")
        if in_features % 16:
            raise ValueError(f"SparseLinear: in_features = {in_features} must be a multiple of 16 "
                             "(one metadata word covers 16 columns)")
        fmt = _quant_format("SparseLinear", quant, weight_dtype)
        if fmt is not None:
            assert fmt.quant is not None
            if fmt.quant.group is not None and in_features % fmt.quant.group:
                raise ValueError(f"SparseLinear: in_features = {in_features} must be a multiple of the "
                                 f"quantization group {fmt.quant.group} ({fmt.name})")
            if dtype not in (torch.float16, torch.bfloat16):
                raise TypeError(f"SparseLinear: a quantized weight ({fmt.name}) needs an fp16 or bf16 layer, "
                                f"got dtype {dtype}")
        self.in_features, self.out_features, self.activation = in_features, out_features, activation
        self.weight_dtype = weight_dtype
        # the quantization scheme ("w4g128") of a quantized layer; None otherwise
        self.quant: str | None = fmt.quant.spec if fmt is not None and fmt.quant is not None else None
        if fmt is not None:
            q = _empty_quantized(fmt, out_features, in_features, dtype, device)
            self.register_buffer("values", q.values)
            self.register_buffer("meta", q.meta)
            self.register_buffer("scales", q.scales)
            if q.zeros is not None:
                self.register_buffer("zeros", q.zeros)
        else:
            stored = weight_dtype or dtype
            empty = SparseTensor.from_dense(torch.zeros(out_features, in_features, dtype=stored, device=device))
            self.register_buffer("values", empty.values)
            self.register_buffer("meta", empty.meta)
        if weight_dtype is not None:
            self.register_buffer("weight_scale", torch.ones(out_features, dtype=torch.float32, device=device))
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=dtype, device=device),
                                 requires_grad=False) if bias else None
        self.dtype = dtype
        # the layer's name in the model `sparsify_` converted (its first, if shared), for errors
        self.fqn: str | None = None
        # the dispatcher's setting for this layer (None: dispatch_mode / $SPARSECC_DISPATCH / auto),
        # and whether a dense copy of the weight is kept (`keep_dense_weight`)
        self.dispatch = dispatch
        self.keeps_dense = False

    @classmethod
    def from_linear(cls, linear: nn.Linear, prune: bool = True, activation: str = "none",
                    weight_dtype: torch.dtype | None = None,
                    quant: str | QuantScheme | None = None) -> SparseLinear:
        """The sparse version of `linear`: its weight pruned to 2:4 by magnitude (`prune=True`) or
        checked to be 2:4 already (`prune=False`: a weight that is not is an error naming the
        group); with `weight_dtype` (torch.int8, torch.float8_e4m3fn) quantized per output
        channel after pruning; with `quant` ("w4g128", "w8c", "w4g64z", ...) its kept values
        quantized by that scheme after pruning (round to nearest, scales in the weight's dtype).

            layer = SparseLinear.from_linear(nn.Linear(256, 64).half(), quant="w4g128")
            layer.weight().to_dense()     # the pruned weight, dequantized: what forward multiplies by
        """
        weight = linear.weight.detach()
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, weight.dtype,
                    weight.device, activation, weight_dtype, quant)
        pruned = prune_2to4(weight) if prune else weight
        if layer.quant is not None:
            q = compress(pruned, quant=layer.quant)  # checks 2:4 (prune=False), then quantizes
            layer.values.copy_(q.values)
            layer.meta.copy_(q.meta)
            layer.scales.copy_(q.scales)
            if q.zeros is not None:
                layer.zeros.copy_(q.zeros)
        elif weight_dtype is None:
            w = compress(pruned)
        else:
            compress(pruned)  # the 2:4 check of prune=False, on the weight as given
            q, scale = quantize_rows(pruned, weight_dtype)
            w = compress(q)
            layer.weight_scale.copy_(scale)
        if layer.quant is None:
            layer.values.copy_(w.values)
            layer.meta.copy_(w.meta)
        if linear.bias is not None:
            layer.bias.data.copy_(linear.bias.detach())
        return layer

    def weight(self) -> SparseTensor | QuantizedSparseTensor:
        """The weight as a SparseTensor (out × in), in its stored dtype (8-bit: without its scales);
        for a `quant` layer the QuantizedSparseTensor (codes, metadata, scales, zero points),
        whose `to_dense()` is the dequantized weight forward multiplies by.

            >>> layer = SparseLinear(256, 64, quant="w4g128")
            >>> layer.weight().encoding, tuple(layer.weight().shape)
            ('NV24.w4g128', (64, 256))
        """
        if self.quant is not None:
            return QuantizedSparseTensor(self.values, self.meta, self.scales, (self.out_features, self.in_features),
                                         f"NV24.{self.quant}", getattr(self, "zeros", None))
        return SparseTensor(self.values, self.meta, (self.out_features, self.in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 0 or x.shape[-1] != self.in_features:
            raise _input_width_error(self, x)
        if self.activation == "swiglu":
            return self._swiglu(x)
        return self._linear(x, self.activation)

    def _swiglu(self, x: torch.Tensor) -> torch.Tensor:
        """silu(gate) * up of the [gate | up] rows: one launch on the 2:4 path at decode (the
        activation in the kernel's epilogue), else the product by the dispatcher's path, then
        torch (prefill: its launch count does not matter, and its big tiles would not fit twice)."""
        half, odd = divmod(self.out_features, 2)
        if odd:  # the activation was set after construction
            raise ValueError(f"{'SparseLinear ' + repr(self.fqn) if self.fqn else 'SparseLinear'}: activation "
                             f"'swiglu' takes [gate | up] rows, two equal halves; out_features = "
                             f"{self.out_features} is odd")
        tokens = x.numel() // self.in_features
        if (tokens <= SWIGLU_MAX_TOKENS and _dispatch.layer_mode(self, x) == "sparse" and self.weight_dtype is None
                and half % 16 == 0):
            return sparse_swiglu_op(x, self.values, self.meta, getattr(self, "scales", None),
                                    getattr(self, "zeros", None), self.in_features, self.quant or "nv24", self.bias)
        gate, up = self._linear(x, "none").chunk(2, dim=-1)
        return torch.nn.functional.silu(gate) * up

    def _linear(self, x: torch.Tensor, activation: str) -> torch.Tensor:
        """act(x @ W.T + b) by the dispatcher's path, `activation` one of the kernels' own."""
        mode = _dispatch.layer_mode(self, x)
        if mode != "sparse":
            return _dispatch.forward_other(self, x, mode, activation)
        if self.quant is not None:
            return sparse_linear_q_op(x, self.values, self.meta, self.scales, getattr(self, "zeros", None),
                                      self.in_features, self.quant, self.bias, activation)
        if self.weight_dtype is None:
            return sparse_linear_op(x, self.values, self.meta, self.in_features, self.bias, activation)
        # x quantized per token in one launch, then one GEMM whose epilogue applies both scales,
        # the bias and the activation and writes y (tokens x out) in x's dtype
        return sparse_linear_8bit_op(x, self.values, self.meta, self.weight_scale, self.in_features, self.bias,
                                     activation)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:  # noqa: ANN001, ANN002, ANN003
        """A checkpoint of another format (fp16 values into an 8-bit layer, or the reverse; another
        quantization scheme or shape into a `quant` layer), or any weight array (values, meta,
        scales, zeros, weight_scale) of another dtype or shape, is an error naming the key:
        load_state_dict would otherwise cast the arrays silently, or load codes read with the
        wrong scales. safetensors' load_model comes through here too."""
        values = state_dict.get(prefix + "values")
        theirs = _checkpoint_arrays(state_dict, prefix)
        if isinstance(values, torch.Tensor) and (self.quant is not None or "scales" in theirs):
            yours, mine = _describe(state_dict, prefix), _describe(self.state_dict(), "")
            if yours != mine:  # another format; one of its arrays off: named below
                raise RuntimeError(
                    f"SparseLinear {prefix or '(root)'}: the checkpoint holds {yours}, this layer stores "
                    f"{mine}; sparsify the model with the checkpoint's quant / weight_dtype and shape")
        elif isinstance(values, torch.Tensor) and values.dtype != self.values.dtype:
            raise RuntimeError(f"SparseLinear {prefix or '(root)'}: the checkpoint's values are {values.dtype}, "
                               f"this layer stores {self.values.dtype} (weight_dtype={self.weight_dtype}); "
                               "sparsify the model with the checkpoint's weight_dtype")
        _check_checkpoint_arrays(self, state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        if getattr(self, "keeps_dense", False):  # the dense copy follows the loaded weight
            _dispatch.keep_dense_weight(self)

    def keep_dense_weight(self, keep: bool = True) -> None:
        """Keep (True) or drop a dense copy of the weight for the dispatcher's dense path: no
        decompression per call, at the memory of a dense layer (not saved in the state_dict).

            layer.keep_dense_weight()     # dense where the table says dense wins
        """
        _dispatch.keep_dense_weight(self, keep)

    def extra_repr(self) -> str:
        fmt = "NV24" if self.weight_dtype is None else f"NV24, weights {self.weight_dtype} per-channel scales, " \
                                                        "activations per-token"
        if self.quant is not None:
            fmt = f"NV24.{self.quant}"
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, activation={self.activation!r}, format={fmt}, "
                f"{_dispatch.describe(self)}")


def _check_device(device: torch.device | str | None) -> None:
    """One clear error for a CUDA layer where CUDA cannot run (torch's own is a bare assertion,
    "Torch not compiled with CUDA enabled", from deep inside the first allocation)."""
    if device is None or torch.device(device).type != "cuda" or torch.cuda.is_available():
        return
    why = ("this torch is a CPU-only build" if torch.version.cuda is None
           else f"torch {torch.__version__} finds no CUDA device or driver")
    raise RuntimeError(f"SparseLinear: device={str(device)!r} but CUDA is not available ({why}); create the "
                       "layer on the CPU (device='cpu': forward computes in torch there) or on a GPU machine")


def _input_width_error(layer: SparseLinear, x: torch.Tensor) -> ValueError:
    """The error for an input whose last dimension is not the layer's in_features, naming the layer
    (torch's own names neither, from ~19 frames inside the op)."""
    name = f"SparseLinear {layer.fqn!r}" if layer.fqn else "SparseLinear"
    width = x.shape[-1] if x.dim() else "a scalar (no last dimension)"
    return ValueError(f"{name} (in_features={layer.in_features}, out_features={layer.out_features}): "
                      f"the input's last dimension is {width}, the layer takes {layer.in_features} "
                      f"(input shape {tuple(x.shape)})")


def _quant_format(who: str, quant: str | QuantScheme | None, weight_dtype: torch.dtype | None) -> SparseFormat | None:
    """The quantized format `quant` names (None for none); a clear ValueError for a bad scheme or
    one given with `weight_dtype`."""
    if quant is None:
        return None
    if weight_dtype is not None:
        raise ValueError(f"{who}: quant={quant!r} and weight_dtype={weight_dtype} are exclusive: quant stores "
                         "4/8-bit codes with fp16/bf16 scales, weight_dtype 8-bit values with per-channel scales")
    if isinstance(quant, QuantScheme):
        quant = quant.spec
    if not isinstance(quant, str):
        raise TypeError(f'{who}: quant must be a scheme such as "w4g128", got {type(quant).__name__}')
    try:
        return quant_format(quant)
    except ValueError as e:
        raise ValueError(f'{who}: bad quant={quant!r} (schemes are w<bits>g<group>[z] or w<bits>c[z], e.g. '
                         f'"w4g128", "w8c", "w4g64z"): {e}') from None


def _empty_quantized(fmt: SparseFormat, n: int, k: int, dtype: torch.dtype,
                     device: torch.device | str | None) -> QuantizedSparseTensor:
    """Arrays of the right shapes and dtypes for an n x k weight of `fmt` (contents to be loaded)."""
    assert fmt.quant is not None
    scale_cols = k // fmt.quant.group if fmt.quant.group is not None else 1
    scales = torch.ones(n, scale_cols, dtype=dtype, device=device)
    zeros = torch.zeros_like(scales) if fmt.quant.zero_point else None
    values = torch.zeros(n, k // 2 // fmt.quant.codes_per_byte, dtype=torch.int8, device=device)
    meta = SparseTensor.from_dense(torch.zeros(n, k, dtype=dtype, device=device)).meta
    return QuantizedSparseTensor(values, meta, scales, (n, k), fmt.name, zeros)


_WEIGHT_ARRAYS = ("values", "meta", "scales", "zeros", "weight_scale")


def _checkpoint_arrays(state_dict: dict, prefix: str) -> dict[str, tuple[torch.dtype, tuple[int, ...]]]:
    """The weight arrays a (checkpoint's) state_dict holds under `prefix`: name -> (dtype, shape)."""
    return {name: (t.dtype, tuple(t.shape)) for name in _WEIGHT_ARRAYS
            if isinstance(t := state_dict.get(prefix + name), torch.Tensor)}


def _check_checkpoint_arrays(layer: SparseLinear, state_dict: dict, prefix: str) -> None:
    """RuntimeError naming the first weight array of the checkpoint whose dtype or shape is not
    the layer's: load_state_dict would cast it silently (an fp16 `meta` read as int16 words
    is another weight) or, for a shape, report it after loading the other arrays."""
    for name, ours in _checkpoint_arrays(layer.state_dict(), "").items():
        theirs = state_dict.get(prefix + name)
        if not isinstance(theirs, torch.Tensor):
            continue  # missing or not a tensor: load_state_dict reports it
        want, got = (ours[0], ours[1]), (theirs.dtype, tuple(theirs.shape))
        if got != want:
            what = "dtype" if theirs.dtype != ours[0] else "size"
            raise RuntimeError(f"SparseLinear {prefix or '(root)'}: {what} mismatch for {prefix + name!r}: the "
                               f"checkpoint holds {got[0]} of shape {got[1]}, this layer expects {want[0]} of "
                               f"shape {want[1]}")


def _describe(state_dict: dict, prefix: str) -> str:
    """The format, dtype and shape a state_dict's weight arrays spell, e.g. "NV24.w4g64z weights
    (64 x 256, torch.float16 scales)"; read from the arrays' shapes, as no name is stored."""
    arrays = _checkpoint_arrays(state_dict, prefix)
    if "values" not in arrays or "meta" not in arrays:
        return "no compressed weight"
    (vdtype, (n, vcols)), k = arrays["values"], arrays["meta"][1][1]
    if "scales" in arrays:
        sdtype, (_, scols) = arrays["scales"]
        bits = 4 if vcols * 4 == k else 8
        where = "c" if scols == 1 else f"g{k // max(scols, 1)}"
        zero = "z" if "zeros" in arrays else ""
        return f"NV24.w{bits}{where}{zero} weights ({n} x {k}, {sdtype} scales)"
    if "weight_scale" in arrays:
        return f"8-bit NV24 weights ({n} x {k}, {vdtype} values, per-channel scales)"
    return f"unquantized NV24 weights ({n} x {k}, {vdtype})"


LAYER_DTYPES = (torch.float16, torch.bfloat16)
"""The weight dtypes `sparsify_` converts: the 16-bit types of the sparse tensor cores, which a
SparseLinear keeps as its input and output dtype (with `weight_dtype` / `quant` too)."""


class SparsifySkipWarning(UserWarning):
    """`sparsify_` left some nn.Linear layers dense (the message says how many and why).

        warnings.simplefilter("ignore", sparsecc.nn.SparsifySkipWarning)   # or filter_fn them out
    """


def _skip_reason(module: nn.Module, group: int | None) -> str | None:
    """Why `sparsify_` cannot convert `module`, an nn.Linear (None: it can)."""
    if not isinstance(module, nn.Linear):
        return "not an nn.Linear"
    dtype = module.weight.dtype
    if dtype not in LAYER_DTYPES:
        return f"{dtype} weights"
    if module.in_features % 16:
        return "in_features not a multiple of 16"
    if group is not None and module.in_features % group:
        return f"in_features not a multiple of the quantization group {group}"
    return None


def _warn_skipped(skipped: dict[str, list[str]], total: int) -> None:
    """One SparsifySkipWarning naming how many nn.Linear layers stayed dense, why (a few names
    each), and which layers qualify: a model left in fp32 converted nothing without a word."""
    if not skipped:
        return
    count = sum(len(names) for names in skipped.values())
    reasons = "; ".join(f"{len(names)} with {reason} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
                        for reason, names in skipped.items())
    hint = ""
    if any(reason.endswith(" weights") for reason in skipped):
        hint = " (convert the model first: model.half() or model.to(torch.bfloat16))"
    warnings.warn(f"sparsify_: {count} of {total} nn.Linear layers left dense: {reasons}. sparsify_ converts "
                  f"layers with torch.float16 or torch.bfloat16 weights{hint} and in_features a multiple of 16 "
                  "(and of the group, with quant); filter_fn=... leaves layers out without this warning",
                  SparsifySkipWarning, stacklevel=3)


def sparsify_(model: nn.Module, filter_fn: Callable[[nn.Module, str], bool] | None = None,
              prune: bool = True, weight_dtype: torch.dtype | None = None,
              quant: str | QuantScheme | None = None) -> nn.Module:
    """Replace, in place, every nn.Linear of `model` that `filter_fn(module, fqn)` accepts (default:
    all) and that can be sparse: fp16/bf16 weights (`LAYER_DTYPES`: the layer keeps its dtype,
    nothing is cast) with in_features a multiple of 16, by a SparseLinear; returns `model`.
    Layers `filter_fn` accepts that cannot be (an fp32 model's, say) stay dense, and one
    `SparsifySkipWarning` says how many and why.
    `weight_dtype` (torch.int8, torch.float8_e4m3fn) quantizes the sparse weights to 8 bits;
    `quant` ("w4g128", "w8c", "w4g64z", ...) stores them as 4- or 8-bit codes with scales per
    group, and then also skips layers whose in_features is not a multiple of the group (see
    SparseLinear). `quant` and `weight_dtype` are exclusive.

    A Linear reachable under several names (a module shared by two places) becomes one
    SparseLinear set under every name, so the weight stays shared; `filter_fn` sees each name,
    and accepting any of them converts the module. `model` itself an nn.Linear cannot be
    replaced in place: the SparseLinear is returned instead.

        sparsify_(model, filter_fn=lambda m, name: name.startswith("layers."))
        sparsify_(model, weight_dtype=torch.float8_e4m3fn)
        sparsify_(model, quant="w4g128")
    """
    if weight_dtype not in WEIGHT_DTYPES:
        raise ValueError(f"sparsify_: weight_dtype must be one of {WEIGHT_DTYPES}, got {weight_dtype}")
    fmt = _quant_format("sparsify_", quant, weight_dtype)
    group = fmt.quant.group if fmt is not None and fmt.quant is not None else None
    accept = filter_fn or (lambda module, name: True)
    quant_spec = fmt.quant.spec if fmt is not None and fmt.quant is not None else None
    # Every name of every module: one shared nn.Linear (reachable under several names) becomes
    # one SparseLinear set under all of them, so the model keeps sharing the weight.
    names: dict[int, list[str]] = {}
    modules: dict[int, nn.Module] = {}
    skipped: dict[str, list[str]] = {}  # reason -> the names of the Linears filter_fn wanted but cannot be
    linears = 0
    for name, module in model.named_modules(remove_duplicate=False):
        if not isinstance(module, nn.Linear):
            continue
        linears += 1
        reason = _skip_reason(module, group)
        if reason is None:
            names.setdefault(id(module), []).append(name)
            modules[id(module)] = module
        elif accept(module, name):
            skipped.setdefault(reason, []).append(name or "(the model)")
    _warn_skipped(skipped, linears)
    for key, module_names in names.items():
        module = modules[key]
        if not any(accept(module, name) for name in module_names):
            continue
        sparse = SparseLinear.from_linear(module, prune=prune, weight_dtype=weight_dtype, quant=quant_spec)
        sparse.fqn = module_names[0] or None
        for name in module_names:
            if not name:  # the model is the Linear itself: nothing holds it to replace in place
                model = sparse
                continue
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, sparse)
    return model
