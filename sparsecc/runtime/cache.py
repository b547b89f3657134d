"""The on-disk kernel cache: compiled stages (texts + cubin) keyed by everything that shapes them.

An entry is one file `<dir>/<key[:2]>/<key>.sccache` holding a small header line, the sha256 of
the body, and the body: an 8-byte length, a JSON index (`key`, `metadata`, and where each stage's
text or bytes lie) and then the stage texts (UTF-8) and bytes (the cubin) stored raw, so a hit
parses only a small JSON and copies the large blobs (no base64, no escaping of PTX text). It is written to a temporary file in the same folder and moved into place with
`os.replace`, so readers only ever see a whole entry; concurrent writers of one key each
replace it with an equally valid file. A read whose checksum or format does not match is
discarded (the file is removed) and reported as a miss, so a truncated or bit-flipped entry is
recompiled rather than trusted.

The key hashes: the kernel source (with the source of every `@sparsecc.jit` function it calls),
the signature, the constexprs, the compile options, the sparsecc version, and a digest of the
compiler's own source files, so editing a pass invalidates every entry.

Folder: `$SPARSECC_CACHE_DIR`, else `~/.cache/sparsecc`. `SPARSECC_CACHE=0` turns caching off.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CacheEntry",
    "cache_dir",
    "cached_compile",
    "compiler_digest",
    "discard",
    "enabled",
    "get",
    "kernel_source",
    "key_for",
    "put",
]

MAGIC = b"SPARSECC-CACHE 2\n"
SUFFIX = ".sccache"
_PACKAGE = Path(__file__).resolve().parent.parent
# Folders whose sources do not change what the compiler produces.
_NOT_COMPILER = ("runtime", "ops", "tools")


@dataclass
class CacheEntry:
    """What a compile produced and the cache keeps: stage texts/bytes and launch metadata."""

    asm: dict[str, str | bytes] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    hit: bool = False
    """True when this entry came from disk (not stored)."""
    value: Any = None
    """On a miss, the object `compile_fn` returned (not stored)."""


# --------------------------------------------------------------------------------------
# Where, and whether
# --------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The cache folder: $SPARSECC_CACHE_DIR or, when that is unset or empty, ~/.cache/sparsecc
    (read on every call; the autotuner keeps its files in `autotune/` under it)."""
    env = os.environ.get("SPARSECC_CACHE_DIR", "")
    return Path(env) if env.strip() else Path.home() / ".cache" / "sparsecc"


def enabled() -> bool:
    """False when SPARSECC_CACHE is 0/false/off/no: no compile entry or autotune winner is read or written."""
    return os.environ.get("SPARSECC_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")


def _path(key: str) -> Path:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"cache key must be a sha256 hex digest, got {key!r}")
    return cache_dir() / key[:2] / f"{key}{SUFFIX}"


# --------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------

_DIGEST: str | None = None


def compiler_digest() -> str:
    """sha256 over the compiler's own .py files (path + contents), computed once per process."""
    global _DIGEST
    if _DIGEST is None:
        h = hashlib.sha256()
        for p in sorted(_PACKAGE.rglob("*.py")):
            rel = p.relative_to(_PACKAGE)
            if rel.parts[0] in _NOT_COMPILER:
                continue
            h.update(str(rel).encode())
            h.update(b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
        _DIGEST = h.hexdigest()
    return _DIGEST


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("sparsecc")
    except Exception:  # not installed (a plain checkout on sys.path)
        return "0+unknown"


def kernel_source(kernel: Any) -> str:
    """Source of a `@sparsecc.jit` function plus, recursively, every jit function it calls.

    Callees are found by resolving the free names of the kernel's AST the way the frontend
    does (`resolve_global`), so editing an inlined helper changes the key.
    """
    seen: dict[str, str] = {}

    def visit(fn: Any) -> None:
        ident = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn.__name__)}"
        if ident in seen:
            return
        seen[ident] = getattr(fn, "src", "")
        tree = getattr(fn, "tree", None)
        resolve = getattr(fn, "resolve_global", None)
        if tree is None or resolve is None:
            return
        for node in ast.walk(tree):
            obj = None
            if isinstance(node, ast.Name):
                found, obj = resolve(node.id)
                if not found:
                    continue
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                found, base = resolve(node.value.id)
                obj = getattr(base, node.attr, None) if found else None
            if getattr(obj, "__sparsecc_jit__", False) and obj is not fn:
                visit(obj)

    visit(kernel)
    first, *rest = seen.items()
    return first[1] + "".join(f"\n# --- {k}\n{v}" for k, v in sorted(rest))


def _canonical(x: Any) -> Any:
    """A JSON-able, order-stable form of signatures / constexprs / options."""
    if isinstance(x, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, list | tuple):
        return [_canonical(v) for v in x]
    if isinstance(x, bool | int | float | str) or x is None:
        return [type(x).__name__, x]
    if is_dataclass(x) and not isinstance(x, type):
        return _canonical(asdict(x))
    return ["repr", repr(x)]


