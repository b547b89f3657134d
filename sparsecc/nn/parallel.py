"""Tensor parallelism for `SparseLinear` through `torch.distributed`: the parallel styles
`SparseColwiseParallel` / `SparseRowwiseParallel` for `parallelize_module`, `sparse_plan` (turns
a plan written with torch's `ColwiseParallel` / `RowwiseParallel` into one that also takes
SparseLinear layers), and `shard_sparse_linear`, the per-rank slice for other frameworks.
Fused projections (q/k/v as one layer, gate/up as one: one launch instead of three or two) shard
with `FusedColwiseParallel` (dense nn.Linear and SparseLinear alike; `fuse_linears` builds the
fused layer, `shard_fused_sparse_linear` is its per-rank slice).

    mesh = init_device_mesh("cuda", (2,))
    sparsify_(model, quant="w4g128")                      # the whole model, on every rank
    parallelize_module(model, mesh, sparse_plan({
        "layers.*.self_attn.q_proj": ColwiseParallel(), ...,
        "layers.*.mlp.down_proj": RowwiseParallel()}))

Sparsify first, then shard. Each rank's shard is cut out of the compressed arrays (values,
metadata, scales, zero points) and is itself a complete compressed weight that the local
kernel runs on; nothing is pruned or quantized again. That is what a compressed checkpoint needs
(it has no dense weight to shard), it keeps the codes and scales bit for bit, and it changes
nothing else: 2:4 groups (4 columns) and quantization groups both lie along K, so pruning or
quantizing a shard gives the same numbers as the shard of the pruned or quantized weight, as
long as the cut falls on a boundary. A split that does not is refused, naming the layer:

  - column-parallel (`SparseColwiseParallel`, Shard(0) of the weight): the output rows are
    split; any row count works. Bias and per-row scales follow the rows.
  - row-parallel (`SparseRowwiseParallel`, Shard(1)): K is split; every cut must fall on a
    multiple of 16 (one metadata word covers 16 columns) and of the quantization group
    (w4g128: 128). Each rank computes a partial sum; the output hook reduces it (all-reduce for
    the default Replicate output) and then applies the layer's activation. The bias is added
    once, by the group's first rank (the other ranks' shards have none).

Shards are cut as torch.chunk (and DTensor's `Shard`) cut: ceil(n / world) per rank, the last
rank the rest; so a row-parallel layer takes the Shard(-1) activations its column-parallel
neighbour leaves. The weights stay plain tensors (the local shard, not DTensors): forward runs
the local SparseLinear as it is, inside hooks that redistribute the input and the output as
torch's styles do (`input_layouts`, `output_layouts`, `use_local_output` mean what they mean
there). With `src_data_rank` (parallelize_module's, default 0) the full arrays are broadcast from
that rank first, so that every rank cuts its shard out of the same weight, as torch's styles
do; `src_data_rank=None` trusts each rank's own copy.

The state_dict of a sharded model is each rank's shard (plain tensors); save the unsharded
model to make a checkpoint.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, ParallelStyle, RowwiseParallel
from torch.distributed.tensor.placement_types import Placement

from sparsecc.nn.linear import SparseLinear, _activate
from sparsecc.runtime.codec import decode_meta, encode_meta

__all__ = ["FusedColwiseParallel", "SparseColwiseParallel", "SparseRowwiseParallel", "TPShard", "fuse_linears",
           "fused_rows", "shard_fused_sparse_linear", "shard_sparse_linear", "sparse_plan"]

K_UNIT = 16
"""Columns of one metadata word: a K cut must fall on a multiple of it (and of the quantization
group)."""


class TPShard:
    """What a sharded SparseLinear holds (its attribute `tp_shard`): the split dimension (0:
    output rows, column-parallel; 1: K, row-parallel), this rank's index and the group's size,
    the full layer's shape, and the first row / column of this shard; for a fused layer
    (`shard_fused_sparse_linear`) the sizes of its parts, the offset then being the one in
    each part.

        >>> TPShard(1, 0, 2, 4096, 11008, 0)
        TPShard(dim=1, rank=0/2, full 4096 x 11008, offset 0)
        >>> TPShard(0, 1, 2, 12288, 4096, 2048, parts=(4096, 4096, 4096))
        TPShard(dim=0, rank=1/2, full 12288 x 4096, offset 2048, parts (4096, 4096, 4096))
    """

    def __init__(self, dim: int, rank: int, world_size: int, out_features: int, in_features: int,
                 offset: int, parts: tuple[int, ...] | None = None) -> None:
        self.dim, self.rank, self.world_size = dim, rank, world_size
        self.out_features, self.in_features, self.offset = out_features, in_features, offset
        self.parts = parts

    def __repr__(self) -> str:
        parts = f", parts {self.parts}" if self.parts is not None else ""
        return (f"TPShard(dim={self.dim}, rank={self.rank}/{self.world_size}, full {self.out_features} x "
                f"{self.in_features}, offset {self.offset}{parts})")


def _chunk(n: int, world_size: int, rank: int) -> tuple[int, int]:
    """(start, size) of rank's piece of n, as torch.chunk and DTensor's Shard cut: ceil(n/world)
    per rank, the last ones the rest (possibly nothing)."""
    step = -(-n // world_size)
    start = min(rank * step, n)
    return start, max(0, min(step, n - start))


def _name(layer: SparseLinear) -> str:
    return f"SparseLinear {layer.fqn!r}" if layer.fqn else "SparseLinear"


def _check_split(layer: SparseLinear, dim: int, world_size: int) -> None:
    """ValueError naming the layer and the sizes where `world_size` pieces of `dim` would cut a
    2:4 metadata word or a quantization group, or leave a rank nothing."""
    n = layer.out_features if dim == 0 else layer.in_features
    what = "out_features" if dim == 0 else "in_features"
    fmt = f"NV24.{layer.quant}" if layer.quant else "NV24" if layer.weight_dtype is None else f"NV24 {layer.weight_dtype}"
    where = f"{_name(layer)} ({layer.in_features} -> {layer.out_features}, {fmt})"
    sizes = [_chunk(n, world_size, r)[1] for r in range(world_size)]
    if min(sizes) == 0:
        raise ValueError(f"{where}: {what} = {n} split {world_size} ways leaves a rank no "
                         f"{'rows' if dim == 0 else 'columns'} (pieces {sizes})")
    if dim == 0:
        return
    unit, why = K_UNIT, "a multiple of 16 (one 2:4 metadata word covers 16 columns)"
    group = _quant_group(layer)
    if group is not None and math.lcm(K_UNIT, group) > K_UNIT:
        unit = math.lcm(K_UNIT, group)
        why = f"a multiple of {unit} (16 columns a metadata word, {group} a quantization group of {layer.quant})"
        if unit == group:
            why = f"a multiple of the quantization group {group} ({layer.quant})"
    bad = [s for s in sizes[:-1] if s % unit]
    if bad:
        raise ValueError(f"{where}: row-parallel over {world_size} ranks splits in_features = {n} into pieces "
                         f"of {sizes}; each cut along K must fall on {why}, and {bad[0]} is not. Use a "
                         "tensor-parallel size that divides K into such pieces, or keep this layer "
                         "column-parallel or replicated")


def _quant_group(layer: SparseLinear) -> int | None:
    """The K columns one scale covers (None: unquantized, or one scale per row)."""
    if layer.quant is None:
        return None
    return layer.weight().scheme.group


def _slice_meta(meta: torch.Tensor, rows: int, r0: int, r1: int, g0: int, g1: int) -> torch.Tensor:
    """NV24 metadata of rows r0:r1 and 2:4 groups g0:g1 of a `rows`-row matrix: decoded to the
    kept indices, cut, encoded again (the words interleave 16 rows, so the array itself cannot
    be sliced)."""
    idx0, idx1 = decode_meta(meta, rows)
    return encode_meta(idx0[r0:r1, g0:g1].contiguous(), idx1[r0:r1, g0:g1].contiguous())


def shard_sparse_linear(layer: SparseLinear, dim: int, rank: int, world_size: int) -> SparseLinear:
    """A new SparseLinear holding rank's piece of `layer` out of `world_size`, cut from the
    compressed arrays (nothing pruned or quantized again; see the module docstring):

      - `dim=0` (column-parallel): output rows; bias, scales and activation go with them, so the
        piece computes its columns of `layer(x)` exactly.
      - `dim=1` (row-parallel): K (input features), on multiples of 16 and of the quantization
        group. The piece has no activation, and only rank 0's has the bias: the sum of all ranks'
        outputs is `layer(x)` before its activation (which the caller applies after the sum).

    Pieces are cut as torch.chunk cuts. A cut that breaks a group is a ValueError naming the
    layer and the sizes.

        >>> full = SparseLinear.from_linear(torch.nn.Linear(256, 64).half(), quant="w4g128")
        >>> a, b = (shard_sparse_linear(full, 1, r, 2) for r in range(2))
        >>> x = torch.randn(3, 256, dtype=torch.float16)
        >>> y = a(x[:, :128]).float() + b(x[:, 128:]).float()
        >>> bool(torch.allclose(y, full(x).float(), atol=1e-2))
        True
    """
    if not isinstance(layer, SparseLinear):
        raise TypeError(f"shard_sparse_linear: expects a SparseLinear, got {type(layer).__name__}")
    if dim not in (0, 1):
        raise ValueError(f"shard_sparse_linear: dim must be 0 (output rows) or 1 (K), got {dim}")
    if not (isinstance(world_size, int) and world_size >= 1 and isinstance(rank, int) and 0 <= rank < world_size):
        raise ValueError(f"shard_sparse_linear: need 0 <= rank < world_size, got rank {rank}, world_size {world_size}")
    if getattr(layer, "tp_shard", None) is not None:
        raise ValueError(f"{_name(layer)} is already a tensor-parallel shard ({layer.tp_shard}); shard the full layer")
    if layer.activation == "swiglu":
        half = layer.out_features // 2
        raise ValueError(f"{_name(layer)} has activation 'swiglu' (gate row i pairs with up row {half} + i): a plain "
                         f"{'row' if dim == 0 else 'K'} split breaks the pairs; shard it with "
                         f"FusedColwiseParallel(({half}, {half})) (shard_fused_sparse_linear), which gives each rank "
                         "its own gate and up rows")
    _check_split(layer, dim, world_size)
    n, k = layer.out_features, layer.in_features
    r0, r1, k0, k1 = 0, n, 0, k
    if dim == 0:
        r0, size = _chunk(n, world_size, rank)
        r1 = r0 + size
    else:
        k0, size = _chunk(k, world_size, rank)
        k1 = k0 + size
    bias = layer.bias is not None and (dim == 0 or rank == 0)
    piece = SparseLinear(k1 - k0, r1 - r0, bias, layer.dtype, layer.values.device,
                         layer.activation if dim == 0 else "none", layer.weight_dtype, layer.quant)
    piece.fqn = layer.fqn
    # kept values (and packed codes) are row-major, two per 2:4 group in K order: K columns
    # k0:k1 are value columns k0/2:k1/2, or bytes k0/4:k1/4 of packed 4-bit codes
    cols = k // layer.values.shape[1]  # K columns per column of `values`: 2, or 4 for 4-bit codes
    arrays = {
        "values": layer.values[r0:r1, k0 // cols:k1 // cols],
        "meta": _slice_meta(layer.meta, n, r0, r1, k0 // 4, k1 // 4),
    }
    if layer.quant is not None:
        group = _quant_group(layer)
        s0, s1 = (k0 // group, k1 // group) if group is not None else (0, 1)
        arrays["scales"] = layer.scales[r0:r1, s0:s1]
        if getattr(layer, "zeros", None) is not None:
            arrays["zeros"] = layer.zeros[r0:r1, s0:s1]
    if layer.weight_dtype is not None:
        arrays["weight_scale"] = layer.weight_scale[r0:r1]
    _fill(piece, arrays, layer.bias[r0:r1] if bias else None, "shard_sparse_linear", layer)
    piece.tp_shard = TPShard(dim, rank, world_size, n, k, r0 if dim == 0 else k0)
    return piece


def _fill(piece: SparseLinear, arrays: dict[str, torch.Tensor], bias: torch.Tensor | None, who: str,
          layer: SparseLinear) -> None:
    """Copy `arrays` (name -> the piece's weight array) and `bias` into the new layer `piece`; an
    array whose shape or dtype is not the one `piece` stores is an internal error (the slicing
    above it is wrong, not the user's layer)."""
    with torch.no_grad():
        for name, array in arrays.items():
            mine = getattr(piece, name)
            if tuple(mine.shape) != tuple(array.shape) or mine.dtype != array.dtype:
                raise AssertionError(f"internal error in {who}: the {name} piece of {_name(layer)} "
                                     f"is {array.dtype} {tuple(array.shape)}, the shard layer stores "
                                     f"{mine.dtype} {tuple(mine.shape)}")
            mine.copy_(array)
        if bias is not None:
            piece.bias.copy_(bias)


# ---------------------------------------------------------------------------------------------
# fused projections: q/k/v (or gate/up) as one layer whose output rows are the parts concatenated


def fused_rows(parts: tuple[int, ...] | list[int], rank: int, world_size: int) -> torch.Tensor:
    """The rows of a fused layer (its output rows the `parts` concatenated) that `rank` holds
    under `FusedColwiseParallel`: its `1/world_size` piece of each part, part after part (the
    usual fused-QKV sharding: each rank's shard is its own q, k, v row blocks, contiguous). Each
    part must split evenly (see `FusedColwiseParallel`).

        >>> fused_rows((4, 2, 2), 1, 2).tolist()
        [2, 3, 5, 7]
    """
    pieces, offset = [], 0
    for size in parts:
        step = size // world_size
        pieces.append(torch.arange(offset + rank * step, offset + (rank + 1) * step))
        offset += size
    return torch.cat(pieces)


def _check_parts(where: str, out_features: int, parts: tuple[int, ...], world_size: int) -> None:
    """ValueError naming the layer where `parts` are not positive ints summing to its output
    rows, or one of them does not split evenly over `world_size` ranks."""
    if not parts or not all(isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in parts):
        raise ValueError(f"{where}: parts must be positive ints (the fused layers' output rows), got {parts!r}")
    if sum(parts) != out_features:
        raise ValueError(f"{where}: parts {tuple(parts)} add up to {sum(parts)} rows, the layer has "
                         f"{out_features} output rows")
    bad = [p for p in parts if p % world_size]
    if bad:
        raise ValueError(f"{where}: part of {bad[0]} rows (parts {tuple(parts)}) does not split evenly over "
                         f"{world_size} ranks; a fused layer's parts (heads) must, so that every rank holds "
                         "the same share of each")


def _describe_layer(layer: nn.Module) -> str:
    if isinstance(layer, SparseLinear):
        return f"{_name(layer)} ({layer.in_features} -> {layer.out_features})"
    return f"{type(layer).__name__} ({layer.in_features} -> {layer.out_features})"


def _take_rows(layer: SparseLinear, rows: torch.Tensor, who: str) -> SparseLinear:
    """A new SparseLinear of `layer`'s output rows `rows` (any order), cut from the compressed
    arrays: values, scales, zero points, per-row 8-bit scales and bias by row, the metadata
    decoded, indexed and encoded again (its words interleave 16 rows)."""
    n = layer.out_features
    rows = rows.to(layer.values.device)
    piece = SparseLinear(layer.in_features, len(rows), layer.bias is not None, layer.dtype, layer.values.device,
                         layer.activation, layer.weight_dtype, layer.quant)
    piece.fqn = layer.fqn
    idx0, idx1 = decode_meta(layer.meta, n)
    arrays = {"values": layer.values.index_select(0, rows),
              "meta": encode_meta(idx0.index_select(0, rows).contiguous(), idx1.index_select(0, rows).contiguous())}
    for name in ("scales", "zeros", "weight_scale"):
        if getattr(layer, name, None) is not None:
            arrays[name] = getattr(layer, name).index_select(0, rows)
    _fill(piece, arrays, None if layer.bias is None else layer.bias.index_select(0, rows), who, layer)
    return piece


def fuse_linears(layers: list[nn.Module] | tuple[nn.Module, ...]) -> nn.Module:
    """One layer computing all of `layers` on the same input: its output rows are theirs,
    concatenated in order (so `y.split([l.out_features for l in layers], -1)` gives their
    outputs). nn.Linear layers give an nn.Linear; SparseLinear layers (of one format, dtype and
    activation) a SparseLinear whose compressed arrays are theirs concatenated row by row: 2:4
    groups and quantization groups lie along K, so nothing is pruned or quantized again and the
    codes and scales stay bit for bit. All must take the same in_features, and all or none have
    a bias. One launch instead of len(layers) at decode; shard it with `FusedColwiseParallel`.

        >>> q, k, v = (torch.nn.Linear(256, n).half() for n in (256, 128, 128))
        >>> qkv = fuse_linears([q, k, v])
        >>> qkv.out_features
        512
        >>> x = torch.randn(2, 256, dtype=torch.float16)
        >>> bool(torch.equal(qkv(x).split([256, 128, 128], -1)[1], k(x)))
        True
    """
    layers = list(layers)
    if not layers:
        raise ValueError("fuse_linears: no layers to fuse")
    sparse = [isinstance(m, SparseLinear) for m in layers]
    if not (all(sparse) or all(type(m) is nn.Linear for m in layers)):
        kinds = sorted({type(m).__name__ for m in layers})
        raise TypeError(f"fuse_linears: fuses nn.Linear layers or SparseLinear layers, not a mix; got {kinds}")
    first = layers[0]
    for m in layers[1:]:
        if m.in_features != first.in_features:
            raise ValueError(f"fuse_linears: {_describe_layer(m)} takes {m.in_features} input features, "
                             f"{_describe_layer(first)} {first.in_features}; fused layers share their input")
        if (m.bias is None) != (first.bias is None):
            raise ValueError(f"fuse_linears: {_describe_layer(m)} and {_describe_layer(first)} differ in having a "
                             "bias; fuse layers that all have one, or none")
    if not all(sparse):
        weights = [m.weight.detach() for m in layers]
        dtypes = {w.dtype for w in weights}
        if len(dtypes) > 1 or len({w.device for w in weights}) > 1:
            raise ValueError(f"fuse_linears: the layers' weights differ in dtype or device ({sorted(map(str, dtypes))})")
        fused = nn.Linear(first.in_features, sum(m.out_features for m in layers), first.bias is not None,
                          device=weights[0].device, dtype=weights[0].dtype)
        with torch.no_grad():
            fused.weight.copy_(torch.cat(weights))
            if first.bias is not None:
                fused.bias.copy_(torch.cat([m.bias.detach() for m in layers]))
        fused.requires_grad_(first.weight.requires_grad)
        return fused
    if any(m.activation == "swiglu" for m in layers):
        raise ValueError("fuse_linears: a layer with activation 'swiglu' is a fused gate/up pair already; fuse the "
                         "gate and up layers, then set the fused layer's activation")
    for m in layers[1:]:
        ours = (m.dtype, m.weight_dtype, m.quant, m.activation, m.values.device)
        theirs = (first.dtype, first.weight_dtype, first.quant, first.activation, first.values.device)
        if ours != theirs:
            raise ValueError(f"fuse_linears: {_describe_layer(m)} stores (dtype, weight_dtype, quant, activation, "
                             f"device) {ours}, {_describe_layer(first)} {theirs}; fused layers must match")
    n = sum(m.out_features for m in layers)
    fused = SparseLinear(first.in_features, n, first.bias is not None, first.dtype, first.values.device,
                         first.activation, first.weight_dtype, first.quant, first.dispatch)
    names = [m.fqn for m in layers if m.fqn]
    fused.fqn = "+".join(names) if names else None
    decoded = [decode_meta(m.meta, m.out_features) for m in layers]
    arrays = {"values": torch.cat([m.values for m in layers]),
              "meta": encode_meta(torch.cat([d[0] for d in decoded]), torch.cat([d[1] for d in decoded]))}
    for name in ("scales", "zeros", "weight_scale"):
        if getattr(first, name, None) is not None:
            arrays[name] = torch.cat([getattr(m, name) for m in layers])
    bias = torch.cat([m.bias for m in layers]) if first.bias is not None else None
    _fill(fused, arrays, bias, "fuse_linears", first)
    return fused


def shard_fused_sparse_linear(layer: SparseLinear, parts: tuple[int, ...] | list[int], rank: int,
                              world_size: int) -> SparseLinear:
    """Rank's column-parallel piece of a fused SparseLinear (`fuse_linears`) whose output rows are
    `parts` concatenated (q, k, v: `(4096, 4096, 4096)`): its piece of each part, concatenated
    (`fused_rows`), cut from the compressed arrays like `shard_sparse_linear`'s (bias, scales and
    activation go with the rows). Every part must split evenly over `world_size`.

        >>> q, k, v = (SparseLinear.from_linear(torch.nn.Linear(256, n).half()) for n in (128, 64, 64))
        >>> piece = shard_fused_sparse_linear(fuse_linears([q, k, v]), (128, 64, 64), 1, 2)
        >>> want = torch.cat([q.weight().to_dense()[64:], k.weight().to_dense()[32:], v.weight().to_dense()[32:]])
        >>> bool(torch.equal(piece.weight().to_dense(), want))
        True
    """
    if not isinstance(layer, SparseLinear):
        raise TypeError(f"shard_fused_sparse_linear: expects a SparseLinear, got {type(layer).__name__}")
    if not (isinstance(world_size, int) and world_size >= 1 and isinstance(rank, int) and 0 <= rank < world_size):
        raise ValueError(f"shard_fused_sparse_linear: need 0 <= rank < world_size, got rank {rank}, "
                         f"world_size {world_size}")
    if getattr(layer, "tp_shard", None) is not None:
        raise ValueError(f"{_name(layer)} is already a tensor-parallel shard ({layer.tp_shard}); shard the full layer")
    parts = tuple(parts)
    _check_parts(_describe_layer(layer), layer.out_features, parts, world_size)
    if layer.activation == "swiglu" and (len(parts) != 2 or parts[0] != parts[1]):
        raise ValueError(f"{_describe_layer(layer)} has activation 'swiglu' ([gate | up] rows, two equal halves), "
                         f"but parts {parts} are not its two halves ({layer.out_features // 2}, "
                         f"{layer.out_features // 2})")
    piece = _take_rows(layer, fused_rows(parts, rank, world_size), "shard_fused_sparse_linear")
    piece.tp_shard = TPShard(0, rank, world_size, layer.out_features, layer.in_features,
                             rank * parts[0] // world_size, parts)
    return piece


# ---------------------------------------------------------------------------------------------
# the parallel styles


def _mesh_rank(mesh: DeviceMesh) -> tuple[int, int]:
    if mesh.ndim != 1:
        raise ValueError(f"sparsecc tensor parallelism takes a 1-D DeviceMesh (slice it: mesh['tp']), got "
                         f"{mesh.ndim}-D {tuple(mesh.shape)}")
    return mesh.get_local_rank(), mesh.size()


def _broadcast_full(layer: SparseLinear, mesh: DeviceMesh, src: int) -> None:
    """Every weight array (and the bias) of `layer` replaced by group rank `src`'s, on the mesh's
    device type: the one weight all ranks then cut their shards from."""
    device = torch.device(mesh.device_type, torch.cuda.current_device()) if mesh.device_type == "cuda" \
        else torch.device(mesh.device_type)
    group = mesh.get_group()
    with torch.no_grad():
        for name, t in list(layer.named_buffers(recurse=False)) + list(layer.named_parameters(recurse=False)):
            full = t.detach().to(device).contiguous()
            # as bytes: gloo has no int16 (the metadata) or fp8, and a broadcast only copies
            dist.broadcast(full.view(-1).view(torch.uint8), group=group, group_src=src)
            if name in layer._buffers:
                layer._buffers[name] = full
            else:
                layer._parameters[name] = nn.Parameter(full, requires_grad=False)


def _install(module: SparseLinear, piece: SparseLinear, mesh: DeviceMesh) -> None:
    """Make `module` (in place: parallelize_module keeps the module objects) hold `piece`'s
    shard, on the mesh's device type as DTensor's styles place theirs."""
    device_type = mesh.device_type
    for name in list(module._buffers):
        t = piece._buffers[name]
        module._buffers[name] = t if t.device.type == device_type else t.to(device_type)
    bias = piece.bias
    if bias is not None and bias.device.type != device_type:
        bias = nn.Parameter(bias.detach().to(device_type), requires_grad=False)
    module._parameters["bias"] = bias
    module.in_features, module.out_features = piece.in_features, piece.out_features
    module.activation = piece.activation
    module.tp_shard = piece.tp_shard


def _local_input(x: Any, mesh: DeviceMesh, layouts: tuple[Placement, ...],
                 desired: tuple[Placement, ...]) -> Any:
    """The local tensor the shard's forward takes: x (a DTensor, or a local tensor laid out as
    `layouts`) redistributed to `desired`."""
    if not isinstance(x, DTensor):
        if not isinstance(x, torch.Tensor) or layouts == desired:
            return x
        x = DTensor.from_local(x, mesh, layouts, run_check=False)
    if x.placements != desired:
        x = x.redistribute(placements=desired)
    return x.to_local()


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _sharded(module: SparseLinear) -> None:
    if getattr(module, "tp_shard", None) is not None:
        raise RuntimeError(f"{_name(module)} is already tensor-parallel ({module.tp_shard}); "
                           "parallelize_module once per model")


class SparseColwiseParallel(ColwiseParallel):
    """torch's `ColwiseParallel` that also takes `SparseLinear`: the weight's output rows (with
    their bias, scales and activation) are split over the mesh, each rank's piece compressed on
    its own (`shard_sparse_linear(layer, 0, ...)`). Other modules (nn.Linear, nn.Embedding) are
    handed to ColwiseParallel as they are. Same arguments as ColwiseParallel.

        parallelize_module(model, mesh, {"mlp.up_proj": SparseColwiseParallel(),
                                         "mlp.down_proj": SparseRowwiseParallel()})
    """

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        if not isinstance(module, SparseLinear):
            return super()._apply(module, device_mesh)
        _sharded(module)
        rank, world = _mesh_rank(device_mesh)
        if self.src_data_rank is not None:
            _broadcast_full(module, device_mesh, self.src_data_rank)
        _install(module, shard_sparse_linear(module, 0, rank, world), device_mesh)
        full_out = module.tp_shard.out_features
        layouts, desired = self.input_layouts, self.desired_input_layouts
        output_layouts, use_local = self.output_layouts, self.use_local_output

        def pre_hook(mod: nn.Module, inputs: tuple) -> tuple:
            return (_local_input(inputs[0], device_mesh, layouts, desired), *inputs[1:])

        def hook(mod: nn.Module, inputs: tuple, y: torch.Tensor) -> Any:
            if output_layouts == (Shard(-1),) and use_local:  # the default: the local columns as they are
                return y
            uneven = {}
            if full_out % world:  # from_local takes equal pieces unless told the global shape
                shape = (*y.shape[:-1], full_out)
                uneven = {"shape": shape, "stride": _contiguous_strides(shape)}
            out = DTensor.from_local(y, device_mesh, (Shard(y.dim() - 1),), run_check=False, **uneven)
            out = out.redistribute(placements=output_layouts)
            return out.to_local() if use_local else out

        module.register_forward_pre_hook(pre_hook)
        module.register_forward_hook(hook)
        return module


class SparseRowwiseParallel(RowwiseParallel):
    """torch's `RowwiseParallel` that also takes `SparseLinear`: the weight's K (input features)
    is split over the mesh on multiples of 16 and of the quantization group (a split that breaks
    one is a ValueError naming the layer), each rank's piece compressed on its own
    (`shard_sparse_linear(layer, 1, ...)`); the output hook sums the partial products
    (all-reduce, or reduce-scatter for a Shard output layout), then applies the layer's
    activation. Other modules are handed to RowwiseParallel. Same arguments as RowwiseParallel.

        parallelize_module(model, mesh, {"mlp.down_proj": SparseRowwiseParallel()})
    """

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        if not isinstance(module, SparseLinear):
            return super()._apply(module, device_mesh)
        _sharded(module)
        activation = module.activation
        output_layouts, use_local = self.output_layouts, self.use_local_output
        if activation != "none" and any(p.is_partial() for p in output_layouts):
            raise ValueError(f"{_name(module)} has a fused activation ({activation!r}), which needs the sum of "
                             f"the row-parallel pieces, but output_layouts={output_layouts[0]} leaves it unreduced")
        rank, world = _mesh_rank(device_mesh)
        if self.src_data_rank is not None:
            _broadcast_full(module, device_mesh, self.src_data_rank)
        _install(module, shard_sparse_linear(module, 1, rank, world), device_mesh)
        layouts, desired = self.input_layouts, (Shard(-1),)

        def pre_hook(mod: nn.Module, inputs: tuple) -> tuple:
            return (_local_input(inputs[0], device_mesh, layouts, desired), *inputs[1:])

        def hook(mod: nn.Module, inputs: tuple, y: torch.Tensor) -> Any:
            out = DTensor.from_local(y, device_mesh, (Partial(),), run_check=False)
            out = out.redistribute(placements=output_layouts)
            out = out.to_local() if use_local else out
            return _activate(out, activation) if activation != "none" else out

        module.register_forward_pre_hook(pre_hook)
        module.register_forward_hook(hook)
        return module


class FusedColwiseParallel(ColwiseParallel):
    """Column parallelism for a fused projection (`fuse_linears`: q/k/v as one layer, or
    gate/up) whose output rows are `parts` concatenated: each rank holds its share of every
    part, contiguous (`fused_rows`), so rank r's output is `[q_r | k_r | v_r]` (its own heads of
    each), which it splits locally. Plain torch ColwiseParallel would cut the concatenated rows
    in halves (rank 0: all of q and half of k). Takes nn.Linear (the rows are reordered so, then
    torch's ColwiseParallel shards them: a DTensor weight) and SparseLinear
    (`shard_fused_sparse_linear`: each rank's piece compressed on its own), so dense TP and
    sparse TP get the same structure; `sparse_plan` keeps it as it is. Every part must split
    evenly over the mesh (a ValueError naming the layer otherwise).

    The output is the local tensor only (Shard(-1), use_local_output=True): gathered, the fused
    columns would be in rank order, not in the parts' order.

        parallelize_module(model, mesh, {
            "layers.*.self_attn.qkv_proj": FusedColwiseParallel((4096, 4096, 4096)),
            "layers.*.mlp.gate_up_proj": FusedColwiseParallel((11008, 11008)),
            "layers.*.self_attn.o_proj": RowwiseParallel(), "layers.*.mlp.down_proj": RowwiseParallel()})
    """

    def __init__(self, parts: tuple[int, ...] | list[int], *, input_layouts: Placement | None = None) -> None:
        super().__init__(input_layouts=input_layouts)
        self.parts = tuple(parts)

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        rank, world = _mesh_rank(device_mesh)
        if isinstance(module, SparseLinear):
            _sharded(module)
            _check_parts(_describe_layer(module), module.out_features, self.parts, world)
            if self.src_data_rank is not None:
                _broadcast_full(module, device_mesh, self.src_data_rank)
            _install(module, shard_fused_sparse_linear(module, self.parts, rank, world), device_mesh)
            layouts, desired = self.input_layouts, self.desired_input_layouts

            def pre_hook(mod: nn.Module, inputs: tuple) -> tuple:
                return (_local_input(inputs[0], device_mesh, layouts, desired), *inputs[1:])

            module.register_forward_pre_hook(pre_hook)
            return module  # the output: the local [q_r | k_r | v_r] as the kernel leaves it
        if type(module) is not nn.Linear:
            raise TypeError(f"FusedColwiseParallel: takes an nn.Linear or a SparseLinear (a fused projection), "
                            f"got {type(module).__name__}")
        _check_parts(_describe_layer(module), module.out_features, self.parts, world)
        # rank-blocked row order: torch's even Shard(0) then gives rank r exactly fused_rows(parts, r)
        order = torch.cat([fused_rows(self.parts, r, world) for r in range(world)]).to(module.weight.device)
        with torch.no_grad():
            module.weight.copy_(module.weight.index_select(0, order))
            if module.bias is not None:
                module.bias.copy_(module.bias.index_select(0, order))
        return super()._apply(module, device_mesh)


def sparse_plan(plan: ParallelStyle | dict[str, ParallelStyle]) -> ParallelStyle | dict[str, ParallelStyle]:
    """`plan` (a parallelize_module plan) with every `ColwiseParallel` / `RowwiseParallel` turned
    into `SparseColwiseParallel` / `SparseRowwiseParallel` with the same layouts, so a plan
    written for the dense model shards its SparseLinear layers too (other styles, and subclasses
    of torch's, are kept).

        plan = {"attn.q_proj": ColwiseParallel(), "attn.o_proj": RowwiseParallel()}
        parallelize_module(model, mesh, sparse_plan(plan))
    """
    if isinstance(plan, dict):
        return {name: sparse_plan(style) for name, style in plan.items()}
    for torch_style, ours in ((ColwiseParallel, SparseColwiseParallel), (RowwiseParallel, SparseRowwiseParallel)):
        if type(plan) is torch_style:
            style = ours(input_layouts=plan.input_layouts[0], output_layouts=plan.output_layouts[0],
                         use_local_output=plan.use_local_output)
            style.src_data_rank = plan.src_data_rank
            return style
    return plan
