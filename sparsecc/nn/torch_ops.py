"""`torch.ops.sparsecc.sparse_linear`: the sparse linear layer as a torch custom op, so that
`torch.compile(fullgraph=True)` traces it without a graph break, `torch.export` exports it and
CUDA graphs capture it.

The op takes the compressed arrays (values N×K/2, metadata) and the dense shape, not a
SparseTensor (torch ops take tensors). On CUDA it runs the sparsecc kernel
(`sparsecc.ops.sparse_linear`); on the CPU it computes with the decompressed weight in torch —
the model-sized path for CPU users and CI, since the interpreter is for checking kernels, not for
running models. The fake kernel gives the output's shape and dtype. Training is not supported:
the op has no backward, and a call that would need one is an error that says so.

    y = torch.ops.sparsecc.sparse_linear(x, values, meta, in_features, bias, "silu")
    y = torch.ops.sparsecc.sparse_linear_q(x, q.values, q.meta, q.scales, q.zeros, in_features,
                                           "w4g128", bias, "silu")   # q: a QuantizedSparseTensor
    d = torch.ops.sparsecc.sparse_mm(values, meta, k, b)          # A (M x k, 2:4) @ b (k x N)
    y = torch.ops.sparsecc.sparse_mm(w8.values, w8.meta, k, x8.t(), sw, sx)   # int8/fp8, rowwise scales
    y = torch.ops.sparsecc.sparse_linear_8bit(x, w8.values, w8.meta, sw, in_features, bias, "none")
    h = torch.ops.sparsecc.sparse_swiglu(x, values, meta, None, None, in_features, "nv24", None)  # [gate|up] rows
"""

from __future__ import annotations

import torch

from sparsecc.ops.sparse_linear import ACTIVATIONS, reference_linear, sparse_linear
from sparsecc.ops.sparse_linear_8bit import reference_linear_8bit, sparse_linear_8bit
from sparsecc.ops.sparse_mm import sparse_mm
from sparsecc.ops.sparse_mm_8bit import EIGHT_BIT_DTYPES, default_out_dtype
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor, quant_format
from sparsecc.runtime.sparse_tensor import SparseTensor


@torch.library.custom_op("sparsecc::sparse_linear", mutates_args=())
def sparse_linear_op(x: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, in_features: int,
                     bias: torch.Tensor | None, activation: str) -> torch.Tensor:
    """`act(x @ W.T + bias)` with W given as its NV24 arrays (see the module docstring)."""
    w = SparseTensor(values, meta, (values.shape[0], in_features))
    if x.device.type == "cuda":
        return sparse_linear(x, w, bias, activation, dispatch="sparse")  # the layer dispatched
    return reference_linear(x, w, bias, activation)


@sparse_linear_op.register_fake
def _(x: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, in_features: int,
      bias: torch.Tensor | None, activation: str) -> torch.Tensor:
    torch._check(x.shape[-1] == in_features, lambda: f"sparse_linear: x has {x.shape[-1]} features, "
                                                      f"the weight expects {in_features}")
    torch._check(activation in ACTIVATIONS, lambda: f"sparse_linear: unknown activation {activation!r}")
    return x.new_empty((*x.shape[:-1], values.shape[0]))


def _no_backward(ctx, grad):  # noqa: ANN001 - torch's autograd signature
    raise RuntimeError("sparsecc.sparse_linear is inference-only: it has no backward (2:4 training is "
                       "not supported); run the model under torch.no_grad() / torch.inference_mode()")


sparse_linear_op.register_autograd(_no_backward)


