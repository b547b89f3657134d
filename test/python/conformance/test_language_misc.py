"""Tensor descriptors (`tl.make_tensor_descriptor`, `desc.load/store`), the functional
`tl.add/sub/mul`, `tl.swizzle2d`, `propagate_nan=` (`tl.PropagateNan`), `tl.target_info` and the
type names kernels write in annotations (issue 29): the interpreter against torch on random
ragged data, the PTX assembled for sm_80 and sm_90a, the GPU against torch (marked gpu)."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError

POISON = -7.0


@sparsecc.jit
def desc_relu(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    src = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    dst = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    t = tl.load_tensor_descriptor(src, [pm, pn])
    dst.store([pm, pn], tl.maximum(t, 0.0) + 1.0)


def _relu(device: str, dtype: torch.dtype, m: int, n: int, bm: int, bn: int) -> None:
    x = torch.randn(m, n, device=device).to(dtype)
    buf = torch.full((m * n + 64,), POISON, device=device, dtype=dtype)  # a tail past Y
    y = buf[: m * n].view(m, n)
    desc_relu[(triton_cdiv(m, bm), triton_cdiv(n, bn))](x, y, m, n, BM=bm, BN=bn, PAD="zero")
    torch.testing.assert_close(y.float(), torch.relu(x.float()) + 1, rtol=1e-2, atol=1e-2)
    assert bool((buf[m * n:] == POISON).all()), "a descriptor store wrote outside its tensor"


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


@sparsecc.jit
def desc_pad(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    """One tile at (M - 3, N - 5): what lies past the tensor reads as the padding."""
    src = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    t = src.load([M - 3, N - 5])
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    tl.store(Y + rows * BN + cols, t)


@sparsecc.jit
def desc_matmul(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(A, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(B, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(C, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pm, k]), b_desc.load([k, pn]), acc)
    c_desc.store([pm, pn], acc.to(tl.float16))


def _matmul(device: str, m: int, n: int, k: int) -> None:
    a = torch.randn(m, k, device=device, dtype=torch.float16)
    b = torch.randn(k, n, device=device, dtype=torch.float16)
    c = torch.full((m, n), POISON, device=device, dtype=torch.float16)
    desc_matmul[(triton_cdiv(m, 64), triton_cdiv(n, 64))](a, b, c, m, n, k, BM=64, BN=64, BK=32)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=5e-2)


@sparsecc.jit
def misc_names(X: tl.const, Y, Rows, Cols, n, BLOCK: tl.constexpr, GROUP: tl.constexpr, NAN: tl.constexpr):
    tl.static_assert(BLOCK <= tl.TRITON_MAX_TENSOR_NUMEL)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    hi = tl.minimum(x, 0.5, propagate_nan=NAN)
    lo = tl.maximum(x, -0.5, propagate_nan=NAN)
    y = tl.sub(tl.mul(twice(x), 3, sanitize_overflow=False), tl.add(hi, lo))
    tl.store(Y + offs, tl.clamp(y, -4.0, 4.0, propagate_nan=NAN), mask=offs < n)
    i, j = tl.swizzle2d(offs // 8, offs % 8, BLOCK // 8, 8, GROUP)
    pair = tl.tuple((i, j))
    tl.store(Rows + offs, pair[0])
    tl.store(Cols + offs, pair[1])


@sparsecc.jit
def twice(x: tl.tensor) -> tl.tensor:
    return tl.add(x, x)


def _swizzle_reference(i: int, j: int, size_i: int, size_j: int, size_g: int) -> tuple[int, int]:
    """Triton's tl.swizzle2d on Python ints (python/triton/language/standard.py)."""
    ij = i * size_j + j
    size_gj = size_g * size_j
    off_i = (ij // size_gj) * size_g
    size_g = min(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g


def _misc(device: str, nan: tl.PropagateNan, group: int) -> None:
    n, block = 60, 64
    x = torch.randn(n, device=device) * 2
    x[::7] = float("nan")
    y = torch.full((n,), POISON, device=device)
    i = torch.full((block,), -1, dtype=torch.int32, device=device)
    j = torch.full_like(i, -1)
    misc_names[(1,)](x, y, i, j, n, BLOCK=block, GROUP=group, NAN=nan)
    mn, mx = (torch.minimum, torch.maximum) if nan == tl.PropagateNan.ALL else (torch.fmin, torch.fmax)
    ref = 6 * x - (mn(x, torch.tensor(0.5, device=device)) + mx(x, torch.tensor(-0.5, device=device)))
    ref = mn(mx(ref, torch.tensor(-4.0, device=device)), torch.tensor(4.0, device=device))
    torch.testing.assert_close(y, ref, equal_nan=True)
    want = [_swizzle_reference(e // 8, e % 8, block // 8, 8, group) for e in range(block)]
    assert list(zip(i.tolist(), j.tolist())) == want


@sparsecc.jit
def target_flags(F):
    tl.store(F + 0, 1 if tl.target_info.is_cuda() else 0)
    tl.store(F + 1, 1 if tl.target_info.cuda_capability_geq(9, 0) else 0)
    tl.store(F + 2, 1 if tl.target_info.cuda_capability_geq(8) else 0)
    tl.store(F + 3, 1 if tl.target_info.is_hip() else 0)
    c = 0
    while tl.condition(c < 5, disable_licm=True):
        c += 2
    tl.store(F + 4, c)


# ---- the interpreter ------------------------------------------------------------------


@pytest.mark.parametrize("dtype, m, n, bm, bn", [(torch.float32, 37, 45, 16, 32), (torch.float16, 70, 19, 32, 16),
                                                 (torch.float32, 5, 4, 8, 4)])
def test_descriptor_load_store_on_the_interpreter(dtype, m, n, bm, bn, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _relu("cpu", dtype, m, n, bm, bn)


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_descriptor_padding_on_the_interpreter(pad, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    m, n = 11, 13
    x = torch.randn(m, n)
    y = torch.full((8, 16), POISON)
    desc_pad[(1,)](x, y, m, n, BM=8, BN=16, PAD=pad)
    want = torch.full((8, 16), 0.0 if pad == "zero" else float("nan"))
    want[:3, :5] = x[m - 3:, n - 5:]
    torch.testing.assert_close(y, want, equal_nan=True)


def test_descriptor_matmul_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _matmul("cpu", 80, 72, 96)


@pytest.mark.parametrize("nan", [tl.PropagateNan.NONE, tl.PropagateNan.ALL])
@pytest.mark.parametrize("group", [1, 3])
def test_functional_ops_swizzle_and_nan_on_the_interpreter(nan, group, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _misc("cpu", nan, group)


def test_default_maximum_ignores_nan_as_triton(monkeypatch):
    """Triton's default PropagateNan.NONE: maxnumf (a NaN loses), not the NaN-propagating maximumf."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")

    @sparsecc.jit
    def mx(X, Y):
        offs = tl.arange(0, 4)
        tl.store(Y + offs, tl.maximum(tl.load(X + offs), 1.0))

    x = torch.tensor([float("nan"), 0.0, 2.0, float("nan")])
    y = torch.empty(4)
    mx[(1,)](x, y)
    assert y.tolist() == [1.0, 1.0, 2.0, 1.0]
    ir = sparsecc.compile(mx, {"X": "*fp32", "Y": "*fp32"}, {}).asm["ttir"]
    assert "arith.maxnumf" in ir and "arith.maximumf" not in ir


def test_target_info_on_the_interpreter(monkeypatch):
    """No target on the interpreter (Triton's current_target() is None): every question is False."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    f = torch.full((5,), -1, dtype=torch.int32)
    target_flags[(1,)](f)
    assert f.tolist() == [0, 0, 0, 0, 6]


def test_type_names_on_the_host():
    assert tl.pi32_t == tl.pointer_type(tl.int32)
    assert tl.TRITON_MAX_TENSOR_NUMEL == 1 << 20
    assert tl.constexpr_type(tl.constexpr(4)).value == 4
    bt = tl.block_type(tl.float16, [16, tl.constexpr(32)])
    assert (bt.shape, bt.numel, bt.scalar) == ((16, 32), 512, tl.float16)
    assert tl.void.name == "void" and repr(tl.void) == "tl.void"
    assert int(tl.PropagateNan.ALL) == 0xFFFF and int(tl.PropagateNan.NONE) == 0


# ---- PTX ------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_new_names_assemble(target):
    ck = sparsecc.compile(desc_relu, {"X": "*fp16", "Y": "*fp16", "M": "i32", "N": "i32"},
                          {"BM": 32, "BN": 16, "PAD": "zero"}, target=target)
    assert isinstance(ck.asm["cubin"], bytes)
    ck = sparsecc.compile(desc_matmul, {"A": "*fp16", "B": "*fp16", "C": "*fp16", "M": "i32", "N": "i32:16",
                                        "K": "i32:16"}, {"BM": 64, "BN": 64, "BK": 32}, target=target)
    assert isinstance(ck.asm["cubin"], bytes)
    for nan, instr in ((tl.PropagateNan.NONE, "max.f32"), (tl.PropagateNan.ALL, "max.NaN.f32")):
        ck = sparsecc.compile(misc_names, {"X": "*fp32", "Y": "*fp32", "Rows": "*i32", "Cols": "*i32", "n": "i32"},
                              {"BLOCK": 64, "GROUP": 3, "NAN": nan}, target=target)
        assert instr in ck.asm["ptx"] and isinstance(ck.asm["cubin"], bytes)


def test_target_info_answers_the_compile_target():
    ptx = {t: sparsecc.compile(target_flags, {"F": "*i32"}, {}, target=t).asm["ptx"] for t in ("sm_80", "sm_90a")}
    assert ptx["sm_80"] != ptx["sm_90a"]  # cuda_capability_geq(9, 0) differs


# ---- errors ---------------------------------------------------------------------------


def _compile_error(src: str, sig: dict[str, str], tmp_path, monkeypatch, name: str = "k") -> str:
    path = tmp_path / f"{name}.py"
    path.write_text("import sparsecc\nimport sparsecc.language as tl\n\n\n@sparsecc.jit\n" + src)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(name)
    with pytest.raises(CompilationError) as info:
        sparsecc.compile(module.k, sig, {})
    text = str(info.value)
    assert f"{path}:" in text, text
    return text


_ERRORS = [
    ("d = tl.make_tensor_descriptor(X, [M, N], [1, N], [16, 16])", "last stride must be 1"),
    ("d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [16, 2])", "at least 16 bytes in the last dimension"),
    ("d = tl.make_tensor_descriptor(X, [M, N], [6, 1], [16, 16])", "multiples of 16 bytes"),
    ("d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [16, 16], padding_option='nan')\n", None),
    ("d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [16, 16])\n    x = d.load([0])", "needs 2 offsets"),
    ("d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [16, 16])\n    d.store([0, 0], tl.zeros((16, 8), tl.int32))",
     "value of the block shape [16, 16]"),
    ("x = tl.load_tensor_descriptor(X, [0, 0])", "needs a tensor descriptor"),
    ("x = tl.maximum(M, N, propagate_nan=3)", "propagate_nan must be"),
    ("d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [16, 16], padding_option='inf')", "padding_option must be"),
]


@pytest.mark.parametrize("case", range(len(_ERRORS)))
def test_errors_are_located_and_name_the_problem(case, tmp_path, monkeypatch):
    body, message = _ERRORS[case]
    name = f"k_misc_error_{case}"
    src = f"def k(X, M, N):\n    {body}\n"
    if message is None:  # padding nan on ints: Triton refuses it
        message = "needs a floating-point tensor"
    text = _compile_error(src, {"X": "*i32", "M": "i32", "N": "i32"}, tmp_path, monkeypatch, name)
    assert message in text, text


# ---- the GPU --------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, m, n, bm, bn", [(torch.float32, 37, 45, 16, 32), (torch.float16, 70, 19, 32, 16),
                                                 (torch.float16, 300, 200, 64, 64)])
def test_descriptor_load_store_on_the_gpu(dtype, m, n, bm, bn):
    _relu("cuda", dtype, m, n, bm, bn)


@pytest.mark.gpu
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_descriptor_padding_on_the_gpu(pad):
    m, n = 11, 13
    x = torch.randn(m, n, device="cuda")
    y = torch.full((8, 16), POISON, device="cuda")
    desc_pad[(1,)](x, y, m, n, BM=8, BN=16, PAD=pad)
    want = torch.full((8, 16), 0.0 if pad == "zero" else float("nan"), device="cuda")
    want[:3, :5] = x[m - 3:, n - 5:]
    torch.testing.assert_close(y, want, equal_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(80, 72, 96), (256, 256, 512)])
def test_descriptor_matmul_on_the_gpu(m, n, k):
    _matmul("cuda", m, n, k)


@pytest.mark.gpu
@pytest.mark.parametrize("nan", [tl.PropagateNan.NONE, tl.PropagateNan.ALL])
def test_functional_ops_swizzle_and_nan_on_the_gpu(nan):
    _misc("cuda", nan, 3)


@pytest.mark.gpu
def test_target_info_on_the_gpu():
    f = torch.full((5,), -1, dtype=torch.int32, device="cuda")
    target_flags[(1,)](f)
    major, minor = torch.cuda.get_device_capability()
    assert f.tolist() == [1, int((major, minor) >= (9, 0)), int(major >= 8), 0, 6]


# ---- tl.inline_asm_elementwise ---------------------------------------------------------


@sparsecc.jit
def asm_kernel(X, Y, Z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0)
    y = tl.load(Y + offs, mask=offs < n, other=0.0)
    rot = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $1, 3;", "=r,r", [x], dtype=tl.int32, is_pure=True,
                                    pack=1)
    f, g = tl.inline_asm_elementwise("mul.rn.f32 $0, $2, 0f40000000;\nmov.b32 $1, $3;", "=f,=r,f,r", [y, x],
                                     dtype=(tl.float32, tl.float32), is_pure=True, pack=1)
    two = tl.inline_asm_elementwise("add.s32 $0, $2, $2;\nadd.s32 $1, $3, $3;", "=r,=r,r,r", [x],
                                    dtype=tl.int32, is_pure=True, pack=2)
    tl.store(Z + offs, rot, mask=offs < n)
    tl.store(Z + n + offs, two, mask=offs < n)
    tl.store(Y + offs, f, mask=offs < n)
    tl.store(Y + n + offs, g, mask=offs < n)


_ASM_SIG = {"X": "*i32", "Y": "*fp32", "Z": "*i32", "n": "i32"}


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_inline_asm_assembles(target):
    ck = sparsecc.compile(asm_kernel, _ASM_SIG, {"BLOCK": 256}, target=target)
    ptx = ck.asm["ptx"]
    assert "shf.l.wrap.b32" in ptx and "mul.rn.f32" in ptx and isinstance(ck.asm["cubin"], bytes)


def test_inline_asm_on_the_interpreter_is_a_located_error(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x = torch.randint(-1000, 1000, (10,), dtype=torch.int32)
    with pytest.raises(Exception, match=r"test_language_misc\.py:\d+:\d+: tl.inline_asm_elementwise runs on the GPU"):
        asm_kernel[(1,)](x, torch.zeros(20), torch.zeros(20, dtype=torch.int32), 10, BLOCK=16)


@pytest.mark.parametrize("constraints, message", [("=r", "name 1 registers"), ("=r,x", "not one of r, l, h, f"),
                                                  ("r,=r", "outputs")])
def test_inline_asm_bad_constraints_are_located(constraints, message):
    @sparsecc.jit
    def bad(X, CONS: tl.constexpr):
        offs = tl.arange(0, 32)
        x = tl.load(X + offs)
        tl.store(X + offs, tl.inline_asm_elementwise("mov.b32 $0, $1;", CONS, [x], tl.int32, True, 1))

    with pytest.raises(CompilationError, match=message) as info:
        sparsecc.compile(bad, {"X": "*i32"}, {"CONS": constraints}, target="sm_90a")
    assert "test_language_misc.py:" in str(info.value)


@pytest.mark.gpu
def test_inline_asm_on_the_gpu():
    n = 1000
    x = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32, device="cuda")
    y = torch.cat([torch.randn(n, device="cuda"), torch.full((n,), POISON, device="cuda")])
    z = torch.full((2 * n,), -1, dtype=torch.int32, device="cuda")
    y0 = y[:n].clone()
    asm_kernel[(triton_cdiv(n, 256),)](x, y, z, n, BLOCK=256)
    u = x.to(torch.int64) & 0xFFFFFFFF
    rot = ((u << 3) | (u >> 29)) & 0xFFFFFFFF
    assert torch.equal(z[:n].to(torch.int64) & 0xFFFFFFFF, rot)
    assert torch.equal(z[n:], x * 2)
    torch.testing.assert_close(y[:n], 2 * y0)
    assert torch.equal(y[n:].view(torch.int32), x)
