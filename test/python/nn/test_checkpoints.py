"""compressed-tensors checkpoints (`sparsecc.nn.load_compressed_tensors` / `save_compressed_tensors`):
checkpoints written by the compressed-tensors library itself, on a tiny transformers Llama built
from a config (nothing downloaded), in every layout llm-compressor ships 2:4 models in (dense with
a 2:4 sparsity config, sparse-24-bitmask, pack-quantized w4a16 / w8a16 with and without zero
points, fp8 float-quantized per channel), load into SparseLinear layers bit for bit and give the
dense model's logits; corrupt and mismatched files give one CheckpointError naming the file and
layer; a sparsecc-saved checkpoint reads back through compressed-tensors."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import torch
from torch import nn

ct = pytest.importorskip("compressed_tensors")
transformers = pytest.importorskip("transformers")

from compressed_tensors.compressors import BaseCompressor, ModelCompressor  # noqa: E402
from compressed_tensors.config import DenseSparsityConfig, Sparse24BitMaskConfig  # noqa: E402
from compressed_tensors.quantization import (  # noqa: E402
    QuantizationArgs,
    QuantizationConfig,
    QuantizationScheme,
    apply_quantization_config,
    preset_name_to_scheme,
)
from compressed_tensors.quantization.utils import calculate_qparams  # noqa: E402
from compressed_tensors.utils import pack_bitmasks, unpack_bitmasks  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

import sparsecc  # noqa: E402
from sparsecc.nn import (  # noqa: E402
    CheckpointError,
    SparseLinear,
    load_compressed_tensors,
    save_compressed_tensors,
)

# ---------------------------------------------------------------------------------------------
# writing checkpoints with compressed-tensors


def _config() -> LlamaConfig:
    # hidden 256 and intermediate 384: multiples of the group (128); k/v projections 128 wide
    return LlamaConfig(vocab_size=96, hidden_size=256, intermediate_size=384, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)


def _tiny_llama(dtype: torch.dtype = torch.float16, seed: int = 0) -> LlamaForCausalLM:
    """A tiny Llama with random weights, every Linear but lm_head pruned 2:4 by magnitude (as
    SparseGPT / Wanda leave them)."""
    torch.manual_seed(seed)
    model = LlamaForCausalLM(_config()).to(dtype).eval()
    with torch.no_grad():
        for name, m in model.named_modules():
            if isinstance(m, nn.Linear) and name != "lm_head":
                m.weight.copy_(sparsecc.prune_2to4(m.weight * 8))  # larger weights: logits that move
    return model


def _calibrate(model: nn.Module) -> None:
    """Min-max weight scales and zero points, as llm-compressor's observers set them."""
    for m in model.modules():
        scheme = getattr(m, "quantization_scheme", None)
        if scheme is None or scheme.weights is None:
            continue
        args, w = scheme.weights, m.weight.detach().float()
        if args.strategy == "group":
            w = w.reshape(w.shape[0], -1, args.group_size)
            lo, hi = w.amin(-1), w.amax(-1)
        elif args.strategy == "channel":
            lo, hi = w.amin(-1, keepdim=True), w.amax(-1, keepdim=True)
        else:
            lo, hi = w.amin().reshape(1), w.amax().reshape(1)
        scale, zero = calculate_qparams(lo, hi, args)
        m.weight_scale.data.copy_(scale.reshape(m.weight_scale.shape))
        if hasattr(m, "weight_zero_point"):
            zp = zero.round() if not zero.dtype.is_floating_point or args.type == "int" else zero
            m.weight_zero_point.data.copy_(zp.reshape(m.weight_zero_point.shape).to(m.weight_zero_point.dtype))


def _sparsity(fmt: str = "dense") -> dict:
    cls = Sparse24BitMaskConfig if fmt == "sparse-24-bitmask" else DenseSparsityConfig
    return cls(sparsity_structure="2:4", targets=["Linear"], ignore=["lm_head"]).model_dump()


def _legacy_bitmask(path: str, names: list[str]) -> None:
    """Rewrite each named layer's `weight` as compressed-tensors' legacy sparse-24-bitmask triple
    (`compressed`, `bitmask`, `shape`: what its Sparse24BitMaskCompressor wrote before 0.15, the
    2 largest magnitudes of every 4 marked), with the library's own `pack_bitmasks`."""
    file = os.path.join(path, "model.safetensors")
    state = load_file(file)
    for name in names:
        w = state.pop(f"{name}.weight")
        magnitude = w.view(torch.int8).abs() if w.dtype == torch.float8_e4m3fn else w.abs()
        groups = magnitude.reshape(-1, 4).float()
        mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(1, groups.topk(2, dim=1).indices, True)
        mask = mask.reshape(w.shape)
        raw = w.view(torch.uint8) if w.element_size() == 1 else w
        state[f"{name}.compressed"] = raw[mask].reshape(w.shape[0], -1).view(w.dtype)
        state[f"{name}.bitmask"] = pack_bitmasks(mask)
        state[f"{name}.shape"] = torch.tensor(list(w.shape)).reshape(-1, 1)
    save_file(state, file, metadata={"format": "pt"})


