"""Which shared-memory byte a wgmma reads, decoded from its matrix descriptor with the PTX ISA's
canonical layouts (in 16-byte units T; 128-byte swizzle):

    K-major  ((8, m), (T, 2k)) : ((8T, SBO), (1, T))      row r, K element k of the step
    MN-major ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO))  N element n, K element k

the swizzle XOR-ing the 16-byte chunk bits 6:4 of the shared address with bits 9:7 (the absolute
address: the tests' dynamic shared memory starts at 0). Used with ptx_emulator by the tests that
check what the emitted wgmmas read (codegen/test_wgmma_descriptor_reads.py,
codegen/test_quant_wgmma_fragments.py).

    kmajor_addr(smem_desc_bits(2048, lbo=16, sbo=1024, swizzle="128B"), r, k)  # row r, K element k
"""

from __future__ import annotations


def descriptor_fields(desc: int) -> tuple[int, int, int, int]:
    """(start, LBO, SBO in bytes, swizzle row width in bytes) of a wgmma matrix descriptor (bits
    13:0, 29:16, 45:32, 63:62)."""
    assert desc >= 0 and desc >> 64 == 0
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    assert (desc >> 49) & 7 == 0, "base offset"
    width = {0: 16, 1: 128, 2: 64, 3: 32}[desc >> 62]
    return start, lbo, sbo, width


def swizzle(addr: int, width: int) -> int:
    """The hardware swizzle of a `width`-byte mode on an absolute shared address."""
    if width == 16:
        return addr
    return addr ^ (((addr >> 7) & (width // 16 - 1)) << 4)


def kmajor_addr(desc: int, r: int, k: int, esz: int = 2) -> int:
    """Shared byte read for row r (M or N) and K element k of one k16 step, K-major operand."""
    start, _lbo, sbo, width = descriptor_fields(desc)
    assert width == 128, "the model covers the 128-byte swizzle (what these tiles use)"
    t = 16 // esz  # elements in 16 bytes
    off = ((r % 8) * 8 * t + k % t + (k // t) * t) * esz + (r // 8) * sbo
    return swizzle(start + off, width)


def mnmajor_addr(desc: int, k: int, n: int, esz: int = 2) -> int:
    """Shared byte read for K element k of one k16 step and N element n, MN-major operand."""
    start, lbo, sbo, width = descriptor_fields(desc)
    assert width == 128
    t = 16 // esz
    off = (n % t + ((n // t) % 8) * t + (k % 8) * 8 * t) * esz + (n // (8 * t)) * lbo + (k // 8) * sbo
    return swizzle(start + off, width)
