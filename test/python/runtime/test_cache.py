"""The disk kernel cache: hits and misses, key sensitivity, corruption, concurrency, location."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from sparsecc import switches
from sparsecc.compiler import CompileOptions
from sparsecc.runtime import cache

SIG = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", "M": "i32"}
CONST = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}
OPTS = CompileOptions(target="sm_90", num_warps=4, num_stages=3)
SRC = "def k(D, A, B, M):\n    pass\n"


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARSECC_CACHE", raising=False)
    return tmp_path / "cache"


class Compiler:
    """A stand-in compile_fn that counts its calls and returns distinct, realistic output."""

    def __init__(self, cubin_size: int = 4096):
        self.calls = 0
        self.cubin_size = cubin_size

    def __call__(self) -> dict:
        self.calls += 1
        cubin = bytes((i * 7 + self.calls) % 256 for i in range(self.cubin_size))
        return {"asm": {"ttir": f"module // {self.calls}\n", "ptx": ".version 8.5\n", "cubin": cubin},
                "metadata": {"name": "k", "num_warps": 4, "shared": 16384, "params": ["*fp16", "i32"]}}


def compile_once(compiler: Compiler, **changes) -> cache.CacheEntry:
    args = {"fn_source": SRC, "signature": SIG, "constexprs": CONST, "opts": OPTS, **changes}
    return cache.cached_compile(compile_fn=compiler, **args)


def entry_file(cache_root: Path) -> Path:
    (f,) = list(cache_root.rglob("*" + cache.SUFFIX))
    return f


def test_miss_then_hit_returns_the_same_bytes(cache_in_tmp):
    c = Compiler()
    first = compile_once(c)
    second = compile_once(c)
    assert c.calls == 1
    assert not first.hit and first.value is not None
    assert second.hit and second.value is None
    assert second.asm == first.asm and isinstance(second.asm["cubin"], bytes)
    assert second.metadata == first.metadata
    assert entry_file(cache_in_tmp).parent.parent == cache_in_tmp


@pytest.mark.parametrize("change", [
    {"fn_source": SRC.replace("pass", "return")},
    {"signature": {**SIG, "M": "i64"}},
    {"signature": {**SIG, "A": "*bf16:NV24"}},
    {"constexprs": {**CONST, "BLOCK_K": 64}},
    {"constexprs": {**CONST, "EXTRA": True}},
    {"opts": CompileOptions(target="sm_80", num_warps=4, num_stages=3)},
    {"opts": CompileOptions(target="sm_90", num_warps=8, num_stages=3)},
    {"opts": CompileOptions(target="sm_90", num_warps=4, num_stages=2)},
], ids=["source", "sig-int", "sig-dtype", "constexpr-value", "constexpr-added", "target", "warps",
        "stages"])
def test_any_input_change_misses(change):
    c = Compiler()
    compile_once(c)
    compile_once(c, **change)
    assert c.calls == 2
    compile_once(c, **change)
    assert c.calls == 2


def test_key_depends_on_version_and_compiler_sources(monkeypatch):
    base = cache.key_for(SRC, SIG, CONST, OPTS)
    assert base == cache.key_for(SRC, dict(reversed(SIG.items())), CONST, OPTS)  # order-free
    monkeypatch.setattr(cache, "_DIGEST", "0" * 64)
    changed_compiler = cache.key_for(SRC, SIG, CONST, OPTS)
    monkeypatch.setattr(cache, "_version", lambda: "99.0")
    changed_version = cache.key_for(SRC, SIG, CONST, OPTS)
    assert len({base, changed_compiler, changed_version}) == 3


def test_compiler_digest_covers_passes_not_runtime():
    files = [p.relative_to(cache._PACKAGE) for p in cache._PACKAGE.rglob("*.py")]
    assert Path("compiler.py") in files
    assert len(cache.compiler_digest()) == 64


@pytest.mark.parametrize("damage", ["truncate", "flip-body", "flip-digest", "garbage", "empty"])
def test_corrupt_entry_is_recompiled_not_trusted(cache_in_tmp, damage):
    c = Compiler()
    good = compile_once(c)
    f = entry_file(cache_in_tmp)
    data = bytearray(f.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip-body":
        data[-len(data) // 3] ^= 0x01
    elif damage == "flip-digest":
        pos = len(cache.MAGIC) + 5
        data[pos] = ord("0") if data[pos] != ord("0") else ord("1")
    elif damage == "garbage":
        data = bytearray(b"\x00\xff" * 100)
    else:
        data = bytearray()
    f.write_bytes(bytes(data))
    assert cache.get(cache.key_for(SRC, SIG, CONST, OPTS)) is None
    again = compile_once(c)
    assert c.calls == 2 and not again.hit
    third = compile_once(c)  # the recompiled entry replaced the bad one
    assert c.calls == 2 and third.hit and third.asm["ptx"] == good.asm["ptx"]


def test_entry_under_another_key_is_rejected(cache_in_tmp):
    c = Compiler()
    compile_once(c)
    other_key = cache.key_for(SRC, SIG, {**CONST, "BLOCK_K": 128}, OPTS)
    f = entry_file(cache_in_tmp)
    target = cache._path(other_key)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(f.read_bytes())
    assert cache.get(other_key) is None


_WRITER = textwrap.dedent("""
    import sys
    from sparsecc.runtime import cache
    key, who = sys.argv[1], int(sys.argv[2])
    for i in range(40):
        blob = bytes([who]) * (20000 + 97 * i)
        assert cache.put(key, {"asm": {"cubin": blob, "ptx": f"w{who} i{i}"},
                               "metadata": {"who": who, "i": i, "n": len(blob)}})
