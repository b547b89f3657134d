"""Triton and sparsecc on the same kernel sources, same run (issue 30's parity table).

Every kernel of test/python/conformance/parity_kernels.py is compiled by `triton.jit` and by `sparsecc.jit` from
the one source, checked against torch on random data (outputs poisoned with NaN first), then
timed with `triton.testing.do_bench_cudagraph` (CUDA graphs, median). Each row gives both times,
the bytes (or flops) the kernel moves, GB/s (or TFLOP/s), and the time ratio sparsecc / Triton
(<= 1.11 is the issue's bar). A kernel sparsecc will not compile is reported in its row as
"refused: <reason>", never as a crash. The dense matmul takes the best of three configs on each
side; the 2:4 row runs the same tutorial source with A compressed (`*fp16:NV24`) for sparsecc
against Triton's dense A, flops counted dense (2·M·N·K) on both sides.

    python bench/parity.py [--small] [--only softmax,...] [--out bench/results/parity.md]
    python bench/parity.py --ptx [--small] [--only add]   # no GPU: PTX size, ptxas -v, both sides

`--ptx` compiles every kernel with both compilers for sm_90a without a GPU (Triton through
`triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`, with the alignment
specialization a launch on 16-byte-aligned torch tensors gets) and prints, per side, the PTX
instruction count, global loads/stores by width, and ptxas registers/spills.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# the kernels, written once in Triton's language, are the conformance suite's
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "python", "conformance"))

import parity_kernels as pk  # noqa: E402


@dataclass(frozen=True)
class Buf:
    """A tensor argument: `name` in the case's buffers; on the sparsecc side of the 2:4 row the
    buffer named `sparse` is passed compressed."""

    name: str


@dataclass
class Launch:
    args: list[Any]
    constexprs: dict[str, Any]
    grid: tuple[int, ...]
    num_warps: int = 4
    num_stages: int = 3


@dataclass
class Case:
    """One row family of the table: a kernel source, three shapes, how to launch and check it."""

    name: str
    fn: Callable[..., Any]
    shapes: list[tuple[int, ...]]
    buffers: Callable[[tuple[int, ...]], dict[str, tuple[str, tuple[int, ...]]]]
    """shape -> buffer name -> (dtype, tensor shape); the output buffer is `out`."""
    launches: Callable[[tuple[int, ...]], list[Launch]]
    """shape -> the configs to try (the best time counts)."""
    reference: Callable[[dict[str, Any]], Any]
    work: Callable[[tuple[int, ...]], tuple[float, str]]
    """shape -> (bytes or flops, "B" or "FLOP")."""
    tol: float = 1e-2
    sparse: str | None = None
    """The buffer the sparsecc side gets 2:4-compressed."""
    fill: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    """Buffers not filled with randn: name -> (randn-shaped tensor -> tensor)."""


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def row_warps(block: int) -> int:
    """Tutorial 02's choice: more warps for longer rows (the same on both sides)."""
    return 16 if block >= 8192 else 8 if block >= 2048 else 4


PENDING = ("fused attention fwd",)
"""Rows whose sparsecc refusal is expected for now (the language issue): shown as "pending"."""
ELEMS = [1 << 20, 1 << 24, 1 << 27]
ROWS = [(4096, 1024), (4096, 4096), (16384, 8192)]
GEMMS = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)]
ATTN = [(16, 1024, 64), (32, 2048, 64), (32, 4096, 128)]
"""(batch*heads, n_ctx, head_dim)."""
MM_CONFIGS = [(128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4), (64, 256, 32, 8, 4, 4)]
"""(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages): three of tutorial 03's configs."""


