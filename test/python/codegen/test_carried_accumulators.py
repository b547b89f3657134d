"""A loop-carried wgmma accumulator that the body rescales before the next dot (attention's
`acc = tl.dot(p, v, acc * alpha)`) is written in the loop's carried registers: the PTX has no
back-edge copies of it, and ptxas no longer gives P @ V the registers of Q @ K^T and copies them
out every iteration (ptx_printer._coalesce_carried; issue 30).

- attention (conformance/parity_kernels.py) at D = 64 and 128 on sm_90a: no f32 copy at the back edge
  but the row max and sum, the rescale writes the carried registers in place, SASS moves in the
  loop (31 -> 7 at D = 64, 47 -> 19 at D = 128) and registers (<= 128 at both);
- a decayed matmul (`acc = tl.dot(a, b, acc * decay)`) whose old accumulator is also read after
  the rescale (`KEEP_OLD`): its registers are still in use, so the copies stay; without it, none;
- with wgmma_in_flight (`kloops.carried_in_flight`): attention's P @ V group stays in flight
  into the next iteration, waited for by Q @ K^T's wait before the rescale;
- both on the interpreter and (`gpu` marker) on the GPU against torch, ragged M and N, with
  and without wgmma_in_flight.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
import torch
from ptxas_tools import needs_ptxas

import sparsecc
import sparsecc.language as tl
from sparsecc.codegen import ptxas

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
import parity_kernels as pk  # noqa: E402

ATTN = pk.sparsecc_kernel(pk.attention_kernel)
ATTN_SIG = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "out_ptr": "*fp16:16",
            "sm_scale": "fp32", "stride_h": "i32:16", "stride_m": "i32:16", "n_ctx": "i32:16"}


def _loop(ptx: str) -> tuple[list[str], str]:
    """(the carried registers, the loop body) of the kernel's scf.for."""
    carried = re.search(r"// scf\.for .*carried: (.*)$", ptx, re.M)
    body = re.search(r"^(\$L__loop\d+):$(.*?)bra \1;", ptx, re.M | re.S)
    assert carried is not None and body is not None, "no loop in the PTX"
    return carried.group(1).split(", "), body.group(2)


def _back_edge_f32_copies(body: str) -> list[str]:
    """The `mov.b32 %fN, ...` after the body's last wgmma wait (the back edge's copies)."""
    tail = body.rsplit("wgmma.wait_group", 1)[-1]
    return re.findall(r"mov\.b32 (%f\d+), %f\d+;", tail)


def _sass_loop_movs(cubin: ptxas.CompiledCubin) -> int:
    """MOVs in the SASS loop with the most instructions (the attention body)."""
    ins = re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", ptxas.dump_sass(cubin))
    at = {int(a, 16): i for i, (a, _) in enumerate(ins)}
    loops = [(i - at[int(m.group(1), 16)], at[int(m.group(1), 16)], i) for i, (a, t) in enumerate(ins)
             if (m := re.search(r"BRA 0x([0-9a-f]+)", t)) and int(m.group(1), 16) in at
             and int(m.group(1), 16) < int(a, 16)]
    assert loops, "no backward branch in the SASS"
    _, lo, hi = max(loops)
    return sum(1 for _, t in ins[lo:hi + 1] if re.match(r"(@!?P\d+\s+)?MOV ", t))


