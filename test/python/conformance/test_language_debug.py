"""tl.static_assert, static_print, device_assert (only with debugging on, as Triton),
device_print, debug_barrier, assume; the `.cast`/`.type`/`.dtype.element_ty` forms and 0-D
`tl.full((), v, dtype)`: the interpreter, located errors, PTX assembled, the GPU."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError
from sparsecc.runtime.interp_values import InterpreterError


@sparsecc.jit
def checked_copy(X, Y, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
    tl.static_print("BLOCK =", BLOCK, n)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0)
    tl.device_assert(x < 100.0, "x too big", mask=m)
    tl.assume(n > 0)
    tl.debug_barrier()
    tl.device_print("max ", tl.max(x, axis=0))
    z = tl.full((), 0.5, tl.float32) + tl.zeros((), tl.float32)
    y = (x * 2 + z).cast(Y.dtype.element_ty)
    tl.store(Y + offs, y.to(Y.type.element_ty), mask=m)


def _fresh(tmp_path, name: str, debug: bool):
    """A new copy of checked_copy (no compiled specialization cached), `debug` as given."""
    src = tmp_path / f"{name}.py"
    import inspect

    src.write_text("import sparsecc\nimport sparsecc.language as tl\n\n\n" + textwrap.dedent(inspect.getsource(
        checked_copy.fn if hasattr(checked_copy, "fn") else checked_copy)))
    spec = importlib.util.spec_from_file_location(name, src)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    module.checked_copy.debug = debug
    return module.checked_copy, src


def _run(kernel, device: str, big: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(300, generator=g)
    if big:
        x[250] = 1000.0
    y = torch.full((300,), float("nan"), dtype=torch.float16)
    kernel[(3,)](x.to(device), y_d := y.to(device), 300, BLOCK=128)
    return x, y_d.cpu()


def test_debugging_builtins_on_the_interpreter(capsys, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x, y = _run(checked_copy, "cpu", big=True)  # debug off: the failing assert is not checked
    torch.testing.assert_close(y.float(), (x * 2 + 0.5).half().float())
    out = capsys.readouterr().out
    assert "BLOCK = 128 i32" in out  # static_print: constexprs, runtime values as their type
    assert "pid (1, 0, 0) max 1000.0" in out and "pid (2, 0, 0) max" in out


def test_device_assert_with_debugging_on_names_message_and_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    kernel, src = _fresh(tmp_path, "debug_on", debug=True)
    _run(kernel, "cpu")  # holds everywhere: passes
    with pytest.raises(InterpreterError, match=r"debug_on.py:12:5: device_assert failed at index \(122,\): "
                                               r"x too big"):
        _run(kernel, "cpu", big=True)


def test_static_assert_is_a_located_error():
    with pytest.raises(CompilationError, match="static_assert failed: BLOCK must be a multiple of 32") as e:
        sparsecc.compile(checked_copy, {"X": "*fp32", "Y": "*fp16", "n": "i32"}, {"BLOCK": 48})
    assert "tl.static_assert(BLOCK % 32 == 0" in str(e.value)

    @sparsecc.jit
    def runtime_cond(X, n):
        tl.static_assert(n > 0)

    with pytest.raises(CompilationError, match="tl.static_assert needs a compile-time condition"):
        sparsecc.compile(runtime_cond, {"X": "*fp32", "n": "i32"}, {})


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_debugging_builtins_assemble(target, tmp_path):
    sig, cx = {"X": "*fp32", "Y": "*fp16", "n": "i32"}, {"BLOCK": 128}
    ptx = sparsecc.compile(checked_copy, sig, cx, target=target).asm["ptx"]
    assert "bar.sync 0;" in ptx and "trap" not in ptx  # device_assert is off without debugging
    kernel, _ = _fresh(tmp_path, f"debug_ptx_{target}", debug=True)
    ck = sparsecc.compile(kernel, sig, cx, target=target)
    assert "@%fail trap;" in ck.asm["ptx"] and isinstance(ck.asm["cubin"], bytes)


@pytest.mark.gpu
def test_debugging_builtins_on_the_gpu(tmp_path):
    x, y = _run(checked_copy, "cuda", big=True)  # debug off: no trap
    torch.testing.assert_close(y.float(), (x * 2 + 0.5).half().float())
    kernel, _ = _fresh(tmp_path, "debug_gpu", debug=True)
    x, y = _run(kernel, "cuda")  # debug on, the assertion holds
    torch.testing.assert_close(y.float(), (x * 2 + 0.5).half().float())
