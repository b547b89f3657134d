"""The seed kernel of the user guide (docs/seed.md): one block of D = A @ B with A 2:4 sparse.

    python docs/seed_kernel.py --write    # regenerate docs/seed/*.mlir and ptx-mma.txt

test/python/test_docs.py checks that the files equal what the compiler prints today.
"""

from __future__ import annotations

import sys
from pathlib import Path

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def dot_kernel(D, A, B, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    a_ptrs = tl.make_block_ptr(A, shape=(BLOCK_M, BLOCK_K), strides=(BLOCK_K, 1),
                               offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_ptrs = tl.make_block_ptr(B, shape=(BLOCK_K, BLOCK_N), strides=(BLOCK_N, 1),
                               offsets=(0, 0), block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    d_ptrs = tl.make_block_ptr(D, shape=(BLOCK_M, BLOCK_N), strides=(BLOCK_N, 1),
                               offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    d = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs)).to(tl.float16)
    tl.store(d_ptrs, d)


def stages() -> dict[str, str]:
    """File name -> text of each stage of the seed kernel compiled for sm_90a."""
    ck = sparsecc.compile(dot_kernel, signature={"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16"},
                          constexprs={"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 64}, target="sm_90a")
    mma = "\n".join(line.strip() for line in ck.asm["ptx"].splitlines() if "mma" in line and ".sp" in line)
    return {"ttir.mlir": ck.asm["ttir"], "ttir-decomposed.mlir": ck.asm["ttir-decomposed"],
            "ttgir.mlir": ck.asm["ttgir"], "ptx-mma.txt": mma + "\n"}


if __name__ == "__main__":
    if "--write" in sys.argv:
        for name, text in stages().items():
            (Path(__file__).parent / "seed" / name).write_text(text)