def _elementwise(name: str, fn: Callable[..., Any], dtype: str, ref: Callable[[dict[str, Any]], Any]) -> Case:
    esz = 4 if dtype == "fp32" else 2

    def launches(s: tuple[int, ...]) -> list[Launch]:
        n = s[0]
        return [Launch([Buf("x"), Buf("y"), Buf("out"), n], {"BLOCK_SIZE": 1024}, (cdiv(n, 1024),), 4)]

    return Case(name, fn, [(n,) for n in ELEMS], lambda s: {"x": (dtype, s), "y": (dtype, s), "out": (dtype, s)},
                launches, ref, lambda s: (3 * s[0] * esz, "B"))


def _rows(name: str, fn: Callable[..., Any], extra: Callable[[tuple[int, ...]], list[Any]],
          bufs: Callable[[tuple[int, ...]], dict[str, tuple[str, tuple[int, ...]]]], ref: Callable[[dict[str, Any]], Any],
          nbytes: Callable[[tuple[int, ...]], int], **kw: Any) -> Case:
    def launches(s: tuple[int, ...]) -> list[Launch]:
        block = pow2(s[1])
        return [Launch(extra(s), {"BLOCK_SIZE": block}, (s[0],), row_warps(block))]

    return Case(name, fn, list(ROWS), bufs, launches, ref, lambda s: (nbytes(s), "B"), **kw)


def _torch() -> Any:
    import torch

    return torch


def _layer_norm_ref(b: dict[str, Any]) -> Any:
    F = _torch().nn.functional
    x = b["x"].float()
    return F.layer_norm(x, x.shape[-1:], b["w"].float(), b["b"].float(), 1e-5).half()


def _rms_ref(b: dict[str, Any]) -> Any:
    x = b["x"].float()
    return (x * _torch().rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * b["w"].float()).half()


def _ce_ref(b: dict[str, Any]) -> Any:
    F = _torch().nn.functional
    return F.cross_entropy(b["x"].float(), b["t"], reduction="none")


def _attn_ref(b: dict[str, Any]) -> Any:
    torch = _torch()
    q, k, v = (b[n].float() for n in "qkv")
    p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return (p @ v).half()


def _mm_launches(s: tuple[int, ...]) -> list[Launch]:
    m, n, k = s
    out = []
    for bm, bn, bk, g, w, st in MM_CONFIGS:
        args = [Buf("a"), Buf("b"), Buf("out"), m, n, k, k, 1, n, 1, n, 1]
        out.append(Launch(args, {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g},
                          (cdiv(m, bm) * cdiv(n, bn),), w, st))
    return out


def _attn_launches(s: tuple[int, ...]) -> list[Launch]:
    bh, n, d = s
    args = [Buf("q"), Buf("k"), Buf("v"), Buf("out"), 1 / math.sqrt(d), n * d, d, n]
    return [Launch(args, {"HEAD_DIM": d, "BLOCK_M": 128, "BLOCK_N": 64}, (cdiv(n, 128), bh), 8, 3)]


