"""Dialects of sparsecc and the xDSL context that knows all of them."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def make_context() -> Context:
    """A context with every dialect sparsecc parses or prints: builtin, arith (tensor-capable),
    scf, tt, and (loaded on first use: a `sparsecc-opt` run that meets none of them does not
    import them) math, ttg and ptx with its wgmma and mbarrier ops, so any IR the compiler
    prints at any stage parses back:

        module = Parser(make_context(), text).parse_module()
    """
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.scf import Scf

    from sparsecc.dialects.arith import ARITH_WITH_TENSORS
    from sparsecc.dialects.tt import TT

    ctx = Context()
    for dialect in (Builtin, ARITH_WITH_TENSORS, Scf, TT):
        ctx.load_dialect(dialect)
    for name, loader in _gpu_dialects().items():
        ctx.register_dialect(name, loader)
    return ctx


def _gpu_dialects() -> dict[str, Callable[[], Dialect]]:
    """math and the GPU dialects, registered lazily so the front half never imports them."""

    def math() -> Dialect:
        from xdsl.dialects.math import Math

        return Math

    def ttg() -> Dialect:
        from sparsecc.dialects.ttg import TTG

        return TTG

    def ptx() -> Dialect:
        from sparsecc.dialects.ptx import PTX
        from sparsecc.dialects.ptx_atomics import ATOMIC_OPS
        from sparsecc.dialects.ptx_mbarrier import MBARRIER_OPS
        from sparsecc.dialects.ptx_wgmma import WGMMA_OPS

        # the Hopper ops are named ptx.* too: one dialect for the parser
        return Dialect("ptx", [*PTX.operations, *WGMMA_OPS, *MBARRIER_OPS, *ATOMIC_OPS], list(PTX.attributes))

    return {"math": math, "ttg": ttg, "ptx": ptx}