def key_for(fn_source: str, signature: Mapping[str, str], constexprs: Mapping[str, Any],
            opts: Any) -> str:
    """sha256 hex of everything that determines a compile's output: every CompileOptions
    field (the code-changing switches included, as resolved from their environment overrides)."""
    blob = json.dumps({
        "source": fn_source,
        "signature": _canonical(dict(signature)),
        "constexprs": _canonical(dict(constexprs)),
        "options": _canonical(opts),
        "version": _version(),
        "compiler": compiler_digest(),
    }, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


# --------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------


def _enc(x: Any) -> Any:
    if isinstance(x, bytes | bytearray):
        return {"__bytes__": base64.b64encode(bytes(x)).decode("ascii")}
    if isinstance(x, Mapping):
        if any(not isinstance(k, str) for k in x):
            raise TypeError("cache entries need string keys")
        return {k: _enc(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_enc(v) for v in x]
    if is_dataclass(x) and not isinstance(x, type):
        return _enc(asdict(x))
    if isinstance(x, bool | int | float | str) or x is None:
        return x
    raise TypeError(f"cannot store {type(x).__name__} in the kernel cache")


def _dec(x: Any) -> Any:
    if isinstance(x, dict):
        if len(x) == 1 and "__bytes__" in x:
            return base64.b64decode(x["__bytes__"], validate=True)
        return {k: _dec(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_dec(v) for v in x]
    return x


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


# --------------------------------------------------------------------------------------
# get / put
# --------------------------------------------------------------------------------------


def _encode_body(key: str, asm: Mapping[str, str | bytes], metadata: Mapping[str, Any]) -> bytes:
    """Index JSON + raw blobs (see the module docstring); TypeError/ValueError if unstorable."""
    blobs: list[bytes] = []
    where: dict[str, list[Any]] = {}
    offset = 0
    for name, value in asm.items():
        if not isinstance(name, str):
            raise TypeError("cache entries need string keys")
        if isinstance(value, str):
            data, kind = value.encode("utf-8"), "text"
        elif isinstance(value, bytes | bytearray):
            data, kind = bytes(value), "bytes"
        else:
            raise TypeError(f"cannot store a {type(value).__name__} stage in the kernel cache")
        where[name] = [kind, offset, len(data)]
        blobs.append(data)
        offset += len(data)
    index = json.dumps({"key": key, "asm": where, "metadata": _enc(metadata)},
                       separators=(",", ":")).encode()
    return b"".join([len(index).to_bytes(8, "little"), index, *blobs])


# ---- what a stored entry may hold: checked after every load -----------------------------
# A checksum only proves the file is whole, not that its writer was sparsecc (anyone who can
# write the folder can forge one), so the index is checked field by field: a field of the wrong
# type would otherwise reach the launcher on every later compile.

Check = Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return _is_int(v) and v >= 0


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _list_of(item: Check) -> Check:
    return lambda v: isinstance(v, list) and all(item(x) for x in v)


def _dict_of(item: Check) -> Check:
    return lambda v: isinstance(v, dict) and all(isinstance(k, str) and item(x) for k, x in v.items())


def _record(**fields: Check) -> Check:
    """A dict with exactly these keys, each passing its check."""
    return lambda v: isinstance(v, dict) and v.keys() == fields.keys() and all(
        check(v[k]) for k, check in fields.items())


def _optional(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _is_host_expr(v: Any) -> bool:
    """`sparsecc.analysis.tma.host_expr` form: ["arg", i], ["const", c] or [op, a, b]."""
    if not isinstance(v, list) or not v or not isinstance(v[0], str):
        return False
    if v[0] in ("arg", "const"):
        return len(v) == 2 and (_is_count if v[0] == "arg" else _is_int)(v[1])
    return len(v) == 3 and _is_host_expr(v[1]) and _is_host_expr(v[2])


KERNEL_INFO = "_sparsecc_kernel"
"""Metadata key under which `sparsecc.compile` keeps what a CompiledKernel derives from its
module (flat parameters, contiguous and aligned pointer indices)."""

_METADATA_FIELDS: dict[str, Check] = {
    "name": _is_str, "target": _is_str, "num_warps": _is_count, "num_stages": _is_count,
    "threads": _is_count, "shared": _is_count, "cluster": _is_count,
    "params": _list_of(lambda p: _is_str(p) or (isinstance(p, list) and len(p) == 2 and all(map(_is_str, p)))),
    "tensor_maps": _list_of(_record(arg=_is_count, dtype=_is_str, dims=_list_of(_is_host_expr),
                                    strides=_list_of(_is_host_expr), box=_list_of(_is_count),
                                    swizzle=_is_count, esize=_is_count)),
    "ptxas": _dict_of(_dict_of(_is_count)),
    KERNEL_INFO: _record(flat_signature=_list_of(_is_str), flat_arg_names=_list_of(_is_str),
                         contiguous=_optional(_list_of(_is_count)), aligned=_optional(_list_of(_is_count))),
}
"""The metadata fields a compiled kernel's entry may hold and the form of each (absent or None
is fine: a plain `put` stores any metadata). An entry with another form (crafted, or from an
incompatible version) is discarded like a corrupt one."""


def _check_index(obj: Any) -> None:
    """ValueError unless the decoded index has the shape `_encode_body` writes."""
    if not isinstance(obj, dict) or not isinstance(obj.get("asm"), dict) or not isinstance(obj.get("metadata"), dict):
        raise ValueError("malformed index")
    for where in obj["asm"].values():
        if (not isinstance(where, list) or len(where) != 3 or where[0] not in ("text", "bytes")
                or not all(_is_count(v) for v in where[1:])):
            raise ValueError("malformed blob entry")
    for name, check in _METADATA_FIELDS.items():
        value = obj["metadata"].get(name)
        if value is not None and not check(value):
            raise ValueError(f"metadata field {name} is malformed")


def _decode_body(key: str, body: bytes) -> CacheEntry:
    n = int.from_bytes(body[:8], "little")
    if len(body) < 8 + n:
        raise ValueError("truncated index")
    obj = json.loads(body[8:8 + n])
    _check_index(obj)
    if obj.get("key") != key:
        raise ValueError("entry stored under another key")
    base = 8 + n
    view = memoryview(body)
    asm: dict[str, str | bytes] = {}
    for name, (kind, offset, length) in obj["asm"].items():
        start, end = base + offset, base + offset + length
        if end > len(body):
            raise ValueError("blob past the end")
        chunk = view[start:end]
        asm[name] = str(chunk, "utf-8") if kind == "text" else chunk.tobytes()
    return CacheEntry(asm=asm, metadata=_dec(obj["metadata"]), hit=True)


def get(key: str) -> CacheEntry | None:
    """The stored entry for `key`, or None (missing, disabled, or corrupt: then it is removed)."""
    if not enabled():
        return None
    path = _path(key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        if not data.startswith(MAGIC):
            raise ValueError("bad header")
        digest, body = data[len(MAGIC):len(MAGIC) + 64], data[len(MAGIC) + 65:]
        if data[len(MAGIC) + 64:len(MAGIC) + 65] != b"\n" or hashlib.sha256(body).hexdigest().encode() != digest:
            raise ValueError("checksum mismatch")
        entry = _decode_body(key, body)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError, RecursionError):
        _discard(path)  # (RecursionError: JSON nested past Python's limit, a crafted entry)
        return None
    return entry


def discard(key: str) -> None:
    """Remove the entry of `key`: its content passed the checks here but not its user's
    (`sparsecc.compile` compares the stored parameters with the signature).

        cache.discard(cache.key_for(src, signature, constexprs, options))
    """
    _discard(_path(key))


def put(key: str, entry: CacheEntry | Mapping[str, Any]) -> bool:
    """Store `entry` (a CacheEntry or {"asm":..., "metadata":...}) atomically; False if unstorable."""
    if not enabled():
        return False
    if isinstance(entry, CacheEntry):
        asm, metadata = entry.asm, entry.metadata
    else:
        asm, metadata = entry["asm"], entry.get("metadata", {})
    try:
        body = _encode_body(key, asm, metadata)
    except (TypeError, ValueError):
        return False  # metadata we cannot serialise: keep working, just uncached
    data = MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
    except OSError:
        return False  # read-only or full disk: the cache is an optimisation, not a requirement
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, _FILE_MODE)  # mkstemp's 0600 would keep a shared cache folder private
        os.replace(tmp, path)
    except OSError:
        _discard(Path(tmp))
        return False
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()
"""Mode of cache entries: what `open()` would give a new file under the process's umask."""


def cached_compile(fn_source: str, signature: Mapping[str, str], constexprs: Mapping[str, Any],
                   opts: Any, compile_fn: Callable[[], Any]) -> CacheEntry:
    """The cached entry for these inputs, or `compile_fn()`'s result, stored for next time.

    `compile_fn` returns an object with `.asm` and `.metadata` (a StageResult or a
    CompiledKernel) or a mapping with those keys. On a miss the returned entry's `value` is
    that object (so callers keep e.g. the IR module); on a hit `hit` is True and `value` None.
    """
    key = key_for(fn_source, signature, constexprs, opts)
    entry = get(key)
    if entry is not None:
        return entry
    value = compile_fn()
    if isinstance(value, Mapping):
        asm, metadata = dict(value["asm"]), dict(value.get("metadata", {}))
    else:
        asm, metadata = dict(value.asm), dict(value.metadata)
    entry = CacheEntry(asm=asm, metadata=metadata, hit=False, value=value)
    put(key, entry)
    return entry