def cases() -> list[Case]:
    """The parity table's rows, in order."""
    mm_bufs = lambda s: {"a": ("fp16", (s[0], s[2])), "b": ("fp16", (s[2], s[1])), "out": ("fp16", (s[0], s[1]))}  # noqa: E731
    mm_work = lambda s: (2.0 * s[0] * s[1] * s[2], "FLOP")  # noqa: E731
    mm_ref = lambda b: (b["a"].float() @ b["b"].float()).half()  # noqa: E731
    return [
        _elementwise("vector add fp32", pk.add_kernel, "fp32", lambda b: b["x"] + b["y"]),
        _elementwise("SwiGLU fp16", pk.swiglu_kernel, "fp16",
                     lambda b: (_torch().nn.functional.silu(b["x"].float()) * b["y"].float()).half()),
        _rows("softmax", pk.softmax_kernel, lambda s: [Buf("out"), Buf("x"), s[1], s[1], s[1]],
              lambda s: {"x": ("fp16", s), "out": ("fp16", s)},
              lambda b: _torch().softmax(b["x"].float(), dim=1).half(), lambda s: 2 * 2 * s[0] * s[1]),
        _rows("layer norm fwd", pk.layer_norm_kernel,
              lambda s: [Buf("x"), Buf("out"), Buf("w"), Buf("b"), s[1], s[1], 1e-5],
              lambda s: {"x": ("fp16", s), "out": ("fp16", s), "w": ("fp16", (s[1],)), "b": ("fp16", (s[1],))},
              _layer_norm_ref, lambda s: 2 * 2 * s[0] * s[1]),
        _rows("RMSNorm fwd", pk.rms_norm_kernel, lambda s: [Buf("x"), Buf("out"), Buf("w"), s[1], s[1], 1e-5],
              lambda s: {"x": ("fp16", s), "out": ("fp16", s), "w": ("fp16", (s[1],))},
              _rms_ref, lambda s: 2 * 2 * s[0] * s[1]),
        _rows("cross-entropy fwd", pk.cross_entropy_kernel, lambda s: [Buf("x"), Buf("t"), Buf("out"), s[1], s[1]],
              lambda s: {"x": ("fp16", s), "t": ("i64", (s[0],)), "out": ("fp32", (s[0],))},
              _ce_ref, lambda s: 2 * s[0] * s[1] + 12 * s[0], tol=2e-3,
              fill={"t": lambda r: (r.abs() * 1e4).long() % 1000}),
        Case("dense matmul fp16", pk.matmul_kernel, list(GEMMS), mm_bufs, _mm_launches, mm_ref, mm_work),
        Case("2:4 matmul (sparsecc) vs dense (Triton)", pk.matmul_kernel, list(GEMMS), mm_bufs, _mm_launches,
             mm_ref, mm_work, sparse="a"),
        Case("fused attention fwd", pk.attention_kernel, list(ATTN),
             lambda s: {n: ("fp16", s) for n in ("q", "k", "v", "out")}, _attn_launches, _attn_ref,
             lambda s: (4.0 * s[0] * s[1] * s[1] * s[2], "FLOP"), tol=2e-2),
    ]


# --------------------------------------------------------------------------------------
# Signatures (what a launch on aligned torch tensors specializes to, on each side)
# --------------------------------------------------------------------------------------


PTR_HINT = [":16"]
"""The sparsecc pointer hint `--ptx` compiles with (`--no-ptr-hint`: none, as for unaligned views
and as sparsecc compiled every pointer before it had the hint)."""


def signatures(case: Case, launch: Launch, shape: tuple[int, ...]) -> tuple[dict[str, str], dict, dict[str, str]]:
    """(Triton signature, Triton attrs, sparsecc signature) for `launch`: pointers 16-byte
    aligned (torch allocations are), ints hinted ':16' / ':1' as both runtimes specialize them.
    Triton's launcher turns an int equal to 1 into the constant 1 (a `constexpr` in the
    signature; `triton_constants` gives its value), so a unit stride is known at compile time."""
    bufs = case.buffers(shape)
    names = [n for n in inspect.signature(case.fn).parameters if n not in launch.constexprs]
    tsig: dict[str, str] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    ssig: dict[str, str] = {}
    for i, (name, a) in enumerate(zip(names, launch.args)):
        if isinstance(a, Buf):
            dt = bufs[a.name][0]
            tsig[name] = "*" + dt
            attrs[(i,)] = [["tt.divisibility", 16]]
            ssig[name] = f"*{dt}:NV24" if a.name == case.sparse else f"*{dt}" + PTR_HINT[0]
        elif isinstance(a, float):
            tsig[name] = ssig[name] = "fp32"
        else:
            tsig[name] = ssig[name] = "i32"
            if a % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
                ssig[name] += ":16"
            elif a == 1:
                tsig[name] = "constexpr"
                ssig[name] += ":1"
    for c in launch.constexprs:
        tsig[c] = "constexpr"
    return tsig, attrs, ssig


# --------------------------------------------------------------------------------------
# --ptx: both compilers, no GPU
# --------------------------------------------------------------------------------------


