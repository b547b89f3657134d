"""Fuzz targets: what sparsecc must do with any input, and the strategies that make inputs.

Seven areas, each a function that runs one generated case and sorts its outcome:

    cli        mutated lit inputs through sparsecc-opt (parse, verify, the file's own passes, then
               each pass on its own), accepted output printed, parsed back and, where it is
               ttgir or ptx, emitted as PTX and assembled with ptxas (`run_cli`)
    parser     random token soup through the IR parser alone
    frontend   generated Triton-style kernels through `sparsecc.compile` (no target: the
               frontend and decompose-sparse-tensors) and, where they compile, the interpreter
    compress   random tensors through `prune_2to4`, `compress` and `to_dense`, and
               `compress(quant=...)` (also at the dtypes' range edges) within half a step
    torch      odd models (shared, nested, bias-free, skipped Linears) through `sparsify_`: the
               dense model's outputs, state dict and safetensors round trips, corrupted state
               dicts refused
    differential  generated kernels on the CPU interpreter and on the GPU (GPU suite only):
               the same output, or the same located refusal
    caches     a compile and an autotuned launch over corrupt, forged or foreign cache files
               and odd cache folders: the right kernel and result, at most a warning

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
import random
import re
import shutil
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


_SEEN: dict[tuple, tuple[bool, object]] = {}
"""`_compile`'s results so far: key -> (True, output) or (False, the ToolError's diagnostic)."""
_SEEN_MAX = 2048


def _compile(text: str, pipeline: str, *flags: str, name: str = "fuzz.mlir") -> str:
    """sparsecc-opt in-process under the deadline: the output, or ToolError / anything else.

    A run is a function of its input, pipeline, flags and file name, the registered passes and
    the SPARSECC_* switches, and the cases repeat runs a lot: each pass on its own leaves most
    inputs as they were, so the round trip and `--emit ptx` of one output come up once per
    pass, and edits inside comments give inputs seen before. A result (output or user error)
    already computed for the same key is given again; a crash or a hang is never kept, so it
    is raised (and classified) wherever it happens."""
    from sparsecc.tools import sparsecc_opt

    key = _run_key(text, pipeline, flags, name)
    seen = _SEEN.get(key)
    if seen is not None:
        ok, value = seen
        if ok:
            return value
        raise sparsecc_opt.ToolError(value)
    try:
        out = _compile_once(text, pipeline, *flags, name=name)
    except sparsecc_opt.ToolError as exc:
        _remember(key, (False, exc.diag))
        raise
    _remember(key, (True, out))
    return out


def _run_key(text: str, pipeline: str, flags: tuple[str, ...], name: str) -> tuple:
    """Everything a run's result depends on: a test that registers a pass or sets a switch
    gets runs of its own."""
    from sparsecc.passes import get_all_passes

    passes = tuple(sorted(get_all_passes().items()))
    switches = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("SPARSECC_")))
    return text, pipeline, flags, name, passes, switches


def _remember(key: tuple, result: tuple[bool, object]) -> None:
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    _SEEN[key] = result


def _compile_once(text: str, pipeline: str, *flags: str, name: str) -> str:
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
    rejection = _ptxas_rejection(ptx, target[1])
    return None if rejection is None else f"{what}: ptxas rejects the PTX: {rejection}"


_ASSEMBLED: dict[tuple[str, str], str | None] = {}
"""ptxas's verdict on each (PTX, target) assembled so far: None (accepted) or why not."""


def _ptxas_rejection(ptx: str, target: str) -> str | None:
    """Why ptxas rejects `ptx` for `target`, or None (also when there is no ptxas). One PTX text
    is assembled once: the outputs of the passes that leave an input as it was print the same."""
    from sparsecc.codegen.ptxas import PtxasError, ToolNotFoundError, assemble

    if (ptx, target) not in _ASSEMBLED:
        if len(_ASSEMBLED) >= _SEEN_MAX:
            _ASSEMBLED.clear()
        try:
            assemble(ptx, target, timeout=60)
            _ASSEMBLED[(ptx, target)] = None
        except ToolNotFoundError:
            return None
        except PtxasError as exc:
            _ASSEMBLED[(ptx, target)] = f"{exc} {exc.log[:2000]}"
    return _ASSEMBLED[(ptx, target)]


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


_LOCATED = re.compile(r"(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.*)")
_GENERIC = frozenset({"error", "errors", "invalid", "invalid input", "invalid kernel", "bad input", "failed",
                      "compilation failed", "unsupported", "syntax error", "internal error", "unknown error"})
"""Messages that name no problem: a clean error says what is wrong, not just that something is."""


