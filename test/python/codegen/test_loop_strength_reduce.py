"""ptx-strength-reduce (issue 30, fused attention's loop): a K loop carries the addresses of its
cp.async copies instead of rebuilding them from i32 offsets (sext, 64-bit multiplies) each
iteration, the pipeline's ring slots rotate with a compare + select, not `rem.u32` (a
division sequence in SASS for 3 stages), and a wgmma's B descriptor is built once per dot
(the later k steps add offset / 16 to it; test_wgmma_descriptor_reads decodes what they read).

- the pass on a small loop, run by a tiny evaluator before and after: the same stores to the
  same addresses, forward and backward steps, negative strides;
- the attention loop (sm_90a at D = 64 and 128, sm_80) and a matmul whose pointers step
  backwards: no 64-bit multiply, sign extension or remainder left on the loop's fast path,
  registers under the two-CTAs-per-SM line at D = 64;
- on the GPU (`gpu` marker): the backward-stepping matmul against torch, ragged M and N.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest
import torch
from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation, SSAValue
from xdsl.parser import Parser

import sparsecc
import sparsecc.language as tl
from sparsecc.compiler import make_context
from sparsecc.passes.ptx_strength_reduce import strength_reduce

# ---------------------------------------------------------------------------------------------
# The pass against a reference evaluation

LOOP = """
builtin.module {
  "ptx.kernel"() <{sym_name = "k", target = "sm_80", param_kinds = ["ptr", "i32", "i64", "i32", "i32"], shared_bytes = 0 : i64}> ({
  ^bb0(%p: i64, %n: i32, %stride: i64, %o0: i32, %s: i32):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i64
    %c3 = arith.constant 3 : i64
    %c16 = arith.constant 16 : i64
    %r, %r2 = scf.for %i = %c0 to %n step %c1 iter_args(%off = %o0, %row = %o0) -> (i32, i32) : i32 {
      %x = arith.extsi %off : i32 to i64
      %xs = arith.muli %x, %stride : i64
      %xb = arith.shli %xs, %c3 : i64
      %addr = arith.addi %p, %xb : i64
      "ptx.st.global"(%addr, %i) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (i64, i32) -> ()
      %w = arith.extsi %row : i32 to i64
      %wi = arith.extsi %i : i32 to i64
      %both = arith.subi %w, %wi : i64
      %scaled = arith.muli %c2, %both : i64
      %a2 = arith.addi %scaled, %addr : i64
      %a3 = arith.addi %a2, %c16 : i64
      "ptx.st.global"(%a3, %off) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (i64, i32) -> ()
      %off_next = arith.addi %off, %s : i32
      %row_next = arith.addi %c1, %row : i32
      scf.yield %off_next, %row_next : i32, i32
    }
  }) : () -> ()
}
"""
"""Two offsets stepping by %s and by 1, the counter, an address and one built from all three."""

_BIN = {arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b, arith.MuliOp: lambda a, b: a * b,
        arith.ShLIOp: lambda a, b: a << b}


def _wrap(v: int, bits: int) -> int:
    return ((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))


def _run(block: Block, env: dict[SSAValue, int], stores: list[tuple[int, int]]) -> list[int]:
    """Evaluate `block` (arith, scf.for/if, ptx.st.global): the values its terminator yields."""
    for op in block.ops:
        if isinstance(op, arith.ConstantOp):
            env[op.result] = op.value.value.data  # type: ignore[attr-defined]
        elif type(op) in _BIN:
            env[op.results[0]] = _wrap(_BIN[type(op)](env[op.operands[0]], env[op.operands[1]]),
                                       op.results[0].type.width.data)  # type: ignore[attr-defined]
        elif isinstance(op, arith.ExtSIOp):
            env[op.result] = env[op.input]
        elif isinstance(op, scf.ForOp):
            vals = [env[v] for v in op.iter_args]
            i = env[op.lb]
            while i < env[op.ub]:
                body = op.body.block
                env.update(zip(body.args, [i, *vals]))
                vals = _run(body, env, stores)
                i += env[op.step]
            env.update(zip(op.results, vals))
        elif op.name == "ptx.st.global":
            stores.append((env[op.operands[0]], env[op.operands[1]]))
        elif isinstance(op, scf.YieldOp):
            return [env[v] for v in op.operands]
        else:
            raise AssertionError(f"the evaluator does not know {op.name}")
    return []


def _stores(kernel: Operation, args: list[int]) -> list[tuple[int, int]]:
    stores: list[tuple[int, int]] = []
    block = kernel.regions[0].block
    _run(block, dict(zip(block.args, args)), stores)
    return stores


def test_carried_addresses_equal_the_recomputed_ones():
    module = Parser(make_context(), LOOP).parse_module()
    kernel = module.ops.first
    rng = random.Random(7)
    cases = [[rng.randrange(1 << 40), rng.randrange(1, 9), rng.choice([-1, 1]) * rng.randrange(1, 5000),
              rng.randrange(-3000, 3000), rng.choice([-1, 1]) * rng.randrange(1, 300)] for _ in range(20)]
    before = [_stores(kernel, c) for c in cases]
    assert strength_reduce(kernel) >= 2
    loop = next(op for op in kernel.walk() if isinstance(op, scf.ForOp))
    body_ops = [op.name for op in loop.body.block.ops]
    assert "arith.muli" not in body_ops and "arith.shli" not in body_ops, body_ops
    assert [_stores(kernel, c) for c in cases] == before
    assert all(len(s) == 2 * c[1] for s, c in zip(before, cases))  # every iteration stored


# ---------------------------------------------------------------------------------------------
# Kernels


def _loop(ptx: str) -> str:
    m = re.search(r"^(\$L__loop\d+):$(.*?)bra \1;", ptx, re.M | re.S)
    assert m is not None, "no loop in the PTX"
    return m.group(2)


def _fast_path(body: str) -> str:
    """The loop body without the slow paths of its cold else branches."""
    return re.sub(r"^\$L__else\d+:$.*?^\$L__endif\d+:$", "", body, flags=re.M | re.S)


@pytest.mark.parametrize("target, head_dim", [("sm_90a", 64), ("sm_90a", 128), ("sm_80", 64)])
def test_attention_loop_steps_running_addresses(target, head_dim):
    sys.path.insert(0, str(Path(__file__).parents[1] / "conformance"))
    import parity_kernels as pk  # the attention kernel the parity table times

    sig = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "out_ptr": "*fp16:16", "sm_scale": "fp32",
           "stride_h": "i32:16", "stride_m": "i32:16", "n_ctx": "i32:16"}
    ck = sparsecc.compile(pk.sparsecc_kernel(pk.attention_kernel), sig,
                          {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64}, target=target, num_warps=8, num_stages=3)
    body = _loop(ck.asm["ptx"])
    assert body.count("cp.async.cg.shared.global") >= 4
    for slow in ("mul.lo.s64", "cvt.s64.s32", "rem.u32"):
        assert slow not in body, slow
    (res,) = ck.metadata["ptxas"].values()
    assert (res.spill_stores, res.spill_loads) == (0, 0), res
    if target == "sm_90a":
        # one B descriptor built per dot; the other k steps add a constant to it
        assert body.count("or.b64") == 2, body.count("or.b64")
    if (target, head_dim) == ("sm_90a", 64):
        assert res.registers <= 128, res  # two CTAs per SM


@sparsecc.jit
def reverse_k_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A @ B summing K from its last tile down: pointers that step backwards."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    last = K - BLOCK_K
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + (last + offs_k)[None, :]
    b_ptrs = b_ptr + (last + offs_k)[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=offs_m[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=offs_n[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs -= BLOCK_K
        b_ptrs -= BLOCK_K * stride_bk
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16), mask=c_mask)


REV_SIG = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32", "N": "i32", "K": "i32:16",
           "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
REV_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_backward_pointers_are_carried_too(target):
    ck = sparsecc.compile(reverse_k_matmul, REV_SIG, REV_BLOCKS, target=target, num_warps=8, num_stages=3)
    fast = _fast_path(_loop(ck.asm["ptx"]))
    assert "cp.async.cg.shared.global" in fast
    for slow in ("mul.lo.s64", "cvt.s64.s32", "rem.u32"):
        assert slow not in fast, slow
    (res,) = ck.metadata["ptxas"].values()
    assert (res.spill_stores, res.spill_loads) == (0, 0), res


def test_the_switch_turns_the_pass_off():
    """strength_reduce=False (SPARSECC_STRENGTH_REDUCE=0): the addresses are rebuilt again, for
    A/B timing of the same kernel."""
    off = sparsecc.compile(reverse_k_matmul, REV_SIG, REV_BLOCKS, target="sm_90a", num_warps=8, num_stages=3,
                           strength_reduce=False)
    assert "mul.lo.s64" in _fast_path(_loop(off.asm["ptx"]))


def _reverse_problem(m: int, n: int, k: int, device: str):
    g = torch.Generator().manual_seed(m * n + k)
    a = torch.randn(m, k, generator=g).half().to(device)
    b = torch.randn(k, n, generator=g).half().to(device)
    return a, b, torch.full((m, n), float("nan"), dtype=torch.float16, device=device)


def _check(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    ref = a.float() @ b.float()
    assert torch.isfinite(c).all(), "some outputs were never written"
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-2 * ref.abs().max().item())


def test_backward_matmul_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    m, n, k = 100, 72, 192
    a, b, c = _reverse_problem(m, n, k, "cpu")
    reverse_k_matmul[(2, 1)](a, b, c, m, n, k, k, n, n, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64)
    _check(c, a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(256, 256, 64), (300, 200, 1024), (129, 72, 4096)])
@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_backward_matmul_on_the_gpu(m, n, k, num_stages):
    """Every K tile summed once, from the last down (cp.async ring, carried addresses)."""
    a, b, c = _reverse_problem(m, n, k, "cuda")
    grid = (-(-m // 128), -(-n // 128))
    reverse_k_matmul[grid](a, b, c, m, n, k, k, n, n, **REV_BLOCKS, num_warps=8, num_stages=num_stages)
    torch.cuda.synchronize()
    _check(c, a, b)
