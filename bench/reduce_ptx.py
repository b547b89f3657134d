"""PTX size and ptxas resources of the reduction row kernels (softmax, layer norm, RMSNorm of
4096 fp16 values, one row per program), sparsecc next to Triton, from the same kernel source.

    python bench/reduce_ptx.py [--block 4096] [--warps 4,8]

No GPU needed: Triton compiles for GPUTarget("cuda", 90, 32) and sparsecc for sm_90a; both
PTX go through ptxas -v. The kernels are test/python/reduction_kernels.py; Triton's copy is
that file with the two import lines swapped for triton's.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "test" / "python" / "reduction_kernels.py"


def _triton_module():
    """reduction_kernels.py with `triton.jit` and `triton.language` in place of sparsecc's."""
    src = KERNELS.read_text()
    src = src.replace("import sparsecc.language as tl", "import triton.language as tl")
    src = src.replace("import sparsecc\n", "import triton\n").replace("@sparsecc.jit", "@triton.jit")
    path = Path(tempfile.mkdtemp(prefix="reduce-ptx-")) / "triton_reduction_kernels.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("triton_reduction_kernels", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _triton_ptx(mod, name: str, sig: dict[str, str], block: int, warps: int) -> str:
    import triton
    from triton.backends.compiler import GPUTarget

    src = triton.compiler.ASTSource(getattr(mod, f"{name}_kernel"), sig | {"BLOCK": "constexpr"}, {"BLOCK": block})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps}).asm["ptx"]


def _triton_resources(ptx: str):
    """ptxas -v of Triton's PTX with the ptxas Triton ships for its PTX version (its newest)."""
    import os

    import triton

    from sparsecc.codegen.ptxas import assemble

    bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    tool = next((p for p in (bin_dir / "ptxas-blackwell", bin_dir / "ptxas") if p.is_file()), None)
    old = os.environ.get("SPARSECC_PTXAS")
    if tool is not None:
        os.environ["SPARSECC_PTXAS"] = str(tool)
    try:
        return assemble(ptx, "sm_90a").kernel_resources()
    finally:
        if old is None:
            os.environ.pop("SPARSECC_PTXAS", None)
        else:
            os.environ["SPARSECC_PTXAS"] = old


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--warps", default="4,8")
    args = ap.parse_args()
    sys.path.insert(0, str(KERNELS.parent))
    import reduction_kernels as ours

    import sparsecc
    from sparsecc.codegen.ptxas import assemble

    theirs = _triton_module()
    print("| kernel | warps | sparsecc lines | Triton lines | ratio | sparsecc regs / spills | Triton regs / spills |")
    print("|---|---|---|---|---|---|---|")
    for name, sig in ours.ROW_SIGS.items():
        for warps in map(int, args.warps.split(",")):
            mine = sparsecc.compile(getattr(ours, f"{name}_kernel"), signature=sig, constexprs={"BLOCK": args.block},
                                    num_warps=warps, target="sm_90a").asm["ptx"]
            ref = _triton_ptx(theirs, name, sig, args.block, warps)
            rm = assemble(mine, "sm_90a").kernel_resources()
            rt = _triton_resources(ref)
            a, b = mine.count("\n"), ref.count("\n")
            print(f"| {name} | {warps} | {a} | {b} | {a / b:.2f} | {rm.registers} / {rm.spill_stores} | "
                  f"{rt.registers} / {rt.spill_stores} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
