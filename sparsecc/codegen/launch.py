"""The launch contract of a ptx module: what the launcher needs to run its kernel, carried as
the module's `sparsecc.launch` dictionary attribute (convert-ttg-to-ptx writes it).

    builtin.module attributes {sparsecc.launch = {name = "gemm", num_warps = 8 : i64,
        threads = 288 : i64, shared = 99328 : i64, params = [["D", "ptr"], ..., ["tmap0", "tmap"]],
        target = "sm_90a", cluster = 2 : i64, tensor_maps = [{arg = 1 : i64, ...}]}} { ptx.kernel ... }

Keys: `name` (the kernel symbol), `num_warps` (compute warps), `threads` (per CTA, producer
warp included), `shared` (dynamic shared memory bytes), `params` ((name, kind) per kernel
parameter, tensor maps last), `target`; `cluster` (CTAs per cluster) only when above 1;
`tensor_maps` (one recipe per "tmap" parameter, `sparsecc.analysis.tma.TensorMapRecipe.as_json`)
only when the kernel has any. `launch_metadata` reads it back as the dict the launcher and the
disk cache take.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute

LAUNCH = "sparsecc.launch"
"""The module attribute holding the launch contract."""

_KEYS = ("name", "num_warps", "threads", "shared", "params", "target", "cluster", "tensor_maps")


class LaunchContractError(Exception):
    """A module without a (well-formed) `sparsecc.launch` attribute."""


def to_attr(value: Any) -> Attribute:
    """A JSON-like value (dict, list/tuple, str, int, bool) as an attribute."""
    if isinstance(value, bool):
        return IntegerAttr(int(value), i1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, list | tuple):
        return ArrayAttr([to_attr(v) for v in value])
    if isinstance(value, dict):
        return DictionaryAttr({str(k): to_attr(v) for k, v in value.items()})
    raise LaunchContractError(f"internal error: launch metadata value {value!r} has no attribute form")


def from_attr(attr: Attribute) -> Any:
    """The JSON-like value of an attribute `to_attr` made (arrays become lists)."""
    if isinstance(attr, IntegerAttr):
        assert isinstance(attr.type, IntegerType)
        return bool(attr.value.data) if attr.type.width.data == 1 else attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return [from_attr(a) for a in attr.data]
    if isinstance(attr, DictionaryAttr):
        return {k: from_attr(v) for k, v in attr.data.items()}
    raise LaunchContractError(f"{LAUNCH}: unexpected attribute {attr}")


def launch_attr(meta: dict[str, Any]) -> DictionaryAttr:
    """The `sparsecc.launch` attribute of a launch metadata dict."""
    return DictionaryAttr({k: to_attr(meta[k]) for k in _KEYS if k in meta})


def launch_metadata(module: ModuleOp) -> dict[str, Any]:
    """The launch metadata dict of a ptx module: its `sparsecc.launch` keys in contract order,
    `params` as (name, kind) pairs."""
    attr = module.attributes.get(LAUNCH)
    if not isinstance(attr, DictionaryAttr):
        raise LaunchContractError(f"the module has no {LAUNCH} dictionary (run convert-ttg-to-ptx)")
    raw = from_attr(attr)
    missing = [k for k in _KEYS[:6] if k not in raw]
    if missing:
        raise LaunchContractError(f"{LAUNCH} lacks {', '.join(missing)}")
    meta = {k: raw[k] for k in _KEYS if k in raw}
    meta["params"] = [(str(name), str(kind)) for name, kind in raw["params"]]
    return meta


__all__ = ["LAUNCH", "LaunchContractError", "launch_attr", "launch_metadata", "to_attr", "from_attr"]
