"""The import graph of `sparsecc/`: no cycles, and no import from a later stage into an earlier one.

Every module of the package is parsed with `ast` (never imported) and every `import` /
`from ... import` in it counts: module level, inside functions (a lazy import is still a
dependency: it runs on some path), and under `if TYPE_CHECKING:` (a type-only import still
couples the two modules: a cycle through it is a cycle in the design, and it becomes a real one
as soon as a name is needed at run time). Importing `sparsecc.a.b` also runs the `__init__` of
`sparsecc` and `sparsecc.a`; those implicit edges are not counted, each `__init__` is a module of
its own rank instead (otherwise every module would depend on the package root, which imports
the front end).

The stages, earliest first (`RANKS`); a module may import its own stage and earlier ones:

    language    the user-facing DSL (`sparsecc.language as tl`): plain Python, no IR
    switches    the table of code-changing switches and their environment overrides; `defaults`,
                the default launch options (num_warps, num_stages, num_ctas), stated once
    formats     sparse formats as data (what values/metadata a sparse operand is made of); the
                `#tt.sparse` attribute asks its format which element types it holds
    dialects    the IR: tt, ttg, ptx (+ wgmma, mbarrier ops), arith extensions
    analysis    shared GPU models over the IR: layouts, swizzle, TMA boxes, divisibility, K loops
    codegen     the PTX emission: per-op lowering into the ptx dialect, the PTX printer, ptxas
    passes      every pass, one module each: IR -> IR rewrites, and convert-ttg-to-ptx driving
                the emission of codegen
    compiler    the stage table that strings passes and codegen together (`CompileOptions`)
    runtime     driver, launcher, cache, interpreter: runs what the compiler made; it never
                calls back into the front end that made it
    frontend    Python AST -> ttir, `jit` / `compile` (uses the compiler and the runtime)
    sparsecc    the package root: re-exports `compile`, `jit`, `CompileOptions`
    ops         ready-made kernels (`sparse_mm`) written against the public package
    tools       command-line tools (`sparsecc-opt`), the demo

Known violations that are being removed are listed in `ALLOWED`, one edge each with its reason;
the checks ignore exactly those edges. A listed edge that no longer exists fails the test, so
the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "sparsecc"

RANKS: dict[str, int] = {
    "language": 0,
    "switches": 1,
    "defaults": 1,
    "formats": 2,
    "dialects": 3,
    "analysis": 4,
    "codegen": 5,
    "passes": 6,
    "compiler": 7,
    "runtime": 8,
    "frontend": 9,
    "sparsecc": 10,
    "ops": 11,
    "nn": 11,
    "tools": 12,
    "demo": 12,
}
"""Stage of each top-level module or subpackage of `sparsecc` (see the module docstring)."""

LEAVES: dict[str, str] = {
    "sparsecc.analysis.swizzle": "dialects",
}
"""Modules ranked below their package: pure leaves (they import no other sparsecc module,
`test_leaves_stay_leaves` checks it) that an earlier stage may use. The XOR-swizzle arithmetic
is one of the shared GPU models, and `#ttg.shared` (a dialect attribute) computes its offsets
with it. Their package's `__init__` must stay import-free as well (it runs first)."""

REGISTRIES: dict[str, str] = {
    "sparsecc.passes": "compiler",
}
"""Modules ranked above their package: the pass registry (`sparsecc/passes/__init__.py`) names
every pass by its command-line name and loads each lazily when a pipeline names it; it is the
compiler's table, not a pass."""

