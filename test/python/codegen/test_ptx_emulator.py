"""The shared PTX emulator (test/python/ptx_emulator.py) on hand-written PTX: the semantics the
fragment and descriptor tests rely on (widths, signed compares, zero-filled copies, guards and the
loop stops, unknown values staying unknown), each against a value worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from ptx_emulator import PtxThread, prmt


def _run(text: str, until: str = "back_edge", **kw) -> PtxThread:
    t = PtxThread(**kw)
    t.run([ln.strip() for ln in text.strip().splitlines()], until)
    return t


def test_integer_results_wrap_to_their_width_but_wide_ones_do_not():
    t = _run("""
        mov.u32 %r1, 0xFFFFFFFF;
        add.s32 %r2, %r1, 2;
        mul.wide.u32 %rd1, %r1, 16;
        mad.lo.s32 %r3, %r1, 3, 5;
        mad.wide.u32 %rd2, %r1, 2, 0;
        add.u16 %h1, 0xFFFF, 1;
        $L__loop0:
        bra $L__loop0;
    """)
    env = t.env
    assert (env["%r2"], env["%rd1"], env["%r3"]) == (1, 0xFFFFFFFF * 16, (0xFFFFFFFF * 3 + 5) & 0xFFFFFFFF)
    assert (env["%rd2"], env["%h1"]) == (0xFFFFFFFF * 2, 0)


def test_setp_s32_compares_signed_and_u32_unsigned():
    t = _run("""
        sub.s32 %r1, 0, 1;
        setp.lt.s32 %p1, %r1, 0;
        setp.lt.u32 %p2, %r1, 0;
        @%p1 bra $L__skip;
        mov.u32 %r2, 7;
        $L__skip:
        @!%p2 mov.u32 %r3, 9;
        $L__loop0:
        bra $L__loop0;
    """)
    assert t.env["%p1"] is True and t.env["%p2"] is False
    assert "%r2" not in t.env and t.env["%r3"] == 9


def test_memory_loads_stores_and_zero_filled_copies():
    glob = {100 + i: i + 1 for i in range(16)}
    t = _run("""
        ld.param.u64 %rd1, [x_ptr];
        ld.global.v2.b32 {%r1, %r2}, [%rd1];
        st.shared.b16 [8], %r2;
        cp.async.cg.shared.global [32], [%rd1], 16, 6;
        ld.shared.b32 %r3, [32];
        ld.shared.b32 %r4, [36];
        $L__loop0:
        bra $L__loop0;
    """, params={"x_ptr": 100}, glob=glob)
    assert t.env["%r1"] == 0x04030201 and t.env["%r2"] == 0x08070605
    assert (t.shared[8], t.shared[9]) == (5, 6) and 10 not in t.shared
    assert t.env["%r3"] == 0x04030201 and t.env["%r4"] == 0x0605  # bytes 6.. of the copy are zero


def test_f16x2_rounds_each_half_once():
    a, b = np.float16(1.5), np.float16(-0.333)
    bits = lambda x: int(np.array([x], dtype=np.float16).view(np.uint16)[0])  # noqa: E731
    t = PtxThread()
    t.env.update({"%a": bits(a) | bits(b) << 16, "%b": bits(b) | bits(a) << 16})
    t.execute("mul.rn.f16x2 %c, %a, %b;")
    assert t.env["%c"] == bits(a * b) | bits(b * a) << 16
    assert prmt(0x33221100, 0x77665544, 0x5140) == 0x55114400


def test_unknown_values_stay_unknown_and_wgmmas_are_recorded():
    with pytest.raises(AssertionError, match="unknown address"):
        _run("ld.global.f32 %f1, [%rd9];\n$L__loop0:\nbra $L__loop0;")
    t = _run("""
        cvt.rn.f32.s32 %f1, 3;
        add.s32 %r7, %f1, 1;
        mov.u64 %rd1, 4096;
        mov.u32 %r1, 5;
        wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f3, %f4}, {%r1, %r2}, %rd1, 1, 1, 1, 1;
        $L__loop0:
        add.s32 %r5, %r6, 1;
        bra $L__loop0;
    """)
    assert t.env["%f1"] is None and t.env["%r7"] is None and t.env["%r5"] is None
    assert t.wgmmas == [("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", [[5, None], 4096, 1, 1, 1, 1])]


def test_run_stops_at_the_loop_label_or_its_back_edge():
    text = "mov.u32 %r1, 1;\n$L__loop0:\nadd.s32 %r1, %r1, 1;\nbra $L__loop0;\n$L__loop_end0:"
    assert _run(text, "loop").env["%r1"] == 1
    assert _run(text, "back_edge").env["%r1"] == 2
    with pytest.raises(AssertionError, match="back edge was never reached"):
        _run("mov.u32 %r1, 1;", "back_edge")
