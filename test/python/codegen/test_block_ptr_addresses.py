"""Block-pointer loads and stores through registers (`lower_mem.load_block` / `store_block`)
address each register's element as the thread's base address plus a per-register constant
multiple of the strides (`register_addrs`). Checked by running the PTX of a copy kernel on the
PTX emulator for every thread of a CTA: every in-bounds element of the tile is written exactly
once, at its own address, with the value read from its source element, and nothing outside the
tile or the bounds is written; on the vector path (rows aligned) and the scalar one, for a
boundary tile and an inner one, for 16- and 32-bit elements."""

from __future__ import annotations

import re

import pytest
import torch
from ptx_emulator import PtxThread

import sparsecc
import sparsecc.language as tl

X_BASE, Y_BASE = 1 << 32, 2 << 32


@sparsecc.jit
def copy_tile(X, Y, M, N, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    src = tl.make_block_ptr(X, shape=(M, N), strides=(stride_x, 1), offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                            block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    dst = tl.make_block_ptr(Y, shape=(M, N), strides=(stride_y, 1), offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                            block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1), padding_option="zero"), boundary_check=(0, 1))


@pytest.mark.parametrize("dtype, esize", [("fp16", 2), ("fp32", 4)])
@pytest.mark.parametrize("m, n, stride_x, stride_y, cta", [
    (37, 50, 56, 72, (1, 0)),   # ragged rows and columns: the scalar path, rows 32..36 of the tile
    (40, 64, 64, 80, (1, 0)),   # aligned rows: the vector path, the last 8 rows of a boundary tile
    (96, 64, 72, 64, (1, 0)),   # an inner tile
])
def test_every_element_is_stored_once_at_its_address(dtype, esize, m, n, stride_x, stride_y, cta):
    block_m, block_n, warps = 32, 64, 4
    sig = {"X": f"*{dtype}", "Y": f"*{dtype}", "M": "i32", "N": "i32", "stride_x": "i32", "stride_y": "i32"}
    ck = sparsecc.compile(copy_tile, sig, {"BLOCK_M": block_m, "BLOCK_N": block_n}, target="sm_90a", num_warps=warps)
    ptx = ck.asm["ptx"]
    names = re.findall(r"\.param \.\w+ (\w+)", ptx)
    values = {"X": X_BASE, "Y": Y_BASE, "M": m, "N": n, "stride_x": stride_x, "stride_y": stride_y}
    params = dict(zip(names, [values[name] for name, _ in ck.metadata["params"]], strict=True))
    x = torch.arange(m * stride_x, dtype=torch.int32) * 7 + 3  # every element its own value
    x = x.to(torch.int16) if esize == 2 else x
    glob = {X_BASE + i: b for i, b in enumerate(x.view(torch.uint8).tolist())}
    lines = [ln.strip() for ln in ptx.splitlines()]
    written: dict[int, int] = {}
    for tid in range(32 * warps):
        t = PtxThread(tid, params, glob, {})
        t.env["%ctaid.x"], t.env["%ctaid.y"] = cta
        while t.run_phase(lines):
            pass
        for addr, value, width in t.global_stores:  # a word of packed elements on the vector path
            assert isinstance(value, int), f"thread {tid}: an unknown value stored at {addr:#x}"
            for i in range(width // esize):
                at = addr + i * esize
                assert at not in written, f"thread {tid}: {at:#x} written twice"
                written[at] = (value >> (8 * esize * i)) & ((1 << (8 * esize)) - 1)
    rows = range(cta[0] * block_m, min(m, (cta[0] + 1) * block_m))
    cols = range(cta[1] * block_n, min(n, (cta[1] + 1) * block_n))
    want = {Y_BASE + (r * stride_y + c) * esize: int(x[r * stride_x + c]) & ((1 << (8 * esize)) - 1)
            for r in rows for c in cols}
    assert written == want
