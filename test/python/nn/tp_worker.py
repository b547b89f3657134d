"""One rank of test_tensor_parallel's multi-process check (run as a script, one process per rank,
torchrun-style: RANK, WORLD_SIZE in the environment, and TP_INIT_FILE, the file the ranks meet in
(a file store: no port to pick, so none to lose to another process); gloo on the CPU, or NCCL with
one GPU a rank where TP_DEVICE=cuda).

Every rank builds the same small models (seeded), sparsifies them, runs the unsharded model for
the reference, then shards a copy with `parallelize_module` and runs it on the same input. Rank 1
builds its copy from another seed: the shards must still come out of rank 0's weights
(`src_data_rank=0`, the default), as torch's styles broadcast theirs. Writes a JSON of
{case: {"err": max |sharded - unsharded|, "ref": max |unsharded|, ...}} (or {"error": message})
to argv[1]; the test asserts on it.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

from sparsecc.nn import SparseLinear, sparsify_
from sparsecc.nn.parallel import (
    FusedColwiseParallel,
    SparseColwiseParallel,
    SparseRowwiseParallel,
    fuse_linears,
    sparse_plan,
)

HIDDEN, HEADS, INTER = 256, 4, 512
DEVICE = os.environ.get("TP_DEVICE", "cpu")


class MLP(nn.Module):
    """fc1 (bias, fused relu) -> fc2 (row-parallel: bias, fused gelu after the sum) -> fc3 (71
    outputs: uneven column shards, gathered) -> fc4 (row-parallel from a replicated input, DTensor
    output) -> fc5 (column-parallel from that DTensor), plus a dense nn.Linear the Sparse styles
    hand to torch's."""

    def __init__(self, quant: str | None) -> None:
        super().__init__()
        lin = [nn.Linear(256, 512), nn.Linear(512, 256), nn.Linear(256, 71), nn.Linear(256, 128, bias=False)]
        self.fc1 = SparseLinear.from_linear(lin[0].half(), activation="relu", quant=quant)
        self.fc2 = SparseLinear.from_linear(lin[1].half(), activation="gelu_tanh", quant=quant)
        self.fc3 = SparseLinear.from_linear(lin[2].half())
        self.fc4 = SparseLinear.from_linear(lin[3].half(), quant=quant)
        self.fc5 = SparseLinear.from_linear(nn.Linear(128, 48).half(), activation="silu")
        self.dense = nn.Linear(256, 64).half()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.fc2(self.fc1(x))
        y = self.fc4(h)
        return self.fc3(h), y.full_tensor() if isinstance(y, DTensor) else y, self.fc5(y), self.dense(h)


MLP_PLAN = {"fc1": SparseColwiseParallel(), "fc2": SparseRowwiseParallel(),
            "fc3": SparseColwiseParallel(output_layouts=Replicate()),
            "fc4": SparseRowwiseParallel(input_layouts=Replicate(), use_local_output=False),
            "fc5": SparseColwiseParallel(output_layouts=Replicate()),
            "dense": SparseColwiseParallel(output_layouts=Replicate())}