def _sparse_names(model: nn.Module) -> list[str]:
    return [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and n != "lm_head"]


def _write(model: nn.Module, path: str, scheme: QuantizationScheme | None, fmt: str = "dense") -> None:
    """`model` as llm-compressor saves it: quantized and compressed by compressed-tensors'
    ModelCompressor, `save_pretrained`, `update_config`; plus the 2:4 sparsity config (which
    compressed-tensors >= 0.15 leaves empty) and, for sparse-24-bitmask, the legacy triples."""
    names = _sparse_names(model)
    if scheme is not None:
        apply_quantization_config(model, QuantizationConfig(config_groups={"group_0": scheme}, ignore=["lm_head"]))
        _calibrate(model)
        compressor = ModelCompressor.from_pretrained_model(model)
        compressor.compress_model(model)
    model.save_pretrained(path)
    if scheme is not None:
        compressor.update_config(path)
    cfg_file = os.path.join(path, "config.json")
    with open(cfg_file) as f:
        cfg = json.load(f)
    qc = cfg.setdefault("quantization_config", {"quant_method": "compressed-tensors", "format": "dense",
                                                "version": ct.__version__})
    qc["sparsity_config"] = _sparsity(fmt)
    with open(cfg_file, "w") as f:
        json.dump(cfg, f, indent=2)
    if fmt == "sparse-24-bitmask":
        _legacy_bitmask(path, names)


def _ct_model(path: str) -> LlamaForCausalLM:
    """The checkpoint read back by compressed-tensors, as transformers' compressed-tensors loader
    does it: the quantization config applied to a fresh model, the model compressed (the stored
    arrays' shapes), the safetensors loaded as stored (`assign`: scales keep their dtype), then
    `ModelCompressor.decompress_model`. Its quantized layers then run as compressed-tensors runs
    them (dynamic activations fake-quantized per token). Legacy sparse-24-bitmask triples go
    through the library's `unpack_bitmasks` first (compressed-tensors >= 0.15 has no reader)."""
    cfg = json.load(open(os.path.join(path, "config.json")))
    qc = cfg["quantization_config"]
    bitmask = qc["sparsity_config"]["format"] == "sparse-24-bitmask"
    (Sparse24BitMaskConfig if bitmask else DenseSparsityConfig).model_validate(qc["sparsity_config"])
    state = load_file(os.path.join(path, "model.safetensors"))
    for key in [k for k in state if k.endswith(".compressed")]:
        name = key[: -len(".compressed")]
        state[f"{name}.weight"] = _stored_dense(state, name)
        for suffix in ("compressed", "bitmask", "shape"):
            del state[f"{name}.{suffix}"]
    model = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in cfg.items() if k != "quantization_config"})).half()
    if qc.get("config_groups"):
        fields = QuantizationConfig.model_fields
        qconfig = QuantizationConfig.model_validate({k: v for k, v in qc.items() if k in fields})
        apply_quantization_config(model, qconfig)
        compressor = ModelCompressor(quantization_config=qconfig)
        compressor.compress_model(model)
        model.load_state_dict(state, strict=True, assign=True)
        compressor.decompress_model(model)
    else:
        model.load_state_dict(state, strict=True)
    return model.eval()


