"""compressed-tensors checkpoints in and out of `SparseLinear` layers: the folder of safetensors
files and `config.json` that llm-compressor (SparseGPT, Wanda, GPTQ) writes and vLLM serves.

    model = LlamaForCausalLM(config).half()                      # the model's skeleton (any weights)
    sparsecc.nn.load_compressed_tensors("Sparse-Llama-2of4-w4a16", model)
    sparsecc.nn.save_compressed_tensors(model, "out")           # and back

A checkpoint's `config.json` holds a `quantization_config` (`quant_method: compressed-tensors`):
its `sparsity_config` names the 2:4 layers (`targets`, `ignore`) and how their weights are laid
out, its `config_groups` the quantization scheme of each layer. What loads, bit for bit (the
codes, scales, zero points and kept values are the checkpoint's, nothing is pruned or quantized
again):

* `dense` sparsity: each layer's `weight` as a dense tensor whose zeros are 2:4;
* `sparse-24-bitmask` (legacy): `compressed` (the kept values, 2 of every 4, row-major),
  `bitmask` (uint8, a bit per dense element, numpy's little bit order) and `shape`;
* `pack-quantized` int weights of 4 or 8 bits, a scale per group of `group_size` columns or per
  channel, symmetric or with zero points (`weight_packed`: int32 words, dense element i of a row
  at bits `bits*i` of the row's little-endian bit string, stored as `q + 2^(bits-1)`;
  `weight_zero_point`: the same packing down the columns, or an unpacked (rows x groups) int
  tensor in checkpoints before compressed-tensors 0.10): `NV24.w4g128`, `NV24.w8c`, `NV24.w4g128z`.
  A value is `(q - zp) * scale` in compressed-tensors and `(code - zero) * scale` in sparsecc
  with `code = q + 2^(bits-1)`, `zero = zp + 2^(bits-1)`: the same number, rounded once;
* `float-quantized` fp8 weights (`weight` float8_e4m3fn, a `weight_scale` per channel or per
  tensor) with dynamic per-token fp8 activations (llm-compressor's FP8_DYNAMIC), and likewise
  `int-quantized` int8 (W8A8): `SparseLinear(weight_dtype=...)`.

Layers outside the sparsity config's targets, or in its `ignore` (lm_head, usually), stay
`nn.Linear`. Anything else is one `CheckpointError` naming the file, the layer and the scheme.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from sparsecc.formats import QuantScheme
from sparsecc.formats.scheme import QuantSchemeError
from sparsecc.nn.linear import LAYER_DTYPES, SparseLinear
from sparsecc.runtime.codec import compress_arrays, decode_meta
from sparsecc.runtime.quant_codec import pack_codes, unpack_codes

__all__ = ["CheckpointError", "load_compressed_tensors", "save_compressed_tensors"]

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"
_LAYOUTS = ("dense", "sparse-24-bitmask")
"""The sparsity formats this module reads and writes."""


class CheckpointError(ValueError):
    """A compressed-tensors checkpoint that sparsecc cannot load or write as asked; the message
    names the file, the layer (and its group of 4 for a weight that is not 2:4) or the scheme.

        try:
            sparsecc.nn.load_compressed_tensors(path, model)
        except sparsecc.nn.CheckpointError as e:
            print(e)     # "ckpt/model.safetensors: layer 'model.layers.0.mlp.up_proj' is not 2:4 ..."
    """


# ---------------------------------------------------------------------------------------------
# config.json


@dataclass(frozen=True)
class _Group:
    """One of the quantization config's `config_groups`: a scheme and the layers it targets."""

    name: str
    targets: tuple[str, ...]
    weights: Mapping[str, Any] | None
    inputs: Mapping[str, Any] | None
    outputs: Mapping[str, Any] | None
    format: str

    def describe(self) -> str:
        """The scheme in a few words, for errors: `group_0 (pack-quantized, weights int4 group 128
        symmetric, input_activations none)`."""
        return (f"{self.name} ({self.format}, weights {_args_text(self.weights)}, "
                f"input_activations {_args_text(self.inputs)})")


def _args_text(args: Mapping[str, Any] | None) -> str:
    if not args:
        return "none"
    kind = f"{args.get('type', 'int')}{args.get('num_bits', '?')}"
    where = args.get("strategy") or "tensor"
    if where == "group":
        where = f"group {args.get('group_size')}"
    sym = "symmetric" if args.get("symmetric", True) else "asymmetric"
    dyn = " dynamic" if args.get("dynamic") else ""
    extra = f" actorder={args['actorder']}" if args.get("actorder") not in (None, "weight", "static") else ""
    return f"{kind} {where} {sym}{dyn}{extra}"


@dataclass(frozen=True)
class _Config:
    """What config.json says about the layers: the 2:4 layers and the quantization groups."""

    file: str
    sparse_format: str
    sparse_targets: tuple[str, ...]
    sparse_ignore: tuple[str, ...]
    groups: tuple[_Group, ...]
    quant_ignore: tuple[str, ...]