class Block(nn.Module):
    """A Llama-like decoder block (RMSNorm, causal attention without rotary, SwiGLU MLP) whose
    head count comes from q_proj's width, so that it runs on its heads' shard as it is."""

    def __init__(self) -> None:
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(4))
        self.gate_proj, self.up_proj = (nn.Linear(HIDDEN, INTER, bias=False) for _ in range(2))
        self.down_proj = nn.Linear(INTER, HIDDEN, bias=False)
        self.norm1, self.norm2 = nn.RMSNorm(HIDDEN), nn.RMSNorm(HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.norm1(x)
        q, k, v = (p(h).view(b, t, -1, HIDDEN // HEADS).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        a = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True).to(x.dtype)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, t, -1))
        h = self.norm2(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


BLOCK_PLAN = {"q_proj": ColwiseParallel(), "k_proj": ColwiseParallel(), "v_proj": ColwiseParallel(),
              "o_proj": RowwiseParallel(), "gate_proj": ColwiseParallel(), "up_proj": ColwiseParallel(),
              "down_proj": RowwiseParallel()}


KV_HEADS = 2
QKV_PARTS = (HIDDEN, HIDDEN * KV_HEADS // HEADS, HIDDEN * KV_HEADS // HEADS)


class GQABlock(nn.Module):
    """A Llama-like block with grouped-query attention (4 query heads, 2 key/value heads: q, k, v
    of 256, 128, 128 rows) whose projections are separate, or, after `fuse()`, one qkv_proj and
    one gate_up_proj (`fuse_linears`) split locally in the proportions of the parts: on a rank
    of FusedColwiseParallel the local output is that rank's q, k, v (gate, up)."""

    def __init__(self) -> None:
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, QKV_PARTS[0], bias=True)
        self.k_proj, self.v_proj = (nn.Linear(HIDDEN, QKV_PARTS[1], bias=True) for _ in range(2))
        self.o_proj = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.gate_proj, self.up_proj = (nn.Linear(HIDDEN, INTER, bias=False) for _ in range(2))
        self.down_proj = nn.Linear(INTER, HIDDEN, bias=False)
        self.norm1, self.norm2 = nn.RMSNorm(HIDDEN), nn.RMSNorm(HIDDEN)
        self.fused = False

    def fuse(self, swiglu: bool = False) -> GQABlock:
        """Fused projections; `swiglu`: the gate/up layer (a SparseLinear) computes silu(gate) * up
        in its kernel's epilogue."""
        self.qkv_proj = fuse_linears([self.q_proj, self.k_proj, self.v_proj])
        self.gate_up_proj = fuse_linears([self.gate_proj, self.up_proj])
        if swiglu:
            self.gate_up_proj.activation = "swiglu"
        del self.q_proj, self.k_proj, self.v_proj, self.gate_proj, self.up_proj
        self.fused = True
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.norm1(x)
        if self.fused:
            qkv = self.qkv_proj(h)
            # each rank holds 1 / world_size of every part: split in the parts' proportions
            q, k, v = qkv.split([p * qkv.shape[-1] // sum(QKV_PARTS) for p in QKV_PARTS], -1)
        else:
            q, k, v = self.q_proj(h), self.k_proj(h), self.v_proj(h)
        q, k, v = (p.reshape(b, t, -1, HIDDEN // HEADS).transpose(1, 2) for p in (q, k, v))
        groups = q.shape[1] // k.shape[1]
        k, v = (p.repeat_interleave(groups, dim=1) for p in (k, v))
        a = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True).to(x.dtype)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, t, -1))
        h = self.norm2(x)
        if self.fused and getattr(self.gate_up_proj, "activation", None) == "swiglu":
            return x + self.down_proj(self.gate_up_proj(h))  # silu(gate) * up from the layer itself
        if self.fused:
            gate, up = self.gate_up_proj(h).chunk(2, -1)
        else:
            gate, up = self.gate_proj(h), self.up_proj(h)
        return x + self.down_proj(F.silu(gate) * up)


FUSED_PLAN = {"qkv_proj": FusedColwiseParallel(QKV_PARTS), "gate_up_proj": FusedColwiseParallel((INTER, INTER)),
              "o_proj": RowwiseParallel(), "down_proj": RowwiseParallel()}


def _gqa_block(seed: int, quant: str | None, sparse: bool) -> GQABlock:
    torch.manual_seed(seed)
    block = GQABlock().half()
    with torch.no_grad():  # biases of the weights' size: a bias in the wrong rows shows
        for p in (block.q_proj, block.k_proj, block.v_proj):
            p.bias.normal_(0, 0.5)
    if sparse:
        sparsify_(block, quant=quant)
    return block.to(DEVICE)


def _diff(a: torch.Tensor, b: torch.Tensor) -> dict:
    return {"err": (a.float() - b.float()).abs().max().item(), "ref": b.float().abs().max().item(),
            "shape": list(a.shape), "finite": bool(torch.isfinite(a).all())}


def run(rank: int, world: int) -> dict:
    mesh = init_device_mesh(DEVICE, (world,))
    results: dict = {}
    x = torch.randn(3, 5, HIDDEN, generator=torch.Generator().manual_seed(1)).half().to(DEVICE)
    for quant in (None, "w4g128"):
        name = quant or "fp16"
        torch.manual_seed(0)
        model = MLP(quant).to(DEVICE)
        ref = model(x)
        if rank != 0:  # another rank's copy: parallelize_module must shard rank 0's
            torch.manual_seed(1234)
            model = MLP(quant).to(DEVICE)
        sharded = parallelize_module(copy.deepcopy(model), mesh, MLP_PLAN)
        got = sharded(x)
        for part, a, b in zip(("fc3", "fc4", "fc5", "dense"), got, ref, strict=True):
            results[f"mlp-{name}-{part}"] = _diff(a, b)
        results[f"mlp-{name}-shards"] = {"fc1_out": sharded.fc1.out_features, "fc2_in": sharded.fc2.in_features,
                                         "fc3_out": sharded.fc3.out_features,
                                         "fc2_bias": sharded.fc2.bias is not None,
                                         "fc1_bias": None if sharded.fc1.bias is None else list(sharded.fc1.bias.shape)}

        torch.manual_seed(0)
        block = Block().half()
        sparsify_(block, quant=quant)
        block.to(DEVICE)
        ref = block(x)
        sharded = parallelize_module(copy.deepcopy(block), mesh, sparse_plan(BLOCK_PLAN))
        results[f"block-{name}"] = _diff(sharded(x), ref)
        results[f"block-{name}-local"] = {"q_out": sharded.q_proj.out_features, "down_in": sharded.down_proj.in_features}

    # fused q/k/v and gate/up (GQA: parts of 256, 128, 128 rows), sharded with FusedColwiseParallel,
    # against the unsharded unfused block: sparse fp16 and w4g128 (fused from the SparseLinears),
    # and dense (fused nn.Linear, torch's DTensor path under the same plan)
    # (and w4g128 with the SwiGLU in the gate/up kernel's epilogue)
    for name, quant, sparse in (("fp16", None, True), ("w4g128", "w4g128", True), ("dense", None, False),
                                ("swiglu-w4g128", "w4g128", True)):
        ref = _gqa_block(0, quant, sparse)(x)
        # rank 1's copy from another seed: the shards must come from rank 0's weights
        block = _gqa_block(0 if rank == 0 else 1234, quant, sparse).fuse(swiglu=name.startswith("swiglu"))
        sharded = parallelize_module(block, mesh, sparse_plan(FUSED_PLAN) if sparse else FUSED_PLAN)
        results[f"fused-{name}"] = _diff(sharded(x), ref)
        qkv, gate_up = sharded.qkv_proj, sharded.gate_up_proj
        results[f"fused-{name}-local"] = {
            "qkv_out": qkv.out_features if sparse else qkv.weight.to_local().shape[0],
            "gate_up_out": gate_up.out_features if sparse else gate_up.weight.to_local().shape[0],
            "parts": list(qkv.tp_shard.parts) if sparse else None,
            "gate_up_activation": getattr(gate_up, "activation", None)}

    # a row-parallel w4g128 layer whose K pieces (192) break a 128-column quantization group
    torch.manual_seed(0)
    bad = nn.Sequential(SparseLinear.from_linear(nn.Linear(384, 64).half(), quant="w4g128")).to(DEVICE)
    bad[0].fqn = "mlp.down"
    try:
        parallelize_module(bad, mesh, {"0": SparseRowwiseParallel()})
        results["bad-split"] = {"error": None}
    except ValueError as e:
        results["bad-split"] = {"error": str(e)}
    return results


def main() -> int:
    out = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if DEVICE == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if DEVICE == "cuda" else "gloo", init_method=f"file://{os.environ['TP_INIT_FILE']}",
                            rank=rank, world_size=world)
    try:
        results = run(rank, world)
        dist.barrier()  # both ranks are done communicating before either leaves
    except Exception as e:  # noqa: BLE001 - the test shows it
        results = {"error": f"rank {rank}: {type(e).__name__}: {e}\n{traceback.format_exc()}"}
    with open(out, "w") as f:
        json.dump(results, f)
    sys.stdout.flush()
    # Leave without tearing the process group down: gloo's teardown at exit aborted one rank in
    # about one run of ten on a loaded 2-core machine ("terminate called without an active
    # exception", SIGABRT after the results were written); the results are on disk by now.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
