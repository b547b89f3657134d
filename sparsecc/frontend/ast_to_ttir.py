"""Python AST -> tt IR: the code generator behind `@sparsecc.jit`.

`generate_ttir` walks a kernel's `ast.FunctionDef` (an `ast.NodeVisitor`, like Triton's
`CodeGenerator`) and emits a `tt.func public` whose parameters are the kernel's non-constexpr
arguments. Values in a scope are either runtime `SSAValue`s or compile-time Python objects
(constexprs: ints, floats, tuples, dtypes, modules, jit functions); operations on constexprs
run in Python, anything touching a runtime value emits IR through `semantic`/`builtins`.

Control flow: `for .. in range()` becomes `scf.for` whose iter_args are the variables the body
re-assigns that exist before the loop; `tl.static_range` unrolls; an `if` on a constexpr picks a
branch at compile time, on a runtime scalar it becomes `scf.if` yielding the variables either
branch assigns. Calls to other jit functions are inlined.
"""

from __future__ import annotations

import ast
import inspect
import operator
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    UnitAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

import sparsecc.language as tl
from sparsecc.dialects import tt
from sparsecc.dialects.locations import inherit_locations
from sparsecc.frontend import (  # noqa: F401 - register builtins
    atomic_builtins,
    debug_builtins,
    dot_scaled,
    libdevice_builtins,
    math_builtins,
    misc_builtins,  # noqa: F401 - registers tensor descriptors, add/sub/mul, ...
)
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.bound import BoundBuiltin as _BoundBuiltin
from sparsecc.frontend.builtins import IMPLS, to
from sparsecc.frontend.errors import CompilationError, SemanticError
from sparsecc.frontend.map_elementwise import MAP_CALLS_JIT  # (registers tl.map_elementwise)
from sparsecc.frontend.pointer_casts import make_pointer_type
from sparsecc.frontend.reduce_builtins import CALLS_JIT  # (registers the reduction builtins)
from sparsecc.frontend.scan_builtins import (  # (registers the scans, sorts, gathers)
    SCAN_CALLS_JIT,
    SCAN_METHODS,
)
from sparsecc.frontend.shape_ops import TENSOR_METHODS  # registers the shape ops too
from sparsecc.frontend.types import describe
from sparsecc.frontend.unsupported import WHY_NOT
from sparsecc.language.core import BUILTINS, builtin_name

if TYPE_CHECKING:
    from sparsecc.frontend.kernel import KernelFunction

MAX_INLINE_DEPTH = 32
STATIC_RANGE_MAX = 4096
"""Most iterations one `tl.static_range` may unroll: each copies its body into the IR, so a
count like 10**6 would run the compiler out of time and memory instead of failing."""

_PY_BUILTINS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "len": len, "int": int, "float": float, "bool": bool, "abs": abs,
    "isinstance": isinstance, "range": range, "tuple": tuple,
}

_BINOPS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.Pow: "**",
}
_PY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
    "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift, "**": operator.pow,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
_CMPOPS: dict[type, str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
}


def is_jit_function(x: Any) -> bool:
    return getattr(x, "__sparsecc_jit__", False) is True


class _Method:
    """A tensor method (`x.to`, `x.reshape`, ...) before it is called."""

    def __init__(self, value: SSAValue, name: str):
        self.value = value
        self.name = name


REDUCTION_METHODS = frozenset({"sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce"}) | SCAN_METHODS
"""`x.sum(axis)` and friends: Triton's tensor methods that are the `tl` builtin of that name."""


def _unwrap(x: Any) -> Any:
    return x.value if isinstance(x, tl.constexpr) else x


def _py_scalar_ok(x: Any) -> bool:
    return x is None or isinstance(x, bool | int | float | str)


_RET = "<return value>"
"""Scope name of a function's return value: a `return` inside a runtime `if` binds it, so that
the `if` yields it like any variable both branches assign."""

_RANGE_HINTS = {"num_stages": "tt.num_stages", "loop_unroll_factor": "tt.loop_unroll_factor",
                "disallow_acc_multi_buffer": "tt.disallow_acc_multi_buffer", "flatten": "tt.flatten",
                "warp_specialize": "tt.warp_specialize", "disable_licm": "tt.disable_licm"}
"""`tl.range` keyword -> the scf.for attribute that keeps it (Triton's names). Only
`tt.num_stages` changes code (tritongpu-pipeline); the others are accepted hints."""


def _may_return(stmt: ast.stmt) -> bool:
    """Whether a `return` is somewhere in `stmt` (nested function bodies are not kernel code)."""
    return any(isinstance(n, ast.Return) for n in ast.walk(stmt))


def _assigned_names(stmts: Sequence[ast.stmt]) -> list[str]:
    """Names a statement list (re)binds, in first-assignment order."""
    seen: dict[str, None] = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                seen.setdefault(node.id, None)
    return list(seen)


