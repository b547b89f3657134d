"""What each GPU target sparsecc compiles for can run: the targets, their shared memory per
block, and the PTX instructions that need a newer target than sm_80.

The `ptx.kernel` verifier checks a kernel's target and shared memory against these tables, and
the PTX printer checks every instruction it prints (`first_unavailable`), so no `.target` /
instruction combination reaches ptxas that ptxas would reject. The requirements are the
ones ptxas (CUDA 12/13) reports ("Feature 'add.bf16' requires .target sm_90 or higher"); the
regression tests assemble one instruction of each row (test/python/codegen/test_ptx_targets.py).

    >>> check_target("sm_1000")
    "unknown target 'sm_1000' (supported: sm_80, sm_86, sm_89, sm_90, sm_90a)"
    >>> shared_limit("sm_86")
    101376
    >>> first_unavailable("mul.bf16 %rs1, %rs2, %rs3;", "sm_80")
    (0, 'mul.bf16', 'sm_90')
"""

from __future__ import annotations

import re

SUPPORTED_TARGETS: tuple[str, ...] = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")
"""The `.target`s sparsecc emits (mma.sp, which every sparse dot runs on, needs sm_80; the
printer's PTX ISA 8.5 knows nothing newer than sm_90a)."""

MAX_SHARED_BYTES: dict[str, int] = {
    "sm_80": 163 * 1024,
    "sm_86": 99 * 1024,
    "sm_89": 99 * 1024,
    "sm_90": 227 * 1024,
    "sm_90a": 227 * 1024,
}
"""Shared memory one block may use on each target (the opt-in maximum of the CUDA programming
guide's table "Technical Specifications per Compute Capability"); more fails at launch."""


_TARGET = re.compile(r"sm_(?P<arch>[0-9]+)a?")
"""A target name; ASCII digits only (`\\d` and `str.isdigit` take any script's digits)."""
MIN_SPARSE_ARCH = 80
"""mma.sp, which every sparse dot runs on, needs sm_80."""


def arch_number(target: str) -> int:
    """The number of an `sm_XY[a]` target (90 for sm_90a; 0 when there is none)."""
    m = _TARGET.fullmatch(target)
    return int(m["arch"]) if m else 0


def normalize_target(target: str) -> str:
    """A target name as sparsecc writes it ("90" -> "sm_90"), or a ValueError/TypeError that
    says why it is not one sparsecc compiles for.

        >>> normalize_target("90a")
        'sm_90a'
    """
    if not isinstance(target, str):
        raise TypeError(f"target must be a string such as 'sm_90a' (or None for the interpreter), "
                        f"got {type(target).__name__} {target!r}")
    t = target if target.startswith("sm_") else f"sm_{target}"
    m = _TARGET.fullmatch(t)
    if m is None:
        raise ValueError(f"unknown target '{target}': expected e.g. sm_80 or sm_90")
    if int(m["arch"]) < MIN_SPARSE_ARCH:
        raise ValueError(f"target {t} has no sparse tensor cores: mma.sp needs sm_80 or newer "
                         f"(supported: {', '.join(SUPPORTED_TARGETS)})")
    if t not in SUPPORTED_TARGETS:
        raise ValueError(f"unsupported target {t} (supported: {', '.join(SUPPORTED_TARGETS)})")
    return t


def satisfies(target: str, needed: str) -> bool:
    """Whether code for `target` may use what `needed` introduced: a newer or equal number, and
    for an arch-specific `needed` (sm_90a: wgmma, setmaxnreg) exactly that target."""
    if needed.endswith("a"):
        return target == needed
    return arch_number(target) >= arch_number(needed)


def check_target(target: str) -> str | None:
    """Why `target` is not one sparsecc emits, or None when it is."""
    if target in SUPPORTED_TARGETS:
        return None
    return f"unknown target '{target}' (supported: {', '.join(SUPPORTED_TARGETS)})"


def shared_limit(target: str) -> int:
    """The shared memory (bytes) one block may use on a supported `target`."""
    return MAX_SHARED_BYTES[target]


def check_shared(target: str, nbytes: int) -> str | None:
    """Why `nbytes` of shared memory per block cannot run on `target`, or None when they can."""
    if nbytes < 0:
        return f"negative shared memory size {nbytes}"
    limit = MAX_SHARED_BYTES.get(target)
    if limit is not None and nbytes > limit:
        return (f"{nbytes} bytes of shared memory exceed the {limit} bytes ({limit // 1024} KiB) "
                f"one block may use on {target}")
    return None


# ----------------------------------------------------------------------------------------------
# Instructions

