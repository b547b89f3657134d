"""`sparsecc-opt`: parse sparsecc IR, run a pass pipeline, print the result.

A small driver of our own (rather than xDSL's xDSLOptMain) so that every user error —
malformed IR, unknown op, unknown pass, verifier or pass failure — becomes one
`FILE:LINE:COL: error: message` diagnostic and exit code 1, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import DiagnosticException, ParseError

from sparsecc.tools.diagnostics import (
    Diagnostic,
    LocatingParser,
    SourceFile,
    find_failing_op,
    format_error,
    locate,
)
from sparsecc.tools.ir_checks import first_structural_error

PROG = "sparsecc-opt"
MAX_NESTING = 1000
"""Nesting depth (regions and attributes) the parser and passes are given stack for."""
BUG_REPORT = ("this is a bug in sparsecc, not in the input: please report it with the input "
              "file and command line (SPARSECC_DEBUG=1 prints the traceback)")
USER_ERRORS: tuple[type[BaseException], ...] = (DiagnosticException, ValueError)
"""What a pass raises for IR it rejects: anything else escaping a pass is an internal error."""


class ToolError(Exception):
    """A user error that has already been turned into a diagnostic."""

    def __init__(self, diag: Diagnostic):
        super().__init__(diag.message)
        self.diag = diag


def build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG, description="Run sparsecc passes on IR.")
    ap.add_argument("input", nargs="?", default="-", help="input file ('-' or none: stdin)")
    ap.add_argument("-p", "--passes", default="", help="pass pipeline, e.g. 'a,b{opt=v}'")
    ap.add_argument("-o", "--output", default="-", help="output file ('-': stdout)")
    ap.add_argument("--print-op-generic", action="store_true", help="print ops in generic form")
    ap.add_argument("--mlir-print-debuginfo", action="store_true",
                    help="print each op's source location, loc(...) (kernel file:line:col)")
    ap.add_argument("--list-passes", action="store_true", help="list the available passes")
    ap.add_argument(
        "--print-ir-before-all", action="store_true", help="dump IR before each pass (stderr)"
    )
    ap.add_argument(
        "--print-ir-after-all", action="store_true", help="dump IR after each pass (stderr)"
    )
    ap.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check errors against '// expected-error {{...}}' comments",
    )
    ap.add_argument(
        "--emit",
        choices=("mlir", "ptx"),
        default="mlir",
        help="what to print: the IR (default) or PTX (of ptx-dialect IR, or of ttgir through the ptx stage)",
    )
    ap.add_argument(
        "--split-input-file",
        action="store_true",
        help="process each '// -----'-separated chunk of the input on its own",
    )
    return ap


def print_module(module: ModuleOp, generic: bool, debuginfo: bool = False) -> str:
    """The module as text, exactly as `str(module)` prints it (or in generic form; with
    `debuginfo`, each op's `loc(...)`)."""
    out = StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(module)
    return out.getvalue() + "\n"


_BOM = b"\xef\xbb\xbf"


def _read_input(path: str) -> SourceFile:
    """The input as text: a UTF-8 byte-order mark is skipped; invalid UTF-8 and NUL bytes are
    errors at their line and column."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise ToolError(Diagnostic(f"cannot read input: {exc}")) from None
    data = data.removeprefix(_BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = SourceFile(name, data[: exc.start].decode("utf-8"))
        line, col = good.line_col(len(good.text))
        raise ToolError(Diagnostic(f"invalid UTF-8 byte 0x{data[exc.start]:02x} in the input",
                                   line, col)) from None
    src = SourceFile(name, text)
    nul = text.find("\0")
    if nul >= 0:
        raise ToolError(Diagnostic("NUL byte in the input", *src.line_col(nul)))
    return src


def parse_source(ctx: Context, src: SourceFile) -> tuple[ModuleOp, dict]:
    """Parse and verify the input; every failure becomes a located ToolError."""
    try:
        parser = LocatingParser(ctx, src.text, src.name)  # (lexes the first token)
        module = parser.parse_module()
    except ParseError as exc:
        line, col = src.line_col(exc.span.start)
        raise ToolError(Diagnostic(exc.msg, line, col)) from None
    except RecursionError:
        raise ToolError(too_deep(src)) from None
    problem = first_structural_error(module)
    if problem is not None:
        op, message = problem
        raise ToolError(_at(op, f"'{op.name}' op {message}", parser.op_positions, src))
    verify_module(module, parser.op_positions, src, after=None)
    return module, parser.op_positions


def too_deep(src: SourceFile) -> Diagnostic:
    """The error for input nested past the recursion limit, at its deepest `{`."""
    depth, deepest, at = 0, 0, 0
    for i, ch in enumerate(src.text):
        if ch == "{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, i
        elif ch == "}":
            depth -= 1
    return Diagnostic(f"the input nests regions too deeply ({deepest} levels of braces; "
                      f"sparsecc-opt handles about {MAX_NESTING})", *src.line_col(at))


def verify_module(module: ModuleOp, positions: dict, src: SourceFile, after: str | None) -> None:
    """Run the verifier; on failure pin the error to the op that fails on its own."""
    try:
        module.verify()
    except Exception as exc:  # noqa: BLE001 - verifiers raise VerifyException, ValueError, ...
        failing = find_failing_op(module)
        op, err = failing if failing is not None else (None, exc)
        message = _describe(err)
        if op is not None and f"'{op.name}'" not in message and op.name not in message:
            message = f"'{op.name}' op {message}"
        if after is not None:
            message += f" (after pass '{after}')"
        raise ToolError(_at(op, message, positions, src)) from None


def _at(op, message: str, positions: dict, src: SourceFile) -> Diagnostic:
    loc = locate(op, positions, src)
    return Diagnostic(message, *loc) if loc else Diagnostic(message)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def build_pipeline(
    spec: str, passes: dict[str, Callable[[], type[ModulePass]]]
) -> list[tuple[str, ModulePass]]:
    """Parse `-p` into pass instances; unknown passes and bad options are ToolErrors."""
    if not spec.strip():
        return []
    try:
        specs = list(parse_pipeline(spec))
    except BaseException as exc:  # noqa: BLE001 - ArgSpecParseError derives from BaseException
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise ToolError(Diagnostic(f"invalid pass pipeline '{spec}': {_describe(exc)}")) from None
    result = []
    for s in specs:
        if s.name not in passes:
            known = ", ".join(sorted(passes))
            raise ToolError(Diagnostic(f"unknown pass '{s.name}'; known passes: {known}"))
        try:
            result.append((s.name, passes[s.name]().from_pass_spec(s)))
        except Exception as exc:  # noqa: BLE001 - bad options raise ValueError and friends
            raise ToolError(
                Diagnostic(f"invalid options for pass '{s.name}': {_describe(exc)}")
            ) from None
    return result


def run_pipeline(
    ctx: Context,
    module: ModuleOp,
    pipeline: list[tuple[str, ModulePass]],
    positions: dict,
    src: SourceFile,
    args: argparse.Namespace,
) -> None:
    for name, pass_ in pipeline:
        if args.print_ir_before_all:
            _dump(f"Before {name}", module, args.print_op_generic)
        try:
            pass_.apply(ctx, module)
        except RecursionError:
            raise ToolError(too_deep(src)) from None
        except Exception as exc:  # noqa: BLE001 - sorted into user and internal errors below
            op = getattr(exc, "op", None)
            message = _describe(exc)
            if not isinstance(exc, _user_errors()):
                _debug_traceback()
                message = f"internal error in pass '{name}': {type(exc).__name__}: {message} ({BUG_REPORT})"
                raise ToolError(_at(op, message, positions, src)) from None
            raise ToolError(_at(op, f"pass '{name}' failed: {message}", positions, src)) from None
        if args.print_ir_after_all:
            _dump(f"After {name}", module, args.print_op_generic)
        verify_module(module, positions, src, after=name)


def _user_errors() -> tuple[type[BaseException], ...]:
    """The exception classes passes and the lowering raise for input they reject."""
    from sparsecc.analysis.layouts import LayoutError
    from sparsecc.codegen.lower_base import LoweringError
    from sparsecc.codegen.ptx_printer import PtxEmitError

    return (*USER_ERRORS, LoweringError, LayoutError, PtxEmitError)


def _debug_traceback() -> None:
    """With SPARSECC_DEBUG=1, the traceback of the exception being handled (for bug reports)."""
    if os.environ.get("SPARSECC_DEBUG", "").strip() not in ("", "0"):
        import traceback

        traceback.print_exc()


def _dump(what: str, module: ModuleOp, generic: bool) -> None:
    sys.stderr.write(f"// -----// IR Dump {what} //----- //\n")
    sys.stderr.write(print_module(module, generic))
    sys.stderr.flush()


def write_output(path: str, text: str) -> None:
    """Write the result like `mlir-opt -o`: to stdout for '-'; through a symbolic link to the
    file it names; straight into a device node or FIFO (`/dev/null`); and a regular file is
    replaced atomically (a temporary file beside it, then a rename) keeping its permission
    bits, so a failed write leaves the old output whole. A file without write permission is
    not replaced."""
    if path == "-":
        _write_stdout(text)
        return
    target = os.path.realpath(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ToolError(Diagnostic(f"cannot write output '{path}': {exc.strerror}")) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(Diagnostic(f"cannot write output '{path}': it is a directory"))
        try:
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise ToolError(Diagnostic(f"cannot write output '{path}': {exc.strerror}")) from None
        return
    refusal = None if st is None else _why_not_writable(target, st)
    if refusal is not None:
        raise ToolError(Diagnostic(f"cannot write output '{path}': {refusal}"))
    _replace_atomically(path, target, text, st)


def _why_not_writable(target: str, st: os.stat_result) -> str | None:
    """Why the existing regular file `target` (whose stat is `st`) must not be replaced, or None.

    The replacement is a rename inside the folder, which needs only the folder's permission, so
    the file's own is asked here, as `open(target, "w")` would: `os.access(W_OK)` (owner, group
    and other bits, ACLs, root's override). A file without any write bit is refused even for
    root, as the read-only output it says it is.

        _why_not_writable("/etc/hosts", os.stat("/etc/hosts"))  # as a user: 'permission denied ...'
    """
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "the file is read-only"
    if not os.access(target, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        return "permission denied (this user may not write the file)"
    return None


def _replace_atomically(path: str, target: str, text: str, old: os.stat_result | None) -> None:
    directory = os.path.dirname(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".sparsecc-opt-", suffix=".tmp")
    except OSError as exc:
        raise ToolError(Diagnostic(f"cannot write output '{path}': {exc.strerror}")) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if old is not None:
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise ToolError(Diagnostic(f"cannot write output '{path}': {exc.strerror}")) from None


def _write_stdout(text: str) -> None:
    """stdout; a full disk or closed pipe is an error message, not a traceback."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        raise ToolError(Diagnostic("cannot write output: the reader closed the pipe")) from None
    except OSError as exc:
        _silence_stdout()
        raise ToolError(Diagnostic(f"cannot write output: {exc.strerror}")) from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def compile_source(src: SourceFile, args: argparse.Namespace) -> str:
    """Parse, verify, run the passes; the printed module, or a ToolError."""
    from sparsecc.dialects import make_context
    from sparsecc.passes import get_all_passes

    pipeline = build_pipeline(args.passes, get_all_passes())
    ctx = make_context()
    module, positions = parse_source(ctx, src)
    run_pipeline(ctx, module, pipeline, positions, src, args)
    if getattr(args, "emit", "mlir") == "ptx":
        return emit_ptx_text(module, positions, src)
    return print_module(module, args.print_op_generic, args.mlir_print_debuginfo)


def emit_ptx_text(module: ModuleOp, positions: dict | None = None, src: SourceFile | None = None) -> str:
    """PTX text of a module: a ptx-dialect module (convert-ttg-to-ptx's output) is printed as
    it is; ttgir (its `ttg.target` names the GPU) first runs the compiler's ptx stage
    (`compiler.make_ptx`: tritongpu-insert-barriers, allocate-shared-memory, convert-ttg-to-ptx on, switches at their defaults or SPARSECC_*
    environment overrides). The ttgir rewrites that end the ttgir stage (sink local loads, warp
    specialize) are the input's to have run: `-p` names them. An error that names an op of the
    input (`exc.op`) is reported at it, given `positions` and `src`; one that is not a user error
    says it is an internal one."""
    from sparsecc.codegen.ptx_printer import emit_ptx, kernels_of
    from sparsecc.compiler import CompileOptions, StageResult, check_target, make_ptx, run_stage
    from sparsecc.dialects.ttg import module_target

    try:
        if kernels_of(module):
            return emit_ptx(module)
        target = module_target(module)  # checked: a located error for an unknown one
        if target is None:
            raise ToolError(Diagnostic("--emit=ptx needs ttgir or the ptx dialect: a module with a "
                                       "\"ttg.target\" attribute (run convert-tt-to-ttg first) or ptx.kernel ops"))
        # `compiler.lower_to_ptx`, but on the module itself (it is not printed after this), so an
        # error's op is one of the input's and has a place in it
        opts = CompileOptions.create(target=check_target(target))
        result = StageResult()
        run_stage(module, "ptx", make_ptx(opts), opts, result)
        ptx = result.asm["ptx"]
    except ToolError:
        raise
    except RecursionError:
        raise
    except Exception as exc:  # noqa: BLE001 - a lowering limit is a user-facing diagnostic, not a crash
        message = f"cannot lower to PTX: {_describe(exc)}"
        if not isinstance(exc, _user_errors()):
            _debug_traceback()
            message = f"internal error while lowering to PTX: {type(exc).__name__}: {_describe(exc)} ({BUG_REPORT})"
        op = getattr(exc, "op", None)
        if op is None or positions is None or src is None:
            raise ToolError(Diagnostic(message)) from None
        raise ToolError(_at(op, message, positions, src)) from None
    return ptx


# --verify-diagnostics --------------------------------------------------------------

_EXPECTED = re.compile(r"//\s*expected-error\s*(@(?:[+-][0-9]+|above|below))?\s*\{\{(.*?)\}\}")


def expected_errors(src: SourceFile) -> list[tuple[int, str]]:
    """(line, text) of each `// expected-error[@+N|@-N] {{text}}` comment."""
    result = []
    for lineno, line in enumerate(src.text.split("\n"), start=src.first_line):
        for m in _EXPECTED.finditer(line):
            offset = m.group(1)
            target = lineno
            if offset in ("@above",):
                target -= 1
            elif offset in ("@below",):
                target += 1
            elif offset:
                target += int(offset[1:])
            result.append((target, m.group(2).strip()))
    return result


def check_diagnostics(src: SourceFile, produced: list[Diagnostic]) -> int:
    """Match produced errors to expected ones by line and text; report every mismatch."""
    expected = expected_errors(src)
    unmatched = list(produced)
    failures = []
    for line, text in expected:
        hit = next((d for d in unmatched if d.line == line and text in d.message), None)
        if hit is None:
            failures.append(Diagnostic(f'expected error "{text}" was not produced', line, 1))
        else:
            unmatched.remove(hit)
    for d in unmatched:
        failures.append(Diagnostic(f"unexpected error: {d.message}", d.line, d.column))
    for d in failures:
        sys.stderr.write(format_error(src, d))
    return 1 if failures else 0


SPLIT_MARKER = re.compile(r"^// -----\s*$", re.MULTILINE)


def split_chunks(src: SourceFile) -> list[SourceFile]:
    """The `// -----`-separated chunks of the input, each knowing the line it starts on, so
    that its diagnostics keep the line numbers of the whole file (linear in the input: the
    chunks were once padded with the newlines before them, quadratic in time and memory)."""
    bounds, start = [], 0
    for m in SPLIT_MARKER.finditer(src.text):
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(src.text)))
    chunks, line, counted = [], src.first_line, 0
    for a, b in bounds:
        line += src.text.count("\n", counted, a)
        counted = a
        chunks.append(SourceFile(src.name, src.text[a:b], first_line=line))
    return chunks