""")


def test_concurrent_writers_leave_a_valid_entry(cache_in_tmp):
    key = cache.key_for(SRC, SIG, CONST, OPTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, key, str(w)], env=env)
             for w in range(1, 5)]
    seen = 0
    while any(p.poll() is None for p in procs):
        e = cache.get(key)  # readers racing the writers see a whole entry or none
        if e is not None:
            seen += 1
            who, n = e.metadata["who"], e.metadata["n"]
            assert e.asm["cubin"] == bytes([who]) * n
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    e = cache.get(key)
    assert e is not None and e.asm["cubin"] == bytes([e.metadata["who"]]) * e.metadata["n"]
    assert e.asm["ptx"] == f"w{e.metadata['who']} i39"
    leftovers = [p for p in cache_in_tmp.rglob("*") if p.is_file() and p.suffix != cache.SUFFIX]
    assert leftovers == []
    print(f"reader saw {seen} complete entries while 4 writers raced")


def test_cache_dir_env_and_default(monkeypatch, tmp_path):
    custom = tmp_path / "elsewhere"
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(custom))
    compile_once(Compiler())
    assert entry_file(custom).is_file()
    monkeypatch.delenv("SPARSECC_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "sparsecc"
    compile_once(Compiler())
    assert entry_file(tmp_path / "home" / ".cache" / "sparsecc").is_file()


def test_disabled_cache_always_compiles(monkeypatch, cache_in_tmp):
    monkeypatch.setenv("SPARSECC_CACHE", "0")
    c = Compiler()
    compile_once(c)
    compile_once(c)
    assert c.calls == 2 and not cache_in_tmp.exists()


def test_unstorable_metadata_still_compiles():
    c = Compiler()

    def weird() -> dict:
        out = c()
        out["metadata"]["handle"] = object()
        return out

    first = compile_once(weird)
    second = compile_once(weird)
    assert c.calls == 2 and not second.hit and first.value is not None


def test_unwritable_dir_is_not_fatal(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(blocker / "sub"))
    c = Compiler()
    assert compile_once(c).asm["ptx"] == ".version 8.5\n"
    assert compile_once(c).hit is False and c.calls == 2


def test_bad_key_is_rejected():
    with pytest.raises(ValueError, match="sha256"):
        cache.get("../../etc/passwd")


def test_cache_hit_is_fast():
    c = Compiler(cubin_size=256 * 1024)  # a realistic GEMM cubin size
    compile_once(c)
    times = []
    for _ in range(25):
        t0 = time.perf_counter()
        e = compile_once(c)
        times.append(time.perf_counter() - t0)
        assert e.hit
    median_ms = sorted(times)[len(times) // 2] * 1e3
    print(f"cache hit (key + read + verify + decode, 256 KiB cubin): {median_ms:.2f} ms median")
    assert c.calls == 1 and median_ms < 5.0


# ---- with real @sparsecc.jit kernels ------------------------------------------------------

_HELPER_V1 = """
import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def helper(x):
    return x + 1