def _stored_dense(state: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    """A layer's weight as stored, not dequantized: `weight`, or the legacy triple placed by the
    library's `unpack_bitmasks`."""
    if f"{name}.weight" in state:
        return state[f"{name}.weight"]
    raw = state[f"{name}.compressed"]
    mask = unpack_bitmasks(state[f"{name}.bitmask"], state[f"{name}.shape"].flatten().tolist())
    bits = raw.view(torch.uint8) if raw.element_size() == 1 else raw
    dense = torch.zeros(mask.shape, dtype=bits.dtype)
    dense[mask] = bits.flatten()
    return dense.view(raw.dtype)


EIGHT_BIT = {"fp8": torch.float8_e4m3fn, "int8": torch.int8}
TOKENS = torch.randint(0, 96, (2, 12), generator=torch.Generator().manual_seed(1))

SCHEMES = {
    "dense": (None, "dense"),
    "sparse-24-bitmask": (None, "sparse-24-bitmask"),
    "w4a16": (preset_name_to_scheme("W4A16", ["Linear"]), "dense"),
    "w4a16-zp": (preset_name_to_scheme("W4A16_ASYM", ["Linear"]), "dense"),
    "w8a16": (preset_name_to_scheme("W8A16", ["Linear"]), "dense"),
    "w8a16-zp-channel": (QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(
        num_bits=8, type="int", symmetric=False, strategy="channel")), "dense"),
    "fp8-dynamic": (preset_name_to_scheme("FP8_DYNAMIC", ["Linear"]), "dense"),
    "fp8-dynamic-bitmask": (preset_name_to_scheme("FP8_DYNAMIC", ["Linear"]), "sparse-24-bitmask"),
    "int8-w8a8": (preset_name_to_scheme("W8A8", ["Linear"]), "dense"),
}
EXPECT = {"dense": "NV24", "sparse-24-bitmask": "NV24", "w4a16": "NV24.w4g128", "w4a16-zp": "NV24.w4g128z",
          "w8a16": "NV24.w8g128", "w8a16-zp-channel": "NV24.w8cz", "fp8-dynamic": "fp8",
          "fp8-dynamic-bitmask": "fp8", "int8-w8a8": "int8"}


_WRITTEN: dict[tuple[str, torch.dtype], str] = {}  # (layout, dtype) -> a checkpoint written once
_CACHE: list = []


@pytest.fixture(autouse=True, scope="module")
def _written_once(tmp_path_factory):
    """Each layout is written by compressed-tensors once per module; tests get a copy to change."""
    _CACHE.append(tmp_path_factory.mktemp("written"))
    yield
    _CACHE.clear()
    _WRITTEN.clear()


def _checkpoint(tmp_path, layout: str, dtype: torch.dtype = torch.float16) -> str:
    """A fresh copy of the tiny Llama written in `layout` by compressed-tensors."""
    key = (layout, dtype)
    if key not in _WRITTEN:
        scheme, fmt = SCHEMES[layout]
        _WRITTEN[key] = str(_CACHE[0] / f"{layout}-{str(dtype).rpartition('.')[2]}")
        _write(_tiny_llama(dtype), _WRITTEN[key], scheme.model_copy(deep=True) if scheme is not None else None, fmt)
    path = str(tmp_path / layout)
    shutil.copytree(_WRITTEN[key], path)
    return path


def _layer_dense(layer: SparseLinear) -> torch.Tensor:
    """What the layer multiplies by: the dequantized weight (8-bit: values times the channel scale)."""
    w = layer.weight().to_dense()
    if layer.weight_dtype is not None:
        return w.float() * layer.weight_scale.reshape(-1, 1)
    return w


# ---------------------------------------------------------------------------------------------
# loading


def _logits_close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.isfinite().all() and want.abs().max() > 1.0  # logits that a wrong weight would move
    _close(got, want)


@pytest.mark.parametrize("layout", list(SCHEMES))
def test_every_layout_loads_bit_exact_and_matches_the_dense_logits(tmp_path, layout):
    path = _checkpoint(tmp_path, layout)
    model = load_compressed_tensors(path, LlamaForCausalLM(_config()).half().eval())
    reference = _ct_model(path)
    state = load_file(os.path.join(path, "model.safetensors"))
    names = _sparse_names(reference)
    assert len(names) == 14
    for name in names:
        layer, ref = model.get_submodule(name), reference.get_submodule(name).weight.detach()
        assert isinstance(layer, SparseLinear), name
        assert layer.fqn == name
        fmt = EXPECT[layout]
        got = _layer_dense(layer)
        if fmt in EIGHT_BIT:  # the 8-bit values are the checkpoint's; values * scale in fp32 round once to fp16
            assert layer.weight_dtype == EIGHT_BIT[fmt]
            assert torch.equal(layer.weight().to_dense().view(torch.uint8),
                               _stored_dense(state, name).view(torch.uint8)), name
            assert torch.equal(layer.weight_scale, state[f"{name}.weight_scale"].float().flatten())
            got = got.to(ref.dtype)
        else:
            assert layer.weight().encoding == fmt and layer.weight_dtype is None
        # bit for bit: the checkpoint's values placed, or (q - zp) * scale rounded once, as ct does
        assert got.dtype == ref.dtype, name
        assert torch.equal(got.view(torch.int16), ref.view(torch.int16)), name
        assert ref.abs().sum() > 0
    assert type(model.lm_head) is nn.Linear  # `ignore`d: stays dense
    for key in ("lm_head.weight", "model.embed_tokens.weight", "model.norm.weight"):
        assert torch.equal(model.state_dict()[key], state[key])
    with torch.no_grad():
        got, want = model(TOKENS).logits, reference(TOKENS).logits
    if EXPECT[layout] not in EIGHT_BIT:
        _logits_close(got, want)
        return
    # 8-bit: each forward quantizes x per token, sparsecc in fp32 and compressed-tensors in fp16, so
    # a few codes round the other way; layer by layer that is fp8's tolerance ...
    # (batch, tokens, features): compressed-tensors' per-token scales take 3-D inputs (one scale for a 2-D one)
    x = torch.randn(2, 6, 384, dtype=torch.float16, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        for name in names:
            layer, ref = model.get_submodule(name), reference.get_submodule(name)
            xs = x[..., : layer.in_features]
            _near(layer(xs), ref(xs))
    # ... and the tiny random Llama amplifies those flips (its logits move 3-10 % when the
    # activation rounding changes at all): the logits only have to stay near
    want = want.to(got.device)
    assert got.isfinite().all() and (got.float() - want.float()).norm() / want.float().norm() < 0.15


def _near(got: torch.Tensor, want: torch.Tensor) -> None:
    """fp8 activations: the error's norm within 1 % of the output's (a code that rounds the other
    way moves one product by up to 1/16 of itself; the two quantize x alike but for the scale's
    rounding, so few codes do). The weights are bit-exact; x's codes are what may differ."""
    assert got.isfinite().all()
    want = want.to(got.device)  # compressed-tensors' dispatch hooks may hand its outputs back on the CPU
    assert (got.float() - want.float()).norm() / want.float().norm() < 0.01


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    want = want.to(got.device)  # compressed-tensors' dispatch hooks may hand its outputs back on the CPU
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2 * want.abs().max().item())