def _unsupported_name(module: types.ModuleType, attr: str) -> str:
    """The error for `tl.<attr>` (or `libdevice.<attr>`, ...) that sparsecc does not have."""
    path = module.__name__.replace("sparsecc.language", "tl", 1)
    triton = module.__name__.replace("sparsecc.language", "triton.language", 1)
    why = WHY_NOT.get(f"{path}.{attr}")
    return (f"{path}.{attr} ({triton}.{attr}) is not supported by sparsecc yet{': ' + why if why else ''}; "
            "docs/language.md lists the names it supports")


class CodeGenerator(ast.NodeVisitor):
    """Emits the body of one (kernel or inlined) jit function."""

    def __init__(self, fn: KernelFunction, em: sem.Emitter, scope: dict[str, Any], depth: int = 0,
                 is_kernel: bool = False):
        self.fn = fn
        self.em = em
        self.scope = scope
        self.depth = depth
        self.is_kernel = is_kernel
        self.dynamic = 0  # nesting depth of scf regions being generated
        self.loops = 0  # how many of those are loop bodies (a `return` may not be in one)
        self.returned = False
        self.ret: Any = None
        self.region_locals: dict[str, str] = {}  # name -> "loop"/"if" it was local to

    # ---- plumbing ---------------------------------------------------------------------

    def visit(self, node: ast.AST) -> Any:
        outer = self.em.location
        if hasattr(node, "lineno"):
            self.em.location = self.fn.location(node)
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except SemanticError as e:
            raise self.fn.error(node, str(e)) from None
        except (VerifyException, ValueError, TypeError, AttributeError, KeyError, IndexError,
                ZeroDivisionError, AssertionError) as e:
            raise self.fn.error(node, f"{type(e).__name__}: {e}") from e
        finally:
            self.em.location = outer

    def generic_visit(self, node: ast.AST) -> Any:
        raise SemanticError(f"unsupported Python syntax in a kernel: {type(node).__name__}")

    def run_body(self, stmts: Sequence[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            if self.returned:
                break
            if isinstance(stmt, ast.If) and i + 1 < len(stmts) and _may_return(stmt):
                self._if_then_rest(stmt, stmts[i + 1:])
                return
            self.visit(stmt)

    def _if_then_rest(self, node: ast.If, rest: Sequence[ast.stmt]) -> None:
        """An `if` that may return, followed by `rest`: `rest` runs in every branch after the
        branch's own statements (so a branch that returns skips it), which is the early return
        `if pid >= n: return` as structured control flow (one scf.if, no branches out of it).
        `rest` is generated once per branch, as Triton's top-level `if` with a return does."""
        merged = ast.If(test=node.test, body=[*node.body, *rest], orelse=[*node.orelse, *rest])
        ast.copy_location(merged, node)
        self.visit(merged)
        self.returned = True  # every path ran to its end or to a return

    def lookup(self, name: str) -> Any:
        if name in self.scope:
            return self.scope[name]
        found, value = self.fn.resolve_global(name)
        if found:
            return self._check_global(name, value)
        if name in _PY_BUILTINS:
            return _PY_BUILTINS[name]
        if name in self.region_locals:
            raise SemanticError(f"'{name}' is only defined inside a runtime {self.region_locals[name]}; "
                                "assign it before the " + self.region_locals[name] + " to use it after")
        raise SemanticError(f"name '{name}' is not defined")

    @staticmethod
    def _check_global(name: str, v: Any) -> Any:
        v = _unwrap(v)
        if (_py_scalar_ok(v) or isinstance(v, tl.dtype | types.ModuleType) or is_jit_function(v)
                or builtin_name(v) or v in _PY_BUILTINS.values()):
            return v
        if isinstance(v, tuple) and all(_py_scalar_ok(e) for e in v):
            return v
        raise SemanticError(
            f"global '{name}' ({type(v).__name__}) cannot be used in a kernel: only constexpr "
            "numbers/strings/tuples, tl dtypes, modules and @sparsecc.jit functions can"
        )

    def bind(self, name: str, value: Any) -> None:
        value = _unwrap(value)
        if isinstance(value, SSAValue) and value.name_hint is None:
            try:
                value.name_hint = name
            except Exception:  # a name xDSL does not accept as an SSA name: keep it anonymous
                pass
        self.scope[name] = value

    # ---- statements -------------------------------------------------------------------

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # docstring
        self.visit(node.value)
        return None

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value)
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, SSAValue):
                raise SemanticError("cannot unpack a tensor; only tuples can be unpacked")
            if not isinstance(value, tuple | list):
                raise SemanticError(f"cannot unpack {sem.py_desc(value)}")
            if len(value) != len(target.elts):
                raise SemanticError(f"cannot unpack {len(value)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        elif isinstance(target, ast.Subscript | ast.Attribute):
            raise SemanticError("assigning to an element or attribute is not supported (tensors "
                                "are immutable values; write memory with tl.store)")
        else:
            raise SemanticError(f"unsupported assignment target: {type(target).__name__}")

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return None
        self.assign(node.target, self.visit(node.value))
        return None

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise SemanticError("augmented assignment needs a plain variable name on the left")
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise SemanticError(f"unsupported operator {type(node.op).__name__}")
        self.bind(node.target.id, self.binop(op, self.lookup(node.target.id), self.visit(node.value)))

    def visit_Return(self, node: ast.Return) -> None:
        if self.loops:
            raise SemanticError("'return' inside a runtime 'for' or 'while' loop is not supported (as in "
                                "Triton); return after the loop, or guard its body with an 'if'")
        value = self.visit(node.value) if node.value is not None else None
        if self.is_kernel and value is not None:
            raise SemanticError("a kernel cannot return a value; write results with tl.store")
        if value is not None:
            self.scope[_RET] = value
        self.ret = value
        self.returned = True

    def visit_Break(self, node: ast.Break) -> None:
        raise SemanticError("'break' is not supported in a kernel (as in Triton: unsupported AST node type "
                            "Break); make the loop a 'while' whose condition ends it")

    def visit_Continue(self, node: ast.Continue) -> None:
        raise SemanticError("'continue' is not supported in a kernel (as in Triton: unsupported AST node "
                            "type Continue); guard the rest of the body with an 'if'")

    def visit_Assert(self, node: ast.Assert) -> None:
        cond = self.visit(node.test)
        if isinstance(cond, SSAValue):
            raise SemanticError("assert needs a compile-time condition (constexprs only)")
        if not cond:
            msg = self.visit(node.msg) if node.msg is not None else ""
            raise SemanticError(f"assertion failed{': ' + str(msg) if msg else ''}")

    def visit_If(self, node: ast.If) -> None:
        cond = self.visit(node.test)
        if not isinstance(cond, SSAValue):
            self.run_body(node.body if cond else node.orelse)
            return None
        sem.require_dense(cond, "an 'if' condition")
        if sem.is_tensor(cond):
            raise SemanticError("an 'if' condition must be a scalar; use tl.where for tensors")
        cond = sem.to_bool(self.em, cond)
        pre = self.scope
        branches: list[tuple[Block, dict[str, Any]]] = []
        for body in (node.body, node.orelse):
            block = Block()
            scope = dict(pre)
            self._in_region(block, scope, body)
            branches.append((block, scope))
        (tb, ts), (eb, es) = branches
        if (_RET in ts) != (_RET in es) and _RET not in pre:
            raise SemanticError("a runtime 'if' returns a value on one branch only; every path of a "
                                "function that returns a value must return one")
        names = [n for n in dict.fromkeys([*ts, *es])
                 if (n in pre or (n in ts and n in es))
                 and (ts.get(n, pre.get(n)) is not pre.get(n) or es.get(n, pre.get(n)) is not pre.get(n))]
        results: list[str] = []
        t_vals: list[SSAValue] = []
        e_vals: list[SSAValue] = []
        for n in names:
            tv, ev = ts.get(n, pre.get(n)), es.get(n, pre.get(n))
            if not isinstance(tv, SSAValue) and not isinstance(ev, SSAValue):
                if type(tv) is type(ev) and tv == ev:
                    pre[n] = tv
                    continue
                if not (sem.is_py_scalar(tv) and sem.is_py_scalar(ev)):
                    raise SemanticError(f"'{n}' gets different compile-time values in the two "
                                        "branches of a runtime 'if'")
            tv, ev = self._join(tb, tv, ev, n), self._join(eb, ev, tv, n)
            if tv.type != ev.type:
                raise SemanticError(f"'{n}' is {describe(tv.type)} in the 'if' branch but "
                                    f"{describe(ev.type)} in the 'else' branch")
            results.append(n)
            t_vals.append(tv)
            e_vals.append(ev)
        tb.add_op(scf.YieldOp(*t_vals))
        eb.add_op(scf.YieldOp(*e_vals))
        else_region = Region(eb) if (node.orelse or results) else Region()
        if_op = scf.IfOp(cond, [v.type for v in t_vals], Region(tb), else_region)
        self.em.insert(if_op)
        for n, r in zip(results, if_op.results):
            r.name_hint = None
            self.bind(n, r)
        return None

    def _join(self, block: Block, v: Any, other: Any, name: str) -> SSAValue:
        """`v` as a runtime value at the end of `block`, typed like `other` if a literal."""
        if isinstance(v, SSAValue):
            return v
        if not sem.is_py_scalar(v):
            raise SemanticError(f"'{name}' holds {sem.py_desc(v)} in one branch of a runtime 'if' "
                                "and a runtime value in the other")
        old = self.em.move_to(block)
        try:
            if not isinstance(other, SSAValue):
                return sem.to_value(self.em, v, None, fresh=True)
            c = sem.to_value(self.em, v, sem.elem(other), shape=sem.shape(other), fresh=True)
            return sem.cast(self.em, c, sem.elem(other))
        finally:
            self.em.move_to(old)

    def _in_region(self, block: Block, scope: dict[str, Any], body: Sequence[ast.stmt],
                   kind: str | None = None) -> None:
        old_block = self.em.move_to(block)
        old_scope = self.scope
        self.scope = scope
        self.dynamic += 1
        self.loops += kind == "loop"
        try:
            self.run_body(body)
        finally:
            self.dynamic -= 1
            self.loops -= kind == "loop"
            self.returned = False  # a return inside a branch ends the branch, not the function
            self.scope = old_scope
            self.em.move_to(old_block)
        kind = kind or ("loop" if block.args else "'if'")  # scf.for bodies take the induction variable
        for n in scope:
            if n not in old_scope:
                self.region_locals.setdefault(n, kind)

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise SemanticError("'for ... else' is not supported")
        if not isinstance(node.target, ast.Name):
            raise SemanticError("the loop variable must be a single name")
        it = node.iter
        if not isinstance(it, ast.Call):
            raise SemanticError("kernels loop with 'for i in range(...)' or 'tl.static_range(...)'")
        func = self.visit(it.func)
        args = [self.visit(a) for a in it.args]
        if builtin_name(func) == "range":
            self._tl_range(node, func, args)
            return None
        if it.keywords and builtin_name(func) != "static_range":
            raise SemanticError("range() takes no keyword arguments (tl.range takes Triton's loop hints)")
        if builtin_name(func) == "static_range":
            for i in self._static_range(it, func, args):
                if self.returned:
                    break
                self.bind(node.target.id, i)
                self.run_body(node.body)
            return None
        if func is not range:
            raise SemanticError("kernels loop with 'for i in range(...)', 'tl.range(...)' or 'tl.static_range(...)'")
        self._scf_for(node, args)
        return None

    def _tl_range(self, node: ast.For, func: Any, args: list[Any]) -> None:
        """`for i in tl.range(lo, hi, step, num_stages=..., ...)`: an scf.for that keeps the
        hints as attributes (`_RANGE_HINTS`); each must be a constexpr."""
        call = node.iter
        assert isinstance(call, ast.Call)
        kwargs = {k.arg: self.visit(k.value) for k in call.keywords}
        try:
            bound = inspect.signature(func).bind(*args, **kwargs)
        except TypeError as e:
            raise SemanticError(f"tl.range(): {e}") from None
        bound.apply_defaults()
        a = bound.arguments
        bounds = [a["arg1"]] if a["arg2"] is None else [a["arg1"], a["arg2"], 1 if a["step"] is None else a["step"]]
        if a["arg2"] is None and a["step"] is not None:
            bounds = [0, a["arg1"], a["step"]]
        attrs: dict[str, Attribute] = {}
        for key, attr in _RANGE_HINTS.items():
            v = a[key]
            if isinstance(v, SSAValue):
                raise SemanticError(f"tl.range({key}=...) must be a constexpr, got a runtime value")
            if key in ("num_stages", "loop_unroll_factor"):
                if v is None:
                    continue
                if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key == "num_stages" else 0):
                    raise SemanticError(f"tl.range({key}=...) must be a {'positive' if key == 'num_stages' else 'non-negative'} "
                                        f"integer, got {v!r}")
                attrs[attr] = IntegerAttr(v, i32)
            elif v:
                attrs[attr] = UnitAttr()
        self._scf_for(node, bounds, attrs)

    def _static_range(self, call: ast.Call, func: Any, args: list[Any]) -> range:
        """The iterations of `tl.static_range(...)`: compile-time ints only (a float such as
        1e6 is refused, not truncated) and at most STATIC_RANGE_MAX of them, each error located
        at the offending argument (or the call)."""
        sig = inspect.signature(func)
        kwargs = {k.arg: self.visit(k.value) for k in call.keywords}
        bound = sig.bind(*args, **kwargs)
        nodes = sig.bind(*call.args, **{k.arg: k.value for k in call.keywords}).arguments
        bound.apply_defaults()
        for name in ("arg1", "arg2", "step"):
            b = bound.arguments[name]
            if name == "arg2" and b is None:
                continue
            if isinstance(b, SSAValue) or isinstance(b, bool) or not isinstance(b, int):
                shown = "a runtime value" if isinstance(b, SSAValue) else f"{type(b).__name__} {b!r}"
                raise self.fn.error(nodes.get(name, call), "tl.static_range bounds must be compile-time "
                                    f"integers, got {shown} (use range() for a runtime loop)")
        a1, a2, step = (bound.arguments[k] for k in ("arg1", "arg2", "step"))
        if step == 0:
            raise self.fn.error(nodes.get("step", call), "tl.static_range step must not be zero")
        steps = range(0, a1, step) if a2 is None else range(a1, a2, step)
        if len(steps) > STATIC_RANGE_MAX:
            raise self.fn.error(call, f"tl.static_range unrolls {len(steps)} iterations, more than "
                                f"{STATIC_RANGE_MAX}: use range() for a runtime loop")
        return steps

    def _scf_for(self, node: ast.For, args: list[Any], attrs: dict[str, Attribute] | None = None) -> None:
        if not 1 <= len(args) <= 3:
            raise SemanticError(f"range() takes 1 to 3 arguments, got {len(args)}")
        lb, ub, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if isinstance(step, float) or isinstance(step, bool):
            raise SemanticError(f"range() step must be an integer, got {step!r}")
        if isinstance(step, int) and step == 0:
            raise SemanticError("range() step must not be zero")
        # a negative constexpr step counts up from `ub` to `lb` by -step (scf.for steps up), and
        # the body sees i = lb + ub - iv: range(10, 0, -3) runs iv = 0, 3, 6, 9 -> i = 10, 7, 4, 1
        flip = isinstance(step, int) and step < 0
        if flip:
            lb, ub, step = ub, lb, -step
        wide = any(
            (isinstance(b, SSAValue) and sem.elem(b) == i64)
            or (isinstance(b, int) and not sem.I32_MIN <= b <= sem.I32_MAX)
            for b in (lb, ub, step)
        )
        ity = i64 if wide else i32
        em = self.em
        lbv, ubv, stv = (sem.index_value(em, b, ity, "a range() bound") for b in (lb, ub, step))
        target = node.target
        assert isinstance(target, ast.Name)
        carried, fixed = self._loop_carried(node.body, skip=target.id)
        inits = [self.scope[n] for n in carried]
        block = Block(arg_types=[ity, *[v.type for v in inits]])
        block.args[0].name_hint = target.id
        scope = dict(self.scope)
        scope[target.id] = block.args[0]
        if flip:  # i = lb + ub - iv, at the top of the body (lb and ub were swapped above)
            old = em.move_to(block)
            try:
                scope[target.id] = em.value(arith.SubiOp(em.value(arith.AddiOp(lbv, ubv)), block.args[0]))
            finally:
                em.move_to(old)
        for n, arg in zip(carried, block.args[1:]):
            arg.name_hint = n
            scope[n] = arg
        self._in_region(block, scope, node.body, kind="loop")
        block.add_op(scf.YieldOp(*self._loop_yields(block, scope, carried, inits, fixed)))
        for_op = scf.ForOp(lbv, ubv, stv, inits, block)
        for k, v in (attrs or {}).items():
            for_op.attributes[k] = v
        em.insert(for_op)
        for n, r in zip(carried, for_op.results):
            r.name_hint = n
            self.scope[n] = r

    def _loop_carried(self, body: Sequence[ast.stmt], skip: str | None = None) -> tuple[list[str], dict[str, Any]]:
        """The names a loop body re-assigns that exist before it: runtime ones are carried
        (Python numbers become runtime values first), others (tuples, dtypes) must stay fixed."""
        carried: list[str] = []
        fixed: dict[str, Any] = {}
        for n in _assigned_names(body):
            if n == skip or n not in self.scope:
                continue
            v = self.scope[n]
            if sem.is_py_scalar(v):
                v = sem.to_value(self.em, v, fresh=True)
                self.bind(n, v)
            if isinstance(v, SSAValue):
                carried.append(n)
            else:
                fixed[n] = v
        return carried, fixed

    def _loop_yields(self, block: Block, scope: dict[str, Any], carried: list[str], inits: list[SSAValue],
                     fixed: dict[str, Any]) -> list[SSAValue]:
        """What the end of a loop body passes to the next iteration, checked against the inits."""
        for n, v in fixed.items():
            if scope.get(n) is not v:
                raise SemanticError(f"'{n}' holds {sem.py_desc(v)} and is re-assigned inside a runtime "
                                    "loop; only tensors and scalars can change across iterations")
        yields = []
        for n, init in zip(carried, inits):
            v = scope[n]
            if not isinstance(v, SSAValue):
                v = self._join(block, v, init, n)
            if v.type != init.type:
                raise SemanticError(f"loop-carried '{n}' is {describe(init.type)} before the loop but "
                                    f"{describe(v.type)} at the end of its body; convert it with .to()")
            yields.append(v)
        return yields

    def visit_While(self, node: ast.While) -> None:
        """`while cond: body` -> scf.while: the before region evaluates `cond` on the carried
        values (the names the body re-assigns that exist before the loop), the after region
        runs the body and yields them; a Python-constant condition becomes an i1 constant."""
        if node.orelse:
            raise SemanticError("'while ... else' is not supported")
        em = self.em
        carried, fixed = self._loop_carried(node.body)
        inits = [self.scope[n] for n in carried]
        types = [v.type for v in inits]
        before = Block(arg_types=types)
        scope = dict(self.scope)
        for n, arg in zip(carried, before.args):
            arg.name_hint = n
            scope[n] = arg
        old_block, old_scope = em.move_to(before), self.scope
        self.scope = scope
        try:
            cond = self.visit(node.test)
            if isinstance(cond, SSAValue):
                sem.require_dense(cond, "a 'while' condition")
                if sem.is_tensor(cond):
                    raise SemanticError("a 'while' condition must be a scalar; reduce a tensor first (tl.max(...))")
                cond = sem.to_bool(em, cond)
            elif sem.is_py_scalar(cond):
                cond = sem.constant(em, bool(cond), i1)
            else:
                raise SemanticError(f"a 'while' condition must be a scalar, got {sem.py_desc(cond)}")
            before.add_op(scf.ConditionOp(cond, *before.args))
        finally:
            self.scope = old_scope
            em.move_to(old_block)
        after = Block(arg_types=types)
        scope = dict(self.scope)
        for n, arg in zip(carried, after.args):
            arg.name_hint = n
            scope[n] = arg
        self._in_region(after, scope, node.body, kind="loop")
        after.add_op(scf.YieldOp(*self._loop_yields(after, scope, carried, inits, fixed)))
        while_op = scf.WhileOp(inits, types, Region(before), Region(after))
        em.insert(while_op)
        for n, r in zip(carried, while_op.results):
            r.name_hint = n
            self.scope[n] = r

    # ---- expressions ------------------------------------------------------------------

    def visit_Constant(self, node: ast.Constant) -> Any:
        if not _py_scalar_ok(node.value):
            raise SemanticError(f"unsupported constant {node.value!r}")
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        return _unwrap(self.lookup(node.id))

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self._elements(node.elts))

    def visit_List(self, node: ast.List) -> Any:
        return tuple(self._elements(node.elts))

    def _elements(self, elts: Sequence[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self.visit(e.value)
                if not isinstance(v, tuple | list):
                    raise SemanticError(f"cannot unpack {sem.py_desc(v)} with *")
                out.extend(v)
            else:
                out.append(self.visit(e))
        return out

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = self.visit(node.value)
        attr = node.attr
        if isinstance(base, SSAValue):
            if attr in ("dtype", "type"):  # .type: Triton's block type; its element_ty/scalar as .dtype's
                from sparsecc.frontend.types import tl_dtype

                return tl_dtype(base.type.pointee if sem.is_block_pointer(base) else base.type)
            if attr == "shape":
                return sem.shape(base) if not sem.is_block_pointer(base) else base.type.pointee.get_shape()
            if attr in ("to", "cast") or attr in TENSOR_METHODS:
                return _Method(base, attr)
            if attr in REDUCTION_METHODS:
                return _BoundBuiltin(base, attr)
            if attr == "T":
                return IMPLS["trans"](self.em, base)
            methods = sorted({"to", "cast", *TENSOR_METHODS, *REDUCTION_METHODS})
            raise SemanticError(f"a tensor has no attribute '{attr}' (it has .dtype, .type, .shape, .T and "
                                f"{', '.join(f'.{m}()' for m in methods)})")
        try:
            return _unwrap(getattr(base, attr))
        except AttributeError:
            if attr == "value" and not isinstance(base, types.ModuleType):
                # Triton hands a jit function its compile-time arguments as tl.constexpr, so
                # `dtype.value` is the dtype itself; here they arrive unwrapped
                return base
            if isinstance(base, types.ModuleType) and base.__name__.startswith("sparsecc.language"):
                raise SemanticError(_unsupported_name(base, attr)) from None
            raise SemanticError(f"{sem.py_desc(base)} has no attribute '{attr}'") from None

    def visit_Slice(self, node: ast.Slice) -> Any:
        parts = [self.visit(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        if any(isinstance(p, SSAValue) for p in parts):
            raise SemanticError("slice bounds must be compile-time integers")
        return slice(*parts)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.visit(node.value)
        if not isinstance(base, SSAValue):
            index = self.visit(node.slice)
            if isinstance(index, SSAValue):
                raise SemanticError("a compile-time tuple can only be indexed by a constexpr")
            return _unwrap(base[index])
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        items: list[str] = []
        for e in elts:
            if isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None:
                items.append(":")
            elif isinstance(e, ast.Constant) and e.value is None:
                items.append("None")
            else:
                raise SemanticError("tensors can only be indexed with ':' and None (x[:, None])")
        rank = len(sem.shape(base))
        if items.count(":") != rank:
            raise SemanticError(f"indexing a rank-{rank} tensor needs {rank} ':' entries, got "
                                f"{items.count(':')}")
        if not sem.is_pointer(base):
            sem.require_dense(base, "indexing")
        out = base
        for dim, item in enumerate(items):
            if item == "None":
                out = sem.expand_dims(self.em, out, dim)
        return out

    def binop(self, op: str, a: Any, b: Any) -> Any:
        if not isinstance(a, SSAValue) and not isinstance(b, SSAValue):
            try:
                return _PY_OPS[op](a, b)
            except Exception as e:
                raise SemanticError(f"cannot compute {a!r} {op} {b!r}: {e}") from None
        if op == "**":
            raise SemanticError("'**' is only supported on compile-time values")
        return sem.binary(self.em, op, a, b)

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise SemanticError(f"unsupported operator {type(node.op).__name__}")
        return self.binop(op, self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.visit(node.operand)
        if not isinstance(v, SSAValue):
            try:
                return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
                        ast.Not: operator.not_}[type(node.op)](v)
            except TypeError as e:
                raise SemanticError(str(e)) from None
        if isinstance(node.op, ast.USub):
            return sem.negate(self.em, v)
        if isinstance(node.op, ast.UAdd):
            sem.require_dense(v, "unary '+'")
            return v
        if isinstance(node.op, ast.Invert):
            return sem.invert(self.em, v)
        if sem.is_tensor(v):
            raise SemanticError("'not' on a tensor is not supported; use '~' or '== 0'")
        return sem.logical_not(self.em, v)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result = self.visit(node.values[0])
        for expr in node.values[1:]:
            if not isinstance(result, SSAValue):
                if bool(result) != is_and:  # Python short-circuit on a constexpr
                    return result
                result = self.visit(expr)
                continue
            rhs = self.visit(expr)
            a = sem.to_bool(self.em, sem.to_value(self.em, result, i1))
            b = sem.to_bool(self.em, sem.to_value(self.em, rhs, i1))
            if sem.is_tensor(a) or sem.is_tensor(b):
                # as Triton (which deprecates it): elementwise on the truth values, both sides
                # evaluated and broadcast, `m[:, None] < M and n[None, :] < N` is `&`
                result = sem.binary(self.em, "&" if is_and else "|", a, b)
                continue
            result = self.em.value((arith.AndIOp if is_and else arith.OrIOp)(a, b))
        return result

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        rights = [self.visit(c) for c in node.comparators]
        values = [left, *rights]
        if len(node.ops) > 1 and any(isinstance(v, SSAValue) for v in values):
            raise SemanticError("chained comparisons of runtime values are not supported; use '&'")
        result: Any = True
        for op_node, a, b in zip(node.ops, values, values[1:]):
            if isinstance(op_node, ast.Is | ast.IsNot):
                r = (a is b) if isinstance(op_node, ast.Is) else (a is not b)
            elif isinstance(op_node, ast.In | ast.NotIn):
                if isinstance(a, SSAValue) or isinstance(b, SSAValue):
                    raise SemanticError("'in' works on compile-time values only")
                r = (a in b) if isinstance(op_node, ast.In) else (a not in b)
            else:
                r = self.binop(_CMPOPS[type(op_node)], a, b)
            if isinstance(r, SSAValue):
                return r
            result = result and r
        return result

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if not isinstance(cond, SSAValue):
            return self.visit(node.body if cond else node.orelse)
        if sem.is_tensor(cond):
            raise SemanticError("'x if c else y' needs a scalar condition; use tl.where for tensors")
        return sem.select(self.em, cond, self.visit(node.body), self.visit(node.orelse))

    def visit_Call(self, node: ast.Call) -> Any:
        func = self.visit(node.func)
        args = self._elements(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            v = self.visit(kw.value)
            if kw.arg is None:
                if not isinstance(v, dict):
                    raise SemanticError("** needs a compile-time dict")
                kwargs.update(v)
            else:
                kwargs[kw.arg] = v
        return self.call(func, args, kwargs)

    def call(self, func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if is_jit_function(func):
            return self.inline(func, args, kwargs)
        if isinstance(func, _BoundBuiltin):
            return self.call(getattr(tl, func.name), [func.value, *args], kwargs)
        if isinstance(func, _Method) and func.name in TENSOR_METHODS:  # x.reshape(...) is tl.reshape(x, ...)
            marker = BUILTINS[func.name]
            try:
                bound = inspect.signature(marker).bind(func.value, *args, **kwargs)
            except TypeError as e:
                raise SemanticError(f".{func.name}(): {e}") from None
            bound.apply_defaults()
            return IMPLS[func.name](self.em, **bound.arguments)
        if isinstance(func, _Method):
            try:
                bound = inspect.signature(to).bind(self.em, func.value, *args, **kwargs)
            except TypeError as e:
                raise SemanticError(f".to(): {e}") from None
            return to(**bound.arguments)
        if inspect.ismethod(func) and isinstance(func.__self__, tl.dtype):
            # a dtype's own methods (`x.dtype.is_bf16()`, `.is_int64()`): answered at compile time
            if any(isinstance(a, SSAValue) for a in [*args, *kwargs.values()]):
                raise SemanticError(f"{func.__self__!r}.{func.__name__}() takes compile-time arguments only")
            return _unwrap(func(*args, **kwargs))
        if func is tl.constexpr:  # `tl.constexpr(expr)` in a kernel: the compile-time value itself
            if len(args) != 1 or kwargs or isinstance(args[0], SSAValue):
                raise SemanticError("tl.constexpr(x) takes one compile-time value (a number, bool, str, "
                                    "dtype or None), not a runtime tensor or scalar")
            return _unwrap(args[0])
        name = builtin_name(func)
        if name is not None:
            if name == "static_range":
                raise SemanticError("tl.static_range can only be used as a for-loop iterator")
            try:
                bound = inspect.signature(func).bind(*args, **kwargs)
            except TypeError as e:
                raise SemanticError(f"tl.{name}(): {e}") from None
            bound.apply_defaults()
            if name in CALLS_JIT or name in SCAN_CALLS_JIT or name in MAP_CALLS_JIT:
                return IMPLS[name](self.em, **bound.arguments, _inline=self.inline)
            return IMPLS[name](self.em, **bound.arguments)
        if func is tl.pointer_type:  # a compile-time dtype, as in Triton
            try:
                return make_pointer_type(*args, **kwargs)
            except TypeError as e:
                raise SemanticError(f"tl.pointer_type(): {e}") from None
        if func in _PY_BUILTINS.values():
            if func is range:
                raise SemanticError("range() can only be used as a for-loop iterator")
            if any(isinstance(a, SSAValue) for a in [*args, *kwargs.values()]):
                if func in (min, max) and len(args) >= 2 and not kwargs:
                    result = args[0]  # min/max of runtime values: tl.minimum/maximum, as Triton
                    for a in args[1:]:
                        result = sem.minmax(self.em, "min" if func is min else "max", result, a)
                    return result
                raise SemanticError(f"{func.__name__}() works on compile-time values only")
            return func(*args, **kwargs)
        raise SemanticError(f"cannot call {sem.py_desc(func)} in a kernel: only @sparsecc.jit "
                            "functions, tl.* builtins and min/max/len/int/float/abs on constexprs")

    def inline(self, callee: KernelFunction, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if self.depth >= MAX_INLINE_DEPTH:
            raise SemanticError(f"jit calls nested deeper than {MAX_INLINE_DEPTH} (recursion?)")
        try:
            bound = callee.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise SemanticError(f"{callee.__name__}(): {e} (parameters: "
                                f"{', '.join(callee.arg_names)})") from None
        bound.apply_defaults()
        gen = CodeGenerator(callee, self.em, {}, self.depth + 1)
        for n, v in bound.arguments.items():
            gen.scope[n] = _unwrap(v)
        gen.run_body(callee.tree.body)
        return gen.scope.get(_RET)


def generate_ttir(fn: KernelFunction, arg_types: dict[str, Attribute],
                  constexprs: dict[str, Any], hints: dict[str, str | None] | None = None) -> ModuleOp:
    """The `ttir` module of kernel `fn`: runtime params typed by `arg_types`, constexprs bound.

    `hints` (from signature strings such as "i32:16"): "16" gives the argument
    `tt.divisibility = 16`; "1" makes the body see the constant 1 instead of the argument.
    """
    hints = hints or {}
    runtime = [p for p in fn.arg_names if p in arg_types]
    func = tt.FuncOp(fn.__name__, [arg_types[p] for p in runtime])
    block = func.body.block
    em = sem.Emitter(block)
    em.debug = bool(getattr(fn, "debug", False))  # type: ignore[attr-defined]  # tl.device_assert checks
    scope: dict[str, Any] = {}
    arg_attrs = []
    for p, arg in zip(runtime, block.args):
        arg.name_hint = p
        scope[p] = arg
        attrs: dict[str, Attribute] = {}
        if hints.get(p) == "16":
            attrs["tt.divisibility"] = IntegerAttr(16, 32)
        elif hints.get(p) == "1":
            one = em.insert(arith.ConstantOp(IntegerAttr(1, arg.type)))
            one.result.name_hint = p
            scope[p] = one.result
        arg_attrs.append(DictionaryAttr(attrs))
    if any(d.data for d in arg_attrs):
        func.arg_attrs = ArrayAttr(arg_attrs)
    for k, v in constexprs.items():
        scope[k] = _unwrap(v)
    gen = CodeGenerator(fn, em, scope, is_kernel=True)
    gen.run_body(fn.tree.body)
    em.location = fn.location(fn.tree)
    em.insert(tt.ReturnOp())
    func.location = em.location
    module = ModuleOp([func])
    sem.erase_signedness(module)  # tl.uint* values: their ops are chosen, the IR is signless
    inherit_locations(module)
    try:
        module.verify()
    except VerifyException as e:
        raise fn.error(fn.tree, f"internal error: the generated IR does not verify: {e}") from e
    return module
