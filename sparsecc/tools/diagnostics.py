"""Source locations for IR diagnostics.

xDSL operations carry no source location, so a verifier or pass error would otherwise
name no place in the input. `LocatingParser` records where every operation started while
parsing; `locate` maps an operation (or its nearest recorded ancestor, for ops a pass
created) back to a line and column, and `format_error` renders the usual
`FILE:LINE:COL: error: message` plus the source line and a caret.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import ShapedType
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Position, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind

from sparsecc.defaults import MAX_NUMEL


@dataclass(frozen=True)
class Diagnostic:
    """One error: a message and, when known, the 1-based line and column it refers to."""

    message: str
    line: int | None = None
    column: int | None = None


class SourceFile:
    """The text of one input, with its display name, for line/column lookups.

    `first_line` is the line number of the text's first line in the file it came from (a
    `--split-input-file` chunk), so that diagnostics name the line of the whole file.
    """

    def __init__(self, name: str, text: str, first_line: int = 1):
        self.name = name
        self.text = text
        self.first_line = first_line
        # per newline, not per character: a 50 MB input took seconds character by character
        self._line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset (the line counted in the whole file)."""
        index = bisect.bisect_right(self._line_starts, pos) - 1
        return index + self.first_line, pos - self._line_starts[index] + 1

    def line_text(self, line: int) -> str:
        """The text of line `line` (counted in the whole file), without its line break."""
        index = line - self.first_line
        if not 0 <= index < len(self._line_starts):
            return ""
        end = self._line_starts[index + 1] - 1 if index + 1 < len(self._line_starts) else len(self.text)
        return self.text[self._line_starts[index]:end].rstrip("\r")


_NEWLINE = re.compile("\n")


class LinearLexer(MLIRLexer):
    """xDSL's MLIR lexer with a string-literal pattern that fails in linear time.

    xDSL matches a string literal with `"(?:[^"\\...]+|escape)*"`: a `+` inside a `*`, which
    backtracks exponentially over an unterminated literal followed by more text on its line
    (`%x = "aaaa... b` took 15 s at 26 characters). Matching one character per repetition
    accepts the same literals and gives up after one pass.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

    def _lex_number(self, start_pos: Position) -> MLIRToken:
        """A number in ASCII digits: xDSL starts one at any `str.isnumeric` character and reads
        it with int(), so `arith.constant ٧ : i32` was taken for 7."""
        first = self.input.at(start_pos)
        if first is not None and not ("0" <= first <= "9"):
            raise ParseError(Span(start_pos, start_pos + 1, self.input),
                             f"non-ASCII digit '{first}' (U+{ord(first):04X}): numbers are written "
                             "with the digits 0-9")
        return super()._lex_number(start_pos)


MAX_REGION_DEPTH = 256
"""Regions nested deeper than this are refused while parsing: no kernel comes near it, and the
printer's indentation (and canonicalize) grow with depth times size, so 5000 nested `scf.for`
took over a minute."""


class LocatingParser(Parser):
    """An xDSL parser that remembers the start offset of every operation it parses.

    It also turns a VerifyException raised while building an attribute or type (xDSL
    verifies attributes on construction, without a span) into a ParseError at the
    attribute, so such errors get a line and column too.
    """

    def __init__(self, ctx, text: str, name: str = "<unknown>"):
        super().__init__(ctx, "", name)  # xDSL's own lexer would lex the first token already
        self._parser_state = ParserState(LinearLexer(Input(text, name)))
        self.op_positions: dict[Operation, int] = {}
        self._first_forward_use: dict[str, Span] = {}
        self._region_depth = 0

    def resolve_operand(self, operand, type):  # noqa: A002 - xDSL's parameter name
        name = operand.operand_name
        if name not in self.ssa_values:
            self._first_forward_use.setdefault(name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True):
        """xDSL reports values never defined at the end of the input; point at the first use."""
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as exc:
            if not exc.msg.startswith("values used but not defined") or not self.forward_ssa_references:
                raise
            name = next(iter(self.forward_ssa_references))
            span = self._first_forward_use.get(name)
            if span is None:
                raise
            raise ParseError(span, f"use of undefined value '%{name}' (a value defined inside a "
                                   "region is visible only in that region)") from None

    def parse_optional_region(self, arguments=None) -> Region | None:
        """A region, refused at its `{` when it nests deeper than MAX_REGION_DEPTH."""
        start = self._current_token.span
        if self._region_depth >= MAX_REGION_DEPTH and start.text == "{":
            raise ParseError(start, f"regions nested more than {MAX_REGION_DEPTH} deep: sparsecc-opt "
                                    f"handles at most {MAX_REGION_DEPTH} levels")
        self._region_depth += 1
        try:
            return super().parse_optional_region(arguments)
        finally:
            self._region_depth -= 1

    def _parse_block(self) -> Block:
        """xDSL reports a token that can start neither an operation nor a block only as " in block
        definition"; say what was expected and what came."""
        token = self._current_token
        if token.kind != MLIRTokenKind.CARET_IDENT:
            got = f"'{token.text}'" if token.kind != MLIRTokenKind.EOF else "the end of the input"
            raise ParseError(token.span, f"expected an operation, a block label (^bb0:) or '}}' here, "
                                         f"got {got}")
        return super()._parse_block()

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except VerifyException as exc:
            raise self._verify_to_parse_error(exc, start) from None
        except ParseError as exc:
            raise self._at_op_name(exc, start) from None
        except OverflowError as exc:  # a literal that its type cannot hold (1.0e39 : f32)
            end = max(start + 1, self._current_token.span.start)
            raise ParseError(Span(start, end, self.lexer.input),
                             f"a literal does not fit its type: {exc}") from None
        self.op_positions[op] = start
        return op

    def parse_attribute(self) -> Attribute:
        start = self._current_token.span.start
        try:
            return super().parse_attribute()
        except VerifyException as exc:
            raise self._verify_to_parse_error(exc, start) from None

    def parse_optional_attribute(self) -> Attribute | None:
        start = self._current_token.span.start
        try:
            return super().parse_optional_attribute()
        except VerifyException as exc:
            raise self._verify_to_parse_error(exc, start) from None

    def parse_optional_type(self) -> Attribute | None:
        start = self._current_token.span.start
        try:
            ty = super().parse_optional_type()
        except VerifyException as exc:
            raise self._verify_to_parse_error(exc, start) from None
        if isinstance(ty, ShapedType):
            self._check_numel(ty, start)
        return ty

    def _check_numel(self, ty: ShapedType, start: int) -> None:
        """Refuse a shape past the frontend's limit where it is written: xDSL materializes a
        `dense<splat>` of it element by element (tensor<1048576x1048576xf32> ran out of
        memory), and no kernel tile is that large."""
        numel = math.prod(d for d in ty.get_shape() if d >= 0)  # (-1: a dynamic size)
        if numel > MAX_NUMEL:
            end = max(start + 1, self._current_token.span.start)
            raise ParseError(Span(start, end, self.lexer.input),
                             f"a shape of {numel} elements: sparsecc handles at most {MAX_NUMEL} per "
                             "tensor (Triton's limit: one program's registers and shared memory)")

    def parse_type(self) -> Attribute:
        start = self._current_token.span.start
        try:
            return super().parse_type()
        except VerifyException as exc:
            raise self._verify_to_parse_error(exc, start) from None

    def _at_op_name(self, exc: ParseError, start: int) -> ParseError:
        """xDSL reports an unregistered op at the token after its name; point at the name."""
        prefix, suffix = "Operation ", " is not registered"
        if not (exc.msg.startswith(prefix) and exc.msg.endswith(suffix)):
            return exc
        name = exc.msg[len(prefix) : -len(suffix)]
        text = self.lexer.input.content
        if isinstance(text, str) and text.startswith(name, exc.span.start):
            return exc  # already at the name (by the op's own parse_operation, not an enclosing one's)
        at = text.find(name, start, exc.span.start + 1) if isinstance(text, str) else -1
        if at < 0:
            return exc
        return ParseError(Span(at, at + len(name), self.lexer.input), exc.msg)

    def _verify_to_parse_error(self, exc: VerifyException, start: int) -> ParseError:
        end = max(start + 1, self._current_token.span.start)
        return ParseError(Span(start, end, self.lexer.input), str(exc))