@sparsecc.jit
def kernel(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, helper(tl.load(X + offs)))
"""


def _load(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("cache_kmod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kernel_source_includes_inlined_jit_callees(tmp_path):
    v1 = _load(tmp_path / "a" / "kmod.py", _HELPER_V1)
    v2 = _load(tmp_path / "b" / "kmod.py", _HELPER_V1.replace("x + 1", "x + 2"))
    s1, s2 = cache.kernel_source(v1.kernel), cache.kernel_source(v2.kernel)
    assert "x + 1" in s1 and "def kernel" in s1 and "x + 2" in s2
    sig, consts = {"X": "*fp32"}, {"BLOCK": 16}
    assert cache.key_for(s1, sig, consts, OPTS) != cache.key_for(s2, sig, consts, OPTS)
    assert cache.kernel_source(v1.helper) == v1.helper.src


def test_real_kernel_ttir_round_trips():
    from sparsecc.compiler import print_ir
    from sparsecc.frontend import to_ttir
    from sparsecc.ops.sparse_mm import sparse_mm_kernel

    sig = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", **{n: "i32" for n in (
        "M", "N", "K", "stride_am", "stride_bk", "stride_bn", "stride_dm", "stride_dn")}}
    consts = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}
    calls = []

    def compile_fn() -> dict:
        calls.append(1)
        return {"asm": {"ttir": print_ir(to_ttir(sparse_mm_kernel, sig, consts))}, "metadata": {}}

    src = cache.kernel_source(sparse_mm_kernel)
    first = cache.cached_compile(src, sig, consts, CompileOptions(), compile_fn)
    second = cache.cached_compile(src, sig, consts, CompileOptions(), compile_fn)
    assert len(calls) == 1 and second.hit and second.asm == first.asm
    assert '#tt.sparse<"NV24">' in second.asm["ttir"]


@pytest.mark.parametrize("name", sorted(switches.SWITCHES))
def test_every_compiler_switch_is_part_of_the_key(name):
    flipped = replace(OPTS, **{name: not getattr(OPTS, name)})
    assert cache.key_for(SRC, SIG, CONST, flipped) != cache.key_for(SRC, SIG, CONST, OPTS)


def test_entries_are_readable_by_the_group_and_others(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))
    key = cache.key_for(SRC, SIG, CONST, OPTS)
    assert cache.put(key, {"asm": {"ptx": "x"}, "metadata": {}})
    umask = os.umask(0)
    os.umask(umask)
    assert (cache._path(key).stat().st_mode & 0o777) == 0o666 & ~umask  # not mkstemp's 0600


def _forge(key: str, index: bytes) -> bytes:
    """An entry with a valid checksum around an arbitrary index (what an attacker could write)."""
    import hashlib

    body = len(index).to_bytes(8, "little") + index
    return cache.MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


@pytest.mark.parametrize("index", [
    b"[" * 100000 + b"]" * 100000,  # nested past Python's recursion limit
    b'{"key": "K", "asm": {"ptx": ["text", -5, 1]}, "metadata": {}}',
    b'{"key": "K", "asm": {"ptx": ["text", 0, 0]}, "metadata": {"threads": "many"}}',
    b'{"key": "K", "asm": {"ptx": ["text", 0, 0]}, "metadata": {"params": {"a": 1}}}',
    b'{"key": "K", "asm": [], "metadata": {}}',
    b'{"key": "K", "asm": {"ptx": ["text", 0]}, "metadata": {}}',
    b'"just a string"',
])
def test_forged_entries_with_a_valid_checksum_are_discarded(tmp_path, monkeypatch, index):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))
    key = cache.key_for(SRC, SIG, CONST, OPTS)
    path = cache._path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_forge(key, index.replace(b'"K"', f'"{key}"'.encode())))
    assert cache.get(key) is None and not path.exists()


# ---- forged entries of a real kernel (issue 28) ------------------------------------------------

_ADD = """
import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def add(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=mask) + 1.0, mask=mask)
"""


@pytest.fixture
def fake_ptxas(monkeypatch):
    """ptxas stand-in (the cache stores only whole compiles, cubin included)."""
    from sparsecc.codegen import ptxas

    def assemble(ptx: str, arch: str, **_: object) -> ptxas.CompiledCubin:
        return ptxas.CompiledCubin(data=b"\x7fELF" + ptx[-64:].encode(), arch=arch,
                                   resources={"add": ptxas.KernelResources(registers=30)})

    monkeypatch.setattr(ptxas, "start_assemble", lambda *a, **k: ptxas.PendingCubin.ready(assemble(*a, **k)))


def _set(path: str, value):
    """A forgery: set metadata field `path` ('a.b' for nested) to `value` (None: delete it)."""
    def apply(meta: dict) -> None:
        *outer, last = path.split(".")
        d = meta
        for k in outer:
            d = d[k]
        if value is None:
            del d[last]
        else:
            d[last] = value
    return apply


K = cache.KERNEL_INFO


@pytest.mark.parametrize("forge", [
    _set(f"{K}.flat_signature", 5),  # was: TypeError on every later compile
    _set(f"{K}.flat_signature", [1, 2, 3]),
    _set(f"{K}.flat_signature", ["*fp32"]),
    _set(f"{K}.flat_signature", ["*fp16", "*fp32", "i32"]),
    _set(f"{K}.flat_arg_names", ["Y", "X", "N"]),
    _set(f"{K}.flat_arg_names", "XYN"),
    _set(f"{K}.contiguous", [0, 7]),
    _set(f"{K}.aligned", [True]),
    _set(f"{K}.aligned", None),
    _set(f"{K}.extra", 1),
    _set(K, "not a dict"),
    _set("params", [[1, 2]]),
    _set("ptxas", {"add": {"registers": "many"}}),
    _set("ptxas", {"add": {"bogus_field": 1}}),
    _set("tensor_maps", [{"arg": 0}]),
    _set("tensor_maps", [{"arg": 0, "dtype": "fp16", "dims": [["arg", "x"]], "strides": [], "box": [8, 8],
                          "swizzle": 0, "esize": 2}]),
    _set("threads", -1),
    _set("name", 3),
], ids=["flat-sig-int", "flat-sig-ints", "flat-sig-short", "flat-sig-other-kind", "flat-names-swapped", "flat-names-str",
        "contiguous-out-of-range", "aligned-bool", "aligned-missing", "extra-field", "info-str", "params",
        "ptxas-type", "ptxas-field", "tensor-map-short", "tensor-map-expr", "threads-negative", "name-int"])
def test_forged_kernel_entry_is_recompiled(tmp_path, fake_ptxas, forge):
    import copy

    import sparsecc

    kernel = _load(tmp_path / "src" / "kadd.py", _ADD).add
    sig, consts = {"X": "*fp32", "Y": "*fp32", "N": "i32"}, {"BLOCK": 128}
    good = sparsecc.compile(kernel, signature=sig, constexprs=consts, target="sm_90")
    (f,) = list((tmp_path / "cache").rglob("*" + cache.SUFFIX))
    stored = cache.get(f.stem)
    assert stored is not None and sparsecc.compile(kernel, signature=sig, constexprs=consts,
                                                   target="sm_90").cache_hit
    meta = copy.deepcopy(stored.metadata)
    forge(meta)
    assert cache.put(f.stem, cache.CacheEntry(asm=stored.asm, metadata=meta))  # a valid checksum
    again = sparsecc.compile(kernel, signature=sig, constexprs=consts, target="sm_90")
    assert not again.cache_hit and again.flat_signature == good.flat_signature == ["*fp32", "*fp32", "i32"]
    assert again.flat_arg_names == ["X", "Y", "N"] and again.asm["ptx"] == good.asm["ptx"]
    hit = sparsecc.compile(kernel, signature=sig, constexprs=consts, target="sm_90")
    assert hit.cache_hit and hit.flat_signature == good.flat_signature and hit.contiguous == good.contiguous


def test_hinted_signature_entry_is_reused(tmp_path, fake_ptxas):
    """The kinds check compares without hints: an `i32:16` parameter's entry still hits."""
    import sparsecc

    kernel = _load(tmp_path / "src" / "kadd.py", _ADD).add
    sig, consts = {"X": "*fp32", "Y": "*fp32", "N": "i32:16"}, {"BLOCK": 128}
    first = sparsecc.compile(kernel, signature=sig, constexprs=consts, target="sm_90")
    again = sparsecc.compile(kernel, signature=sig, constexprs=consts, target="sm_90")
    assert not first.cache_hit and again.cache_hit and again.flat_signature == first.flat_signature
