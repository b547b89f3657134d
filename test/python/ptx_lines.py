"""Reading emitted PTX in tests: stripped lines and the spans of the lowering's loops."""

from __future__ import annotations


def stripped(ptx: str) -> list[str]:
    return [ln.strip() for ln in ptx.splitlines()]


def loop_spans(lines: list[str]) -> list[tuple[int, int]]:
    """(index of `$L__loopN:`, index of the next `$L__loop_end` label) for each loop, in order."""
    spans = []
    for i, ln in enumerate(lines):
        if ln.startswith("$L__loop") and ln.endswith(":") and "end" not in ln:
            spans.append((i, next(j for j in range(i, len(lines)) if lines[j].startswith("$L__loop_end"))))
    return spans


def first_loop(ptx: str) -> tuple[list[str], list[str], list[str]]:
    """(before, inside, after) the first loop of the PTX, stripped."""
    lines = stripped(ptx)
    top, end = loop_spans(lines)[0]
    return lines[:top], lines[top:end], lines[end:]


def loop_bodies(ptx: str) -> list[list[str]]:
    """The stripped lines of each loop, from its label to (not including) its end label."""
    lines = stripped(ptx)
    return [lines[top:end] for top, end in loop_spans(lines)]
