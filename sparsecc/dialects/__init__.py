"""Dialects of sparsecc and the xDSL context that knows all of them."""

from __future__ import annotations

from xdsl.context import Context


def make_context() -> Context:
    """A context with every dialect sparsecc parses: builtin, arith (tensor-capable), math, scf, tt (+ GPU ones)."""
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.math import Math
    from xdsl.dialects.scf import Scf

    from sparsecc.dialects.arith import ARITH_WITH_TENSORS
    from sparsecc.dialects.tt import TT

    ctx = Context()
    for dialect in (Builtin, ARITH_WITH_TENSORS, Math, Scf, TT):
        ctx.load_dialect(dialect)
    for name, loader in _optional_dialects().items():
        ctx.register_dialect(name, loader)
    return ctx


def _optional_dialects() -> dict:
    """GPU dialects, registered lazily so the front half never imports them."""
    loaders = {}

    def ttg():
        from sparsecc.dialects.ttg import TTG

        return TTG

    def ptx():
        from sparsecc.dialects.ptx import PTX

        return PTX

    loaders["ttg"] = ttg
    loaders["ptx"] = ptx
    return loaders