def test_the_packed_codes_are_the_checkpoints(tmp_path):
    """The 4-bit codes sparsecc holds are the checkpoint's own codes (q + 8), kept two of every
    four, and its scales and zero points are the checkpoint's arrays."""
    path = _checkpoint(tmp_path, "w4a16-zp")
    model = load_compressed_tensors(path, LlamaForCausalLM(_config()).half())
    state = load_file(os.path.join(path, "model.safetensors"))
    from compressed_tensors.compressors.pack_quantized.helpers import unpack_from_int32
    name = "model.layers.1.mlp.down_proj"
    layer = model.get_submodule(name)
    q = unpack_from_int32(state[f"{name}.weight_packed"], 4, torch.Size(state[f"{name}.weight_shape"].tolist()))
    zp = unpack_from_int32(state[f"{name}.weight_zero_point"], 4, torch.Size((256, 3)), packed_dim=0)
    assert torch.equal(layer.scales, state[f"{name}.weight_scale"])
    assert torch.equal(layer.zeros, (zp.to(torch.int32) + 8).half())
    idx0, idx1 = sparsecc.runtime.codec.decode_meta(layer.meta, 256)
    pos = (torch.stack((idx0, idx1), -1) + 4 * torch.arange(96).reshape(1, -1, 1)).reshape(256, 192)
    codes = sparsecc.runtime.quant_codec.unpack_codes(layer.values, 4)
    assert torch.equal(codes, torch.gather(q.to(torch.int32) + 8, 1, pos))
    assert len(set(codes.flatten().tolist())) > 8


def test_unpacked_zero_points_and_identity_group_order(tmp_path):
    """Checkpoints before compressed-tensors 0.10 store zero points unpacked (rows x groups,
    signed); a `weight_g_idx` that keeps the groups in column order (actorder=weight) loads, one
    that permutes them (actorder=group) is refused, naming the scheme."""
    from compressed_tensors.compressors.pack_quantized.helpers import unpack_from_int32
    path = _checkpoint(tmp_path, "w4a16-zp")
    packed = load_compressed_tensors(path, LlamaForCausalLM(_config()).half())
    name = "model.layers.0.mlp.gate_proj"

    def unpack(state):
        for key in [k for k in state if k.endswith(".weight_zero_point")]:
            rows = int(state[key.replace("weight_zero_point", "weight_shape")][0])
            state[key] = unpack_from_int32(state[key], 4, torch.Size((rows, state[key].shape[1])), packed_dim=0).contiguous()
        state[f"{name}.weight_g_idx"] = torch.arange(256, dtype=torch.int32) // 128
    _edit_state(path, unpack)
    assert load_file(f"{path}/model.safetensors")[f"{name}.weight_zero_point"].dtype == torch.int8
    unpacked = load_compressed_tensors(path, LlamaForCausalLM(_config()).half())
    for key, value in packed.state_dict().items():
        assert torch.equal(unpacked.state_dict()[key], value), key
    file = _edit_state(path, lambda s: s.update({f"{name}.weight_g_idx": torch.arange(256, dtype=torch.int32) % 2}))
    assert _load_error(path) == (f"{file}: layer '{name}': '{name}.weight_g_idx' permutes the groups "
                                 "(actorder=group): a scheme sparsecc cannot hold (its groups are consecutive columns)")