def _clean_frontend_error(exc: BaseException, path: Path) -> bool:
    """A clean error of a generated kernel: exactly one `error:`, and its first line is
    `<the kernel's file>:line:col: error: <message>` at a line of that file (col >= 1), whose
    message names the problem (at least three words, not a generic one such as "invalid")."""
    text = str(exc)
    m = _LOCATED.fullmatch(text.splitlines()[0]) if text else None
    if m is None or text.count("error:") != 1 or Path(m["file"]).name != path.name:
        return False
    if not 1 <= int(m["line"]) <= len(path.read_text().splitlines()) or int(m["col"]) < 1:
        return False
    message = m["message"].strip(" .:!").lower()
    return len(re.findall(r"[a-z_]\w*", message)) >= 3 and message not in _GENERIC


def _frontend_args(sig: dict, consts: dict, seed: int) -> tuple[list, tuple, torch.Tensor | None]:
    """CPU launch arguments for a `kernel_source` kernel exactly as `sig` types them (a
    quantized format compresses A with that format), its grid, and the dot's expected output
    (None for the elementwise kernels, whose random bodies have no reference)."""
    import sparsecc

    if "n" in sig:
        args, grid, _ = _kernel_args(sig, consts, "cpu", seed)
        return args, grid, None
    bm, bn, bk = consts["BLOCK_M"], consts["BLOCK_N"], consts["BLOCK_K"]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "i8": torch.int8}[sig["B"][1:]]
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.int8:
        a, b = (torch.randint(-8, 8, s, generator=g, dtype=torch.int8) for s in ((bm, bk), (bk, bn)))
    else:
        a, b = torch.randn(bm, bk, generator=g).to(dtype), torch.randn(bk, bn, generator=g).to(dtype)
    a = sparsecc.compress((sparsecc.prune_1to2 if dtype == torch.float32 else sparsecc.prune_2to4)(a),
                          format=sig["A"].partition(":")[2])
    d = torch.full((bm, bn), float("nan"), dtype=torch.float16)
    return [d, a, b], (1,), (a.to_dense().float() @ b.float()).half().float()


def run_frontend(src: str, sig: dict, consts: dict, seed: int = 0) -> str:
    """Compile a generated kernel, then run what compiled on the CPU interpreter (random
    inputs; a dot's output must match torch). A refusal must be a clean error
    (`_clean_frontend_error`); an unlocated or generic one, an interpreter failure of a kernel
    that compiled, or a wrong dot is a crash."""
    from xdsl.utils.exceptions import DiagnosticException

    import sparsecc
    from sparsecc.frontend.jit import flatten_args
    from sparsecc.runtime import interpreter

    kernel, path = _load_kernel(src)
    case = f"\n--- kernel ---\n{src}\n{sig} {consts}"
    try:
        compiled = sparsecc.compile(kernel, signature=sig, constexprs=consts)
    except (sparsecc.CompilationError, DiagnosticException, ValueError, TypeError) as exc:
        if "internal" in str(exc).lower():
            return record("frontend", "crash", f"{exc}{case}")
        if not _clean_frontend_error(exc, path):
            return record("frontend", "crash", f"not a located error naming the problem: {type(exc).__name__}: "
                                               f"{exc}{case}")
        return record("frontend", "clean error")
    except Exception as exc:  # noqa: BLE001 - anything else is a bug
        return record("frontend", "crash", f"{type(exc).__name__}: {exc}{case}")
    try:
        args, grid, want = _frontend_args(sig, consts, seed)
        interpreter.run(compiled.module, compiled.name, grid, flatten_args(args))
    except Exception as exc:  # noqa: BLE001 - a kernel that compiles must run
        return record("frontend", "crash", f"compiled, but the interpreter failed: {type(exc).__name__}: {exc}{case}")
    if want is not None:
        got = args[0].float()
        scale = max(float(want.abs().max()), 1.0)
        if got.isnan().any() or not torch.allclose(got, want, rtol=2e-2, atol=2e-2 * scale):
            return record("frontend", "crash", f"the interpreter's dot differs from torch (max |diff| "
                                               f"{(got - want).nan_to_num(float('inf')).abs().max():.3g}){case}")
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
    """compress of arbitrary data is a clean error or an exact round trip, and for a 2-D tensor
    of an NV24 dtype with K a multiple of 16, prune_2to4 then compress then to_dense gives the
    pruned tensor back bit for bit (NaN kept as NaN). An error must name its problem (dtype,
    shape, or the offending group)."""
    import sparsecc

    try:
        s = sparsecc.compress(x)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        named = any(w in message for w in ("dtype", "shape", "group", "row", "multiple", "2-D", "empty", "Tensor"))
        outcome = "clean error" if named else "unlocated error"
    except Exception as exc:  # noqa: BLE001
        return record("compress", "crash", f"{type(exc).__name__}: {exc} for {x.dtype} {tuple(x.shape)}")
    else:
        back = s.to_dense()
        if not _same_bits(back, x):
            return record("compress", "crash", f"round trip changed a {x.dtype} {tuple(x.shape)} tensor")
        outcome = "accepted"
    from sparsecc.runtime.sparse_tensor import SUPPORTED_DTYPES

    if x.dim() == 2 and x.numel() and x.shape[1] % 16 == 0 and x.dtype in SUPPORTED_DTYPES:
        try:
            pruned = sparsecc.prune_2to4(x)
            back = sparsecc.compress(pruned, "NV24").to_dense()
        except Exception as exc:  # noqa: BLE001 - pruned data of a supported dtype must compress
            return record("compress", "crash", f"prune_2to4 then compress: {type(exc).__name__}: {exc} for "
                          f"{x.dtype} {tuple(x.shape)}")
        groups = (pruned.view(pruned.shape[0], -1, 4) != 0).sum(-1)
        if int(groups.max()) > 2 or not _same_bits(back, pruned):
            return record("compress", "crash", f"prune/compress/to_dense changed a {x.dtype} {tuple(x.shape)} tensor")
    return record("compress", outcome)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal dtype, shape and values, NaN matching NaN."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    af, bf = a.float(), b.float()
    return torch.equal(torch.isnan(af), torch.isnan(bf)) and torch.equal(af.nan_to_num(), bf.nan_to_num())