def _read_json(file: str) -> dict[str, Any]:
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise CheckpointError(f"{file}: no such file (a compressed-tensors checkpoint is a folder with "
                              f"{CONFIG_NAME} and safetensors weights)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{file}: not a readable JSON file: {e}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{file}: expected a JSON object, got {type(data).__name__}")
    return data


def _read_config(path: str, sparsity: Mapping[str, Any] | None) -> tuple[dict[str, Any], _Config]:
    file = os.path.join(path, CONFIG_NAME)
    data = _read_json(file)
    qc = data.get("quantization_config") or data.get("compression_config")
    if not isinstance(qc, dict):
        raise CheckpointError(f"{file}: no quantization_config: not a compressed-tensors checkpoint")
    method = qc.get("quant_method", "compressed-tensors")
    if method not in ("compressed-tensors", "sparseml"):
        raise CheckpointError(f"{file}: quantization_config.quant_method is {method!r}; sparsecc loads "
                              "compressed-tensors checkpoints")
    for key, what in (("kv_cache_scheme", "a quantized KV cache"), ("transform_config", "weight transforms")):
        if qc.get(key):
            raise CheckpointError(f"{file}: the checkpoint's {key} ({what}) is a scheme sparsecc cannot hold; "
                                  "only the Linear layers' weights load into SparseLinear")
    sc = qc.get("sparsity_config") or sparsity
    if not sc:
        raise CheckpointError(
            f"{file}: quantization_config declares no 2:4 sparsity (sparsity_config is empty; compressed-"
            "tensors >= 0.15 writes none): pass sparsity={'targets': ['Linear'], 'ignore': ['lm_head']} "
            "to load those layers as 2:4 anyway (each weight is checked)")
    fmt = sc.get("format", "dense")
    structure = str(sc.get("sparsity_structure", "2:4")).lower()
    if fmt not in _LAYOUTS:
        raise CheckpointError(f"{file}: sparsity format {fmt!r} is a scheme sparsecc cannot hold (it loads "
                              f"{' and '.join(repr(f) for f in _LAYOUTS)} with a 2:4 structure)")
    if structure != "2:4":
        raise CheckpointError(f"{file}: sparsity_structure {sc.get('sparsity_structure')!r} is a scheme "
                              "sparsecc cannot hold (it loads 2:4)")
    qformat = qc.get("format") or "dense"
    groups = []
    for name, g in (qc.get("config_groups") or {}).items():
        if not isinstance(g, dict):
            raise CheckpointError(f"{file}: config_groups.{name} is not an object")
        targets = g.get("targets") or []
        groups.append(_Group(name, tuple(targets), g.get("weights"), g.get("input_activations"),
                             g.get("output_activations"), g.get("format") or qformat))
    config = _Config(file, fmt, tuple(sc.get("targets") or ["Linear"]), tuple(sc.get("ignore") or ()),
                     tuple(groups), tuple(qc.get("ignore") or ()))
    return data, config


def _matches(name: str, module: nn.Module, patterns: Iterable[str]) -> bool:
    """compressed-tensors' matching: a pattern is a module name, `re:<regex>` (re.match on the
    name) or a class name of the module's type or one of its bases."""
    classes = {cls.__name__ for cls in type(module).__mro__}
    for p in patterns:
        if p.startswith("re:"):
            if re.match(p[3:], name):
                return True
        elif p == name or p in classes:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# safetensors files


