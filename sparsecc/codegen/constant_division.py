"""Integer division and remainder by a positive constant, as PTX without a division.

ptxas does not strength-reduce `div` or `rem` by an immediate: `div.u32 %r, %r, 3` becomes the
generic sequence (`I2F.U32.RP`, `MUFU.RCP`, `F2I` and a correction step, ~20 SASS
instructions on sm_90), `div.s32` by 16 too, and a 64-bit division is a call to a ~60-instruction
subroutine. The TMA rings of 3, 5 or 6 stages compute their phase as `i / stages` every K step,
and every kernel's prologue divides K and row counts by 2 or 16 to address the values and the
metadata. The sequences here are the textbook ones (Granlund and Montgomery, "Division by
invariant integers using multiplication", 1994; Warren, "Hacker's Delight", ch. 10), 1-6
instructions, exact for every input of the width:

* unsigned by 2^k: a shift (`div`) or a mask (`rem`);
* unsigned by another d: q = (t + ((x - t) >> 1)) >> (b - 1), t = mulhi(x, m), b = ceil(log2 d),
  m = floor(2^w (2^b - d) / d) + 1 (fits w bits);
* signed by 2^k: x plus 2^k - 1 where x < 0, shifted arithmetically (truncation toward zero);
* signed by another d: q = mulhi(x, M) (+ x where M is negative as a w-bit integer), shifted
  arithmetically by s, plus 1 where x < 0 (Warren's magic M, s);
* `rem` as x - q * d (x - (q << k) for 2^k).

`constant_division_lines` returns the lines; the PTX printer declares the temporaries.

    >>> lines = constant_division_lines("div", "u", 32, "%r9", "%r1", 3, iter(["%t1", "%t2"]).__next__)
    >>> lines[0]
    'mul.hi.u32 %t1, %r1, 1431655766;'
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["constant_division_lines", "signed_magic", "unsigned_magic"]


def unsigned_magic(d: int, w: int) -> tuple[int, int]:
    """(m, b) for unsigned w-bit division by d (not a power of two, d >= 3): m = floor(2^w
    (2^b - d) / d) + 1 with b = ceil(log2 d).

        >>> unsigned_magic(3, 32)
        (1431655766, 2)
    """
    bits = (d - 1).bit_length()
    return ((1 << w) * ((1 << bits) - d)) // d + 1, bits


def signed_magic(d: int, w: int) -> tuple[int, int]:
    """(M, s) for signed w-bit division by d >= 2 (Warren's `magic`): M as a w-bit pattern (a
    negative multiplier where its top bit is set) and the shift s.

        >>> signed_magic(3, 32), signed_magic(7, 32)
        ((1431655766, 0), (2454267027, 2))
    """
    top = 1 << (w - 1)
    anc = top - 1 - top % d
    p = w - 1
    q1, r1 = divmod(top, anc)
    q2, r2 = divmod(top, d)
    while True:
        p += 1
        q1, r1 = 2 * q1, 2 * r1
        if r1 >= anc:
            q1, r1 = q1 + 1, r1 - anc
        q2, r2 = 2 * q2, 2 * r2
        if r2 >= d:
            q2, r2 = q2 + 1, r2 - d
        delta = d - r2
        if not (q1 < delta or (q1 == delta and r1 == 0)):
            break
    return (q2 + 1) & ((1 << w) - 1), p - w


def constant_division_lines(opcode: str, letter: str, w: int, dst: str, src: str, divisor: int,
                            fresh: Callable[[], str]) -> list[str]:
    """PTX lines setting `dst` to `src` div or rem (`opcode`) `divisor`, signed (`letter` "s") or
    unsigned ("u"), in `w`-bit registers (16, 32 or 64); `fresh()` names a new temporary of that
    width. `divisor` must be positive and representable: 1 <= divisor < 2^(w-1) signed, < 2^w
    unsigned."""
    if opcode not in ("div", "rem") or letter not in ("s", "u") or w not in (16, 32, 64):
        raise ValueError(f"constant division: no {opcode}.{letter}{w}")
    if not 1 <= divisor < 1 << (w - (letter == "s")):
        raise ValueError(f"constant division: divisor {divisor} does not fit {letter}{w}")
    if divisor == 1:
        return [f"mov.b{w} {dst}, {src if opcode == 'div' else 0};"]
    k = divisor.bit_length() - 1
    power = divisor == 1 << k
    quotient = dst if opcode == "div" else fresh()
    if letter == "u" and power:
        return [f"shr.b{w} {dst}, {src}, {k};" if opcode == "div" else f"and.b{w} {dst}, {src}, {divisor - 1};"]
    lines: list[str]
    if letter == "u":
        m, bits = unsigned_magic(divisor, w)
        t, u = fresh(), fresh()
        lines = [f"mul.hi.u{w} {t}, {src}, {m};", f"sub.u{w} {u}, {src}, {t};", f"shr.b{w} {u}, {u}, 1;",
                 f"add.u{w} {u}, {u}, {t};", f"shr.b{w} {quotient}, {u}, {bits - 1};"]
    elif power:  # x + (2^k - 1 where x < 0), shifted: rounds toward zero
        t = fresh()
        lines = [f"shr.s{w} {t}, {src}, {w - 1};", f"shr.b{w} {t}, {t}, {w - k};", f"add.s{w} {t}, {src}, {t};",
                 f"shr.s{w} {quotient}, {t}, {k};"]
    else:
        m, s = signed_magic(divisor, w)
        t, sign = fresh(), fresh()
        signed_m = m - (1 << w) if m >> (w - 1) else m
        lines = [f"mul.hi.s{w} {t}, {src}, {signed_m};"]
        if signed_m < 0:
            lines.append(f"add.s{w} {t}, {t}, {src};")
        if s:
            lines.append(f"shr.s{w} {t}, {t}, {s};")
        lines += [f"shr.b{w} {sign}, {src}, {w - 1};", f"add.s{w} {quotient}, {t}, {sign};"]
    if opcode == "rem":
        back = fresh()
        lines += [f"shl.b{w} {back}, {quotient}, {k};" if power else f"mul.lo.{letter}{w} {back}, {quotient}, {divisor};",
                  f"sub.{letter}{w} {dst}, {src}, {back};"]
    return lines
