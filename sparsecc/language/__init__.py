"""`import sparsecc.language as tl`: the Triton-like kernel language."""

import importlib

from sparsecc.language import math
from sparsecc.language.control import range  # noqa: A004
from sparsecc.language.core import (
    DTYPES,
    OutsideKernelError,
    advance,
    arange,
    atomic_add,
    bfloat16,
    broadcast,
    broadcast_to,
    cast,
    cat,
    cdiv,
    constexpr,
    dot,
    dtype,
    expand_dims,
    float8e4nv,
    float8e5,
    float16,
    float32,
    float64,
    full,
    int1,
    int8,
    int16,
    int32,
    int64,
    interleave,
    join,
    load,
    make_block_ptr,
    max,
    max_constancy,
    max_contiguous,
    maximum,
    min,
    minimum,
    multiple_of,
    num_programs,
    permute,
    pointer_type,
    program_id,
    ravel,
    reshape,
    split,
    static_range,
    store,
    sum,
    trans,
    uint8,
    uint16,
    uint32,
    uint64,
    view,
    where,
    zeros,
    zeros_like,
)
from sparsecc.language.math import (
    abs,
    ceil,
    clamp,
    cos,
    exp,
    exp2,
    floor,
    fma,
    log,
    log2,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tanh,
)
from sparsecc.language.reductions import (
    argmax,
    argmin,
    reduce,
    xor_sum,
)

__all__ = [
    "argmax", "argmin", "reduce", "xor_sum",
    "abs", "ceil", "clamp", "cos", "exp", "exp2", "fma", "floor", "log", "log2", "math", "rsqrt",
    "sigmoid", "sin", "sqrt", "tanh", "trans", "atomic_add", "cast", "reshape", "max_constancy", "max_contiguous", "multiple_of", "zeros_like",
    "DTYPES",
    "range",
    "OutsideKernelError",
    "advance",
    "arange",
    "bfloat16",
    "cdiv",
    "constexpr",
    "dot",
    "dtype",
    "float8e4nv",
    "float8e5",
    "float16",
    "float32",
    "float64",
    "full",
    "int1",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "load",
    "make_block_ptr",
    "max",
    "maximum",
    "min",
    "minimum",
    "num_programs",
    "pointer_type",
    "program_id",
    "static_range",
    "store",
    "sum",
    "where",
    "zeros",
]

# math, atomics and debugging of Triton 3's language (issue 29)
from sparsecc.language import extra  # noqa: E402
from sparsecc.language.atomics import (  # noqa: E402
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xchg,
    atomic_xor,
)
from sparsecc.language.debug import (  # noqa: E402
    assume,
    debug_barrier,
    device_assert,
    device_print,
    static_assert,
    static_print,
)
from sparsecc.language.math import div_rn, erf, fdiv, sqrt_rn, umulhi  # noqa: E402

__all__ += ["div_rn", "erf", "fdiv", "sqrt_rn", "umulhi", "atomic_and", "atomic_cas", "atomic_max", "atomic_min",
            "atomic_or", "atomic_xchg", "atomic_xor", "assume", "debug_barrier", "device_assert", "device_print",
            "static_assert", "static_print", "extra"]
__all__ += ["broadcast", "broadcast_to", "cat", "expand_dims", "interleave", "join", "permute", "ravel",
            "split", "view"]
from sparsecc.language.scans import (  # noqa: E402
    associative_scan,
    bitonic_merge,
    cumprod,
    cumsum,
    flip,
    gather,
    histogram,
    reduce_or,
    softmax,
    sort,
    topk,
)

__all__ += ["associative_scan", "bitonic_merge", "cumprod", "cumsum", "flip", "gather", "histogram", "reduce_or",
            "softmax", "sort", "topk"]

# Triton's random numbers (issue 29) are library kernels written in this language (@jit
# functions), so the frontend, a later stage, defines them (sparsecc.frontend.random_library)
# and registers them here as it loads: every kernel is compiled after that.
_LIBRARY_NAMES = ("philox", "philox_impl", "randint", "randint4x", "rand", "rand4x", "randn", "randn4x",
                  "uint_to_uniform_float", "pair_uniform_to_normal")
"""The names of `_register_library`'s functions."""
__all__ += [*_LIBRARY_NAMES]
_LIBRARY: dict[str, object] = {}


def _register_library(functions: dict[str, object]) -> None:
    """Offer kernel code defined above the language as `tl.<name>`, for the names in
    `_LIBRARY_NAMES` (the frontend registers Triton's random numbers as it loads).

        _register_library({"rand": rand})   # tl.rand is now that @jit function
    """
    unknown = sorted(set(functions) - set(_LIBRARY_NAMES))
    if unknown:
        raise ValueError(f"internal error: {unknown} are not library names of sparsecc.language")
    _LIBRARY.update(functions)


def __getattr__(name: str) -> object:
    if name in _LIBRARY_NAMES and name not in _LIBRARY:
        # the frontend defines them as it loads: load it on first use (by name, so that the
        # language never imports the frontend at module level), as `import sparsecc` loads its parts
        importlib.import_module("sparsecc.frontend")
    if name in _LIBRARY:
        return _LIBRARY[name]
    if name in _LIBRARY_NAMES:
        raise AttributeError(f"internal error: loading sparsecc.frontend did not define sparsecc.language.{name}")
    raise AttributeError(f"module 'sparsecc.language' has no attribute '{name}'")


# small names, type names, tensor descriptors and inline asm (issue 29, sparsecc.language.misc)
from sparsecc.language import target_info  # noqa: E402
from sparsecc.language.misc import (  # noqa: E402
    TRITON_MAX_TENSOR_NUMEL,
    PropagateNan,
    add,
    block_type,
    condition,
    const,
    constexpr_type,
    inline_asm_elementwise,
    load_tensor_descriptor,
    make_tensor_descriptor,
    mul,
    pi32_t,
    slice,
    store_tensor_descriptor,
    sub,
    swizzle2d,
    tensor,
    tensor_descriptor,
    tuple,
    void,
)

__all__ += ["TRITON_MAX_TENSOR_NUMEL", "PropagateNan", "add", "inline_asm_elementwise", "block_type", "condition", "const", "constexpr_type",
            "load_tensor_descriptor", "make_tensor_descriptor", "mul", "pi32_t", "slice",
            "store_tensor_descriptor", "sub", "swizzle2d", "target_info", "tensor", "tensor_descriptor", "tuple",
            "void"]

from sparsecc.language.elementwise import map_elementwise  # noqa: E402
from sparsecc.language.mx import dot_scaled  # noqa: E402

__all__ += ["dot_scaled", "map_elementwise"]
