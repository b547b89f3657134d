"""The back half (ttgir -> ptx) stays a table of small handlers: these limits are checked on
the source with `ast`, so that new ops are added as handlers, not as branches.

- no function longer than 70 lines or making more than 8 `isinstance` tests;
- no mutable object with more than 10 attributes drives the lowering (frozen dataclasses and
  Protocols are exempt);
- the op table covers every op family and each family module has a lit test through
  convert-ttg-to-ptx.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CODEGEN = ROOT / "sparsecc" / "codegen"
BACK_HALF = sorted(
    [*CODEGEN.glob("lower*.py"), CODEGEN / "mma_store.py", *(CODEGEN / "handlers").glob("*.py"),
     ROOT / "sparsecc" / "passes" / "convert_ttg_to_ptx.py"]
)
MAX_LINES = 70
MAX_ISINSTANCE = 8
MAX_MUTABLE_ATTRS = 10

def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _isinstance_calls(fn: ast.AST) -> int:
    """isinstance calls in `fn`'s own body (nested functions count for themselves)."""
    count = 0
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            count += 1
        stack.extend(ast.iter_child_nodes(node))
    return count


def _violations() -> list[str]:
    out = []
    for path in BACK_HALF:
        tree = ast.parse(path.read_text(), str(path))
        for fn in _functions(tree):
            lines = fn.end_lineno - fn.lineno + 1
            tests = _isinstance_calls(fn)
            if lines > MAX_LINES or tests > MAX_ISINSTANCE:
                out.append(f"{path.name}:{fn.name} ({lines} lines, {tests} isinstance)")
    return out


def test_back_half_functions_are_short():
    found = _violations()
    assert not found, f"functions over {MAX_LINES} lines or {MAX_ISINSTANCE} isinstance tests: {found}"


def _is_frozen_or_protocol(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        if isinstance(d, ast.Call) and any(k.arg == "frozen" and getattr(k.value, "value", False) for k in d.keywords):
            return True
    return any(getattr(b, "id", None) == "Protocol" for b in cls.bases)


def _mutable_attrs(cls: ast.ClassDef) -> set[str]:
    """Annotated fields plus attributes assigned through `self.` in the class's methods."""
    names = {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign | ast.AugAssign) else []
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                names.add(t.attr)
    return names


def test_no_object_with_many_mutable_attributes():
    big = []
    for path in BACK_HALF:
        for cls in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(cls, ast.ClassDef) and not _is_frozen_or_protocol(cls):
                attrs = _mutable_attrs(cls)
                if len(attrs) > MAX_MUTABLE_ATTRS:
                    big.append(f"{path.name}:{cls.name} ({len(attrs)}: {sorted(attrs)})")
    assert not big


def test_the_checker_sees_violations():
    """The limits are measured, not vacuous: a long, isinstance-heavy function is caught."""
    src = "def f(x):\n" + "    isinstance(x, int)\n" * 9 + "    pass\n" * 70
    fn = next(_functions(ast.parse(src)))
    assert _isinstance_calls(fn) == 9 and fn.end_lineno - fn.lineno + 1 == 80
    cls = ast.parse("class C:\n    def __init__(self):\n" + "".join(f"        self.a{i} = {i}\n" for i in range(11)))
    assert len(_mutable_attrs(cls.body[0])) == 11


# ---------------------------------------------------------------------------------------------
# The op table


def test_table_covers_every_lowered_op():
    from xdsl.dialects import arith, scf

    from sparsecc.codegen.handlers import FAMILIES, HANDLERS, handler_for
    from sparsecc.codegen.handlers.elementwise import MATH_DIRECT, SUPPORTED_ARITH
    from sparsecc.dialects import tt
    from sparsecc.dialects import ttg as ttgd

    lowered = [
        tt.ReturnOp, scf.YieldOp, tt.GetProgramIdOp, tt.GetNumProgramsOp, arith.ConstantOp, tt.MakeRangeOp,
        tt.SplatOp, tt.ExpandDimsOp, tt.BroadcastOp, tt.ReshapeOp, tt.MakeTensorPtrOp, tt.AdvanceOp,
        tt.AddPtrOp, tt.LoadOp, tt.StoreOp, tt.AtomicRMWOp, tt.DotOp, tt.DequantizeOp, tt.ReduceOp,
        ttgd.LocalAllocOp, ttgd.LocalLoadOp, ttgd.LocalStoreOp, ttgd.MemDescSubviewOp, ttgd.ConvertLayoutOp,
        ttgd.AsyncCopyGlobalToLocalOp, ttgd.AsyncCommitGroupOp, ttgd.AsyncWaitOp, ttgd.InitBarrierOp,
        ttgd.WaitBarrierOp, ttgd.ArriveBarrierOp, ttgd.DotWaitOp, ttgd.AsyncTmaCopyOp, scf.ForOp, scf.IfOp,
    ]
    missing = [cls.__name__ for cls in lowered if cls not in HANDLERS]
    assert not missing
    family_names = {m.__name__ for m in FAMILIES}
    for cls, fn in HANDLERS.items():
        registered_in = {m.__name__ for m in FAMILIES if any(fn is v for v in vars(m).values())}
        assert registered_in & family_names, f"{cls.__name__}: handler {fn.__name__} is in no family module"
    # arith and math go by name; sparsecc's own arith subclasses (select, cmpi, cmpf) find theirs too
    from sparsecc.dialects import arith as sarith
    for name in (*SUPPORTED_ARITH, *MATH_DIRECT, "math.exp", "math.log"):
        assert handler_for(_named(name)).__module__.endswith("elementwise"), name
    assert handler_for(_named(sarith.SelectOp.name)).__module__.endswith("elementwise")


def _named(name: str):
    """A stand-in op of that name (handler_for reads only the class and the name)."""
    return type(name, (), {"name": name})()


def test_every_family_has_a_lit_test():
    """Each handler module has a lit test through convert-ttg-to-ptx that names one of its ops."""
    from sparsecc.codegen.handlers import FAMILIES, HANDLERS, NAMED_HANDLERS

    lit = [p.read_text() for p in (ROOT / "test" / "lit" / "convert-ttg-to-ptx").glob("*.mlir")]
    lit = [t for t in lit if "convert-ttg-to-ptx" in t]
    for module in FAMILIES:
        fns = {v for v in vars(module).values() if callable(v)}
        ops = [cls.name for cls, fn in HANDLERS.items() if fn in fns]
        ops += [name for name, fn in NAMED_HANDLERS.items() if fn in fns]
        assert ops, f"{module.__name__} registers no handler"
        short = module.__name__.rsplit(".", 1)[1]
        tests = [t for t in lit if f"handlers/{short}.py" in t]
        assert tests, f"no lit test in test/lit/convert-ttg-to-ptx says it covers handlers/{short}.py"
        assert any(op in t for op in ops for t in tests), f"the lit tests of {short} show none of {ops}"