_OP = r"(?<![\w.%$])"  # the start of an opcode: not inside a longer name or register
_INT8 = r"[bsu]8\b"

_NEEDS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), t) for p, t in (
    # Hopper warpgroup and register-reconfiguration instructions exist on sm_90a only
    (_OP + r"wgmma\.\w+", "sm_90a"),
    (_OP + r"setmaxnreg\.\w+", "sm_90a"),
    # TMA, transaction-counting mbarriers, clusters, async-proxy fences (sm_90)
    (_OP + r"cp\.async\.bulk[\w.:]*", "sm_90"),
    (_OP + r"mbarrier\.(?:try_wait|arrive\.expect_tx|arrive_drop\.expect_tx|expect_tx|complete_tx)[\w.:]*", "sm_90"),
    (_OP + r"fence\.(?:proxy\.async|mbarrier_init)[\w.:]*", "sm_90"),
    (_OP + r"elect\.sync", "sm_90"),
    (_OP + r"stmatrix\.[\w.:]*", "sm_90"),
    (_OP + r"mapa\.[\w.:]*", "sm_90"),
    (_OP + r"barrier\.cluster[\w.:]*", "sm_90"),
    (r"%cluster_\w+|%clusterid\.\w|\.shared::cluster", "sm_90"),
    # bf16 arithmetic beyond fma/min/max/neg/abs, and conversions of bf16 to anything but f32
    (_OP + r"(?:add|sub|mul)(?:\.r[nmpz])?(?:\.ftz)?(?:\.sat)?\.bf16(?:x2)?\b", "sm_90"),
    (_OP + r"setp\.\w+\.bf16(?:x2)?\b", "sm_90"),
    (_OP + r"(?:ex2|tanh|lg2|sin|cos|rcp|sqrt|rsqrt)\.[\w.:]*bf16(?:x2)?\b", "sm_90"),
    (_OP + r"(?:atom|red)\.[\w.:]*\.bf16(?:x2)?\b", "sm_90"),
    (_OP + r"cvt(?:\.\w+)*\.(?:bf16\.(?:f16|f64|[su](?:8|16|32|64))|(?:f16|f64|[su](?:8|16|32|64))\.bf16)\b", "sm_90"),
    # 8-bit floats (Ada): conversions and tensor-core operands
    (_OP + r"(?:cvt|mma)[\w.:]*\.e[45]m[23](?:x2)?\b", "sm_89"),
))
"""(pattern of an instruction, the oldest target that has it); targets older than sm_80 are
not supported at all, so sm_80 instructions (mma.sp, cp.async, ldmatrix) need no row."""

_NEVER = re.compile(
    _OP + r"(?:add|sub|mul(?:\.lo|\.hi|\.wide)?|mad[\w.:]*|div|rem|and|or|xor|not|shl|shr|max|min|abs|neg|"
    r"setp\.\w+|selp|mov)\." + _INT8
    + "|" + _OP + r"cvt(?:\.\w+)*\.(?:bf16\.[su]8|[su]8\.bf16)\b"
)
"""PTX has no 8-bit ALU, compare, select or move forms (bytes live in 16-bit registers; only
ld/st/cvt take .b8/.s8/.u8), and no cvt between bf16 and 8-bit integers, whatever the target."""


def first_unavailable(text: str, target: str) -> tuple[int, str, str | None] | None:
    """(offset, instruction, the target it needs) of the first statement of PTX `text` that
    cannot run on `target`; the target is None for a form no target has (an 8-bit add). None
    when every statement can. Comments (`// ...`) are not statements.

        >>> first_unavailable("\\tmov.u32 %r1, %tid.x;\\n\\twgmma.fence.sync.aligned;", "sm_90")
        (23, 'wgmma.fence', 'sm_90a')
    """
    rows: list[tuple[re.Pattern[str], str | None]] = [(_NEVER, None)]
    rows += [(p, needed) for p, needed in _NEEDS if not satisfies(target, needed)]
    first: tuple[int, str, str | None] | None = None
    for pattern, needed in rows:
        for m in pattern.finditer(text):
            if "//" in text[text.rfind("\n", 0, m.start()) + 1 : m.start()]:
                continue  # inside a comment
            if first is None or m.start() < first[0]:
                first = (m.start(), m.group(0), needed)
            break
    return first


__all__ = ["SUPPORTED_TARGETS", "MAX_SHARED_BYTES", "MIN_SPARSE_ARCH", "arch_number", "normalize_target", "satisfies", "check_target", "shared_limit",
           "check_shared", "first_unavailable"]
