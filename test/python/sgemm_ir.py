"""Decomposed tt IR of a 2:4-sparse GEMM K loop (D = A_dense @ B), for the lowering tests.

Params: D (M x N), A values (M x K/2), A metadata (ceil(M/16) x K, i16), B (K x N), M, N, K.
Every load and the store check both bounds (ragged M, N, K).
"""

from __future__ import annotations

#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) of the sm_90a tiles: #ttg.mma version 3
#: (wgmma.mma_async.sp), B staged MN-major. test_gpu_lower runs them, test_wgmma_lowering checks
#: their PTX and SASS.
WGMMA_CONFIGS = [
    (64, 64, 64, 4, 1),
    (64, 32, 64, 4, 2),
    (64, 16, 64, 4, 2),
    (128, 128, 64, 4, 3),
    (128, 256, 64, 8, 4),
    (256, 128, 64, 8, 3),
]


def sparse_gemm_ttir(bm: int, bn: int, bk: int, dtype: str = "f16") -> str:
    t = dtype
    av = f"tensor<{bm}x{bk // 2}x{t}>"
    ae = f"tensor<{bm // 16}x{bk}xi16>"
    bt = f"tensor<{bk}x{bn}x{t}>"
    acc = f"tensor<{bm}x{bn}xf32>"
    dt = f"tensor<{bm}x{bn}x{t}>"
    chk = "{boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}"
    return f"""
builtin.module {{
  tt.func public @sgemm(%D: !tt.ptr<{t}>, %AV: !tt.ptr<{t}>, %AE: !tt.ptr<i16>, %B: !tt.ptr<{t}>, %M: i32, %N: i32, %K: i32) {{
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c15 = arith.constant 15 : i32
    %c16 = arith.constant 16 : i32
    %cbm = arith.constant {bm} : i32
    %cbn = arith.constant {bn} : i32
    %cbk = arith.constant {bk} : i32
    %cbkh = arith.constant {bk // 2} : i32
    %cbk1 = arith.constant {bk - 1} : i32
    %one = arith.constant 1 : i64
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %om = arith.muli %pid_m, %cbm : i32
    %on = arith.muli %pid_n, %cbn : i32
    %omb = arith.divsi %om, %c16 : i32
    %kh = arith.divsi %K, %c2 : i32
    %mp = arith.addi %M, %c15 : i32
    %mb = arith.divsi %mp, %c16 : i32
    %M64 = arith.extsi %M : i32 to i64
    %N64 = arith.extsi %N : i32 to i64
    %K64 = arith.extsi %K : i32 to i64
    %kh64 = arith.extsi %kh : i32 to i64
    %mb64 = arith.extsi %mb : i32 to i64
    %pa0 = tt.make_tensor_ptr %AV, shape=[%M64, %kh64], strides=[%kh64, %one], offsets=[%om, %c0] {{order = array<i32: 1, 0>}} : !tt.ptr<{av}>
    %pe0 = tt.make_tensor_ptr %AE, shape=[%mb64, %K64], strides=[%K64, %one], offsets=[%omb, %c0] {{order = array<i32: 1, 0>}} : !tt.ptr<{ae}>
    %pb0 = tt.make_tensor_ptr %B, shape=[%K64, %N64], strides=[%N64, %one], offsets=[%c0, %on] {{order = array<i32: 1, 0>}} : !tt.ptr<{bt}>
    %acc0 = arith.constant dense<0.000000e+00> : {acc}
    %kp = arith.addi %K, %cbk1 : i32
    %nk = arith.divsi %kp, %cbk : i32
    %r:4 = scf.for %i = %c0 to %nk step %c1 iter_args(%acc = %acc0, %pa = %pa0, %pe = %pe0, %pb = %pb0) -> ({acc}, !tt.ptr<{av}>, !tt.ptr<{ae}>, !tt.ptr<{bt}>) : i32 {{
      %a = tt.load %pa {chk} : !tt.ptr<{av}>
      %e = tt.load %pe {chk} : !tt.ptr<{ae}>
      %b = tt.load %pb {chk} : !tt.ptr<{bt}>
      %d = tt.dot %a, %b, %e, %acc, sparseIndex = 0 : {av}, {ae} * {bt} -> {acc}
      %pa1 = tt.advance %pa, [%c0, %cbkh] : !tt.ptr<{av}>
      %pe1 = tt.advance %pe, [%c0, %cbk] : !tt.ptr<{ae}>
      %pb1 = tt.advance %pb, [%cbk, %c0] : !tt.ptr<{bt}>
      scf.yield %d, %pa1, %pe1, %pb1 : {acc}, !tt.ptr<{av}>, !tt.ptr<{ae}>, !tt.ptr<{bt}>
    }}
    %out = arith.truncf %r#0 : {acc} to {dt}
    %pd = tt.make_tensor_ptr %D, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%om, %on] {{order = array<i32: 1, 0>}} : !tt.ptr<{dt}>
    tt.store %pd, %out {{boundaryCheck = array<i32: 0, 1>}} : !tt.ptr<{dt}>
    tt.return
  }}
}}
"""
