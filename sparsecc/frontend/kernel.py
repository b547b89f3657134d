"""A kernel's source and parameters: what the frontend compiles (`KernelFunction`).

`@sparsecc.jit` makes a `JITFunction` (`sparsecc.frontend.jit`), which adds launching on top;
the code generator and `sparsecc.compile` need only this part, so they do not depend on the
launch machinery.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


def _is_constexpr_annotation(ann: Any) -> bool:
    if ann is tl.constexpr:
        return True
    return isinstance(ann, str) and (ann == "constexpr" or ann.endswith(".constexpr"))


class KernelFunction:
    """A Python function written in `sparsecc.language`: its source, AST and parameters.

        @sparsecc.jit
        def add_one(X, BLOCK: tl.constexpr): ...
        add_one.constexpr_names   # ['BLOCK']
    """

    __sparsecc_jit__ = True

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        for p in self.signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
                raise TypeError(f"@sparsecc.jit {self.__name__}: *args, **kwargs and keyword-only "
                                "parameters are not supported")
        self.constexpr_names = [p.name for p in self.signature.parameters.values()
                                if _is_constexpr_annotation(p.annotation)]
        self.runtime_names = [n for n in self.arg_names if n not in self.constexpr_names]
        self._tree: ast.FunctionDef | None = None
        self._locations: dict[tuple[int, int], FileLineColLoc] = {}
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        try:
            lines, self.first_line = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            raise ValueError(f"@sparsecc.jit needs the source of {getattr(fn, '__qualname__', fn)!r} "
                             "to compile it; define the kernel in a .py file (not at an interactive "
                             "prompt, in exec() or a lambda)") from None
        self.src = "".join(lines)
        self.indent = len(lines[0]) - len(lines[0].lstrip())

    # ---- source ---------------------------------------------------------------------

    @property
    def tree(self) -> ast.FunctionDef:
        """The function's AST, with line numbers relative to its first source line."""
        if self._tree is None:
            module = ast.parse(textwrap.dedent(self.src))
            node = module.body[0]
            if not isinstance(node, ast.FunctionDef):
                raise TypeError(f"@sparsecc.jit needs a plain 'def' function, got {type(node).__name__}")
            self._tree = node
        return self._tree

    def position(self, node: ast.AST) -> tuple[int, int]:
        """(line, column), 1-based, of `node` in the file that holds this function."""
        rel = getattr(node, "lineno", 1)
        return self.first_line + rel - 1, getattr(node, "col_offset", 0) + self.indent + 1

    def location(self, node: ast.AST) -> FileLineColLoc:
        """The IR location (`loc("file":line:col)`) of `node`, shared by the ops it emits."""
        pos = self.position(node)
        loc = self._locations.get(pos)
        if loc is None:
            loc = self._locations[pos] = FileLineColLoc(StringAttr(self.file), IntAttr(pos[0]), IntAttr(pos[1]))
        return loc

    def error(self, node: ast.AST, message: str) -> CompilationError:
        """A CompilationError at `node` of this function's source."""
        line, col = self.position(node)
        text = linecache.getline(self.file, line) or None
        return CompilationError(message, self.file, line, col, text)

    def resolve_global(self, name: str) -> tuple[bool, Any]:
        """(found, value) of a free name: closure cells first, then module globals."""
        code = self.fn.__code__
        if name in code.co_freevars and self.fn.__closure__ is not None:
            cell = self.fn.__closure__[code.co_freevars.index(name)]
            try:
                return True, cell.cell_contents
            except ValueError:
                return False, None
        g = self.fn.__globals__
        if name in g:
            return True, g[name]
        return False, None

    def params_text(self) -> str:
        """The parameter list as written: `"D, A, B, BLOCK_M"`."""
        return ", ".join(self.arg_names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__module__}:{self.__name__})"