ALLOWED: dict[tuple[str, str], str] = {}
"""Known cycle or layering edges (importer, imported) -> why they are still here."""


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """Dotted name of the module at `path` (a package's `__init__.py` is the package)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.Module, name: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules of `modules` that the module `name` (parsed as `tree`) imports anywhere."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                pkg = name.split(".") if is_package else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([base] if base else []))
            # `from pkg import sub` imports the submodule; `from mod import name` the module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in targets:
            # `import a.b.c` (or a name inside a.b) depends on the deepest module that exists
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def missing_modules(root: Path = PACKAGE) -> list[str]:
    """'module: imported name' for each absolute `sparsecc...` module an import names that does
    not exist (a module moved without updating a lazy import: nothing else notices until that
    function runs)."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    out = []
    for m, p in paths.items():
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            out += [f"{m}: {n}" for n in names if n.split(".")[0] == root.name and n not in paths]
    return out


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package modules it imports (module level, in functions, TYPE_CHECKING)."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(paths)
    return {m: imported_modules(ast.parse(p.read_text(), str(p)), m, p.name == "__init__.py", modules)
            for m, p in paths.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (or a module importing itself),
    each sorted, as the import cycles of `graph` (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, succ = work[-1]
            for w in succ:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1 or v in graph.get(v, ()):
                        cycles.append(sorted(comp))
    return cycles


def stage(module: str) -> str:
    """The stage of a package module: its top-level subpackage or module (`sparsecc` for the
    root), or the stage `LEAVES` gives it."""
    if module in LEAVES:
        return LEAVES[module]
    if module in REGISTRIES:
        return REGISTRIES[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    """'importer (stage) -> imported (stage)' for each import into a later stage."""
    out = []
    for m, deps in sorted(graph.items()):
        for d in sorted(deps):
            if RANKS[stage(d)] > RANKS[stage(m)]:
                out.append(f"{m} ({stage(m)}) -> {d} ({stage(d)})")
    return out


def without_allowed(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """`graph` minus the edges of `ALLOWED`."""
    return {m: {d for d in deps if (m, d) not in ALLOWED} for m, deps in graph.items()}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_every_stage_is_ranked(graph):
    unranked = sorted({stage(m) for m in graph} - set(RANKS))
    assert not unranked, f"give these top-level modules/subpackages a stage in RANKS: {unranked}"


def test_imports_name_existing_modules():
    missing = missing_modules()
    assert not missing, "imports of modules that do not exist:\n" + "\n".join(missing)


def test_no_import_cycles(graph):
    cycles = find_cycles(without_allowed(graph))
    report = "\n".join(" <-> ".join(c) for c in cycles)
    assert not cycles, f"import cycles in sparsecc/ (break them, or list a known edge in ALLOWED):\n{report}"


def test_no_import_from_a_later_stage(graph):
    bad = layering_violations(without_allowed(graph))
    report = "\n".join(bad)
    assert not bad, f"imports from a later stage into an earlier one (see RANKS):\n{report}"


def test_allowed_edges_still_exist(graph):
    stale = [f"{a} -> {b}" for a, b in ALLOWED if b not in graph.get(a, set())]
    assert not stale, "these ALLOWED edges are gone; remove them from the list:\n" + "\n".join(stale)


def test_leaves_stay_leaves(graph):
    for leaf in LEAVES:
        package = leaf.rpartition(".")[0]
        assert not graph[leaf], f"{leaf} is ranked as a leaf (LEAVES) but imports {sorted(graph[leaf])}"
        assert not graph[package], f"{package}/__init__ runs before the leaf {leaf}: keep it import-free"


EMISSION_DRIVERS = {"sparsecc.passes.convert_ttg_to_ptx"}
"""The one pass that drives the PTX emission of `codegen` (convert-ttg-to-ptx)."""


def test_passes_and_dialects_never_reach_the_lowering(graph):
    """The two rules the design hangs on, named: `analysis` sits below both the IR rewrites and
    `codegen`, so neither needs the other (only convert-ttg-to-ptx drives the emission, and the
    emission never imports a pass); dialects import nothing after `analysis`."""
    for m, deps in without_allowed(graph).items():
        if stage(m) in ("passes", "analysis", "dialects") and m not in EMISSION_DRIVERS:
            assert not [d for d in deps if stage(d) == "codegen"], m
        if stage(m) == "codegen":
            assert not [d for d in deps if stage(d) == "passes"], m


def test_checker_finds_cycles_and_violations():
    """The checks themselves, on a made-up graph: a three-module cycle, a self-import, and the
    lowering importing a pass."""
    g = {
        "sparsecc.codegen.a": {"sparsecc.passes.b"},
        "sparsecc.passes.b": {"sparsecc.passes.c"},
        "sparsecc.passes.c": {"sparsecc.codegen.a"},
        "sparsecc.dialects.d": {"sparsecc.dialects.d"},
        "sparsecc.dialects.e": set(),
    }
    assert find_cycles(g) == [["sparsecc.codegen.a", "sparsecc.passes.b", "sparsecc.passes.c"],
                              ["sparsecc.dialects.d"]]
    assert layering_violations(g) == ["sparsecc.codegen.a (codegen) -> sparsecc.passes.b (passes)"]


def test_imports_are_resolved_to_modules(tmp_path):
    """`from pkg import submodule`, `from mod import name`, relative imports, function-level and
    TYPE_CHECKING imports all become edges to the module they load."""
    pkg = tmp_path / "sparsecc"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "x.py").write_text("X = 1\n")
    (pkg / "sub" / "y.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from sparsecc.sub import x\n"
        "from . import z\n"
        "if TYPE_CHECKING:\n    from sparsecc.w import W\n"
        "def f():\n    import sparsecc.sub.x as xx\n    from .x import X\n")
    (pkg / "sub" / "z.py").write_text("import os\n")
    (pkg / "w.py").write_text("class W: ...\n")
    g = import_graph(pkg)
    assert g["sparsecc.sub.y"] == {"sparsecc.sub.x", "sparsecc.sub.z", "sparsecc.w"}
    assert g["sparsecc.sub.z"] == set() and g["sparsecc"] == set()
