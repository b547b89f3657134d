"""The element types sparse formats are written with (one table, every spelling)."""

from __future__ import annotations

from xdsl.dialects.builtin import bf16, f8E4M3FN, f8E5M2, f16, f32, i8, i16, i32

from sparsecc.formats.base import ElementType

FP16 = ElementType("fp16", f16, "float16", 16)
BF16 = ElementType("bf16", bf16, "bfloat16", 16)
FP8E4NV = ElementType("fp8e4nv", f8E4M3FN, "float8_e4m3fn", 8)
FP8E5 = ElementType("fp8e5", f8E5M2, "float8_e5m2", 8)
I8 = ElementType("i8", i8, "int8", 8)
I16 = ElementType("i16", i16, "int16", 16)
I32 = ElementType("i32", i32, "int32", 32)
FP32 = ElementType("fp32", f32, "float32", 32)
