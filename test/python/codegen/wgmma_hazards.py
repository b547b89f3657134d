"""A checker of the PTX ISA's rule for the register operands of `wgmma.mma_async` in a K loop,
and a measure of how much work overlaps the groups in flight (issue 26).

The rule: the accumulators and the register-A fragments (and, for `.sp`, the metadata register)
of a `wgmma.mma_async` are read asynchronously; no other instruction may write them until a
`wgmma.wait_group N` has retired the group (N newer groups may still run). The accumulators
passed from one wgmma to the next of the same shape are the exception (the chain).

`scan_loop(ptx)` walks the body of the K loop (the loop whose body issues wgmmas) twice in
text order, the second pass in the state the first left (the back edge), keeping the groups
in flight, and reports every write to a register a group still in flight reads, and how many
writes of A fragments (the dequantized values of a later wgmma) happen while a group runs.
Branches inside the body are walked as straight-line code: every write on any path counts,
a wait inside a branch retires nothing (it may not run), and a wgmma or commit inside one is
refused (the walk could not tell whether it ran).

    >>> scan_loop(ptx).hazards                 # [] when the ordering is right
    >>> scan_loop(ptx).fragment_writes_in_flight > 0   # dequantization overlaps the tensor cores
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LOOP = re.compile(r"^(\$L__loop\d+):$")
_REGS = re.compile(r"%[a-z]+\d+")


@dataclass
class LoopScan:
    """What `scan_loop` found in the second walk of the body (the steady state)."""

    hazards: list[str] = field(default_factory=list)
    """'line: instruction' of each write to a register that a group in flight reads."""
    fragment_writes_in_flight: int = 0
    """Writes of registers that a wgmma of the body reads as A, made while a group ran."""
    fragment_writes: int = 0
    """All writes of those registers."""
    waits: list[int] = field(default_factory=list)
    """The N of each `wgmma.wait_group N` of the body."""


def _body(ptx: str) -> list[tuple[int, str]]:
    """(line number, instruction) of the K loop's body: the loop whose body issues wgmmas."""
    lines = ptx.splitlines()
    for i, line in enumerate(lines):
        m = _LOOP.match(line.strip())
        if not m:
            continue
        end = next(j for j in range(i + 1, len(lines)) if re.search(rf"bra(\.uni)? {re.escape(m.group(1))};", lines[j]))
        body = [(j + 1, lines[j].strip()) for j in range(i + 1, end)]
        if any("wgmma.mma_async" in text for _, text in body):
            return body
    raise ValueError("no loop with wgmma.mma_async in the PTX")


def _braces(text: str) -> list[list[str]]:
    """The register lists in braces of an instruction, in order."""
    return [_REGS.findall(group) for group in re.findall(r"\{([^{}]*)\}", text)]


def _written(text: str) -> list[str]:
    """The registers an instruction (not a wgmma) writes: its first operand (or brace list)."""
    body = re.sub(r"^@!?%\w+\s+", "", text)
    parts = body.split(None, 1)
    if len(parts) < 2:
        return []
    ops = parts[1].lstrip()
    if ops.startswith("{"):
        return _REGS.findall(ops[:ops.index("}")])
    first = ops.split(",", 1)[0].strip()
    return [first] if _REGS.fullmatch(first) else []


def scan_loop(ptx: str) -> LoopScan:
    """Walk the K loop's body twice (see the module docstring)."""
    body = _body(ptx)
    a_regs: set[str] = set()
    for _, text in body:
        if text.startswith("wgmma.mma_async"):
            groups = _braces(text)
            if len(groups) > 1:
                a_regs.update(groups[1])  # register-A form: {accumulators}, {A}, ...
    scan = LoopScan()
    pending: list[set[str]] = []  # committed groups in flight, oldest first
    open_group: set[str] = set()  # wgmmas issued since the last commit
    for walk in range(2):
        steady = walk == 1
        forward: set[str] = set()  # labels of forward branches not reached yet
        for line, text in body:
            if text in ("{", "}") or text.startswith(".reg") or text.startswith("MBAR_WAIT"):
                continue
            if text.endswith(":"):
                forward.discard(text[:-1])
                continue
            m = re.search(r"bra(\.uni)? (\$L__\w+);", text)
            if m:
                forward.add(m.group(2))
                continue
            if text.startswith("wgmma."):
                if forward and text.startswith("wgmma.wait_group"):
                    continue  # may not run: the groups it would retire count as running
                if forward:
                    raise ValueError(f"line {line}: {text.split()[0]} inside a branch of the loop body")
                if text.startswith("wgmma.mma_async"):
                    groups = _braces(text)
                    open_group.update(r for g in groups for r in g)
                    if ".sp." in text.split()[0] and len(groups) > 1:  # {acc}, {A}, B desc, metadata, ...
                        open_group.update(_REGS.findall(text[text.rindex("}") + 1:].split(",")[2]))
                elif text.startswith("wgmma.commit_group"):
                    pending.append(open_group)
                    open_group = set()
                elif text.startswith("wgmma.wait_group"):
                    n = int(re.search(r"wait_group\.sync\.aligned (\d+)", text).group(1))
                    pending = pending[len(pending) - n:] if n else []
                    if steady:
                        scan.waits.append(n)
                continue
            written = set(_written(text))
            if not written or not steady:
                continue
            live = set().union(*pending) if pending else set()
            if written & (live | open_group):
                scan.hazards.append(f"{line}: {text}")
            if written & a_regs:
                scan.fragment_writes += 1
                scan.fragment_writes_in_flight += bool(pending)
    return scan


__all__ = ["LoopScan", "scan_loop"]
