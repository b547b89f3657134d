"""The handlers of convert-ttg-to-ptx, one module per op family (see `table` for the shape of
a handler and how ops find theirs). Importing this package fills the table."""

from sparsecc.codegen.handlers import (  # noqa: F401  (each module registers its handlers)
    async_ops,
    control,
    debug,
    dequantize,
    dot,
    elementwise,
    inline_asm,
    layouts,
    map_elementwise,
    math_ext,
    memory,
    pointer_casts,
    reduce,
    scan,
    shapes,
    shared,
    views,
)
from sparsecc.codegen.handlers.table import (
    HANDLERS,
    NAMED_HANDLERS,
    handler_for,
    handles,
    handles_name,
)

FAMILIES = (async_ops, control, debug, dequantize, dot, elementwise, inline_asm, layouts, map_elementwise, math_ext,
            memory, pointer_casts, reduce, scan, shared, shapes, views)
"""The handler modules, one per op family."""

__all__ = ["FAMILIES", "HANDLERS", "NAMED_HANDLERS", "handler_for", "handles", "handles_name"]
