"""The default launch options (num_warps, num_stages, num_ctas) are stated once, in
`sparsecc/defaults.py`: no other module of the package writes them as literals (a default
parameter, a field default, a dict of option defaults, a getattr fallback), and every layer
that takes them has the same defaults."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from sparsecc import defaults

PACKAGE = Path(defaults.__file__).resolve().parent
OPTIONS = {"num_warps", "num_stages", "num_ctas"}


def _literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)


def literal_defaults(source: str) -> list[tuple[int, str]]:
    """(line, option) of each option default written as an int literal in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            found += [(d.lineno, a.arg) for a, d in pairs if a.arg in OPTIONS and _literal(d)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id in OPTIONS and _literal(node.value):
                found.append((node.lineno, node.target.id))
        elif isinstance(node, ast.Dict):
            found += [(k.lineno, k.value) for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Constant) and k.value in OPTIONS and _literal(v)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            if len(node.args) == 3 and isinstance(node.args[1], ast.Constant) and node.args[1].value in OPTIONS \
                    and _literal(node.args[2]):
                found.append((node.lineno, node.args[1].value))
    return found


def test_the_check_finds_each_form():
    src = ("def f(a, num_stages=3, *, num_warps=4): pass\n"
           "class C:\n    num_ctas: int = 1\n"
           "D = {'num_stages': 3}\n"
           "w = getattr(c, 'num_warps', 4)\n"
           "ok = Config(num_stages=5)\n")  # an explicit choice (a tuning table), not a default
    assert literal_defaults(src) == [(1, "num_stages"), (1, "num_warps"), (3, "num_ctas"), (4, "num_stages"),
                                     (5, "num_warps")]


def test_option_defaults_are_written_only_in_defaults_py():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
             for path in sorted(PACKAGE.rglob("*.py")) if path != Path(defaults.__file__).resolve()
             for line, name in literal_defaults(path.read_text())]
    assert not found, "option defaults written as literals (use sparsecc.defaults):\n" + "\n".join(found)


def _default(fn, name):
    return inspect.signature(fn).parameters[name].default


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_every_layer_has_the_same_default(option):
    import importlib

    import sparsecc
    from sparsecc.compiler import CompileOptions
    from sparsecc.ops.mm_tiles import MMConfig
    from sparsecc.passes.convert_tt_to_ttg import ConvertTTToTTGPass
    from sparsecc.passes.tritongpu_pipeline import PipelinePass
    from sparsecc.runtime.autotune import Config

    jit = importlib.import_module("sparsecc.frontend.jit")  # the module (the package exports the decorator)
    want = getattr(defaults, option.upper())
    assert getattr(CompileOptions(), option) == want == _default(CompileOptions.create, option)
    assert _default(sparsecc.compile, option) == want == jit._OPTION_DEFAULTS[option]
    assert getattr(MMConfig(64, 64, 64), option) == want
    holders = {"num_warps": (Config(), ConvertTTToTTGPass()), "num_stages": (Config(), PipelinePass()),
               "num_ctas": (PipelinePass(),)}[option]
    assert all(getattr(h, option) == want for h in holders)
