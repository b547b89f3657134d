"""How fast can one kernel stream a decode GEMM's A values from HBM on this GPU, by copy engine?

A probe, not a GEMM: every CTA streams BM rows x all K of an M x Kh fp16 matrix through an
S-stage shared-memory ring, reads each stage back (ld.shared) and keeps an XOR of it (so nothing
is dead), the way sparse_mm's decode kernel walks its values. Two copy engines, same ring:

    cp.async   every thread copies 16-byte chunks (cp.async.cg), wait_group + bar.sync
    tma        one thread issues cp.async.bulk.tensor.2d boxes completing on an mbarrier per
               stage (the tensor map built on the host with cuTensorMapEncodeTiled)

It tells what the decode kernel (cp.async today) may gain from TMA before the compiler lowers
to it. Prints GB/s next to a device copy's and the HBM read bandwidth of the same run.

    python bench/stream_probe.py
"""

from __future__ import annotations

import torch
import triton.testing

from sparsecc.codegen.ptxas import assemble
from sparsecc.runtime.driver import CudaKernel
from sparsecc.runtime.tensor_map import encode_tiled

THREADS = 128


def probe_ptx(engine: str, bm: int, boxw: int, nb: int, stages: int, tiled: bool = False, even: bool = False) -> str:
    """PTX of one probe kernel; a stage is `nb` boxes of bm rows x boxw fp16 columns.

    `tiled`: the matrix is stored tile by tile (each CTA's stage one contiguous run of bytes, the
    CTA's stages one after another), as a format that pre-tiles its values would store it.
    `even` (tiled only): p_kt is the matrix's stage count, split evenly over the grid (each CTA one
    contiguous run of whole stages, the counts differing by at most one), as a stream-K decode
    would split its work; the grid is then a multiple of the SM count, not one CTA per row block."""
    stage_bytes = bm * boxw * nb * 2
    data0 = 1024  # mbarriers below, the ring above
    chunks_per_row = boxw * nb // 8
    per_thread_chunks = bm * chunks_per_row // THREADS
    reads = stage_bytes // (THREADS * 16)
    lines = [
        ".version 8.5", ".target sm_90a", ".address_size 64",
        ".extern .shared .align 128 .b8 smem[];",
        ".visible .entry probe(.param .u64 p_tmap, .param .u64 p_src, .param .u64 p_out, .param .u32 p_kt, "
        ".param .u32 p_ld)",
        f".maxntid {THREADS}, 1, 1", "{",
        ".reg .pred %p<16>;", ".reg .b32 %r<200>;", ".reg .b64 %rd<40>;",
        "ld.param.u64 %rd1, [p_tmap];", "ld.param.u64 %rd2, [p_src];", "ld.param.u64 %rd3, [p_out];",
        "ld.param.u32 %r1, [p_kt];", "ld.param.u32 %r2, [p_ld];",
        "mov.u32 %r3, %tid.x;", "mov.u32 %r4, %ctaid.x;", "mov.u32 %r5, smem;",
        f"mul.lo.u32 %r6, %r4, {bm};", "setp.eq.u32 %p1, %r3, 0;", "mov.u32 %r50, 0;",
    ]
    if even:  # this CTA's stages: [c * T / G, (c + 1) * T / G)
        lines += ["mov.u32 %r34, %nctaid.x;", "mul.lo.u32 %r33, %r4, %r1;", "div.u32 %r33, %r33, %r34;",
                  "mad.lo.u32 %r35, %r4, %r1, %r1;", "div.u32 %r35, %r35, %r34;", "sub.u32 %r1, %r35, %r33;"]
    else:
        lines.append("mul.lo.u32 %r33, %r4, %r1;")
    if engine == "tma":
        for s in range(stages):
            lines.append(f"@%p1 mbarrier.init.shared::cta.b64 [%r5+{8 * s}], 1;")
        lines += ["fence.mbarrier_init.release.cluster;", "bar.sync 0;"]

    def issue(tile: str, slot: str) -> list[str]:
        """Copies of K tile `tile` (register) into ring slot `slot` (register), then commit."""
        out = [f"mul.lo.u32 %r20, {slot}, {stage_bytes};", f"add.u32 %r20, %r20, {data0};", "add.u32 %r20, %r20, %r5;",
               f"mul.lo.u32 %r21, {tile}, {boxw * nb};"]
        if engine == "tma":
            out += [f"mad.lo.u32 %r22, {slot}, 8, %r5;",
                    f"@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r22], {stage_bytes};"]
            if tiled:  # box j of tile t of CTA c: rows ((c * kt + t) * nb + j) * bm of a boxw-wide view
                out += ["mov.u32 %r21, 0;", f"add.u32 %r31, %r33, {tile};", f"mul.lo.u32 %r31, %r31, {nb * bm};"]
            for j in range(nb):
                row = "%r32" if tiled else "%r6"
                out += ([f"add.u32 %r32, %r31, {j * bm};"] if tiled else [])
                out += [f"add.u32 %r23, %r21, {0 if tiled else j * boxw};", f"add.u32 %r24, %r20, {j * bm * boxw * 2};",
                        "@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                        f"[%r24], [%rd1, {{%r23, {row}}}], [%r22];"]
            return out
        if tiled:  # chunk i of the stage: bytes ((c * kt + t) * stage + 16 i) of src, slot byte 16 i
            out += [f"add.u32 %r31, %r33, {tile};", f"mul.wide.u32 %rd12, %r31, {stage_bytes};",
                    "add.u64 %rd12, %rd12, %rd2;"]
            for c in range(per_thread_chunks):
                out += [f"add.u32 %r25, %r3, {c * THREADS};", "mul.wide.u32 %rd10, %r25, 16;",
                        "add.u64 %rd10, %rd10, %rd12;", "mad.lo.u32 %r30, %r25, 16, %r20;",
                        "cp.async.cg.shared.global [%r30], [%rd10], 16;"]
            return out + ["cp.async.commit_group;"]
        for c in range(per_thread_chunks):
            out += [f"mad.lo.u32 %r25, %r3, 1, {c * THREADS};",  # chunk index
                    f"div.u32 %r26, %r25, {chunks_per_row};", f"rem.u32 %r27, %r25, {chunks_per_row};",
                    "add.u32 %r28, %r6, %r26;", "mul.wide.u32 %rd10, %r28, %r2;",  # row * ld
                    "mad.lo.u32 %r29, %r27, 8, %r21;", "cvt.u64.u32 %rd11, %r29;", "add.u64 %rd10, %rd10, %rd11;",
                    "shl.b64 %rd10, %rd10, 1;", "add.u64 %rd10, %rd10, %rd2;",
                    f"mad.lo.u32 %r30, %r26, {boxw * nb * 2}, %r20;", "mad.lo.u32 %r30, %r27, 16, %r30;",
                    "cp.async.cg.shared.global [%r30], [%rd10], 16;"]
        return out + ["cp.async.commit_group;"]

    for s in range(stages):  # prologue: stages 0..S-1 (kt >= S is the caller's promise)
        lines += [f"mov.u32 %r40, {s};"] + issue("%r40", "%r40")
    lines += ["mov.u32 %r10, 0;", "LOOP:", "setp.ge.u32 %p2, %r10, %r1;", "@%p2 bra END;",
              f"rem.u32 %r11, %r10, {stages};", f"div.u32 %r12, %r10, {stages};", "and.b32 %r12, %r12, 1;"]
    if engine == "tma":
        lines += ["mad.lo.u32 %r13, %r11, 8, %r5;", "WAIT:",
                  "mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r13], %r12;", "@!%p3 bra WAIT;"]
    else:
        lines += [f"cp.async.wait_group {stages - 1};", "bar.sync 0;"]
    lines += [f"mad.lo.u32 %r14, %r11, {stage_bytes}, %r5;", f"add.u32 %r14, %r14, {data0};",
              "mad.lo.u32 %r14, %r3, 16, %r14;"]
    for j in range(reads):
        lines += [f"ld.shared.v4.b32 {{%r60, %r61, %r62, %r63}}, [%r14+{j * THREADS * 16}];",
                  "xor.b32 %r50, %r50, %r60;", "xor.b32 %r50, %r50, %r63;"]
    lines += ["bar.sync 0;", f"add.u32 %r15, %r10, {stages};", "setp.lt.u32 %p4, %r15, %r1;"]
    body = issue("%r15", "%r11")
    lines += ["@!%p4 bra SKIP;"] + body + ["bra NEXT;", "SKIP:"]
    if engine != "tma":
        lines.append("cp.async.commit_group;")  # an empty group keeps wait_group's count
    lines += ["NEXT:", "add.u32 %r10, %r10, 1;", "bra LOOP;", "END:",
              f"mad.lo.u32 %r16, %r4, {THREADS}, %r3;", "mul.wide.u32 %rd20, %r16, 4;", "add.u64 %rd20, %rd20, %rd3;",
              "st.global.u32 [%rd20], %r50;", "ret;", "}"]
    return "\n".join(lines) + "\n"


def tensor_map(src: torch.Tensor, bm: int, boxw: int, tiled: bool = False) -> torch.Tensor:
    """A CUtensorMap over the 2-D fp16 `src` with bm x boxw boxes, copied to device memory
    (`tiled`: over src viewed as rows boxw wide, each box bm of them, contiguous)."""
    rows, cols = (src.numel() // boxw, boxw) if tiled else src.shape
    raw = encode_tiled("fp16", src.data_ptr(), (cols, rows), (cols * 2,), (boxw, bm), swizzle=0)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).cuda()


def main() -> None:
    x = torch.empty(1 << 29, dtype=torch.float16, device="cuda").normal_()
    read = x.numel() * 2 / triton.testing.do_bench(lambda: x.sum()) / 1e9
    print(f"HBM read (x.sum of 1 GiB): {read:.2f} TB/s", flush=True)
    for m, kh in ((5120, 2048), (8192, 4096), (12288, 2048), (22016, 2048)):
        src = torch.randn(m, kh, dtype=torch.float16, device="cuda")
        gb = src.numel() * 2 / 1e9
        ms = triton.testing.do_bench(lambda src=src: src.sum())
        print(f"{m}x{kh} fp16 ({gb * 1e3:.0f} MB) torch sum: {ms * 1e3:6.1f} us {gb / ms:5.2f} TB/s", flush=True)
        for bm, boxw, nb, stages in ((32, 128, 1, 4), (32, 128, 1, 8), (64, 128, 1, 4), (64, 128, 2, 4),
                                     (128, 128, 1, 4), (32, 256, 1, 6)):
            kt = kh // (boxw * nb)
            if kt < stages or m % bm:
                continue
            smem = 1024 + stages * bm * boxw * nb * 2
            outs: dict[bool, list[torch.Tensor]] = {False: [], True: []}
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            runs = [("cp.async", False, 0), ("tma", False, 0), ("cp.async", True, 0), ("tma", True, 0)]
            runs += [(e, True, g * sms) for e in ("cp.async", "tma") for g in (1, 2, 4) if (smem * g) < 220 * 1024]
            for engine, tiled, even in runs:
                out = torch.empty(m // bm * THREADS, dtype=torch.int32, device="cuda")
                seen = outs[tiled]
                seen.append(out)
                try:
                    total = m // bm * kt
                    if even and total < even * stages:
                        continue
                    cubin = assemble(probe_ptx(engine, bm, boxw, nb, stages, tiled, bool(even)), "sm_90a").data
                    k = CudaKernel(cubin, "probe", ["ptr", "ptr", "ptr", "i32", "i32"], shared_bytes=smem)
                    tmap = tensor_map(src, bm, boxw, tiled)
                    args = [tmap.data_ptr(), src.data_ptr(), out.data_ptr(), total if even else kt, kh]
                    if even:
                        out = torch.empty(even * THREADS, dtype=torch.int32, device="cuda")
                        args[2] = out.data_ptr()
                        seen.pop()

                    def run(k=k, args=args, grid=(even or m // bm, 1, 1), smem=smem) -> None:
                        k.launch(grid, (THREADS, 1, 1), args, smem)

                    run()
                    torch.cuda.synchronize()
                    ms = triton.testing.do_bench(run)
                    same = "" if len(seen) == 1 else (" same data as cp.async" if torch.equal(seen[0], out)
                                                       else " DIFFERENT DATA from cp.async")
                    name = engine + ("-tiled" if tiled else "") + (f"-even{even}" if even else "")
                    print(f"{m}x{kh} fp16 ({gb * 1e3:.0f} MB) {name:18} {bm} rows x {boxw * nb} cols x {stages} "
                          f"stages ({smem // 1024} KB): {ms * 1e3:6.1f} us {gb / ms:5.2f} TB/s "
                          f"({gb / ms / read:4.0%} of read){same}", flush=True)
                except Exception as e:  # report and go on
                    print(f"{m}x{kh} {engine}{'-tiled' if tiled else ''} {bm}x{boxw}x{nb} s{stages}: FAILED {type(e).__name__}: {str(e)[:300]}",
                          flush=True)


if __name__ == "__main__":
    main()
