"""The frontend: `@jit` kernels, Python AST -> tt IR, `compile`, launch specialization."""

from sparsecc.frontend import random_library  # noqa: F401 - registers tl.rand & co. with the language
from sparsecc.frontend.compile import CompiledKernel, compile, compile_kernel, to_ttir
from sparsecc.frontend.errors import CompilationError
from sparsecc.frontend.jit import JITFunction, jit

__all__ = ["CompilationError", "CompiledKernel", "JITFunction", "compile", "compile_kernel", "jit", "to_ttir"]