@needs_ptxas
@pytest.mark.parametrize("head_dim, max_movs, max_regs", [(64, 18, 128), (128, 24, 176)])
def test_attention_accumulates_in_the_carried_registers(head_dim, max_movs, max_regs):
    ck = sparsecc.compile(ATTN, ATTN_SIG, {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64},
                          target="sm_90a", num_warps=8, num_stages=3)
    ptx = ck.asm["ptx"]
    carried, body = _loop(ptx)
    acc = carried[2:2 + head_dim // 2]  # (l_i, m_i) as 2 registers each, then acc's D/2 per thread
    wgmmas = re.findall(r"wgmma\.mma_async\S* \{([^}]*)\}", body)
    assert wgmmas[-1].split(", ") == acc, "P @ V does not accumulate in the carried registers"
    assert re.search(rf"mul\.f32 {acc[0]}, {acc[0]}, %f\d+;", body), "acc * alpha is not in place"
    copies = _back_edge_f32_copies(body)
    assert not set(copies) & set(acc) and len(copies) <= 6, copies  # l_i, m_i only
    cubin = ptxas.assemble(ptx, "sm_90a")
    res = next(iter(cubin.resources.values()))
    assert (res.spill_stores, res.spill_loads) == (0, 0) and res.registers <= max_regs, res
    assert _sass_loop_movs(cubin) <= max_movs  # (P @ V in flight: 17 / 21; before the fix 31 / 47)


@needs_ptxas
@pytest.mark.parametrize("head_dim, max_regs", [(64, 128), (128, 176)])
def test_p_v_stays_in_flight_into_the_next_iteration(head_dim, max_regs):
    """A loop of two wgmma dots (tritongpu-pipeline `_depth`: by default, as with
    SPARSECC_WGMMA_IN_FLIGHT=1): P @ V's group runs on through the back edge, the top barrier
    (`wgmma.wait_group 1`), the copies and Q @ K^T's issue; Q @ K^T's `wait_group 0` retires
    both before the rescale reads acc (kloops.carried_in_flight)."""
    blocks = {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64}
    ck = sparsecc.compile(ATTN, ATTN_SIG, blocks, target="sm_90a", num_warps=8, num_stages=3)
    ptx = ck.asm["ptx"]
    carried, body = _loop(ptx)
    acc = carried[2:2 + head_dim // 2]
    top, rest = body.split("bar.sync 0;", 1)
    assert "wgmma.wait_group.sync.aligned 1;" in top and "wgmma.wait_group.sync.aligned 0;" not in top
    assert "cp.async.cg.shared.global" in rest.split("wgmma.fence", 1)[0], "the copies go before Q @ K^T"
    qk_commit = rest.index("wgmma.commit_group.sync.aligned;")
    m = re.search(rf"mul\.f32 {acc[0]}, {acc[0]}, %f\d+;", rest)
    assert m is not None and "wgmma.wait_group.sync.aligned 0;" in rest[qk_commit:m.start()]
    assert "wgmma.wait_group" not in rest.rsplit("wgmma.commit_group.sync.aligned;", 1)[1], "P @ V is waited for"
    epilogue = ptx.split(body, 1)[1]
    assert epilogue.index("wgmma.wait_group.sync.aligned 0;") < epilogue.index(f"{acc[0]},"), "acc read in flight"
    res = next(iter(ptxas.assemble(ptx, "sm_90a").resources.values()))
    assert (res.spill_stores, res.spill_loads) == (0, 0) and res.registers <= max_regs, res
    # the switch forces what two dots get anyway
    forced = sparsecc.compile(ATTN, ATTN_SIG, blocks, target="sm_90a", num_warps=8, num_stages=3, wgmma_in_flight=True)
    assert forced.asm["ptx"] == ptx


@needs_ptxas
def test_a_one_dot_loop_waits_for_its_group_by_default():
    """A loop of one wgmma dot (a GEMM: the decayed matmul) keeps copies S-1 steps ahead and no
    group in flight through its barrier unless wgmma_in_flight asks (it measured slower on the MoE
    GEMM, NOTES stop 21 run 7)."""
    blocks = {**DEC_BLOCKS, "KEEP_OLD": False}
    plain = sparsecc.compile(decayed_matmul, DEC_SIG, blocks, target="sm_90a", num_warps=4, num_stages=3).asm["ptx"]
    top = _loop(plain)[1].split("bar.sync 0;", 1)[0]
    assert "cp.async.wait_group 1;" in top and "wgmma.wait_group.sync.aligned 1;" not in top
    forced = sparsecc.compile(decayed_matmul, DEC_SIG, blocks, target="sm_90a", num_warps=4, num_stages=3,
                              wgmma_in_flight=True).asm["ptx"]
    top = _loop(forced)[1].split("bar.sync 0;", 1)[0]
    assert "cp.async.wait_group 0;" in top and "wgmma.wait_group.sync.aligned 1;" in top


def test_carried_in_flight_needs_the_pipelines_proof():
    """kloops.carried_in_flight on the pipelined attention ttgir: P @ V (result only to the
    yield) may stay in flight, Q @ K^T (read by the softmax) may not; P @ V may not either once
    the loop's async_wait is not marked `ttg.wgmma_in_flight`, or once a copy into V's ring is
    not one of the pipeline's guarded ones (it could overwrite the slot the group reads)."""
    from xdsl.dialects import scf

    from sparsecc.analysis.kloops import carried_in_flight
    from sparsecc.compiler import CompileOptions, make_ttgir, run_passes
    from sparsecc.dialects import tt
    from sparsecc.dialects import ttg as ttgd

    ttir = sparsecc.compile(ATTN, ATTN_SIG, {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}, target=None).module
    opts = CompileOptions.create(target="sm_90a", num_warps=8, num_stages=3, wgmma_in_flight=True)

    def fresh():
        module = run_passes(ttir.clone(), make_ttgir(opts))
        loop = next(o for o in module.walk() if isinstance(o, scf.ForOp))
        qk, pv = (o for o in loop.body.block.ops if isinstance(o, tt.DotOp))
        return loop, qk, pv

    loop, qk, pv = fresh()
    assert carried_in_flight(pv) and not carried_in_flight(qk)
    wait = next(o for o in loop.body.block.ops if isinstance(o, ttgd.AsyncWaitOp))
    del wait.attributes[ttgd.WGMMA_IN_FLIGHT]
    assert not carried_in_flight(pv)
    loop, _, pv = fresh()
    ring = pv.b.owner.src.owner.src  # local_load <- memdesc_subview <- V's ring
    copies = [o for o in loop.walk() if isinstance(o, ttgd.AsyncCopyGlobalToLocalOp)
              and o.dst.owner.src is ring]
    assert copies and all(ttgd.SLOT_GUARDED in c.attributes for c in copies)
    del copies[0].attributes[ttgd.SLOT_GUARDED]
    assert not carried_in_flight(pv)


@pytest.mark.gpu
@pytest.mark.parametrize("bh, n, d", [(16, 1024, 64), (3, 384, 128), (5, 256, 64), (32, 4096, 128), (2, 128, 64)])
def test_attention_with_p_v_in_flight_matches_sdpa_on_the_gpu(bh, n, d):
    torch.manual_seed(bh + n + d)
    q, k, v = (torch.randn(bh, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
    out = torch.full_like(q, float("nan"))
    ATTN[(-(-n // 128), bh)](q, k, v, out, d ** -0.5, n * d, d, n, HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64,
                             num_warps=8, num_stages=3, wgmma_in_flight=True)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    assert torch.isfinite(out).all(), "some outputs were never written"
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)


@sparsecc.jit
def decayed_matmul(a_ptr, b_ptr, c_ptr, s_ptr, M, N, K, decay,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, KEEP_OLD: tl.constexpr):
    """C = sum_k decay**(last-k) A_k @ B_k over the K tiles; with KEEP_OLD also S = the sum of
    the accumulator's values before each step (read after the rescale that feeds the dot)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    old = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=offs_m[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=offs_n[None, :] < N, other=0.0)
        nxt = tl.dot(a, b, acc * decay)
        if KEEP_OLD:
            old += acc
        acc = nxt
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask)
    if KEEP_OLD:
        tl.store(s_ptr + offs_m[:, None] * N + offs_n[None, :], old, mask=mask)


DEC_SIG = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "s_ptr": "*fp32:16", "M": "i32",
           "N": "i32:16", "K": "i32:16", "decay": "fp32"}
DEC_BLOCKS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}


@needs_ptxas
@pytest.mark.parametrize("keep_old", [False, True])
def test_the_old_accumulator_keeps_its_registers_while_read(keep_old):
    ck = sparsecc.compile(decayed_matmul, DEC_SIG, {**DEC_BLOCKS, "KEEP_OLD": keep_old}, target="sm_90a",
                          num_warps=4, num_stages=3)
    ptx = ck.asm["ptx"]
    carried, body = _loop(ptx)
    # acc, 64x64 f32 over 128 threads: the carried registers `acc * decay` reads
    rescale = body.split("wgmma.fence", 1)[0]
    acc = [r for r in re.findall(r"mul\.f32 %f\d+, (%f\d+), %f\d+;", rescale) if r in carried]
    assert len(acc) == 32, acc
    copies = _back_edge_f32_copies(body)
    if keep_old:  # `old += acc` reads acc after `acc * decay`: acc must come back through copies
        assert set(acc) <= set(copies), copies
    else:
        assert not set(copies) & set(acc), copies
        assert re.findall(r"wgmma\.mma_async\S* \{([^}]*)\}", body)[-1].split(", ") == acc
    res = next(iter(ptxas.assemble(ptx, "sm_90a").resources.values()))
    assert (res.spill_stores, res.spill_loads) == (0, 0), res


def _decayed_problem(m: int, n: int, k: int, device: str):
    g = torch.Generator().manual_seed(m + 7 * n + k)
    a = torch.randn(m, k, generator=g).half()
    b = torch.randn(k, n, generator=g).half()
    c = torch.full((m, n), float("nan"))
    s = torch.full((m, n), float("nan"))
    return [t.to(device) for t in (a, b, c, s)]


def _decayed_reference(a: torch.Tensor, b: torch.Tensor, decay: float, bk: int) -> tuple[torch.Tensor, torch.Tensor]:
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    old = torch.zeros_like(acc)
    for k0 in range(0, a.shape[1], bk):
        old += acc
        acc = acc * decay + a[:, k0:k0 + bk].double() @ b[k0:k0 + bk].double()
    return acc, old


def _run_decayed(m: int, n: int, k: int, device: str, keep_old: bool, **launch) -> None:
    a, b, c, s = _decayed_problem(m, n, k, device)
    decay = 0.75
    grid = (-(-m // DEC_BLOCKS["BLOCK_M"]), -(-n // DEC_BLOCKS["BLOCK_N"]))
    decayed_matmul[grid](a, b, c, s, m, n, k, decay, **DEC_BLOCKS, KEEP_OLD=keep_old, **launch)
    if device == "cuda":
        torch.cuda.synchronize()
    ref_c, ref_s = _decayed_reference(a.cpu(), b.cpu(), decay, DEC_BLOCKS["BLOCK_K"])
    for got, ref in [(c, ref_c)] + ([(s, ref_s)] if keep_old else []):
        got = got.cpu().double()
        assert torch.isfinite(got).all(), "some outputs were never written"
        torch.testing.assert_close(got, ref, rtol=1e-3, atol=1e-3 * ref.abs().max().item())


@pytest.mark.parametrize("keep_old", [False, True])
def test_decayed_matmul_on_the_interpreter(monkeypatch, keep_old):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _run_decayed(72, 64, 96, "cpu", keep_old)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(64, 64, 32), (200, 136, 256), (129, 72, 1024)])
@pytest.mark.parametrize("keep_old", [False, True])
@pytest.mark.parametrize("in_flight", [False, True])
def test_decayed_matmul_on_the_gpu(m, n, k, keep_old, in_flight):
    """The accumulator rescaled in its carried registers (and kept apart while read) on wgmma;
    with wgmma_in_flight its group runs on into the next iteration (drained before the rescale
    and `old += acc` read it)."""
    _run_decayed(m, n, k, "cuda", keep_old, num_warps=4, num_stages=3, wgmma_in_flight=in_flight)