def test_bf16_checkpoint_loads_into_a_bf16_model(tmp_path):
    path = _checkpoint(tmp_path, "w4a16", torch.bfloat16)
    model = load_compressed_tensors(path, LlamaForCausalLM(_config()).to(torch.bfloat16))
    layer = model.model.layers[0].self_attn.q_proj
    assert layer.weight().dtype == torch.bfloat16
    ref = _ct_model(path).model.layers[0].self_attn.q_proj.weight
    assert ref.dtype == torch.bfloat16 and torch.equal(layer.weight().to_dense(), ref)


def test_model_built_from_the_config(tmp_path):
    path = _checkpoint(tmp_path, "w8a16")
    model = load_compressed_tensors(path)
    assert isinstance(model, LlamaForCausalLM)
    assert isinstance(model.model.layers[1].mlp.up_proj, SparseLinear)
    assert model.model.embed_tokens.weight.dtype == torch.float16


def test_ragged_rows_bias_and_zero_points_packed_down_the_rows(tmp_path):
    """44 output rows (zero points packed 8 a word down the rows: a padded last word) and a bias,
    on a plain nn.Module: compressed-tensors matches any model's Linear layers."""
    torch.manual_seed(3)
    model = nn.ModuleDict({"proj": nn.Linear(256, 44), "head": nn.Linear(44, 10)}).half()
    with torch.no_grad():
        model["proj"].weight.copy_(sparsecc.prune_2to4(model["proj"].weight))
    scheme = QuantizationScheme(targets=["re:proj"], weights=QuantizationArgs(
        num_bits=4, type="int", symmetric=False, strategy="group", group_size=64))
    apply_quantization_config(model, QuantizationConfig(config_groups={"group_0": scheme}))
    _calibrate(model)
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    path = str(tmp_path / "ragged")
    os.makedirs(path)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, f"{path}/model.safetensors")
    with open(f"{path}/config.json", "w") as f:
        json.dump({}, f)
    compressor.update_config(path)
    cfg = json.load(open(f"{path}/config.json"))
    cfg["quantization_config"]["sparsity_config"] = DenseSparsityConfig(
        sparsity_structure="2:4", targets=["re:proj"]).model_dump()
    json.dump(cfg, open(f"{path}/config.json", "w"))
    assert model["proj"].weight_zero_point.shape == (6, 4)  # ceil(44 * 4 / 32) words
    fresh = nn.ModuleDict({"proj": nn.Linear(256, 44), "head": nn.Linear(44, 10)}).half()
    load_compressed_tensors(path, fresh)
    layer = fresh["proj"]
    assert isinstance(layer, SparseLinear) and layer.weight().encoding == "NV24.w4g64z"
    assert type(fresh["head"]) is nn.Linear
    sd = {k[5:]: v for k, v in load_file(f"{path}/model.safetensors").items() if k.startswith("proj.")}
    ref = BaseCompressor.get_value_from_registry("pack-quantized").decompress(sd, scheme)["weight"]
    assert torch.equal(layer.weight().to_dense(), ref)
    assert torch.equal(layer.bias, sd["bias"])
    x = torch.randn(5, 256, dtype=torch.float16)
    torch.testing.assert_close(layer(x).float(), nn.functional.linear(x, ref, sd["bias"]).float(),
                               rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------------------------------------
# errors: one CheckpointError naming the file and the layer


def _edit_state(path: str, edit) -> str:
    file = os.path.join(path, "model.safetensors")
    state = load_file(file)
    edit(state)
    save_file(state, file, metadata={"format": "pt"})
    return file


def _edit_config(path: str, edit) -> str:
    file = os.path.join(path, "config.json")
    cfg = json.load(open(file))
    edit(cfg["quantization_config"])
    json.dump(cfg, open(file, "w"))
    return file


def _load_error(path: str) -> str:
    model = LlamaForCausalLM(_config()).half()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(CheckpointError) as info:
        load_compressed_tensors(path, model)
    # nothing half-loaded: the model is untouched
    assert not any(isinstance(m, SparseLinear) for m in model.modules())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    return str(info.value)


def test_truncated_safetensors(tmp_path):
    path = _checkpoint(tmp_path, "w4a16")
    file = os.path.join(path, "model.safetensors")
    data = open(file, "rb").read()
    open(file, "wb").write(data[: len(data) // 2])
    msg = _load_error(path)
    assert msg.startswith(f"{file}: not a readable safetensors file (truncated or corrupt?)"), msg


def test_missing_key(tmp_path):
    path = _checkpoint(tmp_path, "w4a16")
    file = _edit_state(path, lambda s: s.pop("model.layers.1.mlp.gate_proj.weight_scale"))
    msg = _load_error(path)
    assert msg == (f"{file}: layer 'model.layers.1.mlp.gate_proj': the checkpoint has no "
                   "'model.layers.1.mlp.gate_proj.weight_scale'"), msg


def test_missing_non_linear_key(tmp_path):
    path = _checkpoint(tmp_path, "dense")
    file = _edit_state(path, lambda s: s.pop("model.norm.weight"))
    assert _load_error(path) == f"{file}: the checkpoint has no 'model.norm.weight' (the model's (256,) torch.float16 tensor)"


@pytest.mark.parametrize("layout", ["dense", "w4a16-zp", "fp8-dynamic", "sparse-24-bitmask"])
def test_weight_that_breaks_2_4_names_the_layer_and_group(tmp_path, layout):
    path = _checkpoint(tmp_path, layout)
    name = "model.layers.0.mlp.up_proj"

    def break_group(state):
        if layout == "sparse-24-bitmask":  # a third position marked in row 5's group 3
            bits = state[f"{name}.bitmask"]
            mask = unpack_bitmasks(bits, [384, 256])
            col = next(c for c in range(12, 16) if not mask[5, c])
            mask[5, col] = True
            state[f"{name}.bitmask"] = pack_bitmasks(mask)
        elif layout == "w4a16-zp":  # every code of row 5's group 3 off its zero point
            from compressed_tensors.compressors.pack_quantized.helpers import (
                pack_to_int32,
                unpack_from_int32,
            )
            q = unpack_from_int32(state[f"{name}.weight_packed"], 4, torch.Size((384, 256)))
            zp = unpack_from_int32(state[f"{name}.weight_zero_point"], 4, torch.Size((384, 2)), packed_dim=0)
            q[5, 12:16] = torch.where(zp[5, 0] == 7, 6, zp[5, 0] + 1).to(torch.int8)
            state[f"{name}.weight_packed"] = pack_to_int32(q, 4)
        else:
            w = state[f"{name}.weight"]
            w.view(torch.uint8)[5, 12:16] = 0x38 if w.element_size() == 1 else 0  # fp8 1.0
            if w.element_size() == 2:
                w[5, 12:16] = 0.5
    file = _edit_state(path, break_group)
    msg = _load_error(path)
    assert msg.startswith(f"{file}: layer '{name}': the weight is not 2:4 sparse: row 5, columns 12..15 hold "), msg


def test_unknown_format_names_the_scheme(tmp_path):
    path = _checkpoint(tmp_path, "w4a16")
    file = _edit_config(path, lambda qc: qc["config_groups"]["group_0"].update(format="marlin-24"))
    msg = _load_error(path)
    assert msg.startswith(f"{file}: layer 'model.layers.0.self_attn.q_proj': quantization scheme group_0 "
                          "(marlin-24, weights int4 group 128 symmetric, input_activations none) is a scheme "
                          "sparsecc cannot hold: format 'marlin-24' with int4 weights.") or \
        msg.startswith(f"{os.path.join(path, 'model.safetensors')}: layer 'model.layers.0.self_attn.q_proj': "
                       "quantization scheme group_0 (marlin-24"), msg


@pytest.mark.parametrize("edit, words", [
    (lambda qc: qc["sparsity_config"].update(format="sparse-bitmask"), "sparsity format 'sparse-bitmask' is a scheme"),
    (lambda qc: qc["sparsity_config"].update(sparsity_structure="unstructured"),
     "sparsity_structure 'unstructured' is a scheme"),
    (lambda qc: qc.update(sparsity_config={}), "declares no 2:4 sparsity"),
    (lambda qc: qc["config_groups"]["group_0"]["weights"].update(group_size=96), "the group size must be a power"),
    (lambda qc: qc["config_groups"]["group_0"]["weights"].update(num_bits=3), "3-bit weights"),
    (lambda qc: qc["config_groups"]["group_0"].update(input_activations={"num_bits": 8, "type": "int",
                                                                          "strategy": "token", "dynamic": True}),
     "quantized activations with packed int weights"),
])
def test_schemes_sparsecc_cannot_hold(tmp_path, edit, words):
    path = _checkpoint(tmp_path, "w4a16")
    _edit_config(path, edit)
    msg = _load_error(path)
    assert words in msg and path in msg, msg


def test_fp8_with_static_input_scales_is_refused(tmp_path):
    torch.manual_seed(0)
    path = str(tmp_path / "fp8-static")
    model = _tiny_llama()
    _write(model, path, preset_name_to_scheme("FP8", ["Linear"]))
    msg = _load_error(path)
    assert "float8 weights need dynamic per-token float8 activations" in msg and "input_activations float8 tensor" in msg


def test_shape_mismatch(tmp_path):
    path = _checkpoint(tmp_path, "w8a16")
    cfg = _config()
    cfg.intermediate_size = 512
    model = LlamaForCausalLM(cfg).half()
    with pytest.raises(CheckpointError) as info:
        load_compressed_tensors(path, model)
    file = os.path.join(path, "model.safetensors")
    assert str(info.value) == (f"{file}: layer 'model.layers.0.mlp.gate_proj': 'model.layers.0.mlp.gate_proj."
                               "weight_shape' is (384, 256), the model's layer is (512, 256) (out x in features)")


def test_dense_weight_of_another_shape(tmp_path):
    path = _checkpoint(tmp_path, "dense")
    file = _edit_state(path, lambda s: s.update({"model.layers.1.self_attn.o_proj.weight": torch.zeros(256, 128).half()}))
    assert _load_error(path) == (f"{file}: layer 'model.layers.1.self_attn.o_proj': 'model.layers.1.self_attn.o_proj."
                                 "weight' has shape (256, 128), expected (256, 256) (the model's out x in features)")


def test_unexpected_keys_and_missing_files(tmp_path):
    path = _checkpoint(tmp_path, "dense")
    _edit_state(path, lambda s: s.update({"model.extra.weight": torch.ones(3)}))
    assert "the model has no place for 'model.extra.weight'" in _load_error(path)
    model = LlamaForCausalLM(_config()).half()
    load_compressed_tensors(path, model, strict=False)  # and strict=False takes the rest
    os.remove(os.path.join(path, "config.json"))
    assert _load_error(path) == f"{os.path.join(path, 'config.json')}: no such file (a compressed-tensors checkpoint " \
                                "is a folder with config.json and safetensors weights)"


def test_sharded_checkpoint_and_a_missing_shard(tmp_path):
    """A checkpoint in several safetensors files (model.safetensors.index.json) loads as one; a
    shard the index names but the folder lacks is named."""
    path = str(tmp_path / "sharded")
    _tiny_llama().save_pretrained(path, max_shard_size="300KB")
    cfg = json.load(open(f"{path}/config.json"))
    cfg["quantization_config"] = {"quant_method": "compressed-tensors", "format": "dense",
                                  "sparsity_config": _sparsity()}
    json.dump(cfg, open(f"{path}/config.json", "w"))
    shards = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
    assert len(shards) > 2 and os.path.exists(f"{path}/model.safetensors.index.json")
    model = load_compressed_tensors(path, LlamaForCausalLM(_config()).half().eval())
    reference = _tiny_llama()
    assert isinstance(model.model.layers[1].self_attn.v_proj, SparseLinear)
    with torch.no_grad():
        _logits_close(model(TOKENS).logits, reference(TOKENS).logits)
    os.remove(os.path.join(path, shards[-1]))
    assert _load_error(path) == (f"{os.path.join(path, shards[-1])}: no such file (named by "
                                 "model.safetensors.index.json)")
    os.remove(f"{path}/model.safetensors.index.json")
    assert "no model.safetensors or model.safetensors.index.json (found " in _load_error(path)


def test_a_cast_that_would_round_is_refused(tmp_path):
    """A bf16 checkpoint loads into an fp16 model where every value converts exactly; one that
    does not (1e5 overflows fp16) is refused, naming the tensor."""
    path = _checkpoint(tmp_path, "dense", torch.bfloat16)
    name = "model.layers.0.self_attn.q_proj"
    model = load_compressed_tensors(path, LlamaForCausalLM(_config()).half())
    assert torch.equal(model.get_submodule(name).weight().to_dense(),
                       load_file(f"{path}/model.safetensors")[f"{name}.weight"].half())

    def overflow(state):
        w = state[f"{name}.weight"]
        w[w != 0] = torch.where(w[w != 0] > 0, 1e5, -1e5).to(w.dtype)
    _edit_state(path, overflow)
    with pytest.raises(CheckpointError, match=rf"'{name}.weight' is torch.bfloat16, the layer is torch.float16, "
                                              r"and the cast would round it; build the model in torch.bfloat16"):
        load_compressed_tensors(path, LlamaForCausalLM(_config()).half())


def test_empty_sparsity_config_with_an_explicit_one(tmp_path):
    path = _checkpoint(tmp_path, "w4a16")
    _edit_config(path, lambda qc: qc.update(sparsity_config={}))
    model = load_compressed_tensors(path, LlamaForCausalLM(_config()).half(),
                                    sparsity={"targets": ["Linear"], "ignore": ["lm_head"]})
    assert isinstance(model.model.layers[0].mlp.down_proj, SparseLinear)


# ---------------------------------------------------------------------------------------------
# saving: sparsecc -> compressed-tensors


def _sparsecc_model(**kwargs) -> LlamaForCausalLM:
    model = _tiny_llama()
    sparsecc.nn.sparsify_(model, filter_fn=lambda m, name: name != "lm_head", prune=False, **kwargs)
    return model


@pytest.mark.parametrize("kwargs", [{}, {"quant": "w4g128"}, {"quant": "w4g64z"}, {"quant": "w8c"},
                                    {"quant": "w8g128z"}, {"weight_dtype": torch.float8_e4m3fn},
                                    {"weight_dtype": torch.int8}], ids=str)
def test_sparsecc_saves_and_compressed_tensors_reads_back(tmp_path, kwargs):
    model = _sparsecc_model(**kwargs)
    path = str(tmp_path / "saved")
    save_compressed_tensors(model, path)
    assert sorted(os.listdir(path)) == ["config.json", "model.safetensors"]
    back = _ct_model(path)
    for name in _sparse_names(back):
        mine, theirs = _layer_dense(model.get_submodule(name)), back.get_submodule(name).weight.detach()
        assert mine.dtype == theirs.dtype and torch.equal(mine, theirs), name  # 8-bit: fp32 scales, kept
    assert torch.equal(back.lm_head.weight, model.lm_head.weight)
    _same_model(load_compressed_tensors(path, LlamaForCausalLM(_config()).half()), model)


def _same_model(again: nn.Module, model: nn.Module) -> None:
    """sparsecc read its own checkpoint back: the same dense weights, scales, zero points and
    other tensors. (values and meta may differ where a kept code is the zero point: a dense
    layout does not say which of a group's zeros were kept.)"""
    for name, layer in model.named_modules():
        if isinstance(layer, SparseLinear):
            assert torch.equal(_layer_dense(again.get_submodule(name)), _layer_dense(layer)), name
    mine = again.state_dict()
    for key, value in model.state_dict().items():
        if key.rpartition(".")[2] not in ("values", "meta"):
            assert torch.equal(mine[key], value), key


def test_save_sparse_24_bitmask_and_load_it_back(tmp_path):
    model = _sparsecc_model(weight_dtype=torch.float8_e4m3fn)
    path = str(tmp_path / "bitmask")
    save_compressed_tensors(model, path, sparsity_format="sparse-24-bitmask")
    back = _ct_model(path)  # the legacy triple through compressed-tensors' unpack_bitmasks
    for name in _sparse_names(back):
        assert torch.equal(_layer_dense(model.get_submodule(name)), back.get_submodule(name).weight), name
    again = load_compressed_tensors(path, LlamaForCausalLM(_config()).half())
    _same_model(again, model)
    for name, layer in model.named_modules():  # the legacy layout names the kept positions: same arrays
        if isinstance(layer, SparseLinear):
            assert torch.equal(again.get_submodule(name).meta, layer.meta), name
            assert torch.equal(again.get_submodule(name).values.view(torch.uint8), layer.values.view(torch.uint8))


def test_save_errors(tmp_path):
    with pytest.raises(CheckpointError, match="the model has no SparseLinear layer"):
        save_compressed_tensors(_tiny_llama(), str(tmp_path / "x"))
    with pytest.raises(CheckpointError, match="sparsity_format must be one of"):
        save_compressed_tensors(_sparsecc_model(), str(tmp_path / "x"), sparsity_format="marlin-24")
    assert not os.path.exists(tmp_path / "x")


# ---------------------------------------------------------------------------------------------
# the GPU: each layout on CUDA against the dense logits


@pytest.mark.gpu
@pytest.mark.parametrize("layout", list(SCHEMES))
def test_every_layout_runs_on_the_gpu(tmp_path, layout):
    path = _checkpoint(tmp_path, layout)
    model = load_compressed_tensors(path, LlamaForCausalLM(_config()).half().eval()).cuda()
    reference = _ct_model(path).cuda()  # compressed-tensors' own forward (its hooks may run it on the CPU)
    with torch.no_grad():
        got, want = model(TOKENS.cuda()).logits, reference(TOKENS.cuda()).logits
        if EXPECT[layout] not in EIGHT_BIT:
            _logits_close(got, want)
            return
        x = torch.randn(2, 6, 384, dtype=torch.float16, device="cuda")
        for name in _sparse_names(reference):  # fp8: layer by layer, then loosely (see above)
            layer, ref = model.get_submodule(name), reference.get_submodule(name)
            _near(layer(x[..., : layer.in_features]), ref(x[..., : layer.in_features]))
    want = want.to(got.device)
    assert got.isfinite().all() and (got.float() - want.float()).norm() / want.float().norm() < 0.15