_INSTR = re.compile(r"^\s*(@!?%\w+\s+)?[a-z][\w.]*\b")


def ptx_stats(ptx: str) -> dict[str, int]:
    """Instruction count (directives, labels, braces, comments and debug sections excluded) and
    global accesses by vector width."""
    body = ptx.split(".section")[0]
    instrs = [ln for ln in body.splitlines() if _INSTR.match(ln) and not ln.strip().startswith("//")]
    text = "\n".join(instrs)
    return {
        "instrs": len(instrs),
        "ld.global": len(re.findall(r"\bld\.global\b", text)),
        "ld.v4": len(re.findall(r"\bld\.global(\.\w+)*\.v4\b", text)),
        "ld.v2": len(re.findall(r"\bld\.global(\.\w+)*\.v2\b", text)),
        "st.global": len(re.findall(r"\bst\.global\b", text)),
        "st.v4": len(re.findall(r"\bst\.global(\.\w+)*\.v4\b", text)),
        "st.v2": len(re.findall(r"\bst\.global(\.\w+)*\.v2\b", text)),
        "before 1st ld": next((i for i, ln in enumerate(instrs) if "ld.global" in ln), len(instrs)),
    }


def ptxas_report(ptx: str, name: str) -> str:
    from sparsecc.codegen.ptxas import assemble

    try:
        res = assemble(ptx, "sm_90a").resources
    except Exception as e:  # noqa: BLE001 - report, do not crash the table
        have = re.search(r"current version is '([\d.]+)'", getattr(e, "log", "") or str(e))
        if have is None:
            return f"ptxas failed: {str(e).splitlines()[0][:80]}"
        # Triton's LLVM stamps a newer PTX ISA than this ptxas reads; the code is the same
        return ptxas_report(re.sub(r"^\.version [\d.]+", f".version {have.group(1)}", ptx, count=1, flags=re.M), name)
    r = res.get(name) or next(iter(res.values()))
    return f"{r.registers} regs, {r.spill_stores}/{r.spill_loads} spill st/ld"