@torch.library.custom_op("sparsecc::sparse_linear_q", mutates_args=())
def sparse_linear_q_op(x: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor,
                       zeros: torch.Tensor | None, in_features: int, scheme: str, bias: torch.Tensor | None,
                       activation: str) -> torch.Tensor:
    """`act(x @ dequantize(W).T + bias)` with W a quantized 2:4 weight given as its arrays (packed
    codes, NV24 metadata, scales, zero points or None) and its scheme ("w4g128", or the format
    name "NV24.w4g128"). CUDA runs the sparsecc kernel (`sparsecc.ops.sparse_linear` with a
    `QuantizedSparseTensor`); the CPU computes with the dequantized weight in torch.

        q = sparsecc.compress(sparsecc.prune_2to4(weight), quant="w4g128")
        y = torch.ops.sparsecc.sparse_linear_q(x, q.values, q.meta, q.scales, q.zeros, q.shape[1],
                                               q.scheme.spec, bias, "none")
    """
    w = QuantizedSparseTensor(values, meta, scales, (values.shape[0], in_features), quant_format(scheme).name,
                              zeros)
    if x.device.type == "cuda":
        return sparse_linear(x, w, bias, activation, dispatch="sparse")  # the layer dispatched
    return reference_linear(x, w, bias, activation)


@sparse_linear_q_op.register_fake
def _(x: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor,
      zeros: torch.Tensor | None, in_features: int, scheme: str, bias: torch.Tensor | None,
      activation: str) -> torch.Tensor:
    fmt = quant_format(scheme)  # a bad scheme fails while tracing, with the same message
    assert fmt.quant is not None
    torch._check(x.shape[-1] == in_features, lambda: f"sparse_linear: x has {x.shape[-1]} features, "
                                                      f"the weight expects {in_features}")
    torch._check(activation in ACTIVATIONS, lambda: f"sparse_linear: unknown activation {activation!r}")
    torch._check(x.dtype == scales.dtype, lambda: f"sparse_linear: x is {x.dtype} but the weight is "
                                                  f"{scales.dtype}")
    torch._check((zeros is not None) == fmt.quant.zero_point,
                 lambda: f"sparse_linear: {fmt.name} " + ("needs zero points" if fmt.quant.zero_point
                                                          else "takes no zero points"))
    return x.new_empty((*x.shape[:-1], values.shape[0]))


sparse_linear_q_op.register_autograd(_no_backward)


def _out_dtype(values: torch.Tensor, scaled: bool) -> torch.dtype:
    return default_out_dtype(values.dtype, scaled) if values.dtype in EIGHT_BIT_DTYPES else values.dtype


@torch.library.custom_op("sparsecc::sparse_mm", mutates_args=())
def sparse_mm_op(values: torch.Tensor, meta: torch.Tensor, k: int, b: torch.Tensor,
                 scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None) -> torch.Tensor:
    """`A @ b` with A (M x k, 2:4 along k) given as its NV24 arrays; CUDA runs `sparse_mm`, the CPU
    computes with the decompressed A in torch. int8 / fp8 operands may take rowwise fp32 scales
    (`scale_a`: M values, `scale_b`: N) and return `sparse_mm`'s default dtype for them (int32
    for unscaled int8, else bfloat16)."""
    a = SparseTensor(values, meta, (values.shape[0], k))
    if b.device.type == "cuda":
        return sparse_mm(a, b, scale_a=scale_a, scale_b=scale_b)
    out = _out_dtype(values, scale_a is not None or scale_b is not None)
    if out == torch.int32:  # exact, as the GPU's int32 sums
        return (a.to_dense().long() @ b.long()).to(torch.int32)
    d = a.to_dense().double() @ b.double()
    if scale_a is not None:
        d = d * scale_a.double().reshape(-1, 1)
    if scale_b is not None:
        d = d * scale_b.double().reshape(1, -1)
    return d.to(out)


@sparse_mm_op.register_fake
def _(values: torch.Tensor, meta: torch.Tensor, k: int, b: torch.Tensor,
      scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None) -> torch.Tensor:
    torch._check(b.shape[0] == k, lambda: f"sparse_mm: A has {k} columns but b has {b.shape[0]} rows")
    return b.new_empty((values.shape[0], b.shape[1]), dtype=_out_dtype(values, scale_a is not None or scale_b is not None))


sparse_mm_op.register_autograd(_no_backward)