def locate(
    op: Operation | None, positions: dict[Operation, int], src: SourceFile
) -> tuple[int, int] | None:
    """(line, col) of `op`; for an op a pass created, of the op it stands in for (the next op of
    its block that came from the source, since rewrites insert before the op they replace, else
    the previous one), else of its nearest ancestor that came from the source."""
    while op is not None:
        if op in positions:
            return src.line_col(positions[op])
        block = op.parent_block()
        if block is not None:
            for neighbour in (*_after(op), *_before(op)):
                if neighbour in positions:
                    return src.line_col(positions[neighbour])
        op = op.parent_op()
    return None


def _after(op: Operation) -> Iterator[Operation]:
    nxt = op.next_op
    while nxt is not None:
        yield nxt
        nxt = nxt.next_op


def _before(op: Operation) -> Iterator[Operation]:
    prev = op.prev_op
    while prev is not None:
        yield prev
        prev = prev.prev_op


def find_failing_op(root: Operation) -> tuple[Operation, Exception] | None:
    """The first operation (in walk order) whose own verifier fails, and its error.

    `Operation.verify` on the module raises without saying which op failed; verifying
    each op without its nested ops pins the error to one operation.
    """
    for op in root.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception as exc:
            return op, exc
    return None


def format_error(src: SourceFile, diag: Diagnostic) -> str:
    """`FILE:LINE:COL: error: message`, then the source line and a caret under the column."""
    if diag.line is None:
        return f"{src.name}: error: {diag.message}\n"
    head = f"{src.name}:{diag.line}:{diag.column}: error: {diag.message}\n"
    line = src.line_text(diag.line)
    caret = " " * max((diag.column or 1) - 1, 0) + "^"
    return head + line + "\n" + caret + "\n"
