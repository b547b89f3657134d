"""Counter-based random numbers, bit-exact with Triton's `tl.rand`/`tl.randint`/`tl.randn`.

Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a state
of four 32-bit counters and a two-word key; each round multiplies two counters by the round
constants, crosses the high and low halves of the products with the other counters and the
key, and bumps the key by the Weyl constants. Triton seeds the key with the 64-bit seed (low,
high word) and the counters with the offset (low, high word, 0, 0), so the same seed and offset
give the same numbers in both compilers.

These are ordinary `@sparsecc.jit` functions on `tl.uint32` values: a kernel that calls them
inlines them (`tl.rand(seed, offs)` in a kernel is a call of `rand` below), and they run on
the interpreter and the GPU like any other kernel code. Being jit functions, they belong to the
frontend's stage, not the language's: this module registers them with `sparsecc.language` (as
`tl.rand` & co.) when the frontend loads (`sparsecc/frontend/__init__.py` imports it), so the
language never imports the frontend.

    @sparsecc.jit
    def dropout(X, Y, n, p, seed, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        keep = tl.rand(seed, offs) > p
        x = tl.load(X + offs, mask=offs < n)
        tl.store(Y + offs, tl.where(keep, x / (1 - p), 0.0), mask=offs < n)
"""

from __future__ import annotations

import sparsecc.language as tl
from sparsecc.frontend.jit import jit

N_ROUNDS_DEFAULT = tl.constexpr(10)
"""Rounds of Philox Triton runs by default (10: Philox 4x32-10)."""

# Philox's constants: the Weyl key increments (golden ratio, sqrt(3) - 1) and the round
# multipliers, for 32-bit and for 64-bit words
_KEY_A_32 = tl.constexpr(0x9E3779B9)
_KEY_B_32 = tl.constexpr(0xBB67AE85)
_ROUND_A_32 = tl.constexpr(0xD2511F53)
_ROUND_B_32 = tl.constexpr(0xCD9E8D57)
_KEY_A_64 = tl.constexpr(0x9E3779B97F4A7C15)
_KEY_B_64 = tl.constexpr(0xBB67AE8584CAA73B)
_ROUND_A_64 = tl.constexpr(0xD2E7470EE14C6C93)
_ROUND_B_64 = tl.constexpr(0xCA5A826395121157)


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds of counters (c0, c1, c2, c3) under key (k0, k1), all tl.uint32
    (or all tl.uint64); returns the four new counters: `r0, r1, r2, r3 = tl.philox_impl(...)`."""
    if c0.dtype == tl.uint32:
        key_a = _KEY_A_32
        key_b = _KEY_B_32
        round_a = _ROUND_A_32
        round_b = _ROUND_B_32
    else:
        tl.static_assert(c0.dtype == tl.uint64, "tl.philox_impl takes tl.uint32 or tl.uint64 counters")
        key_a = _KEY_A_64
        key_b = _KEY_B_64
        round_a = _ROUND_A_64
        round_b = _ROUND_B_64
    for _ in tl.static_range(n_rounds):
        old0 = c0
        old2 = c2
        c0 = tl.umulhi(old2, round_b) ^ c1 ^ k0
        c2 = tl.umulhi(old0, round_a) ^ c3 ^ k1
        c1 = old2 * round_b
        c3 = old0 * round_a
        k0 = k0 + key_a
        k1 = k1 + key_b
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Philox of counters c0..c3 (any 32- or 64-bit integers, taken as their bits) keyed by the
    integer `seed`: `r0, r1, r2, r3 = tl.philox(seed, offs, 0 * offs, 0 * offs, 0 * offs)`."""
    seed = seed.to(tl.uint64)
    if c0.dtype.primitive_bitwidth == 32:
        word = tl.uint32
        k0 = (seed & 0xFFFFFFFF).to(tl.uint32)
        k1 = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
    else:
        tl.static_assert(c0.dtype.primitive_bitwidth == 64, "tl.philox takes 32- or 64-bit counters")
        word = tl.uint64
        k0 = seed
        k1 = seed * 0
    return philox_impl(c0.to(word, bitcast=True), c1.to(word, bitcast=True), c2.to(word, bitcast=True),
                       c3.to(word, bitcast=True), k0, k1, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random tl.uint32 for `seed` and the int32/int64 block `offset`, the
    cheapest way to many numbers: `r0, r1, r2, r3 = tl.randint4x(seed, offs)`."""
    lo = offset.to(tl.uint32)
    zero = lo * 0
    if offset.dtype.primitive_bitwidth > 32:
        hi = (offset >> 32).to(tl.uint32)
    else:
        hi = zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


@jit
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of random tl.uint32, one per `offset`: `bits = tl.randint(seed, offs)`."""
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    return r0


@jit
def uint_to_uniform_float(x):
    """Random 32- or 64-bit integers to float32 in [0, 1), as Triton: the bits as a signed
    number, folded onto [0, MAX] by `~`, times the largest scale keeping MAX * scale < 1:
    `u = tl.uint_to_uniform_float(tl.randint(seed, offs))`."""
    if x.dtype.primitive_bitwidth == 32:
        x = x.to(tl.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        tl.static_assert(x.dtype.primitive_bitwidth == 64, "tl.uint_to_uniform_float takes 32- or 64-bit integers")
        x = x.to(tl.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    x = tl.where(x < 0, ~x, x)
    return x * scale


@jit
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of float32 uniform in [0, 1), one per `offset`: `keep = tl.rand(seed, offs) > p`."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def rand4x(seed, offsets, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of float32 uniform in [0, 1): `u0, u1, u2, u3 = tl.rand4x(seed, offs)`."""
    r0, r1, r2, r3 = randint4x(seed, offsets, n_rounds)
    return (uint_to_uniform_float(r0), uint_to_uniform_float(r1), uint_to_uniform_float(r2),
            uint_to_uniform_float(r3))


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform blocks to two standard normal ones (u1 clamped to 1e-7 first,
    as Triton): `n1, n2 = tl.pair_uniform_to_normal(u1, u2)`."""
    u1 = tl.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = tl.sqrt(-2.0 * tl.log(u1))
    return r * tl.cos(th), r * tl.sin(th)


@jit
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """A block of float32 standard normal numbers, one per `offset`: `z = tl.randn(seed, offs)`."""
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(uint_to_uniform_float(r0), uint_to_uniform_float(r1))
    return n0


@jit
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of float32 standard normal numbers: `z0, z1, z2, z3 = tl.randn4x(seed, offs)`."""
    u0, u1, u2, u3 = rand4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(u0, u1)
    n2, n3 = pair_uniform_to_normal(u2, u3)
    return n0, n1, n2, n3


tl._register_library({name: globals()[name] for name in tl._LIBRARY_NAMES})
