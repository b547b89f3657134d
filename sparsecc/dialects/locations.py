"""Source locations of IR ops: every op keeps the kernel line it came from.

The frontend gives each op it emits the `loc("file":line:col)` of the Python expression that made
it; the CLI's parser reads trailing `loc(...)` from `.mlir` input. Ops that passes create start
with an unknown location: `inherit_locations` gives each the location of the op it stands in for
(the next located op of its block, since rewrites insert before the op they replace; else the
previous one; else its parent's), so an error raised by any later stage can still name the line
of the kernel that caused it. Locations are printed only on request (`print_debuginfo`), so the
IR text of every stage is unchanged by them.

    inherit_locations(module)
    where = source_position(op)     # ("kernel.py", 12, 9) or None
"""

from __future__ import annotations

from xdsl.dialects.builtin import CallSiteLoc, FileLineColLoc, FusedLoc, NameLoc, UnknownLoc
from xdsl.ir import Attribute, Block, Operation


def _file_line_col(loc: Attribute) -> FileLineColLoc | None:
    """The innermost file:line:col of a location (a call site's callee, a fused one's first)."""
    if isinstance(loc, FileLineColLoc):
        return loc
    if isinstance(loc, CallSiteLoc):
        return _file_line_col(loc.callee)
    if isinstance(loc, NameLoc):
        return _file_line_col(loc.child_loc)
    if isinstance(loc, FusedLoc):
        for inner in loc.locations.data:
            found = _file_line_col(inner)
            if found is not None:
                return found
    return None


def source_position(op: Operation | None) -> tuple[str, int, int] | None:
    """(file, line, col) of `op`, or of its nearest located ancestor; None when there is none."""
    while op is not None:
        found = _file_line_col(op.location)
        if found is not None:
            return found.filename.data, found.line.data, found.column.data
        op = op.parent_op()
    return None


def _inherit_in_block(block: Block, parent: Attribute) -> None:
    ops = list(block.ops)
    located: list[Attribute | None] = [None if isinstance(o.location, UnknownLoc) else o.location for o in ops]
    following: Attribute | None = None
    fill: list[Attribute | None] = [None] * len(ops)
    for i in range(len(ops) - 1, -1, -1):  # the next located op of the block
        fill[i] = following
        if located[i] is not None:
            following = located[i]
    previous: Attribute | None = None
    for i, op in enumerate(ops):
        if located[i] is None:
            op.location = fill[i] or previous or parent
        previous = op.location
        for region in op.regions:
            for inner in region.blocks:
                _inherit_in_block(inner, op.location)


def inherit_locations(root: Operation) -> None:
    """Give every op under `root` that has no location the location of its neighbours (see the
    module docstring)."""
    for region in root.regions:
        for block in region.blocks:
            _inherit_in_block(block, root.location)
