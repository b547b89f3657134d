"""Fuzz targets: what sparsecc must do with any input, and the strategies that make inputs.

Four areas, each a function that runs one generated case and sorts its outcome:

    cli        mutated lit inputs through sparsecc-opt (parse, verify, the file's own passes, then
               each pass on its own), accepted output printed, parsed back and, where it is
               ttgir or ptx, emitted as PTX and assembled with ptxas (`run_cli`)
    parser     random token soup through the IR parser alone
    frontend   generated Triton-style kernels through `sparsecc.compile` (no target: the
               frontend and decompose-sparse-tensors) and, where they compile, the interpreter
    compress   random tensors through `prune_2to4`, `compress` and `to_dense`
    differential  generated kernels on the CPU interpreter and on the GPU (GPU suite only):
               the same output, or the same located refusal

Outcomes: `accepted`, `clean error` (a user error that names its place and its problem:
file:line:col and a message that says what is wrong for IR and kernels, the offending group or
dtype for tensors), `unlocated error` (a user error without a place, or with only a generic word:
counted, not a failure), `crash` (any other exception, an error calling itself internal, a run
past CLI_TIMEOUT_S, accepted IR that does not round-trip, PTX ptxas rejects: a bug).
`fuzz/test_fuzz.py` runs them with hypothesis; `OUTCOMES` counts what a run saw, for the table
in bench/results/fuzz-current.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import re
import signal
import sys
import tempfile
import textwrap
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import torch
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
LIT = REPO / "test" / "lit"
OUTCOMES: Counter[tuple[str, str]] = Counter()
"""(area, outcome) -> count over the run."""


class Crash(AssertionError):
    """A fuzz case ended in an internal error: a bug to fix and keep as a regression test."""


def record(area: str, outcome: str, detail: str = "") -> str:
    OUTCOMES[(area, outcome)] += 1
    if outcome == "crash":
        raise Crash(f"{area}: {detail}")
    return outcome


# ---------------------------------------------------------------------------------- cli


def _pipeline_of(text: str) -> str:
    m = re.search(r'RUN:.*?sparsecc-opt %s(?:.*?-p (?:"([^"]*)"|(\S+)))?', text)
    return "" if m is None else (m.group(1) or m.group(2) or "")


def _corpus() -> list[tuple[str, str]]:
    """(text, pipeline) of every lit input (each `// -----` chunk on its own)."""
    out = []
    for path in sorted(LIT.rglob("*.mlir")):
        text = path.read_text()
        pipeline = _pipeline_of(text)
        for chunk in re.split(r"^// -----\s*$", text, flags=re.MULTILINE):
            if "builtin.module" in chunk or "tt.func" in chunk:
                out.append((chunk, pipeline))
    return out


CORPUS = _corpus()
_TOKEN = re.compile(r"%[\w.]+|@\w+|#[\w.]+|!?[\w.]+|\d+|[^\s\w]")
TOKENS = sorted({t for text, _ in CORPUS for t in _TOKEN.findall(text)})


@st.composite
def mutated_ir(draw: st.DrawFn) -> tuple[str, str]:
    """A lit input with up to four edits: a span deleted, a line duplicated or moved, a token
    replaced by another from the corpus, a character inserted, the text truncated."""
    text, pipeline = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "dup-line", "swap-lines", "token", "char", "truncate"]))
        n = len(text)
        if n == 0:
            break
        at = draw(st.integers(0, n - 1))
        lines = text.split("\n")
        if kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)):]
        elif kind == "dup-line":
            i = draw(st.integers(0, len(lines) - 1))
            text = "\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:])
        elif kind == "swap-lines":
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind == "token":
            matches = list(_TOKEN.finditer(text))
            if not matches:  # an earlier edit left only whitespace
                continue
            m = matches[draw(st.integers(0, len(matches) - 1))]
            text = text[:m.start()] + draw(st.sampled_from(TOKENS)) + text[m.end():]
        elif kind == "char":
            text = text[:at] + draw(st.sampled_from(list('{}()[]<>%@#!":=,-0123456789x\n "\\'))) + text[at:]
        else:
            text = text[:at]
    return text, pipeline


CLI_TIMEOUT_S = 10.0
"""One sparsecc-opt run (a parse, a pass, a round trip, PTX emission) that takes longer hangs."""


class Hang(BaseException):
    """A run past CLI_TIMEOUT_S. A BaseException, so that the CLI's own `except Exception` (which
    turns anything a pass raises into a diagnostic) cannot swallow it."""


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise Hang in the block after `seconds` (SIGALRM: the main thread only, else no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise Hang(f"no result after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_PLACE_ONLY = re.compile(r"^\W*(in |at |while |error\b|failed\b|invalid\b|unexpected\b)?\W*$", re.IGNORECASE)


def names_its_problem(message: str) -> bool:
    """Whether an error message says what is wrong, not only a generic word or where the parser
    was (xDSL's " in block definition" once stood alone for a non-ASCII digit).

        >>> names_its_problem(" in block definition"), names_its_problem("'}' expected")
        (False, True)
    """
    text = message.strip()
    if _PLACE_ONLY.match(text) or text.lower().startswith(("in ", "at ")):
        return False
    return len(re.findall(r"[A-Za-z']+|[^\sA-Za-z]", text)) >= 2


def _cli_args(pipeline: str, *flags: str) -> argparse.Namespace:
    from sparsecc.tools import sparsecc_opt

    return sparsecc_opt.build_arg_parser().parse_args(["-", "-p", pipeline, *flags])


def _compile(text: str, pipeline: str, *flags: str, name: str = "fuzz.mlir") -> str:
    """sparsecc-opt in-process under the deadline: the output, or ToolError / anything else."""
    from sparsecc.tools import sparsecc_opt
    from sparsecc.tools.diagnostics import SourceFile

    with _deadline(CLI_TIMEOUT_S):
        return sparsecc_opt.compile_source(SourceFile(name, text), _cli_args(pipeline, *flags))


def _check_round_trip(out: str, what: str) -> str | None:
    """Why accepted output `out` fails the round trip (it must parse back and print the same,
    also through the generic form), or None."""
    from sparsecc.tools.sparsecc_opt import ToolError

    try:
        again = _compile(out, "", name="output.mlir")
        generic = _compile(out, "", "--print-op-generic", name="output.mlir")
        from_generic = _compile(generic, "", name="generic.mlir")
    except ToolError as exc:
        return f"{what}: the output does not parse back: {exc.diag}"
    if again != out:
        return f"{what}: print -> parse -> print changed the output:\n{_first_difference(out, again)}"
    if from_generic != out:
        return f"{what}: the generic form parses to other IR:\n{_first_difference(out, from_generic)}"
    return None


def _first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.split("\n"), b.split("\n"), strict=False)):
        if x != y:
            return f"line {i + 1}:\n  {x}\n  {y}"
    return "(one is a prefix of the other)"


_PTX_TARGET = re.compile(r"^\.target\s+(sm_[0-9]+a?)", re.MULTILINE)


def _check_ptx(out: str, what: str) -> str | None:
    """Why the PTX of accepted output (ttgir, or the ptx dialect) fails: `--emit ptx` crashing,
    or ptxas rejecting what it printed. A located refusal to lower is fine; None when all is."""
    if "ptx.kernel" not in out and "ttg.target" not in out:
        return None
    from sparsecc.codegen.ptxas import PtxasError, ToolNotFoundError, assemble
    from sparsecc.tools.sparsecc_opt import ToolError

    try:
        ptx = _compile(out, "", "--emit", "ptx", name="output.mlir")
    except ToolError as exc:
        if "internal error" in exc.diag.message:
            return f"{what}: --emit ptx: {exc.diag.message}"
        return None
    target = _PTX_TARGET.search(ptx)
    if target is None:
        return f"{what}: --emit ptx printed no .target line"
    try:
        assemble(ptx, target[1], timeout=60)
    except ToolNotFoundError:
        return None
    except PtxasError as exc:
        return f"{what}: ptxas rejects the PTX: {exc} {exc.log[:2000]}"
    return None


def _classify(area: str, text: str, pipeline: str) -> tuple[str, str | None]:
    """(outcome, output) of one run of `pipeline` on `text`; a crash raises Crash."""
    from sparsecc.tools import sparsecc_opt

    where = f"\n--- pipeline ---\n{pipeline!r}\n--- input ---\n{text}"
    try:
        out = _compile(text, pipeline)
    except sparsecc_opt.ToolError as exc:
        diag = exc.diag
        if "internal error" in diag.message:
            return record(area, "crash", f"{diag.message}{where}"), None
        # an error in the -p argument names the argument: it has no place in the input file
        located = diag.line is not None or diag.message.startswith(("invalid pass pipeline", "unknown pass",
                                                                     "invalid options for pass"))
        clean = located and names_its_problem(diag.message)
        if not clean and os.environ.get("SPARSECC_FUZZ_SHOW_UNLOCATED"):
            sys.stderr.write(f"unlocated or vague: {diag.line}:{diag.column}: {diag.message!r}\n")
        return record(area, "clean error" if clean else "unlocated error"), None
    except Hang as exc:
        return record(area, "crash", f"hang: {exc}{where}"), None
    except RecursionError:
        return record(area, "crash", f"RecursionError{where}"), None
    except Exception as exc:  # noqa: BLE001 - anything escaping compile_source is a bug
        return record(area, "crash", f"{type(exc).__name__}: {exc}{where}"), None
    try:
        problem = _check_round_trip(out, f"-p {pipeline!r}") or _check_ptx(out, f"-p {pipeline!r}")
    except Hang as exc:
        problem = f"hang in the round trip or --emit ptx: {exc}"
    except Exception as exc:  # noqa: BLE001 - the same: a bug
        problem = f"{type(exc).__name__} in the round trip or --emit ptx: {exc}"
    if problem is not None:
        return record(area, "crash", f"{problem}{where}"), None
    return record(area, "accepted"), out


def run_cli(text: str, pipeline: str, area: str = "cli") -> str:
    """sparsecc-opt on one input, in-process: the input's own pipeline (`pipeline`, from its RUN
    line), then, where the input parses, every pass on its own (area `cli`; their outcomes are
    counted as `cli (each pass)`). The outcome returned is the own pipeline's.

    Oracles: no internal error and no run past CLI_TIMEOUT_S; an error is located (file:line:col)
    and names its problem (`names_its_problem`), else it counts as an unlocated error; accepted
    output parses back and prints the same, also through the generic form; and the PTX of
    accepted ttgir or ptx-dialect output (`--emit ptx`) assembles with ptxas."""
    from sparsecc.passes import get_all_passes

    outcome, _ = _classify(area, text, pipeline)
    if area == "cli" and _parses(text):
        for name in sorted(get_all_passes()):
            if name != pipeline:
                _classify("cli (each pass)", text, name)
    return outcome


def _parses(text: str) -> bool:
    """Whether the input parses and verifies (its own run has already classified a failure)."""
    from sparsecc.dialects import make_context
    from sparsecc.tools import sparsecc_opt
    from sparsecc.tools.diagnostics import SourceFile

    try:
        with _deadline(CLI_TIMEOUT_S):
            sparsecc_opt.parse_source(make_context(), SourceFile("fuzz.mlir", text))
    except (Exception, Hang):  # noqa: BLE001 - classified by the run before this one
        return False
    return True


@st.composite
def token_soup(draw: st.DrawFn) -> str:
    """Corpus tokens in random order, inside a module: exercises every parser error path."""
    words = draw(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=30))
    return "builtin.module {\n  " + " ".join(words) + "\n}\n"


# ---------------------------------------------------------------------------------- frontend

_EXPRS = {
    "load": "tl.load({p} + offs, mask=offs < n, other=0.0)",
    "arange": "tl.arange(0, {b})",
    "where": "tl.where(offs < n, x, -x)",
    "max": "tl.maximum(x, x * 2.0)",
    "sum": "tl.sum(x, axis=0)",
    "cast": "x.to(tl.{dt})",
    "full": "tl.full(({b},), {c}, tl.float32)",
    "zeros": "tl.zeros(({b},), dtype=tl.float32)",
}


@st.composite
def kernel_source(draw: st.DrawFn) -> tuple[str, dict, dict]:
    """An elementwise kernel with random statements (some ill-typed on purpose) or a sparse
    dot kernel with random tile sizes (some the compiler must refuse): source, signature,
    constexprs."""
    if draw(st.booleans()):
        block = draw(st.sampled_from([1, 4, 10, 16, 64, 256]))
        body = ["offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
                "x = tl.load(X + offs, mask=offs < n, other=0.0)"]
        for _ in range(draw(st.integers(0, 4))):
            key = draw(st.sampled_from(sorted(_EXPRS)))
            expr = _EXPRS[key].format(p=draw(st.sampled_from(["X", "Y", "Z", "n"])), b=draw(st.sampled_from(
                ["BLOCK", "8", "10"])), dt=draw(st.sampled_from(["float16", "int32", "bfloat16"])),
                c=draw(st.sampled_from(["0.5", "1", "n"])))
            body.append(f"{draw(st.sampled_from(['x', 'y', 'x']))} = {expr}")
        body.append("tl.store(Z + offs, x, mask=offs < n)")
        src = "def kernel(X, Y, Z, n, BLOCK: tl.constexpr):\n" + textwrap.indent("\n".join(body), "    ")
        sig = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "n": "i32"}
        return src, sig, {"BLOCK": block}
    bm, bn, bk = (draw(st.sampled_from(v)) for v in ([16, 24, 32, 48, 64], [8, 16, 32], [16, 32, 64, 128]))
    dtype = draw(st.sampled_from(["fp16", "bf16", "fp32", "i8"]))
    order = draw(st.sampled_from(["(1, 0)", "(0, 1)"]))
    src = textwrap.dedent(f"""\
        def kernel(D, A, B, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
            a = tl.make_block_ptr(A, shape=(BLOCK_M, BLOCK_K), strides=(BLOCK_K, 1), offsets=(0, 0),
                                  block_shape=(BLOCK_M, BLOCK_K), order={order})
            b = tl.make_block_ptr(B, shape=(BLOCK_K, BLOCK_N), strides=(BLOCK_N, 1), offsets=(0, 0),
                                  block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
            d = tl.make_block_ptr(D, shape=(BLOCK_M, BLOCK_N), strides=(BLOCK_N, 1), offsets=(0, 0),
                                  block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
            tl.store(d, tl.dot(tl.load(a), tl.load(b)).to(tl.float16))
        """)
    sparse = draw(st.sampled_from(["NV24"] * 3 + list(QUANT_FORMATS)))
    sig = {"D": "*fp16", "A": f"*{dtype}:{sparse}", "B": f"*{dtype}"}
    return src, sig, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}


QUANT_FORMATS = ("NV24.w4g128", "NV24.w8c", "NV24.w4g64z", "NV24.w8g32", "NV24.w3g128", "NV24.w4g100",
                 "NV24.w4g0", "NV24.", "NV24.w4", "NV12.w4g64", "NV24.w4g64zz", "NV24.W4G64", "NV24.w04g064")
"""Quantized sparse format spellings, good and bad, for signatures and `compress(quant=...)`."""


def _load_kernel(src: str):
    path = Path(tempfile.mkdtemp(prefix="sparsecc-fuzz-")) / "fuzz_kernel.py"
    path.write_text("import sparsecc\nimport sparsecc.language as tl\n\n\n@sparsecc.jit\n" + src + "\n")
    spec = importlib.util.spec_from_file_location(f"fuzz_kernel_{abs(hash(src))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel, path


def run_frontend(src: str, sig: dict, consts: dict) -> str:
    """Compile a generated kernel; a CompilationError must name the kernel's file and line."""
    from xdsl.utils.exceptions import DiagnosticException

    import sparsecc

    kernel, path = _load_kernel(src)
    try:
        sparsecc.compile(kernel, signature=sig, constexprs=consts)
    except (sparsecc.CompilationError, DiagnosticException, ValueError, TypeError) as exc:
        if "internal" in str(exc).lower():
            return record("frontend", "crash", f"{exc}\n--- kernel ---\n{src}")
        located = f"{path.name}:" in str(exc) or f"{path}:" in str(exc)
        return record("frontend", "clean error" if located else "unlocated error")
    except Exception as exc:  # noqa: BLE001 - anything else is a bug
        return record("frontend", "crash", f"{type(exc).__name__}: {exc}\n--- kernel ---\n{src}\n{sig} {consts}")
    return record("frontend", "accepted")


# ---------------------------------------------------------------------------- differential


def _kernel_args(sig: dict, consts: dict, device: str, seed: int) -> tuple[list, tuple, torch.Tensor]:
    """Random inputs (never zeros) for a `kernel_source` kernel, the same values on every device:
    (arguments, grid, output tensor poisoned with NaN)."""
    import sparsecc

    g = torch.Generator().manual_seed(seed)
    if "n" in sig:  # elementwise: a ragged length, Z poisoned
        n = 1000
        x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
        z = torch.full((n,), float("nan"))
        block = consts["BLOCK"]
        args = [x.to(device), y.to(device), z.to(device), n]
        return args, ((n + block - 1) // block,), args[2]
    bm, bn, bk = consts["BLOCK_M"], consts["BLOCK_N"], consts["BLOCK_K"]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "i8": torch.int8}[sig["B"][1:]]
    if dtype == torch.int8:
        a, b = (torch.randint(-8, 8, s, generator=g, dtype=torch.int8) for s in ((bm, bk), (bk, bn)))
    else:
        a, b = torch.randn(bm, bk, generator=g).to(dtype), torch.randn(bk, bn, generator=g).to(dtype)
    a = (sparsecc.prune_1to2 if dtype == torch.float32 else sparsecc.prune_2to4)(a)
    d = torch.full((bm, bn), float("nan"), dtype=torch.float16, device=device)
    return [d, sparsecc.compress(a.to(device)), b.to(device)], (1,), d


def run_differential(src: str, sig: dict, consts: dict, seed: int = 0) -> str:
    """Run a generated kernel on the CPU interpreter and on the GPU with the same inputs. They
    agree when both refuse it with a located error, or both run and give the same output (fp32
    round-off; fp16 for dots); the GPU may also refuse what the interpreter runs with a located
    error (a documented GPU restriction, e.g. a row-major dense operand of an 8-bit dot).
    Anything else (different outputs, only the interpreter refusing, an unlocated or internal
    error) is a crash."""
    import warnings

    import sparsecc
    from sparsecc.frontend.jit import InterpreterFallbackWarning

    kernel, path = _load_kernel(src)
    outs: dict[str, torch.Tensor | str] = {}
    for device in ("cpu", "cuda"):
        try:
            args, grid, out = _kernel_args(sig, consts, device, seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InterpreterFallbackWarning)
                kernel[grid](*args, **consts)
            if device == "cuda":
                torch.cuda.synchronize()
            outs[device] = out.float().cpu()
        except sparsecc.CompilationError as exc:
            if "internal" in str(exc).lower() or f"{path.name}:" not in str(exc):
                return record("differential", "crash", f"{device}: {exc}\n--- kernel ---\n{src}\n{consts}")
            outs[device] = "refused"
        except Exception as exc:  # noqa: BLE001 - anything else is a bug
            return record("differential", "crash", f"{device}: {type(exc).__name__}: {exc}\n--- kernel ---\n"
                                                   f"{src}\n{consts}")
    cpu, gpu = outs["cpu"], outs["cuda"]
    if isinstance(cpu, str):
        return record("differential", "clean error" if isinstance(gpu, str) else "crash",
                      f"the interpreter refused what the GPU ran\n{src}\n{consts}")
    if isinstance(gpu, str):
        return record("differential", "clean error")
    tol = 2e-2 if "BLOCK_K" in consts else 1e-5
    scale = max(float(cpu.nan_to_num().abs().max()), 1.0)
    same = (cpu.isnan() == gpu.isnan()).all() and torch.allclose(cpu.nan_to_num(), gpu.nan_to_num(),
                                                                   rtol=tol, atol=tol * scale)
    if not same:
        return record("differential", "crash", f"outputs differ (max |diff| "
                      f"{(cpu.nan_to_num() - gpu.nan_to_num()).abs().max():.3g})\n--- kernel ---\n{src}\n{consts}")
    return record("differential", "accepted")


# ---------------------------------------------------------------------------------- compress

_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int32, torch.bool]


@st.composite
def dense_matrix(draw: st.DrawFn) -> torch.Tensor:
    """Random 0-3-D tensors of many dtypes: 2:4 ones, dense ones, NaN, empty, ragged K."""
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    if draw(st.booleans()):  # plausible: 2-D, K a multiple of 16, a 2:4 dtype, often pruned
        dims, shape = 2, (draw(st.integers(1, 40)), 16 * draw(st.integers(1, 4)))
        dtype = draw(st.sampled_from([torch.float16, torch.bfloat16]))
    else:
        dims = draw(st.integers(0, 3))
        shape = tuple(draw(st.integers(0, 40)) for _ in range(dims))
        dtype = draw(st.sampled_from(_DTYPES))
    x = torch.randn(shape, generator=gen) * 4
    if dims == 2 and draw(st.booleans()) and shape[1] % 4 == 0 and shape[0] > 0:
        keep = torch.rand(shape, generator=gen).view(shape[0], -1, 4).argsort(-1) < 2
        x = x * keep.view(shape)
    if draw(st.booleans()) and x.numel():
        x.view(-1)[draw(st.integers(0, x.numel() - 1))] = float("nan")
    return x.to(dtype) if dtype.is_floating_point else x.round().clamp(-100, 100).to(dtype)


def run_compress(x: torch.Tensor) -> str:
    """prune_2to4 then compress round-trips; compress of arbitrary data is a clean error or a
    round trip. An error must name its problem (dtype, shape, or the offending group)."""
    import sparsecc

    try:
        s = sparsecc.compress(x)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        named = any(w in message for w in ("dtype", "shape", "group", "row", "multiple", "2-D", "empty", "Tensor"))
        return record("compress", "clean error" if named else "unlocated error")
    except Exception as exc:  # noqa: BLE001
        return record("compress", "crash", f"{type(exc).__name__}: {exc} for {x.dtype} {tuple(x.shape)}")
    back = s.to_dense()
    if not torch.equal(torch.nan_to_num(back), torch.nan_to_num(x)) or back.dtype != x.dtype:
        return record("compress", "crash", f"round trip changed a {x.dtype} {tuple(x.shape)} tensor")
    return record("compress", "accepted")


@st.composite
def quant_case(draw: st.DrawFn) -> tuple[torch.Tensor, str]:
    """A random tensor (as `dense_matrix`) and a quantization scheme, good or bad."""
    scheme = draw(st.sampled_from([f.partition(".")[2] for f in QUANT_FORMATS] + ["w4c", "w8g16z", ""]))
    return draw(dense_matrix()), scheme


def run_compress_quant(x: torch.Tensor, scheme: str) -> str:
    """compress(quant=...) of arbitrary data is a clean error or a quantized tensor whose
    dequantization keeps the 2:4 pattern and stays within half a step of each kept value."""
    import sparsecc

    try:
        q = sparsecc.compress(x, quant=scheme)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        named = any(w in message for w in ("dtype", "shape", "group", "row", "multiple", "2-D", "empty",
                                           "Tensor", "scheme", "bits", "format", "finite", "quant"))
        return record("compress", "clean error" if named else "unlocated error")
    except Exception as exc:  # noqa: BLE001
        return record("compress", "crash", f"{type(exc).__name__}: {exc} for {x.dtype} {tuple(x.shape)} {scheme!r}")
    back = q.to_dense().float()
    dense = x.float()
    if ((back != 0) & (dense == 0)).any() or back.shape != dense.shape:
        return record("compress", "crash", f"quant={scheme!r} put a value where {tuple(x.shape)} had a zero")
    return record("compress", "accepted")


# ---------------------------------------------------------------------------------- report


def table() -> str:
    """The outcome counts as a markdown table, one row per area."""
    kinds = ["accepted", "clean error", "unlocated error", "crash"]
    rows = ["| area | cases | " + " | ".join(kinds) + " |", "|---|---" + "|---" * len(kinds) + "|"]
    for area in ("cli", "cli (each pass)", "parser", "frontend", "compress", "differential"):
        counts = [OUTCOMES[(area, k)] for k in kinds]
        if sum(counts):
            rows.append(f"| {area} | {sum(counts)} | " + " | ".join(map(str, counts)) + " |")
    return "\n".join(rows) + "\n"


def main() -> int:
    """The long run: `python test/python/fuzz_targets.py --examples 2000 [--out FILE] [-k 'cli or parser']`."""
    import pytest

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--examples", type=int, default=2000, help="cases per area")
    ap.add_argument("--out", type=Path, help="write the outcome table (markdown) here")
    ap.add_argument("-k", dest="select", help="only the tests pytest -k selects, e.g. 'cli or parser'")
    ns = ap.parse_args()
    os.environ["SPARSECC_FUZZ_EXAMPLES"] = str(ns.examples)
    if ns.out:
        os.environ["SPARSECC_FUZZ_REPORT"] = str(ns.out.resolve())
    select = ["-k", ns.select] if ns.select else []
    return pytest.main([str(Path(__file__).parent / "fuzz" / "test_fuzz.py"), "-q", "-s", "-p", "no:cacheprovider",
                        *select])


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["CORPUS", "OUTCOMES", "Crash", "dense_matrix", "kernel_source", "mutated_ir", "run_cli",
           "run_compress", "run_differential", "run_frontend", "table", "token_soup"]