def compile_triton_ptx(case: Case, launch: Launch, shape: tuple[int, ...]) -> str:
    import triton
    from triton.backends.compiler import GPUTarget

    tsig, attrs, _ = signatures(case, launch, shape)
    names = [n for n in inspect.signature(case.fn).parameters if n not in launch.constexprs]
    ones = {n: 1 for n, a in zip(names, launch.args) if tsig[n] == "constexpr"}
    src = triton.compiler.ASTSource(pk.triton_kernel(case.fn), tsig, {**launch.constexprs, **ones}, attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": launch.num_warps, "num_stages": launch.num_stages})
    return k.asm["ptx"]


def compile_sparsecc_ptx(case: Case, launch: Launch, shape: tuple[int, ...]) -> str:
    import sparsecc

    _, _, ssig = signatures(case, launch, shape)
    k = sparsecc.compile(pk.sparsecc_kernel(case.fn), ssig, dict(launch.constexprs), target="sm_90a",
                         num_warps=launch.num_warps, num_stages=launch.num_stages)
    ptx = k.asm["ptx"]
    assert isinstance(ptx, str)
    return ptx


def refusal(e: BaseException) -> str:
    """The first line of a compiler's error, for the table."""
    msg = str(e).strip().splitlines()
    text = next((ln.strip() for ln in msg if "error:" in ln), msg[0] if msg else type(e).__name__)
    return f"refused: {text[:160]}"


def ptx_rows(selected: list[Case], small: bool) -> list[str]:
    rows = ["| kernel | shape/config | side | PTX instrs | ld.global (v4/v2) | st.global (v4/v2) | "
            "instrs before 1st ld | ptxas -v |", "|---|---|---|---|---|---|---|---|"]
    for case in selected:
        seen = set()
        for shape in (case.shapes[:1] if small else case.shapes):
            for launch in case.launches(shape):
                key = (tuple(sorted(launch.constexprs.items())), launch.num_warps, launch.num_stages,
                       tuple(a if not isinstance(a, int) or isinstance(a, bool) else (a % 16 == 0, a == 1)
                             for a in launch.args))
                if key in seen:
                    continue
                seen.add(key)
                cfg = ",".join(f"{v}" for v in launch.constexprs.values()) + f" w{launch.num_warps}"
                for side, comp in (("Triton", compile_triton_ptx), ("sparsecc", compile_sparsecc_ptx)):
                    t0 = time.time()
                    try:
                        ptx = comp(case, launch, shape)
                    except Exception as e:  # noqa: BLE001 - a refusal is a row, not a crash
                        rows.append(f"| {case.name} | {cfg} | {side} | {refusal(e)} | | | | |")
                        continue
                    s = ptx_stats(ptx)
                    reg = ptxas_report(ptx, case.fn.__name__)
                    rows.append(f"| {case.name} | {cfg} | {side} | {s['instrs']} | {s['ld.global']} "
                                f"({s['ld.v4']}/{s['ld.v2']}) | {s['st.global']} ({s['st.v4']}/{s['st.v2']}) | "
                                f"{s['before 1st ld']} | {reg} |")
                    print(rows[-1], f"  [{time.time() - t0:.1f}s]", file=sys.stderr, flush=True)
    return rows


# --------------------------------------------------------------------------------------
# GPU: check and time
# --------------------------------------------------------------------------------------


@dataclass
class Result:
    case: str
    shape: tuple[int, ...]
    work: tuple[float, str]
    triton_ms: float | None = None
    sparsecc_ms: float | None = None
    triton_note: str = ""
    sparsecc_note: str = ""
    max_err: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.triton_ms and self.sparsecc_ms:
            return self.sparsecc_ms / self.triton_ms
        return None


def make_buffers(case: Case, shape: tuple[int, ...]) -> dict[str, Any]:
    torch = _torch()
    torch.manual_seed(0)
    dt = {"fp16": torch.float16, "fp32": torch.float32, "i64": torch.int64}
    out = {}
    for name, (d, s) in case.buffers(shape).items():
        r = torch.randn(s, device="cuda", dtype=torch.float32)
        if name in case.fill:
            out[name] = case.fill[name](r)
        elif case.sparse == name:
            import sparsecc

            out[name] = sparsecc.prune_2to4(r.to(dt[d]))
        else:
            out[name] = r.to(dt[d])
    return out


def _graph_time(fn: Callable[[], None]) -> float:
    import triton.testing

    fn()
    _torch().cuda.synchronize()
    return float(triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median"))


def check(case: Case, bufs: dict[str, Any], ref: Any) -> float:
    """Max error of bufs['out'] against ref; AssertionError past the case's tolerance."""
    out = bufs["out"].float()
    err = (out - ref.float()).abs().max().item()
    scale = max(1.0, ref.float().abs().max().item())
    if not err <= case.tol * scale:  # also catches NaN left in the output
        raise AssertionError(f"max error {err:.3g} > {case.tol:g} x {scale:.3g}")
    return err


def run_side(case: Case, shape: tuple[int, ...], side: str, bufs: dict[str, Any], ref: Any,
             res: Result, timed: bool) -> None:
    """Compile, check and (if `timed`) time every config of one side; the best time counts."""
    import sparsecc

    kernel = pk.triton_kernel(case.fn) if side == "triton" else pk.sparsecc_kernel(case.fn)
    args_bufs = dict(bufs)
    if side == "sparsecc" and case.sparse:
        args_bufs[case.sparse] = sparsecc.compress(bufs[case.sparse])
    best, notes = None, []
    for launch in case.launches(shape):
        args = [args_bufs[a.name] if isinstance(a, Buf) else a for a in launch.args]

        def fn(launch: Launch = launch, args: list[Any] = args) -> None:
            kernel[launch.grid](*args, **launch.constexprs, num_warps=launch.num_warps,
                                num_stages=launch.num_stages)

        try:
            bufs["out"].fill_(float("nan"))
            fn()
            _torch().cuda.synchronize()
            res.max_err[side] = check(case, bufs, ref)
        except Exception as e:  # noqa: BLE001 - a refusal or a wrong result is a row, not a crash
            notes.append(refusal(e) if not isinstance(e, AssertionError) else f"WRONG: {e}")
            continue
        if timed:
            t = _graph_time(fn)
            best = t if best is None else min(best, t)
        else:
            best = 0.0
    if side == "triton":
        res.triton_ms, res.triton_note = best, ("" if best is not None else notes[0])
    else:
        res.sparsecc_ms, res.sparsecc_note = best, ("" if best is not None else notes[0])


def run_case(case: Case, shape: tuple[int, ...], timed: bool = True) -> Result:
    bufs = make_buffers(case, shape)
    ref = case.reference(bufs)
    res = Result(case.name, shape, case.work(shape))
    for side in ("triton", "sparsecc"):
        run_side(case, shape, side, bufs, ref, res, timed)
    return res


def _rate(work: tuple[float, str], ms: float | None) -> str:
    if not ms:
        return ""
    amount, unit = work
    return f"{amount / ms / 1e9:.0f} TFLOP/s" if unit == "FLOP" else f"{amount / ms / 1e6:.0f} GB/s"


def table(results: list[Result], device: str) -> str:
    lines = [f"Triton and sparsecc on the same sources, {device}; do_bench_cudagraph medians.", "",
             "| kernel | shape | moves | Triton µs | Triton rate | sparsecc µs | sparsecc rate | sparsecc/Triton |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        amount, unit = r.work
        moves = f"{amount / 1e9:.3g} GFLOP" if unit == "FLOP" else f"{amount / 1e6:.4g} MB"
        t = f"{r.triton_ms * 1e3:.1f}" if r.triton_ms else r.triton_note
        s = f"{r.sparsecc_ms * 1e3:.1f}" if r.sparsecc_ms else r.sparsecc_note
        if r.case in PENDING and s.startswith("refused"):
            s = f"pending ({s})"
        ratio = f"{r.ratio:.2f}" if r.ratio else "—"
        lines.append(f"| {r.case} | {'x'.join(map(str, r.shape))} | {moves} | {t} | {_rate(r.work, r.triton_ms)} | "
                     f"{s} | {_rate(r.work, r.sparsecc_ms)} | {ratio} |")
    return "\n".join(lines) + "\n"


def select(only: str | None) -> list[Case]:
    all_cases = cases()
    if not only:
        return all_cases
    keys = [k.strip().lower() for k in only.split(",") if k.strip()]
    picked = [c for c in all_cases if any(k in c.name.lower() for k in keys)]
    if not picked:
        raise SystemExit(f"--only {only!r} matches no kernel (kernels: {', '.join(c.name for c in all_cases)})")
    return picked


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="only the smallest shape of each kernel")
    ap.add_argument("--ptx", action="store_true", help="compile both sides to PTX (no GPU) and compare")
    ap.add_argument("--only", help="comma-separated substrings of kernel names")
    ap.add_argument("--out", help="also write the table to this markdown file")
    ap.add_argument("--no-ptr-hint", action="store_true",
                    help="--ptx: sparsecc pointers without the ':16' alignment hint")
    args = ap.parse_args(argv)
    PTR_HINT[0] = "" if args.no_ptr_hint else ":16"
    selected = select(args.only)
    if args.ptx:
        text = "\n".join(ptx_rows(selected, args.small)) + "\n"
    else:
        torch = _torch()
        results = []
        for case in selected:
            for shape in (case.shapes[:1] if args.small else case.shapes):
                results.append(run_case(case, shape))
                print(table(results[-1:], "").splitlines()[-1], file=sys.stderr, flush=True)
        text = table(results, torch.cuda.get_device_name())
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