def process(src: SourceFile, args: argparse.Namespace) -> tuple[str | None, int]:
    """Compile one input (or chunk): (printed module or None, exit status); errors go to stderr."""
    try:
        text = compile_source(src, args)
    except ToolError as exc:
        if args.verify_diagnostics:
            return None, check_diagnostics(src, [exc.diag])
        sys.stderr.write(format_error(src, exc.diag))
        return None, 1
    except RecursionError:
        diag = too_deep(src)
        if args.verify_diagnostics:
            return None, check_diagnostics(src, [diag])
        sys.stderr.write(format_error(src, diag))
        return None, 1
    except Exception as exc:  # noqa: BLE001 - last resort: still no traceback for users
        _debug_traceback()
        diag = Diagnostic(f"internal error: {type(exc).__name__}: {_describe(exc)} ({BUG_REPORT})")
        if args.verify_diagnostics:
            return None, check_diagnostics(src, [diag])
        sys.stderr.write(format_error(src, diag))
        return None, 1
    if args.verify_diagnostics:
        status = check_diagnostics(src, [])
        if status:
            return None, status
    return text, 0


def main(argv: list[str] | None = None) -> int:
    """Run the tool on a thread with stack for `MAX_NESTING` levels of nested regions (the
    parser, verifier and printer recurse once per level, a few frames each)."""
    result: list[int] = []
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 40 * MAX_NESTING))
    stack = threading.stack_size(512 << 20)
    try:
        worker = threading.Thread(target=lambda: result.append(_guarded_main(argv)), name=PROG)
        worker.start()
        worker.join()
    finally:
        threading.stack_size(stack)
        sys.setrecursionlimit(old_limit)
    return result[0]


