"""Issue 29: scalar-pointer loads, `while`, early `return`, store-only `if`, negative `range`
steps, `tl.range`, break/continue, bool/fp64 arguments, `@jit(...)` options, launch keywords,
autotune on the interpreter and strided views, each on the interpreter against torch, assembled
for sm_80 and sm_90a, and (marked gpu) on the GPU against torch."""

from __future__ import annotations

import math
import re
import textwrap

import pytest
import torch
from control_kernels import (
    add_scalar,
    bool_select,
    call_early_return,
    fp64_axpy,
    grouped_gemm,
    halving_steps,
    ranged_matmul,
    reverse_weighted_sum,
    row_scale,
    scalar_copy,
    strided_rows,
)

import sparsecc
from sparsecc.frontend.errors import CompilationError

TARGETS = ["sm_80", "sm_90a"]


@pytest.fixture
def interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---- the checks, on either device -------------------------------------------------------------

def _grouped_gemm(device: str, sizes: list[int], n: int = 40, k: int = 72, sms: int = 5) -> None:
    g = _gen(sum(sizes))
    total = sum(sizes)
    a = torch.randn(total, k, generator=g).half()
    b = torch.randn(len(sizes), k, n, generator=g).half()
    c = torch.full((total, n), float("nan"), dtype=torch.float16)
    m_sizes = torch.tensor(sizes, dtype=torch.int32)
    a, b, c, m_sizes = (t.to(device) for t in (a, b, c, m_sizes))
    grouped_gemm[(sms,)](a, b, c, m_sizes, len(sizes), n, k, NUM_SMS=sms, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    rows = torch.cumsum(torch.tensor([0, *sizes]), 0).tolist()
    ref = torch.cat([a[rows[i]:rows[i + 1]].float() @ b[i].float() for i in range(len(sizes))])
    torch.testing.assert_close(c.float().cpu(), ref.cpu(), rtol=1e-2, atol=5e-2)


def _row_scale(device: str, rows: int = 13, cols: int = 100) -> None:
    g = _gen(rows * cols)
    x = torch.randn(rows, cols, generator=g).to(device)
    s = torch.randn(rows, generator=g).to(device)
    y = torch.full((rows + 3, cols), float("nan"), device=device)  # rows past n_rows: programs return
    row_scale[(rows + 3,)](x, y, s, rows, cols, BLOCK=128)
    torch.testing.assert_close(y[:rows].cpu(), (x * s[:, None]).cpu())
    assert torch.isnan(y[rows:]).all()


def _scalar_copy(device: str, n: int = 77) -> None:
    x = torch.randn(n, generator=_gen(n)).to(device)
    y = torch.full((2 * n,), float("nan"), device=device)
    scalar_copy[(n + 5,)](x, y, n)  # 5 programs past n: masked scalar loads and stores
    torch.testing.assert_close(y[:n].cpu(), (x * 2 + 1).cpu())
    pos = (x > 0).cpu()
    assert torch.equal(y[n:].cpu()[pos], x.cpu()[pos]) and torch.isnan(y[n:].cpu()[~pos]).all()


def _reverse_weighted_sum(device: str, rows: int = 11, step: int = 3) -> None:
    x = torch.randn(rows, 64, generator=_gen(rows)).to(device)
    y = torch.full((64,), float("nan"), device=device)
    reverse_weighted_sum[(1,)](x, y, rows, BLOCK=64, STEP=step)
    ref = sum((k + 1) * x[i] for k, i in enumerate(range(rows - 1, -1, -step)))
    torch.testing.assert_close(y.cpu(), ref.cpu())


def _halving_steps(device: str, n: int = 50) -> None:
    x = (torch.randn(n, generator=_gen(n)) * 1000).to(device)
    x[0] = 0.25
    y = torch.full((n,), -1, dtype=torch.int32, device=device)
    halving_steps[(n,)](x, y, n, BLOCK=1)
    ref = [0 if abs(v) < 1 else math.floor(math.log2(abs(v))) + 1 for v in x.cpu().tolist()]
    assert y.cpu().tolist() == ref


def _call_early_return(device: str, n: int = 20) -> None:
    x = torch.randn(n, generator=_gen(n)).to(device)
    y = torch.full((n, 32), float("nan"), device=device)
    call_early_return[(n,)](x, y, 0.2, 32, BLOCK=32)
    ref = torch.where(x < 0.2, torch.full_like(x, 0.2), x + 1)
    torch.testing.assert_close(y.cpu(), ref[:, None].expand(n, 32).cpu())


def _strided_rows(device: str) -> None:
    base = torch.randn(9, 40, generator=_gen(9)).to(device)
    view = base[:, 3:33]  # rows 40 apart, starting at element 3: not contiguous
    y = torch.full((9, 30), float("nan"), device=device)
    strided_rows[(9,)](view, y, view.stride(0), 30, BLOCK=32)
    torch.testing.assert_close(y.cpu(), (view * 2).cpu())


def _ranged_matmul(device: str, m: int = 70, n: int = 48, k: int = 208, stages: int = 3) -> None:
    g = _gen(m + k)
    dense = sparsecc.prune_2to4(torch.randn(m, k, generator=g).half()).to(device)
    b = torch.randn(k, n, generator=g).half().to(device)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    a = sparsecc.compress(dense)
    grid = (-(-m // 64), -(-n // 64))
    ranged_matmul[grid](c, a, b, m, n, k, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=64, BLOCK_N=64,
                        BLOCK_K=64, STAGES=stages, num_stages=1)
    ref = dense.float() @ b.float()
    torch.testing.assert_close(c.float().cpu(), ref.cpu(), rtol=1e-2, atol=5e-2)


CHECKS = {
    "grouped_gemm": lambda d: _grouped_gemm(d, [37, 0, 64, 5]),
    "row_scale": _row_scale,
    "scalar_copy": _scalar_copy,
    "reverse_weighted_sum": _reverse_weighted_sum,
    "halving_steps": _halving_steps,
    "call_early_return": _call_early_return,
    "strided_rows": _strided_rows,
    "ranged_matmul": _ranged_matmul,
}


# ---- interpreter -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CHECKS))
def test_on_the_interpreter(interpret: None, name: str) -> None:
    CHECKS[name]("cpu")


def test_grouped_gemm_ragged_groups_on_the_interpreter(interpret: None) -> None:
    _grouped_gemm("cpu", [1, 33, 0, 0, 70], sms=3)


@pytest.mark.parametrize("rows,step", [(1, 1), (10, 2), (9, 4)])
def test_negative_steps_on_the_interpreter(interpret: None, rows: int, step: int) -> None:
    _reverse_weighted_sum("cpu", rows, step)


def test_bool_and_fp64_pointers_on_the_interpreter(interpret: None) -> None:
    g = _gen(5)
    m, x = torch.rand(300, generator=g) > 0.5, torch.randn(300, generator=g)
    y = torch.full((300,), float("nan"))
    bool_select[(3,)](m, x, y, 300, BLOCK=128)
    assert torch.equal(y, torch.where(m, x, -x))
    xd = torch.randn(200, generator=g, dtype=torch.float64)
    yd = torch.full((200,), float("nan"), dtype=torch.float64)
    fp64_axpy[(2,)](xd, yd, 1.5, 200, BLOCK=128)  # a Python float is an fp32 scalar, as in Triton
    torch.testing.assert_close(yd, xd * 1.5 + xd[0])


# ---- errors, at the kernel line ------------------------------------------------------------------

def _kernel_from(src: str, tmp_path, name: str):
    """A @sparsecc.jit kernel defined in a real file (the frontend reads its source)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import sparsecc\nimport sparsecc.language as tl\n\n" + textwrap.dedent(src))
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102
    return ns[name], path


@pytest.mark.parametrize("stmt,message", [
    ("break", r"'break' is not supported in a kernel \(as in Triton"),
    ("continue", r"'continue' is not supported in a kernel \(as in Triton"),
    ("return", r"'return' inside a runtime 'for' or 'while' loop is not supported"),
])
def test_break_continue_and_return_in_loops_are_located_errors(tmp_path, stmt: str, message: str) -> None:
    k, path = _kernel_from(f"""
        @sparsecc.jit
        def k(X, n):
            for i in range(n):
                if i > 3:
                    {stmt}
                tl.store(X + i, 1.0)
        """, tmp_path, "k")
    with pytest.raises(CompilationError, match=message) as info:
        sparsecc.compile(k, {"X": "*fp32", "n": "i32"})
    assert f"{path}:9:" in str(info.value)  # the line of the statement


def test_return_of_a_value_on_one_branch_only_is_refused(tmp_path) -> None:
    k, path = _kernel_from("""
        @sparsecc.jit
        def f(x):
            if x > 0:
                return x
            x = x + 1.0

        @sparsecc.jit
        def k(X):
            tl.store(X, f(tl.load(X)))
        """, tmp_path, "k")
    with pytest.raises(CompilationError, match="returns a value on one branch only"):
        sparsecc.compile(k, {"X": "*fp32"})


@pytest.mark.parametrize("hint,message", [
    ("num_stages=0", r"tl.range\(num_stages=...\) must be a positive integer, got 0"),
    ("num_stages=n", r"tl.range\(num_stages=...\) must be a constexpr"),
    ("bogus=1", r"tl.range\(\): got an unexpected keyword argument 'bogus'"),
])
def test_bad_tl_range_hints_are_located_errors(tmp_path, hint: str, message: str) -> None:
    k, path = _kernel_from(f"""
        @sparsecc.jit
        def k(X, n):
            for i in tl.range(0, n, {hint}):
                tl.store(X + i, 1.0)
        """, tmp_path, "k")
    with pytest.raises(CompilationError, match=message) as info:
        sparsecc.compile(k, {"X": "*fp32", "n": "i32"})
    assert f"{path}:7:" in str(info.value)


@pytest.mark.parametrize("target", TARGETS)
def test_bool_and_fp64_memory_compile_for_the_gpu(target: str) -> None:
    """Once refused on the GPU path (issue 29): bool tensors load as bytes, fp64 computes in fp64
    (test_argument_dtypes.py checks their results)."""
    ck = sparsecc.compile(bool_select, {"M": "*i1", "X": "*fp32", "Y": "*fp32", "n": "i32"}, {"BLOCK": 128},
                          target=target)
    assert isinstance(ck.asm["cubin"], bytes)
    ck = sparsecc.compile(fp64_axpy, {"X": "*fp64", "Y": "*fp64", "a": "fp32", "n": "i32"}, {"BLOCK": 128},
                          target=target)
    assert "fma.rn.f64" in ck.asm["ptx"] or "mul.f64" in ck.asm["ptx"]
    assert isinstance(ck.asm["cubin"], bytes)


# ---- the IR --------------------------------------------------------------------------------------

def test_ttir_of_while_tl_range_and_early_return() -> None:
    sig = {"X": "*fp32", "Y": "*i32", "n": "i32"}
    ttir = sparsecc.compile(halving_steps, sig, {"BLOCK": 1}).asm["ttir"]
    assert "scf.while" in ttir and "scf.condition" in ttir
    sig = {"C": "*fp16", "A": "*fp16", "B": "*fp16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "i32", "stride_cm": "i32"}
    ttir = sparsecc.compile(ranged_matmul, sig, {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "STAGES": 4}).asm["ttir"]
    assert re.search(r"\{tt.num_stages = 4 : i32, tt.loop_unroll_factor = 2 : i32, "
                     r"tt.disallow_acc_multi_buffer, tt.flatten\}", ttir)
    sig = {"X": "*fp32", "Y": "*fp32", "scales": "*fp32", "n_rows": "i32", "n_cols": "i32"}
    ttir = sparsecc.compile(row_scale, sig, {"BLOCK": 128}).asm["ttir"]
    assert ttir.count("scf.if") == 1 and ttir.count("tt.store") == 1  # the rest sits in the else branch


# ---- assembled -----------------------------------------------------------------------------------

SIGS = {
    grouped_gemm: ({"A": "*fp16", "B": "*fp16", "C": "*fp16", "m_sizes": "*i32", "G": "i32", "N": "i32",
                    "K": "i32"}, {"NUM_SMS": 8, "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}),
    row_scale: ({"X": "*fp32", "Y": "*fp32", "scales": "*fp32", "n_rows": "i32", "n_cols": "i32"}, {"BLOCK": 128}),
    scalar_copy: ({"X": "*fp32", "Y": "*fp32", "n": "i32"}, {}),
    reverse_weighted_sum: ({"X": "*fp32", "Y": "*fp32", "n_rows": "i32"}, {"BLOCK": 64, "STEP": 3}),
    halving_steps: ({"X": "*fp32", "Y": "*i32", "n": "i32"}, {"BLOCK": 1}),
    call_early_return: ({"X": "*fp32", "Y": "*fp32", "lo": "fp32", "n": "i32"}, {"BLOCK": 32}),
    strided_rows: ({"X": "*fp32", "Y": "*fp32", "stride_x": "i32", "n_cols": "i32"}, {"BLOCK": 64}),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel", list(SIGS), ids=lambda k: k.__name__)
def test_assembles(kernel, target: str) -> None:
    sig, cx = SIGS[kernel]
    ck = sparsecc.compile(kernel, sig, cx, target=target)
    assert isinstance(ck.asm["cubin"], bytes)


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_loads_are_predicated_global_loads(target: str) -> None:
    ptx = sparsecc.compile(scalar_copy, *SIGS[scalar_copy], target=target).asm["ptx"]
    assert re.search(r"@%p\d+ ld\.global\.b32 %f\d+, \[%rd\d+\];", ptx)  # masked, `other` moved in before


@pytest.mark.parametrize("target", TARGETS)
def test_tl_range_num_stages_overrides_the_launch(target: str) -> None:
    """A dot loop's `tl.range(num_stages=S)` pipelines it with S stages whatever the launch's
    num_stages (sm_80: S-1 cp.async groups in flight, 2 streams of 4 copies per thread)."""
    sig = {"C": "*fp16", "A": "*fp16:NV24", "B": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
    cx = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}

    def ttgir(stages: int, launch: int) -> str:
        return sparsecc.compile(ranged_matmul, sig, {**cx, "STAGES": stages}, target=target,
                                num_stages=launch).asm["ttgir"]

    assert "async" not in ttgir(1, 3)  # num_stages=1 on the loop: not pipelined under a launch of 3
    piped = ttgir(3, 1)
    assert "async" in piped and ttgir(3, 3) == piped


@pytest.mark.parametrize("target", TARGETS)
def test_num_warps_up_to_32(target: str) -> None:
    for warps in (16, 32):
        ck = sparsecc.compile(row_scale, *SIGS[row_scale], target=target, num_warps=warps)
        assert f".maxntid {32 * warps}, 1, 1" in ck.asm["ptx"]


# ---- @jit options, launch keywords, autotune -------------------------------------------------

def test_jit_options(interpret: None, tmp_path) -> None:
    k, _ = _kernel_from("""
        @sparsecc.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=[3], debug=True,
                      launch_metadata=lambda grid, kernel, args: {}, noinline=True)
        def k(X, Y, n, s, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(Y + offs, tl.load(X + offs, mask=offs < n, other=0.0) + s, mask=offs < n)
        """, tmp_path, "k")
    x = torch.randn(64, generator=_gen(64))
    y = torch.full((64,), float("nan"))
    k[(1,)](x, y, 64, 32, BLOCK=64)  # n = 64 and s = 32: multiples of 16, not hinted
    torch.testing.assert_close(y, x + 32)
    (sig,) = [c.signature for c in k.cache.values()]
    assert sig["n"] == "i32" and sig["s"] == "i32"
    k[(1,)](x, y, 1, 1, BLOCK=64)  # n = 1: do_not_specialize drops ':1'; s = 1 keeps it
    assert {(c.signature["n"], c.signature["s"]) for c in k.cache.values()} == {("i32", "i32"), ("i32", "i32:1")}
    torch.testing.assert_close(y[:1], x[:1] + 1)


def test_bad_jit_options_are_refused(tmp_path) -> None:
    with pytest.raises(TypeError, match=r"do_not_specialize=...\) of k: 'm' is not a runtime parameter"):
        _kernel_from("""
            @sparsecc.jit(do_not_specialize=["m"])
            def k(X, n):
                tl.store(X, n)
            """, tmp_path, "k")
    with pytest.raises(TypeError, match=r"unknown options \['nonsense'\]"):
        sparsecc.jit(nonsense=1)


def test_launch_keywords(interpret: None) -> None:
    x = torch.randn(100, generator=_gen(100))
    y = torch.full((100, 128), float("nan"))
    s = torch.randn(100, generator=_gen(1))
    row_scale[(100,)](x[:, None].expand(100, 128).contiguous(), y, s, 100, 128, BLOCK=128, num_warps=32,
                      num_ctas=1, launch_pdl=True)
    torch.testing.assert_close(y, x[:, None] * s[:, None] * torch.ones(128))
    with pytest.raises(ValueError, match="num_ctas must be 1 or 2"):
        row_scale[(1,)](x, y, s, 1, 128, BLOCK=128, num_ctas=3)


def test_autotune_on_the_interpreter(interpret: None) -> None:
    """Every config used to fail on the CPU (the default timer needs CUDA); now the wall clock
    times them and the winner runs."""
    configs = [sparsecc.Config({"BLOCK": 32}, num_warps=2), sparsecc.Config({"BLOCK": 64}, num_warps=4)]
    tuned = sparsecc.autotune(configs=configs, key=["n"], verbose=False)(add_scalar)
    x = torch.randn(200, generator=_gen(200))
    y = torch.full((200,), float("nan"))
    tuned[lambda meta: (-(-meta["n"] // meta["BLOCK"]),)](x, y, 200, 0.5)
    torch.testing.assert_close(y, x + 0.5)
    assert len(tuned.best) == 1 and next(iter(tuned.best.values())) in configs


# ---- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_on_the_gpu(name: str) -> None:
    CHECKS[name]("cuda")
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_grouped_gemm_ragged_groups_on_the_gpu() -> None:
    _grouped_gemm("cuda", [1, 33, 0, 0, 70, 130], sms=7)


@pytest.mark.gpu
def test_gpu_matches_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The differential check: the same grouped GEMM and data-dependent while on both paths."""
    g = _gen(3)
    sizes = [45, 0, 17]
    a = torch.randn(sum(sizes), 64, generator=g).half()
    b = torch.randn(3, 64, 32, generator=g).half()
    m_sizes = torch.tensor(sizes, dtype=torch.int32)
    outs = []
    for device in ("cpu", "cuda"):
        if device == "cpu":
            monkeypatch.setenv("SPARSECC_INTERPRET", "1")
        else:
            monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
        c = torch.full((sum(sizes), 32), float("nan"), dtype=torch.float16, device=device)
        grouped_gemm[(4,)](a.to(device), b.to(device), c, m_sizes.to(device), 3, 32, 64, NUM_SMS=4, BLOCK_M=32,
                           BLOCK_N=32, BLOCK_K=32)
        outs.append(c.float().cpu())
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-2, atol=2e-2)


@pytest.mark.gpu
def test_launch_keywords_on_the_gpu() -> None:
    x = torch.randn(64, 128, generator=_gen(7)).cuda()
    s = torch.randn(64, generator=_gen(8)).cuda()
    y = torch.full((64, 128), float("nan"), device="cuda")
    row_scale[(64,)](x, y, s, 64, 128, BLOCK=128, num_warps=32, num_ctas=1, launch_pdl=True)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x * s[:, None])