@torch.library.custom_op("sparsecc::sparse_linear_8bit", mutates_args=())
def sparse_linear_8bit_op(x: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, weight_scale: torch.Tensor,
                          in_features: int, bias: torch.Tensor | None, activation: str) -> torch.Tensor:
    """`act(quantized(x) @ (W * weight_scale[:, None]).T + bias)`, W an int8 / fp8 e4m3 2:4
    weight given as its arrays, x quantized per token to W's dtype: the 8-bit SparseLinear's
    forward. CUDA runs `sparsecc.ops.sparse_linear_8bit.sparse_linear_8bit` (two launches: the
    fused quantization, the GEMM with its epilogue); the CPU computes the same in torch. One op,
    so torch.compile keeps the quantization and the GEMM together and CUDA graphs capture both.

        q, sw = quantize_rows(sparsecc.prune_2to4(weight), torch.float8_e4m3fn)
        w8 = sparsecc.compress(q)
        y = torch.ops.sparsecc.sparse_linear_8bit(x, w8.values, w8.meta, sw, w8.shape[1], bias, "silu")
    """
    w = SparseTensor(values, meta, (values.shape[0], in_features))
    if x.device.type == "cuda":
        return sparse_linear_8bit(x, w, weight_scale, bias, activation)
    return reference_linear_8bit(x, w, weight_scale, bias, activation)


@sparse_linear_8bit_op.register_fake
def _(x: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, weight_scale: torch.Tensor, in_features: int,
      bias: torch.Tensor | None, activation: str) -> torch.Tensor:
    torch._check(x.shape[-1] == in_features, lambda: f"sparse_linear_8bit: x has {x.shape[-1]} features, "
                                                      f"the weight expects {in_features}")
    torch._check(activation in ACTIVATIONS, lambda: f"sparse_linear_8bit: unknown activation {activation!r}")
    return x.new_empty((*x.shape[:-1], values.shape[0]))


sparse_linear_8bit_op.register_autograd(_no_backward)


@torch.library.custom_op("sparsecc::sparse_swiglu", mutates_args=())
def sparse_swiglu_op(x: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None,
                     zeros: torch.Tensor | None, in_features: int, scheme: str,
                     bias: torch.Tensor | None) -> torch.Tensor:
    """`silu(x @ Wg.T + bg) * (x @ Wu.T + bu)` for a 2:4 weight W = [Wg | Wu] (gate rows, then
    as many up rows) given as its arrays: 16-bit (`scheme` "nv24", scales and zeros None) or
    quantized (`scheme` "w4g128", ..., with its scales / zero points). CUDA runs the one-launch
    kernel (`sparsecc.ops.sparse_glu.sparse_swiglu`); the CPU computes in torch.

        y = torch.ops.sparsecc.sparse_swiglu(x, w.values, w.meta, None, None, w.shape[1], "nv24", None)
    """
    from sparsecc.ops.sparse_glu import reference_swiglu, sparse_swiglu

    shape = (values.shape[0], in_features)
    if scheme == "nv24":
        w = SparseTensor(values, meta, shape)
    else:
        w = QuantizedSparseTensor(values, meta, scales, shape, quant_format(scheme).name, zeros)
    if x.device.type == "cuda":
        return sparse_swiglu(x, w, bias)
    return reference_swiglu(x, w, bias)


@sparse_swiglu_op.register_fake
def _(x: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None,
      zeros: torch.Tensor | None, in_features: int, scheme: str, bias: torch.Tensor | None) -> torch.Tensor:
    torch._check(x.shape[-1] == in_features, lambda: f"sparse_swiglu: x has {x.shape[-1]} features, "
                                                      f"the weight expects {in_features}")
    torch._check(values.shape[0] % 32 == 0, lambda: f"sparse_swiglu: {values.shape[0]} weight rows are not two "
                                                     "halves of a multiple of 16 rows")
    return x.new_empty((*x.shape[:-1], values.shape[0] // 2))


sparse_swiglu_op.register_autograd(_no_backward)