@st.composite
def edge_matrix(draw: st.DrawFn) -> torch.Tensor:
    """2:4 fp16/bf16 matrices at the dtype's range edges: groups holding +-max, the top binade,
    tiny (subnormal) values, all-equal and all-zero groups, mixed in one row."""
    import sparsecc

    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    dtype = draw(st.sampled_from([torch.float16, torch.bfloat16]))
    fi = torch.finfo(dtype)
    m, k = draw(st.integers(1, 24)), 16 * draw(st.integers(1, 16))
    unit = torch.rand(m, k, generator=gen) * 2 - 1
    magnitude = draw(st.sampled_from(["max", "top", "tiny", "mixed"]))
    if magnitude == "max":
        x = unit * fi.max
        x[:, 0], x[:, min(5, k - 1)] = fi.max, -fi.max * draw(st.sampled_from([1, 0]))
    elif magnitude == "top":
        x = unit.sign() * (0.5 + unit.abs() / 2) * fi.max
    elif magnitude == "tiny":
        x = torch.randint(-8, 9, (m, k), generator=gen).float() * fi.smallest_normal * fi.eps
    else:  # each block of 16 columns at its own magnitude
        pick = torch.randint(0, 4, (m, k // 16), generator=gen)
        scale = torch.tensor([fi.max, 1.0, 1e-3, fi.smallest_normal])[pick]
        x = unit * scale.repeat_interleave(16, dim=1)
    if draw(st.booleans()):  # all-equal groups
        x[:, : k // 2] = draw(st.sampled_from([3.0, -fi.max, fi.max, fi.smallest_normal]))
    if draw(st.booleans()):  # all-zero groups
        x[:, k // 2 :] = 0
    return sparsecc.prune_2to4(x.clamp(-fi.max, fi.max).to(dtype))


@st.composite
def quant_case(draw: st.DrawFn) -> tuple[torch.Tensor, str]:
    """A random tensor (as `dense_matrix`, or one at the range edges) and a quantization scheme,
    good or bad."""
    scheme = draw(st.sampled_from([f.partition(".")[2] for f in QUANT_FORMATS]
                                  + ["w4c", "w8g16z", "", "w4g16", "w8cz", "w4g32z", "w8g64"]))
    return draw(st.one_of(dense_matrix(), edge_matrix())), scheme


def run_compress_quant(x: torch.Tensor, scheme: str) -> str:
    """compress(quant=...) of arbitrary data is a clean error or a quantized tensor whose
    dequantization keeps the 2:4 pattern, has finite scales, zero points and values, and stays
    within half a step of each kept value (`half_step_error`)."""
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
    problem = half_step_error(q, x)
    if problem:
        return record("compress", "crash", f"quant={scheme!r}, {x.dtype} {tuple(x.shape)}: {problem}")
    return record("compress", "accepted")


# ---------------------------------------------------------------------------------- caches

_CACHE_SRC = {
    "add": ("def kernel(X, Y, N, BLOCK: tl.constexpr):\n"
            "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
            "    mask = offs < N\n"
            "    tl.store(Y + offs, tl.load(X + offs, mask=mask) * 2.0 + 1.0, mask=mask)"),
    "other": ("def kernel(X, Y, Z, N, SIZE: tl.constexpr):\n"  # the same name, other parameters
              "    offs = tl.program_id(0) * SIZE + tl.arange(0, SIZE)\n"
              "    mask = offs < N\n"
              "    tl.store(Z + offs, tl.load(X + offs, mask=mask) - tl.load(Y + offs, mask=mask), mask=mask)"),
}
_CACHE_SIG = {"add": {"X": "*fp32", "Y": "*fp32", "N": "i32"},
              "other": {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "N": "i32"}}
_CACHE_CONST = {"add": {"BLOCK": 128}, "other": {"SIZE": 128}}
_CACHE_BLOCKS = (16, 32, 64)
_COMPILE_DAMAGE = ("none", "truncate", "flip-byte", "random-bytes", "index-json", "forge-field", "drop-field",
                   "other-kernel-file", "other-kernel-entry", "dir-in-place", "dangling-link")
_TUNE_DAMAGE = ("none", "json", "best-json", "best-config", "truncate", "random-bytes", "other-kernel-file",
                "empty-list", "id-mismatch", "dir-in-place")
_CACHE_FOLDERS = ("fresh", "empty-env", "a-file", "nested", "odd-name", "cache-off")
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
                     | st.text(max_size=6),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
                     max_leaves=8)


@st.composite
def cache_case(draw: st.DrawFn) -> tuple[str, str, str, object, int]:
    """(compile | autotune, cache folder kind, damage to the stored file, a random JSON value the
    damage may use, a number choosing where it lands and the problem size)."""
    what = draw(st.sampled_from(["compile", "autotune"]))
    damage = draw(st.sampled_from(_COMPILE_DAMAGE if what == "compile" else _TUNE_DAMAGE))
    return what, draw(st.sampled_from(_CACHE_FOLDERS)), damage, draw(_JSON), draw(st.integers(0, 2**31))


class _CacheEnv:
    """SPARSECC_CACHE_DIR / SPARSECC_CACHE / HOME set for one case (a `folder` kind under
    `tmp`), and a ptxas stand-in (the cache keeps only compiles with a cubin); all restored on exit."""

    _VARS = ("SPARSECC_CACHE_DIR", "SPARSECC_CACHE", "HOME")

    def __init__(self, tmp: Path, folder: str):
        self.tmp, self.folder = tmp, folder

    def __enter__(self) -> _CacheEnv:
        from sparsecc.codegen import ptxas

        self.saved = {v: os.environ.get(v) for v in self._VARS}
        self.start_assemble = ptxas.start_assemble
        ptxas.start_assemble = lambda *a, **k: ptxas.PendingCubin.ready(_fake_assemble(*a, **k))
        os.environ["HOME"] = str(self.tmp / "home")
        os.environ.pop("SPARSECC_CACHE", None)
        os.environ["SPARSECC_CACHE_DIR"] = {
            "empty-env": "", "a-file": str(self.tmp / "a-file"), "nested": str(self.tmp / "n" / "e" / "st"),
            "odd-name": str(self.tmp / "ça va ☃ [x] *"), "fresh": str(self.tmp / "c"),
            "cache-off": str(self.tmp / "c"),
        }[self.folder]
        if self.folder == "a-file":
            (self.tmp / "a-file").write_text("a file, not a folder")
        if self.folder == "cache-off":
            os.environ["SPARSECC_CACHE"] = "0"
        return self

    def __exit__(self, *exc: object) -> None:
        from sparsecc.codegen import ptxas

        ptxas.start_assemble = self.start_assemble
        for v, value in self.saved.items():
            if value is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = value


def _fake_assemble(ptx: str, arch: str, **_: object):
    from sparsecc.codegen import ptxas

    return ptxas.CompiledCubin(data=b"\x7fELF" + ptx[-64:].encode(), arch=arch,
                               resources={"kernel": ptxas.KernelResources(registers=32)})


_CACHE_STATE: dict[str, object] = {}


def _cache_state() -> dict[str, object]:
    """Per process: both kernels (`add`, `other`), what a good cache holds for each (`<name>.key`,
    `<name>.bytes`, `<name>.entry`) and `ref`, an uncached compile of `add`."""
    if _CACHE_STATE:
        return _CACHE_STATE
    import sparsecc
    from sparsecc.runtime import cache

    tmp = Path(tempfile.mkdtemp(prefix="sparsecc-fuzz-cache-"))
    state: dict[str, object] = {}
    with _CacheEnv(tmp, "fresh"):
        for name, src in _CACHE_SRC.items():
            kernel, _ = _load_kernel(src)
            sparsecc.compile(kernel, signature=_CACHE_SIG[name], constexprs=_CACHE_CONST[name], target="sm_90")
            (entry,) = [p for p in (tmp / "c").rglob("*" + cache.SUFFIX) if p.stem != state.get("add.key")]
            state |= {name: kernel, f"{name}.key": entry.stem, f"{name}.bytes": entry.read_bytes(),
                      f"{name}.entry": cache.get(entry.stem)}
        os.environ["SPARSECC_CACHE"] = "0"
        state["ref"] = sparsecc.compile(state["add"], signature=_CACHE_SIG["add"], constexprs=_CACHE_CONST["add"],
                                        target="sm_90")
    shutil.rmtree(tmp, ignore_errors=True)
    _CACHE_STATE.update(state)
    return _CACHE_STATE


def _paths_in(value: object, path: tuple = ()) -> list[tuple]:
    """Every key/index path inside a JSON-like value (the value itself included)."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths_in(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths_in(v, (*path, i))
    return out


def _damage_compile_entry(path: Path, damage: str, payload: object, pick: int) -> None:
    """Write the `add` kernel's cache entry at `path`, damaged as `damage` says."""
    import copy
    import hashlib
    import json

    from sparsecc.runtime import cache

    state = _cache_state()
    good: bytes = state["add.bytes"]
    path.parent.mkdir(parents=True, exist_ok=True)
    if damage == "dir-in-place":
        path.mkdir()
        return
    if damage == "dangling-link":
        path.symlink_to(path.parent / "nowhere")
        return
    if damage in ("forge-field", "drop-field", "other-kernel-entry"):
        entry = state["other.entry" if damage == "other-kernel-entry" else "add.entry"]
        meta = copy.deepcopy(entry.metadata)
        if damage != "other-kernel-entry":
            spots = _paths_in(meta)[1:]
            *outer, last = spots[pick % len(spots)]
            box = meta
            for k in outer:
                box = box[k]
            if damage == "drop-field":
                del box[last]
            else:
                box[last] = payload
        cache.put(path.stem, cache.CacheEntry(asm=entry.asm, metadata=meta))  # a valid checksum
        return
    data = {
        "none": good,
        "truncate": good[:pick % len(good)],
        "flip-byte": good[:pick % len(good)] + bytes([good[pick % len(good)] ^ (1 << pick % 8)])
        + good[pick % len(good) + 1:],
        "random-bytes": random.Random(pick).randbytes(pick % 300),
        "other-kernel-file": state["other.bytes"],
    }.get(damage)
    if data is None:  # index-json: any JSON index around no blobs, with this key when it is a dict
        index = dict(payload, key=path.stem) if isinstance(payload, dict) else payload
        body = json.dumps(index).encode()
        body = len(body).to_bytes(8, "little") + body
        data = cache.MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    path.write_bytes(data)


def _damage_tune_file(tuner, path: Path, damage: str, payload: object, pick: int, problem: str) -> None:
    """Write `tuner`'s autotune file at `path`, damaged as `damage` says."""
    import json

    from sparsecc.runtime.autotune import Autotuner, Config

    ident, digest = tuner._ident
    good = json.dumps({"kernel": ident, "id": digest, "best": {problem: Config({"BLOCK": 32}).to_json()}})
    path.parent.mkdir(parents=True, exist_ok=True)
    if damage == "dir-in-place":
        path.mkdir()
        return
    if damage == "other-kernel-file":
        other = Autotuner(_cache_state()["other"], [Config({"SIZE": b}) for b in _CACHE_BLOCKS], key=["N"])
        good = json.dumps({"kernel": other._ident[0], "id": other._ident[1],
                           "best": {problem: Config({"SIZE": 32}).to_json()}})
    winner = {"kwargs": {"BLOCK": [16, 32, 64, 3, 0, -16, 2**40, "32", None][pick % 9]},
              "num_warps": [4, 8, 0, -1][pick // 9 % 4], "num_stages": 3}
    text = {
        "none": good, "other-kernel-file": good, "truncate": good[:pick % len(good)],
        "json": json.dumps(payload), "empty-list": "[]",
        "best-json": json.dumps({"kernel": ident, "id": digest, "best": {problem: payload}}),
        "best-config": json.dumps({"kernel": ident, "id": digest, "best": {problem: winner}}),
        "id-mismatch": good.replace(digest, digest[::-1]),
    }.get(damage)
    if text is None:  # random-bytes
        path.write_bytes(random.Random(pick).randbytes(pick % 300))
        return
    path.write_text(text)


def run_caches(what: str, folder: str, damage: str, payload: object, pick: int) -> str:
    """A compile or an autotuned launch of a small kernel over a damaged, forged or odd cache.
    The compile must give the reference kernel's parameters and a launch plan; the launch (CPU
    interpreter) must match torch on random data with a NaN-poisoned output; at most a warning
    may be said (one naming the file: `clean error`). Any exception is a crash.

    A forgery of the right form with other values (a checksum is not a signature) is out of
    reach, so the damages keep either the form or the kernel identity wrong."""
    import warnings

    import sparsecc
    from sparsecc.frontend.jit import InterpreterFallbackWarning
    from sparsecc.runtime import cache
    from sparsecc.runtime.autotune import Autotuner, Config
    from sparsecc.runtime.launcher import plan_for

    state = _cache_state()
    kernel = state["add"]
    tmp = Path(tempfile.mkdtemp(prefix="sparsecc-fuzz-cache-"))
    n = 1 + pick % 700
    case = f"{what} {folder} {damage} pick={pick} payload={payload!r}"[:400]
    cwd_had = Path("autotune").exists()  # SPARSECC_CACHE_DIR="" once meant ./autotune
    try:
        with _CacheEnv(tmp, folder), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", InterpreterFallbackWarning)
            where = cache.cache_dir() / "x"
            tuner = Autotuner(kernel, [Config({"BLOCK": b}) for b in _CACHE_BLOCKS], key=["N"],
                              timer=lambda fn: (fn(), 1.0)[1], verbose=False)
            if folder != "a-file":  # (nothing can be stored under a file)
                if folder == "cache-off":
                    os.environ["SPARSECC_CACHE"] = "1"  # the damage lies where the cache would be
                if what == "compile":
                    where = cache._path(state["add.key"])
                    _damage_compile_entry(where, damage, payload, pick)
                else:
                    where = Path(tuner._disk_path)
                    _damage_tune_file(tuner, where, damage, payload, pick, tuner._problem_key((None, None, n), {}))
                if folder == "cache-off":
                    os.environ["SPARSECC_CACHE"] = "0"
            gen = torch.Generator().manual_seed(pick)
            x = torch.randn(n, generator=gen)
            y = torch.full((n,), float("nan"))
            if what == "compile":
                ck = sparsecc.compile(kernel, signature=_CACHE_SIG["add"], constexprs=_CACHE_CONST["add"],
                                      target="sm_90")
                ref = state["ref"]
                if (ck.flat_signature, ck.flat_arg_names) != (ref.flat_signature, ref.flat_arg_names):
                    return record("caches", "crash", f"the compile gave parameters {ck.flat_arg_names} "
                                                     f"{ck.flat_signature}: {case}")
                plan_for(ck)  # what a GPU launch builds first from the compile
                kernel[(-(-n // 128),)](x, y, n, BLOCK=128)
            else:
                tuner[lambda meta: (-(-n // meta["BLOCK"]),)](x, y, n)
                picked = tuner.best[tuner._problem_key((x, y, n), {})]
                if not any(picked is c for c in tuner.configs):
                    return record("caches", "crash", f"the autotuner used {picked}, not one of its configs: {case}")
    except Exception as exc:  # noqa: BLE001 - a cache never makes a compile or launch fail
        return record("caches", "crash", f"{type(exc).__name__}: {exc}\n{case}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not cwd_had and Path("autotune").exists():
        return record("caches", "crash", f"a cache folder appeared in the working directory: {case}")
    if not torch.allclose(y, x * 2.0 + 1.0):
        return record("caches", "crash", f"wrong result (NaN left: {int(y.isnan().sum())}): {case}")
    if not said:
        return record("caches", "accepted")
    named = all(str(where.parent) in str(w.message) or str(where) in str(w.message) for w in said)
    return record("caches", "clean error" if named else "unlocated error")


def half_step_error(q, dense: torch.Tensor) -> str:  # noqa: ANN001 - a QuantizedSparseTensor
    """Why `q` does not hold `dense` (2:4, fp16/bf16) within half a quantization step ('' if it
    does): non-finite scales, zero points or dequantized values, a value where `dense` has a
    zero, or an error over scale / 2 plus the output's own rounding."""
    out = q.to_dense()
    if out.shape != dense.shape or out.dtype != dense.dtype:
        return f"to_dense gave {out.dtype} {tuple(out.shape)}"
    for name, t in (("scales", q.scales), ("zeros", q.zeros), ("to_dense", out)):
        if t is not None and not bool(torch.isfinite(t).all()):
            return f"non-finite {name}"
    if bool(((out != 0) & (dense == 0)).any()):
        return "a value where the input had a zero"
    fi = torch.finfo(dense.dtype)
    step = q.scales.double().repeat_interleave(dense.shape[1] // q.scales.shape[1], dim=1)
    tol = step * (0.5 + 2.0**-14) + out.double().abs() * fi.eps / 2 + fi.smallest_normal * fi.eps
    err = (out.double() - dense.double()).abs()
    if not bool((err <= tol).all()):
        worst = int(torch.argmax(err - tol))
        r, c = divmod(worst, dense.shape[1])
        return (f"row {r}, column {c}: {float(dense[r, c])!r} came back {float(out[r, c])!r}, more than half "
                f"its step {float(step[r, c])!r} off")
    return ""


# ---------------------------------------------------------------------------------- torch

_FEATURES = (16, 32, 48, 7, 24, 40)
"""Layer widths: multiples of 16 (sparsified) and others (a Linear sparsify_ must skip)."""
_ARRAYS = ("values", "meta", "scales", "zeros", "weight_scale")
"""A SparseLinear's weight arrays in a state dict."""


class _Chain(torch.nn.Module):
    """Runs its parts in order; they live in a Sequential, a ModuleList or a ModuleDict."""

    def __init__(self, parts: list, kind: str) -> None:
        super().__init__()
        if kind == "list":
            self.parts = torch.nn.ModuleList(parts)
        elif kind == "dict":
            self.parts = torch.nn.ModuleDict({f"p{i}": p for i, p in enumerate(parts)})
        else:
            self.parts = torch.nn.Sequential(*parts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = self.parts.values() if isinstance(self.parts, torch.nn.ModuleDict) else self.parts
        for part in parts:
            x = part(x)
        return x


@st.composite
def torch_case(draw: st.DrawFn) -> dict:
    """A model spec (`build_model`): a chain of Linears (some without bias, some of widths
    sparsify_ skips, some the same module used twice) and activations, nested in Sequential /
    ModuleList / ModuleDict containers (or one bare Linear); a dtype, a quantization, and
    maybe a corruption of one array of its state dict."""
    dims = [draw(st.sampled_from(_FEATURES))]
    layers: list[tuple[int, int, bool]] = []
    order: list[object] = []  # a layer index, or "relu"
    for _ in range(draw(st.integers(1, 5))):
        shared = [i for i, (a, b, _) in enumerate(layers) if a == b == dims[-1]]
        if shared and draw(st.booleans()):
            order.append(draw(st.sampled_from(shared)))
        else:
            out = draw(st.sampled_from([dims[-1], *_FEATURES]))
            layers.append((dims[-1], out, draw(st.booleans())))
            order.append(len(layers) - 1)
            dims.append(out)
        if draw(st.booleans()):
            order.append("relu")
    bare = len(layers) == 1 and len(order) == 1 and draw(st.booleans())
    tree = order[0] if bare else _nest(draw, order, 3)
    return {"layers": layers, "tree": tree, "seed": draw(st.integers(0, 2**31)),
            "dtype": draw(st.sampled_from([torch.float16, torch.bfloat16])),
            "quant": draw(st.sampled_from([None, None, "w4g16", "w8cz", "w4g32z"])),
            "corrupt": draw(st.none() | st.tuples(st.integers(0, 99), st.sampled_from(["dtype", "shape"])))}


def _nest(draw: st.DrawFn, parts: list, depth: int) -> tuple:
    kind = draw(st.sampled_from(["seq", "list", "dict"]))
    if depth == 0 or len(parts) < 2 or not draw(st.booleans()):
        return (kind, parts)
    cut = draw(st.integers(1, len(parts) - 1))
    return (kind, [_nest(draw, parts[:cut], depth - 1), _nest(draw, parts[cut:], depth - 1)])


def build_model(case: dict, seed: int | None = None) -> torch.nn.Module:
    """The model a `torch_case` spells (weights from `seed`, default the case's); one Linear
    module per layer index, however often the tree uses it."""
    with torch.random.fork_rng():
        torch.manual_seed(case["seed"] if seed is None else seed)
        linears = [torch.nn.Linear(a, b, bias=bias) for a, b, bias in case["layers"]]

    def make(node: object) -> torch.nn.Module:
        if node == "relu":
            return torch.nn.ReLU()
        if isinstance(node, int):
            return linears[node]
        kind, parts = node
        return _Chain([make(p) for p in parts], kind)

    return make(case["tree"]).to(case["dtype"])


def run_torch(case: dict) -> str:
    """sparsify_ of an odd model replaces every Linear it can (a shared one by one shared
    SparseLinear), computes what the dense model with the pruned (or dequantized) weights
    computes, and round-trips its state dict (and a safetensors file) exactly; a state dict with
    one weight array of another dtype or shape is refused with a RuntimeError naming the layer."""
    import copy

    import sparsecc
    from sparsecc.nn import SparseLinear, sparsify_

    quant, dtype = case["quant"], case["dtype"]
    group = {"w4g16": 16, "w4g32z": 32}.get(quant or "")
    dense = build_model(case)
    try:
        sparse = sparsify_(copy.deepcopy(dense), quant=quant)
    except Exception as exc:  # noqa: BLE001 - every model here is one sparsify_ takes
        return record("torch", "crash", f"sparsify_: {type(exc).__name__}: {exc}\n{case}")
    ours: dict[int, torch.nn.Module] = {}
    for name, m in dense.named_modules(remove_duplicate=False):
        if not isinstance(m, torch.nn.Linear):
            continue
        fits = m.in_features % 16 == 0 and (group is None or m.in_features % group == 0)
        got = sparse.get_submodule(name) if name else sparse
        if fits != isinstance(got, SparseLinear) or ours.setdefault(id(m), got) is not got:
            return record("torch", "crash", f"sparsify_ left {name or '(root)'} as {type(got).__name__} or "
                          f"broke its sharing\n{case}")
        if not fits:
            continue
        pruned = sparsecc.prune_2to4(m.weight.detach())
        weight = got.weight()
        problem = half_step_error(weight, pruned) if quant else ("" if torch.equal(weight.to_dense(), pruned) else
                                                                 "the stored weight is not the pruned one")
        if problem:
            return record("torch", "crash", f"{name or '(root)'}: {problem}\n{case}")
    reference = copy.deepcopy(dense)  # the same sharing: one weight per module
    for name, m in reference.named_modules():
        got = sparse.get_submodule(name) if name else sparse
        if isinstance(got, SparseLinear):
            m.weight.data = got.weight().to_dense()
    x = torch.randn(3, case["layers"][0][0], generator=torch.Generator().manual_seed(case["seed"])).to(dtype)
    with torch.no_grad():
        y, want = sparse(x), reference(x)
        scale = max(float(want.float().abs().max()), 1.0)
        if not torch.allclose(y.float(), want.float(), rtol=2e-2, atol=2e-2 * scale) or bool(y.isnan().any()):
            return record("torch", "crash", f"outputs differ from the dense model with the same weights\n{case}")
        fresh = sparsify_(build_model(case, case["seed"] + 1), quant=quant)
        fresh.load_state_dict(sparse.state_dict())
        if not torch.equal(fresh(x), y):
            return record("torch", "crash", f"the state dict did not round-trip\n{case}")
        if importlib.util.find_spec("safetensors") is not None:
            from safetensors.torch import load_model, save_model

            path = Path(tempfile.mkdtemp(prefix="sparsecc-fuzz-")) / "model.safetensors"
            save_model(sparse, str(path))
            fresh = sparsify_(build_model(case, case["seed"] + 2), quant=quant)
            load_model(fresh, str(path))
            if not torch.equal(fresh(x), y):
                return record("torch", "crash", f"the safetensors file did not round-trip\n{case}")
    return _corrupted_load(sparse, case)


def _corrupted_load(sparse: torch.nn.Module, case: dict) -> str:
    """Load a state dict with one weight array changed in dtype or shape: a RuntimeError naming
    the array's layer, or a crash (loaded silently, or another exception)."""
    from sparsecc.nn import sparsify_

    state = dict(sparse.state_dict())
    keys = [k for k in state if k.rpartition(".")[2] in _ARRAYS]
    if case["corrupt"] is None or not keys:
        return record("torch", "accepted")
    pick, how = case["corrupt"]
    key = keys[pick % len(keys)]
    t = state[key]
    if how == "dtype":
        other = next(d for d in (torch.float16, torch.int16, torch.float32, torch.int8) if d != t.dtype)
        state[key] = t.to(other)
    else:
        state[key] = torch.zeros(t.shape[0] + 1, *t.shape[1:], dtype=t.dtype)
    layer = key.rpartition(".")[0]
    target = sparsify_(build_model(case, case["seed"] + 3), quant=case["quant"])
    try:
        target.load_state_dict(state)
    except RuntimeError as exc:
        named = f"SparseLinear {layer + '.' if layer else '(root)'}" in str(exc)
        return record("torch", "clean error" if named else "unlocated error")
    except Exception as exc:  # noqa: BLE001
        return record("torch", "crash", f"loading a corrupted {key}: {type(exc).__name__}: {exc}\n{case}")
    return record("torch", "crash", f"a state dict with {key} as {state[key].dtype} {tuple(state[key].shape)} "
                  f"loaded silently\n{case}")


# ---------------------------------------------------------------------------------- report


def table() -> str:
    """The outcome counts as a markdown table, one row per area."""
    kinds = ["accepted", "clean error", "unlocated error", "crash"]
    rows = ["| area | cases | " + " | ".join(kinds) + " |", "|---|---" + "|---" * len(kinds) + "|"]
    for area in ("cli", "cli (each pass)", "parser", "frontend", "compress", "torch", "caches", "differential"):
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

__all__ = ["CORPUS", "OUTCOMES", "Crash", "build_model", "cache_case", "dense_matrix", "edge_matrix",
           "half_step_error", "kernel_source", "mutated_ir", "run_caches", "run_cli", "run_compress",
           "run_differential", "run_frontend", "run_torch", "table", "token_soup", "torch_case"]