def _guarded_main(argv: list[str] | None) -> int:
    """`_main`, with whatever escapes it reported as an internal error (never a traceback)."""
    try:
        return _main(argv)
    except SystemExit as exc:  # argparse: --help (0) or a bad flag (2)
        return exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        _debug_traceback()
        sys.stderr.write(f"{PROG}: internal error: {type(exc).__name__}: {_describe(exc)} ({BUG_REPORT})\n")
        return 1


def _main(argv: list[str] | None) -> int:
    args = build_arg_parser().parse_args(argv)
    if args.list_passes:
        from sparsecc.passes import TOOL_PASSES, describe, get_all_passes

        notes = {name: f"  ({what})" for name, what in TOOL_PASSES.items()}
        try:
            # one line per pass: its name, what it does, and whether the compiler runs it
            _write_stdout("".join(f"{name:<28} {describe(name)}{notes.get(name, '')}\n"
                                  for name in sorted(get_all_passes())))
        except ToolError as exc:
            sys.stderr.write(format_error(SourceFile(PROG, ""), exc.diag))
            return 1
        return 0
    src = SourceFile(args.input if args.input != "-" else "<stdin>", "")
    try:
        src = _read_input(args.input)
    except ToolError as exc:
        sys.stderr.write(format_error(src, exc.diag))
        return 1
    results = [process(chunk, args) for chunk in (split_chunks(src) if args.split_input_file else [src])]
    status = max(code for _, code in results)
    if status:  # nothing is written unless every chunk succeeded
        return status
    try:
        write_output(args.output, "// -----\n".join(text for text, _ in results if text is not None))
    except ToolError as exc:
        sys.stderr.write(format_error(src, exc.diag))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