class _Files:
    """The checkpoint's tensors by key, read lazily from its safetensors files (one file, or the
    shards an index names); remembers which keys were read."""

    def __init__(self, path: str) -> None:
        try:
            from safetensors import safe_open
        except ImportError:
            raise CheckpointError("reading a compressed-tensors checkpoint needs safetensors: "
                                  "pip install 'sparsecc[safetensors]'") from None
        index = os.path.join(path, INDEX_NAME)
        single = os.path.join(path, WEIGHTS_NAME)
        if os.path.exists(index):
            weight_map = _read_json(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise CheckpointError(f"{index}: no weight_map object")
            files = sorted(set(weight_map.values()))
        elif os.path.exists(single):
            files = [WEIGHTS_NAME]
        else:
            found = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
            if len(found) != 1:
                raise CheckpointError(f"{path}: no {WEIGHTS_NAME} or {INDEX_NAME}"
                                      + (f" (found {', '.join(found)})" if found else ""))
            files = found
        self.where: dict[str, str] = {}
        self._handles: dict[str, Any] = {}
        for name in files:
            file = os.path.join(path, name)
            try:
                handle = safe_open(file, framework="pt", device="cpu")
            except FileNotFoundError:
                raise CheckpointError(f"{file}: no such file (named by {INDEX_NAME})") from None
            except Exception as e:  # safetensors raises its own error type for a bad header
                raise CheckpointError(f"{file}: not a readable safetensors file (truncated or corrupt?): "
                                      f"{e}") from None
            self._handles[file] = handle
            for key in handle.keys():
                self.where[key] = file
        self.read: set[str] = set()

    def __contains__(self, key: str) -> bool:
        return key in self.where

    def file_of(self, prefix: str) -> str:
        """The file holding a layer's tensors (the first file, if none is found), for messages."""
        for key, file in self.where.items():
            if key.startswith(prefix + "."):
                return file
        return next(iter(self._handles), "(no file)")

    def get(self, key: str, layer: str) -> torch.Tensor:
        file = self.where.get(key)
        if file is None:
            raise CheckpointError(f"{self.file_of(layer)}: layer {layer!r}: the checkpoint has no {key!r}")
        try:
            t = self._handles[file].get_tensor(key)
        except Exception as e:
            raise CheckpointError(f"{file}: cannot read {key!r} (truncated or corrupt?): {e}") from None
        self.read.add(key)
        return t


# ---------------------------------------------------------------------------------------------
# loading


@dataclass(frozen=True)
class _Kind:
    """How a layer's weight is held in sparsecc: `quant` ("w4g128"), `weight_dtype`, or neither
    (fp16/bf16 values)."""

    quant: str | None = None
    weight_dtype: torch.dtype | None = None


def _kind(group: _Group | None, file: str, layer: str, in_features: int) -> _Kind:
    """The sparsecc form of a layer quantized by `group` (None: unquantized); CheckpointError
    naming the scheme where sparsecc has none."""
    if group is None or not group.weights:
        if group is not None and (group.inputs or group.outputs):
            raise _scheme_error(file, layer, group, "activation-only quantization")
        return _Kind()
    w, x = group.weights, group.inputs
    bits, wtype = w.get("num_bits"), w.get("type", "int")
    strategy = w.get("strategy") or "tensor"
    if group.outputs:
        raise _scheme_error(file, layer, group, "quantized outputs")
    if w.get("dynamic"):
        raise _scheme_error(file, layer, group, "dynamic weight quantization")
    if group.format == "pack-quantized" and wtype == "int":
        if x:
            raise _scheme_error(file, layer, group, "quantized activations with packed int weights "
                                "(sparsecc's 4/8-bit weights keep x in fp16/bf16: w4a16, w8a16)")
        if bits not in (4, 8):
            raise _scheme_error(file, layer, group, f"{bits}-bit weights (sparsecc packs 4 or 8)")
        zero = "" if w.get("symmetric", True) else "z"
        if strategy == "group":
            spec = f"w{bits}g{w.get('group_size')}{zero}"
        elif strategy in ("channel", "tensor"):
            spec = f"w{bits}c{zero}"
        else:
            raise _scheme_error(file, layer, group, f"strategy {strategy!r}")
        try:
            scheme = QuantScheme.parse(spec)
        except QuantSchemeError as e:
            raise _scheme_error(file, layer, group, str(e)) from None
        if scheme.group is not None and in_features % scheme.group:
            raise _scheme_error(file, layer, group, f"in_features {in_features} not a multiple of the group")
        return _Kind(quant=spec)
    eight = {("float-quantized", "float"): torch.float8_e4m3fn, ("naive-quantized", "float"): torch.float8_e4m3fn,
             ("int-quantized", "int"): torch.int8, ("naive-quantized", "int"): torch.int8}
    dtype = eight.get((group.format, wtype))
    if dtype is not None and bits == 8:
        if not w.get("symmetric", True) or strategy not in ("channel", "tensor"):
            raise _scheme_error(file, layer, group, "8-bit weights need symmetric per-channel (or "
                                "per-tensor) scales")
        dyn_token = (x is not None and x.get("dynamic") in (True, "local") and x.get("strategy") == "token"
                     and x.get("type", "int") == wtype and x.get("num_bits") == 8 and x.get("symmetric", True))
        if not dyn_token:
            raise _scheme_error(file, layer, group, f"{wtype}8 weights need dynamic per-token {wtype}8 "
                                "activations (sparsecc's 8-bit layer quantizes x per token each forward; "
                                "static input scales or fp16 activations would compute another function)")
        return _Kind(weight_dtype=dtype)
    raise _scheme_error(file, layer, group, f"format {group.format!r} with {wtype}{bits} weights")


def _scheme_error(file: str, layer: str, group: _Group, why: str) -> CheckpointError:
    return CheckpointError(f"{file}: layer {layer!r}: quantization scheme {group.describe()} is a scheme "
                           f"sparsecc cannot hold: {why}. sparsecc holds 2:4 layers unquantized, "
                           "pack-quantized int4/int8 (group or channel, with or without zero points, no "
                           "activation quantization), or 8-bit fp8/int8 weights with dynamic per-token "
                           "activations")


def _check_24(nonzero: torch.Tensor, file: str, layer: str, what: str) -> None:
    """CheckpointError naming the first group of 4 (row-major) with more than 2 `what`."""
    n, k = nonzero.shape
    counts = nonzero.reshape(n, k // 4, 4).sum(-1)
    bad = counts > 2
    if bool(bad.any()):
        row, g = divmod(int(torch.argmax(bad.flatten().to(torch.uint8))), k // 4)
        raise CheckpointError(f"{file}: layer {layer!r}: the weight is not 2:4 sparse: row {row}, columns "
                              f"{4 * g}..{4 * g + 3} hold {int(counts[row, g])} {what} (at most 2 of every 4)")


def _exact(t: torch.Tensor, dtype: torch.dtype, file: str, key: str, layer: str) -> torch.Tensor:
    """`t` in `dtype` where that changes no value; CheckpointError otherwise (a cast would round
    the checkpoint's numbers)."""
    if t.dtype == dtype:
        return t
    out = t.to(dtype)
    back = out.to(t.dtype)
    if not t.is_floating_point() or not bool(((back == t) | (back.isnan() & t.isnan())).all()):
        raise CheckpointError(f"{file}: layer {layer!r}: {key!r} is {t.dtype}, the layer is {dtype}, and the "
                              f"cast would round it; build the model in {t.dtype}")
    return out


def _expect_shape(t: torch.Tensor, shape: tuple[int, ...], file: str, key: str, layer: str,
                  what: str) -> None:
    if tuple(t.shape) != shape:
        raise CheckpointError(f"{file}: layer {layer!r}: {key!r} has shape {tuple(t.shape)}, expected {shape} "
                              f"({what})")


def _dense_weight(files: _Files, layer: str, n: int, k: int) -> tuple[torch.Tensor, str]:
    """The layer's dense (n x k) weight as stored (fp16/bf16/fp8/int8), from `weight` or from the
    legacy sparse-24-bitmask triple; and the key it came from, for messages."""
    if layer + ".bitmask" in files or layer + ".compressed" in files:
        key = layer + ".compressed"
        values, bits = files.get(key, layer), files.get(layer + ".bitmask", layer)
        file = files.where[key]
        if layer + ".shape" in files:
            shape = tuple(int(d) for d in files.get(layer + ".shape", layer).flatten().tolist())
            if shape != (n, k):
                raise CheckpointError(f"{file}: layer {layer!r}: {layer + '.shape'!r} is {shape}, the model's "
                                      f"layer is {(n, k)} (out x in features)")
        _expect_shape(values, (n, k // 2), file, key, layer, "2 kept values of every 4 columns")
        _expect_shape(bits, (n, -(-k // 8)), file, layer + ".bitmask", layer, "a bit per column, 8 a byte")
        if bits.dtype not in (torch.uint8, torch.int8, torch.bool):
            raise CheckpointError(f"{file}: layer {layer!r}: {layer + '.bitmask'!r} is {bits.dtype}, expected uint8")
        b = bits.view(torch.uint8).to(torch.int32)
        mask = ((b.unsqueeze(-1) >> torch.arange(8, dtype=torch.int32)) & 1).reshape(n, -1)[:, :k].bool()
        _check_24(mask, file, layer, "positions marked in the bitmask")
        per_row = mask.sum(-1)
        if bool((per_row != k // 2).any()):
            row = int(torch.argmax((per_row != k // 2).to(torch.uint8)))
            raise CheckpointError(f"{file}: layer {layer!r}: the bitmask marks {int(per_row[row])} positions in "
                                  f"row {row}, {key!r} holds {k // 2} values a row")
        # move bits, not numbers: 8-bit floats through their byte view
        raw = values.view(torch.uint8) if values.element_size() == 1 else values.view(torch.int16)
        dense = torch.zeros(n, k, dtype=raw.dtype)
        dense[mask] = raw.flatten()
        return dense.view(values.dtype), key
    key = layer + ".weight"
    w = files.get(key, layer)
    _expect_shape(w, (n, k), files.where[key], key, layer, "the model's out x in features")
    return w, key


def _unpack_rows(packed: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """compressed-tensors' pack-quantized words (int32, rows x words) as unsigned codes (int32,
    rows x count): element i of a row sits at bits [bits*i, bits*(i+1)) of the row's
    little-endian bit string (4 and 8 bits never straddle a byte)."""
    raw = packed.contiguous().view(torch.uint8)
    if sys.byteorder == "big":  # the file's words are little-endian; torch read them natively
        raw = raw.reshape(*packed.shape, 4).flip(-1).reshape(packed.shape[0], -1)
    codes = unpack_codes(raw.view(torch.int8), bits)
    return codes[:, :count]


def _pack_rows(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """The inverse of `_unpack_rows`: unsigned codes (rows x count) as int32 words, the row padded
    with zero bits to whole words."""
    rows, count = codes.shape
    per_word = 32 // bits
    padded = torch.zeros(rows, -(-count // per_word) * per_word, dtype=torch.int32)
    padded[:, :count] = codes.to(torch.int32)
    raw = pack_codes(padded.to(torch.uint8), QuantScheme(bits, None, False)).view(torch.uint8)
    if sys.byteorder == "big":
        raw = raw.reshape(rows, -1, 4).flip(-1).reshape(rows, -1)
    return raw.contiguous().view(torch.int32)


def _load_layer(files: _Files, name: str, linear: nn.Linear, kind: _Kind) -> SparseLinear:
    """A SparseLinear holding the checkpoint's arrays for the nn.Linear `name` (nothing rounded)."""
    n, k = linear.out_features, linear.in_features
    file = files.file_of(name)
    dtype = linear.weight.dtype
    if dtype not in LAYER_DTYPES:
        raise CheckpointError(f"{file}: layer {name!r}: the model's layer is {dtype}; SparseLinear computes in "
                              "torch.float16 or torch.bfloat16: build the model in one of them")
    if k % 16:
        raise CheckpointError(f"{file}: layer {name!r}: in_features = {k} is not a multiple of 16 (one 2:4 "
                              "metadata word covers 16 columns)")
    layer = SparseLinear(k, n, linear.bias is not None, dtype, "cpu", weight_dtype=kind.weight_dtype,
                         quant=kind.quant)
    if kind.quant is not None:
        _load_packed(files, name, layer, QuantScheme.parse(kind.quant))
    else:
        w, key = _dense_weight(files, name, n, k)
        file = files.where[key]
        want = kind.weight_dtype or dtype
        if kind.weight_dtype is None:
            w = _exact(w, dtype, file, key, name)
        elif w.dtype != want:
            raise CheckpointError(f"{file}: layer {name!r}: {key!r} is {w.dtype}, the scheme stores {want}")
        if w.dtype == torch.float8_e4m3fn:  # no fp8 comparison on every CPU build; -0 is 0x80
            nonzero = (w.view(torch.uint8) & 0x7F) != 0
        else:
            nonzero = w != 0  # NaN counts as nonzero
        _check_24(nonzero, file, name, "nonzero values")
        values, meta = compress_arrays(w)
        layer.values.copy_(values)
        layer.meta.copy_(meta)
        if kind.weight_dtype is not None:
            skey = name + ".weight_scale"
            scale = files.get(skey, name).float().flatten()  # fp16/bf16/fp32 -> fp32 is exact
            if scale.numel() == 1:
                scale = scale.expand(n)
            _expect_shape(scale, (n,), file, skey, name, "one scale per output channel")
            layer.weight_scale.copy_(scale)
    if linear.bias is not None:
        key = name + ".bias"
        bias = files.get(key, name)
        _expect_shape(bias, (n,), files.where[key], key, name, "out_features")
        layer.bias.data.copy_(_exact(bias, dtype, files.where[key], key, name))
    layer.fqn = name
    if linear.weight.device.type not in ("cpu", "meta"):  # where the model is (read on the CPU)
        layer.to(linear.weight.device)
    return layer


def _load_packed(files: _Files, name: str, layer: SparseLinear, scheme: QuantScheme) -> None:
    """The pack-quantized arrays of `name` into `layer` (an NV24.wXgY layer of the same scheme)."""
    n, k, bits = layer.out_features, layer.in_features, scheme.bits
    key = name + ".weight_packed"
    packed = files.get(key, name)
    file = files.where[key]
    if packed.dtype != torch.int32:
        raise CheckpointError(f"{file}: layer {name!r}: {key!r} is {packed.dtype}, expected int32 words")
    if name + ".weight_shape" in files:
        shape = tuple(int(d) for d in files.get(name + ".weight_shape", name).flatten().tolist())
        if shape != (n, k):
            raise CheckpointError(f"{file}: layer {name!r}: {name + '.weight_shape'!r} is {shape}, the model's "
                                  f"layer is {(n, k)} (out x in features)")
    _expect_shape(packed, (n, -(-k * bits // 32)), file, key, name, f"{bits}-bit codes, {32 // bits} a word")
    groups = k // scheme.group if scheme.group is not None else 1
    skey = name + ".weight_scale"
    scales = files.get(skey, name)
    if scales.numel() == 1 and scheme.group is None:  # a per-tensor scale: every row's
        scales = scales.reshape(1, 1).expand(n, 1)
    _expect_shape(scales.reshape(n, -1) if scales.numel() == n * groups else scales, (n, groups), file, skey,
                  name, "a scale per row and group")
    scales = _exact(scales.reshape(n, groups), layer.dtype, file, skey, name)
    codes = _unpack_rows(packed, bits, k)  # unsigned: q + 2^(bits-1)
    if scheme.zero_point:
        zkey = name + ".weight_zero_point"
        zp = files.get(zkey, name)
        if zp.dtype == torch.int32 and tuple(zp.shape) == (-(-n * bits // 32), groups):  # packed down dim 0
            zeros = _unpack_rows(zp.t(), bits, n).t()
        else:  # compressed-tensors < 0.10, or a per-tensor zero point: signed integers, unpacked
            if zp.numel() == 1:
                zp = zp.reshape(1, 1).expand(n, groups)
            zp = zp.reshape(n, groups) if zp.numel() == n * groups else zp
            _expect_shape(zp, (n, groups), file, zkey, name, "a zero point per row and group")
            if zp.is_floating_point() and not bool((zp == zp.round()).all()):
                raise CheckpointError(f"{file}: layer {name!r}: {zkey!r} holds non-integral zero points")
            zeros = zp.to(torch.int32) + scheme.fixed_zero
            if bool(((zeros < 0) | (zeros > scheme.max_code)).any()):
                raise CheckpointError(f"{file}: layer {name!r}: {zkey!r} holds zero points outside the "
                                      f"int{bits} range")
    else:
        if name + ".weight_zero_point" in files:  # symmetric: all-zero zero points are allowed
            zp = files.get(name + ".weight_zero_point", name)
            if bool((zp != 0).any()):
                raise CheckpointError(f"{file}: layer {name!r}: the scheme is symmetric but "
                                      f"{name + '.weight_zero_point'!r} is not zero")
        zeros = torch.full((n, groups), scheme.fixed_zero, dtype=torch.int32)
    if name + ".weight_g_idx" in files:  # activation order: only the identity grouping is held
        gkey = name + ".weight_g_idx"
        g_idx = files.get(gkey, name).flatten().to(torch.int64)
        per = scheme.group or k
        if g_idx.numel() != k or not torch.equal(g_idx, torch.arange(k) // per):
            raise CheckpointError(f"{file}: layer {name!r}: {gkey!r} permutes the groups (actorder=group): a "
                                  f"scheme sparsecc cannot hold (its groups are consecutive columns)")
    zero_cols = zeros.repeat_interleave(k // groups, dim=1)
    diff = codes - zero_cols  # the integer a code stands for; 0 where the weight is 0
    _check_24(diff != 0, file, name, "codes other than the zero point")
    kept, meta = compress_arrays(diff.to(torch.float16))  # |diff| <= 255: exact in fp16
    kept_codes = kept.to(torch.int32) + zeros.repeat_interleave(k // 2 // groups, dim=1)
    layer.values.copy_(pack_codes(kept_codes.to(torch.uint8), scheme))
    layer.meta.copy_(meta)
    layer.scales.copy_(scales)
    if scheme.zero_point:
        layer.zeros.copy_(zeros.to(layer.dtype))


def load_compressed_tensors(path: str | os.PathLike, model: nn.Module | None = None, *,
                            sparsity: Mapping[str, Any] | None = None, strict: bool = True) -> nn.Module:
    """Load the compressed-tensors checkpoint in folder `path` into `model`: every nn.Linear the
    checkpoint's sparsity config covers becomes a SparseLinear holding the checkpoint's arrays
    (kept values, codes, scales, zero points: bit for bit, see the module docstring), the other
    layers and parameters take the checkpoint's tensors (cast to the model's dtype, as
    load_state_dict does). Returns `model` (the same object, changed in place).

    `model` is the architecture with any weights, in the dtype to run in (float16 or bfloat16: a
    2:4 layer's weight must convert to it exactly); None builds it with transformers from
    config.json (`AutoModelForCausalLM.from_config`). `sparsity` stands in for an empty
    sparsity_config (compressed-tensors >= 0.15 writes none), e.g. `{"targets": ["Linear"],
    "ignore": ["lm_head"]}`; each weight is still checked to be 2:4. `strict`: checkpoint tensors
    the model has no place for are an error (as in load_state_dict).

    Anything that does not load (a missing or truncated file, a missing key, a shape that is not
    the model's, a weight that breaks 2:4, a scheme sparsecc cannot hold) raises one
    CheckpointError naming the file, the layer and the group or scheme, before the model is
    changed.

        model = LlamaForCausalLM(LlamaConfig.from_pretrained(path)).half()
        load_compressed_tensors(path, model)
        model.model.layers[0].mlp.up_proj      # SparseLinear(..., format=NV24.w4g128)
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise CheckpointError(f"{path}: not a folder (a compressed-tensors checkpoint is a folder with "
                              f"{CONFIG_NAME} and safetensors weights)")
    data, config = _read_config(path, sparsity)
    if model is None:
        model = _model_from_config(data, config.file)
    files = _Files(path)
    replace: dict[str, SparseLinear] = {}
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        group = next((g for g in config.groups if _matches(name, module, g.targets)
                      and not _matches(name, module, config.quant_ignore)), None)
        sparse = (_matches(name, module, config.sparse_targets)
                  and not _matches(name, module, config.sparse_ignore))
        file = files.file_of(name)
        if not sparse:
            if group is not None and group.weights:
                raise CheckpointError(f"{file}: layer {name!r} is quantized ({group.describe()}) but the "
                                      "sparsity config leaves it dense: sparsecc holds quantized weights "
                                      "only in 2:4 layers")
            continue
        replace[name] = _load_layer(files, name, module, _kind(group, file, name, module.in_features))
    rest = _rest_state(model, files, set(replace), strict)
    # Everything is read and checked: only now is the model changed.
    for name, layer in replace.items():
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, layer)
    if rest:
        meta = any(t.is_meta for t in model.state_dict().values())
        model.load_state_dict(rest, strict=False, assign=meta)
    return model


def _rest_state(model: nn.Module, files: _Files, converted: set[str], strict: bool) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors for every state_dict entry outside the converted layers, cast to
    the model's dtypes; CheckpointError for a missing key or another shape, and (strict) for a
    checkpoint key nothing reads."""
    state = model.state_dict(keep_vars=True)
    aliases: dict[int, list[str]] = {}
    for key, t in state.items():
        aliases.setdefault(id(t), []).append(key)
    rest: dict[str, torch.Tensor] = {}
    for key, t in state.items():
        owner = key.rpartition(".")[0]
        if owner in converted:
            continue
        if key not in files:
            others = [a for a in aliases[id(t)] if a != key and a in files]
            if others:  # a tied weight the checkpoint stores once (lm_head and the embedding)
                continue
            raise CheckpointError(f"{files.file_of(owner)}: the checkpoint has no {key!r} (the model's "
                                  f"{tuple(t.shape)} {t.dtype} tensor)")
        value = files.get(key, owner)
        if tuple(value.shape) != tuple(t.shape):
            raise CheckpointError(f"{files.where[key]}: {key!r} has shape {tuple(value.shape)}, the model's is "
                                  f"{tuple(t.shape)}")
        rest[key] = value.to(t.dtype)
    if strict:
        unread = sorted(k for k in files.where if k not in files.read)
        if unread:
            shown = ", ".join(repr(k) for k in unread[:5]) + (f" and {len(unread) - 5} more" if len(unread) > 5 else "")
            raise CheckpointError(f"{files.where[unread[0]]}: the model has no place for {shown} (a layer the "
                                  "sparsity or quantization config does not cover, or another architecture); "
                                  "strict=False ignores them")
    return rest


def _model_from_config(data: dict[str, Any], file: str) -> nn.Module:
    """The transformers model config.json describes, in its dtype, with random weights."""
    try:
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError:
        raise CheckpointError(f"{file}: building the model from config.json needs transformers; or pass "
                              "model=... (the architecture, in float16 or bfloat16)") from None
    fields = {k: v for k, v in data.items() if k not in ("quantization_config", "compression_config")}
    model_type = fields.pop("model_type", None)
    if model_type is None:
        raise CheckpointError(f"{file}: no model_type to build the model from; pass model=...")
    dtype = fields.get("dtype") or fields.get("torch_dtype") or "float16"
    config = AutoConfig.for_model(model_type, **fields)
    return AutoModelForCausalLM.from_config(config, dtype=getattr(torch, str(dtype)))


# ---------------------------------------------------------------------------------------------
# saving


def _layer_tensors(name: str, layer: SparseLinear, sparsity_format: str) -> tuple[dict[str, torch.Tensor],
                                                                                   dict[str, Any] | None, str]:
    """The checkpoint tensors of one SparseLinear, its quantization scheme (None: unquantized)
    and its compressed-tensors format."""
    n, k = layer.out_features, layer.in_features
    out: dict[str, torch.Tensor] = {}
    idx0, idx1 = decode_meta(layer.meta.cpu(), n)
    pos = torch.stack((idx0, idx1), -1) + 4 * torch.arange(k // 4).reshape(1, -1, 1)  # kept columns
    pos = pos.reshape(n, k // 2)
    scheme: dict[str, Any] | None = None
    fmt = "dense"
    if layer.quant is not None:
        q = QuantScheme.parse(layer.quant)
        groups = k // q.group if q.group is not None else 1
        codes_kept = unpack_codes(layer.values.cpu(), q.bits)
        if q.zero_point:
            zeros = layer.zeros.cpu().float()
            if not bool(((zeros == zeros.round()) & (zeros >= 0) & (zeros <= q.max_code)).all()):
                raise CheckpointError(f"layer {name!r}: zero points that are not integers in 0..{q.max_code} "
                                      "have no compressed-tensors form")
            zeros = zeros.to(torch.int32)
        else:
            zeros = torch.full((n, groups), q.fixed_zero, dtype=torch.int32)
        dense = zeros.repeat_interleave(k // groups, dim=1).clone()  # the zero code where W is 0
        dense.scatter_(1, pos, codes_kept)
        out["weight_packed"] = _pack_rows(dense, q.bits)
        out["weight_scale"] = layer.scales.cpu()
        out["weight_shape"] = torch.tensor([n, k], dtype=torch.int64)
        if q.zero_point:
            out["weight_zero_point"] = _pack_rows(zeros.t(), q.bits).t().contiguous()
        scheme = {"weights": {"num_bits": q.bits, "type": "int", "symmetric": not q.zero_point,
                              "strategy": "group" if q.group else "channel", "group_size": q.group,
                              "dynamic": False},
                  "input_activations": None, "output_activations": None}
        fmt = "pack-quantized"
    else:
        values = layer.values.cpu()
        if sparsity_format == "sparse-24-bitmask":
            mask = torch.zeros(n, -(-k // 8) * 8, dtype=torch.bool)
            mask.scatter_(1, pos, True)
            weights = (mask.reshape(n, -1, 8).to(torch.int32) << torch.arange(8, dtype=torch.int32)).sum(-1)
            out["compressed"], out["bitmask"] = values, weights.to(torch.uint8)
            out["shape"] = torch.tensor([n, k]).reshape(-1, 1)
        else:
            raw = values.view(torch.uint8) if values.element_size() == 1 else values
            dense = torch.zeros(n, k, dtype=raw.dtype).scatter_(1, pos, raw)
            out["weight"] = dense.view(values.dtype)
        if layer.weight_dtype is not None:
            out["weight_scale"] = layer.weight_scale.cpu().reshape(n, 1)
            wtype = "float" if layer.weight_dtype == torch.float8_e4m3fn else "int"
            args = {"num_bits": 8, "type": wtype, "symmetric": True, "group_size": None, "dynamic": False}
            scheme = {"weights": {**args, "strategy": "channel"},
                      "input_activations": {**args, "strategy": "token", "dynamic": True},
                      "output_activations": None}
            fmt = "float-quantized" if wtype == "float" else "int-quantized"
    if layer.bias is not None:
        out["bias"] = layer.bias.detach().cpu()
    return {f"{name}.{key}": t.contiguous() for key, t in out.items()}, scheme, fmt


def save_compressed_tensors(model: nn.Module, path: str | os.PathLike, *,
                            sparsity_format: str = "dense") -> None:
    """Save `model` (its SparseLinear layers as sparsecc holds them, everything else as is) as a
    compressed-tensors checkpoint in folder `path`: `model.safetensors` and `config.json` (the
    model's own `config`, for a transformers model, plus the `quantization_config`).

    fp16/bf16 SparseLinear layers are stored dense (`sparsity_format="dense"`, the one the
    compressed-tensors library still reads) or as the legacy `"sparse-24-bitmask"`; `quant`
    layers as `pack-quantized` (codes, scales and zero points unchanged), 8-bit layers as
    `float-quantized` (fp8) or `int-quantized` (int8) with dynamic per-token activations. The
    sparsity config lists the 2:4 layers; every other nn.Linear goes into its `ignore`. The files
    appear only once complete.

        sparsecc.nn.sparsify_(model, quant="w4g128", filter_fn=lambda m, name: name != "lm_head")
        sparsecc.nn.save_compressed_tensors(model, "llama-2of4-w4a16")
    """
    if sparsity_format not in _LAYOUTS:
        raise CheckpointError(f"save_compressed_tensors: sparsity_format must be one of {_LAYOUTS}, "
                              f"got {sparsity_format!r}")
    try:
        from safetensors.torch import save_file
    except ImportError:
        raise CheckpointError("writing a compressed-tensors checkpoint needs safetensors: "
                              "pip install 'sparsecc[safetensors]'") from None
    path = os.fspath(path)
    tensors: dict[str, torch.Tensor] = {}
    schemes: dict[str, tuple[dict[str, Any], str, list[str]]] = {}  # scheme key -> scheme, format, layers
    sparse_names: list[str] = []
    dense_names: list[str] = []
    seen: dict[int, str] = {}
    formats: set[str] = set()
    for name, module in model.named_modules():
        if id(module) in seen:
            continue
        seen[id(module)] = name
        if isinstance(module, SparseLinear):
            layer_tensors, scheme, fmt = _layer_tensors(name, module, sparsity_format)
            tensors.update(layer_tensors)
            sparse_names.append(name)
            if scheme is not None:
                key = json.dumps(scheme, sort_keys=True) + fmt
                schemes.setdefault(key, (scheme, fmt, []))[2].append(name)
                formats.add(fmt)
        elif isinstance(module, nn.Linear):
            dense_names.append(name)
    if not sparse_names:
        raise CheckpointError("save_compressed_tensors: the model has no SparseLinear layer (sparsify it "
                              "first: sparsecc.nn.sparsify_)")
    storages: set[tuple[int, int]] = set()
    for key, t in model.state_dict().items():
        owner = key.rpartition(".")[0]
        if owner in sparse_names or key in tensors:
            continue
        ident = (t.untyped_storage().data_ptr(), t.storage_offset())
        if ident in storages and t.numel():  # a tied weight: stored once, as transformers does
            continue
        storages.add(ident)
        tensors[key] = t.detach().cpu().contiguous()
    groups = {f"group_{i}": {**scheme, "targets": names, "format": fmt}
              for i, (scheme, fmt, names) in enumerate(schemes.values())}
    total = sum(m.in_features * m.out_features for m in model.modules() if isinstance(m, nn.Linear | SparseLinear))
    kept = sum(m.in_features * m.out_features // 2 for m in model.modules() if isinstance(m, SparseLinear))
    quantization_config = {
        "quant_method": "compressed-tensors",
        "format": (formats.pop() if len(formats) == 1 else "mixed-precision") if formats else "dense",
        "quantization_status": "compressed",
        "config_groups": groups,
        "ignore": dense_names,
        "kv_cache_scheme": None,
        "sparsity_config": {"format": sparsity_format, "sparsity_structure": "2:4", "targets": sparse_names,
                            "ignore": dense_names, "global_sparsity": kept / total if total else 0.0,
                            "registry_requires_subclass": False},
    }
    cfg = getattr(model, "config", None)
    data = cfg.to_dict() if hasattr(cfg, "to_dict") else {}
    data["quantization_config"] = quantization_config
    os.makedirs(path, exist_ok=True)
    # Write both files under temporary names, then rename: a failure leaves no half-written checkpoint.
    weights_tmp = tempfile.NamedTemporaryFile(dir=path, suffix=".safetensors.tmp", delete=False).name
    config_tmp = tempfile.NamedTemporaryFile(dir=path, suffix=".json.tmp", delete=False, mode="w").name
    try:
        save_file(tensors, weights_tmp, metadata={"format": "pt"})
        with open(config_tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True, default=str)
        os.replace(weights_tmp, os.path.join(path, WEIGHTS_NAME))
        os.replace(config_tmp, os.path.join(path, CONFIG_NAME))
    finally:
        for tmp in (weights_tmp, config_tmp):
            if os.path.exists(tmp):
                os.remove(tmp)

