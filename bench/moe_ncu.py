"""One launch of each side of bench/moe.py's grouped GEMM, for ncu to profile.

    ncu --kernel-name regex:moe_gemm --metrics ... python bench/moe_ncu.py prefill 2048 128x256x64w8s3
    python bench/moe_ncu.py prefill 2048 128x256x64w8s3 sparsecc mbarriers=1   # sparsecc switches
Each side is launched twice (the first compiles); profile with --launch-skip 1 per kernel name,
or profile all four and read the second of each.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moe  # noqa: E402

pk = moe.pk


def parse_tile(text: str) -> moe.Tile:
    """'128x256x64w8s3' -> Tile(128, 256, 64, 8, 3)."""
    dims, rest = text.split("w")
    warps, stages = rest.split("s")
    n, t, k = (int(v) for v in dims.split("x"))
    return moe.Tile(n, t, k, int(warps), int(stages))


def parse_switches(text: str) -> dict[str, bool]:
    """'mbarriers=1,wgmma_a_smem=0' -> {'mbarriers': True, 'wgmma_a_smem': False}
    (sparsecc.switches.SWITCHES names)."""
    out = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        out[name] = value not in ("0", "false", "off", "no")
    return out


def main() -> int:
    import torch

    import sparsecc

    phase, tokens, tile = sys.argv[1], int(sys.argv[2]), parse_tile(sys.argv[3])
    sides = sys.argv[4].split(",") if len(sys.argv) > 4 else ["triton", "sparsecc"]
    switches = parse_switches(sys.argv[5]) if len(sys.argv) > 5 else {}
    w = moe.make_weights(moe.EXPERTS, moe.N_FF, moe.D_MODEL, "cuda")
    x, offs, _ = moe.route(tokens, moe.EXPERTS, moe.TOP_K, moe.D_MODEL, "cuda", seed=tokens)
    y = torch.empty(x.shape[0], moe.N_FF, dtype=torch.float16, device="cuda")
    for side in sides:
        kernel = pk.triton_kernel(moe.moe_gemm_kernel) if side == "triton" else pk.sparsecc_kernel(moe.moe_gemm_kernel)
        weights = w if side == "triton" else sparsecc.compress(w)
        for _ in range(2):
            moe.launch(kernel, weights, x, y, offs, moe.N_FF, moe.D_MODEL, tile, moe.EXPERTS,
                       **(switches if side == "sparsecc" else {}))
        torch.cuda.synchronize()
        print(f"{phase} {tokens} {side} {tile} {switches if side == 'sparsecc' else ''}: launched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
