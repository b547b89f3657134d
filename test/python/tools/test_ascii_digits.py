"""Numbers in names and options are ASCII digits: Python's `\\d`, `str.isdigit` and `int()` also
take other scripts' digits ("١٢٨" is 128), which once let `NV24.w4g١٢٨` and `sm_٩٠` through as
if they were `NV24.w4g128` and `sm_90`, into IR that did not parse back or PTX ptxas refuses."""

from __future__ import annotations

import pytest
from sparsecc.passes.to_gpu import _arch

from sparsecc import formats
from sparsecc.codegen.ptxas import _ptxas_arch
from sparsecc.compiler import check_target
from sparsecc.formats import QuantScheme, QuantSchemeError
from sparsecc.tools.diagnostics import SourceFile
from sparsecc.tools.sparsecc_opt import expected_errors

ARABIC_128 = "\u0661\u0662\u0668"  # ١٢٨
DEVANAGARI_8 = "\u096e"  # ८
FULLWIDTH_4 = "\uff14"  # ４


@pytest.mark.parametrize("scheme", [f"w4g{ARABIC_128}", f"w{DEVANAGARI_8}c", f"w{FULLWIDTH_4}g64z"])
def test_quant_scheme_takes_ascii_digits_only(scheme):
    assert int(scheme[1]) in (1, 4, 8)  # Python itself reads these digits
    with pytest.raises(QuantSchemeError, match="unknown quantization scheme"):
        QuantScheme.parse(scheme)
    with pytest.raises(formats.UnknownFormatError, match="unknown quantization scheme"):
        formats.lookup(f"NV24.{scheme}")


def test_ascii_schemes_still_parse():
    assert QuantScheme.parse("w4g128").spec == "w4g128"
    assert formats.lookup("NV24.w8c").name == "NV24.w8c"


@pytest.mark.parametrize("target", ["sm_\u0669\u0660", "\u0669\u0660", "sm_9\u0660a"])
def test_targets_take_ascii_digits_only(target):
    with pytest.raises(ValueError, match="unknown target"):
        check_target(target)
    with pytest.raises(ValueError, match="bad ptxas arch"):
        _ptxas_arch(target)
    assert _arch(target) in (0, 9)


def test_ascii_targets_still_check():
    assert check_target("90") == "sm_90"
    assert check_target("sm_90a") == "sm_90a"
    assert _ptxas_arch("90") == "sm_90" and _arch("sm_90a") == 90


def test_expected_error_offsets_take_ascii_digits_only():
    src = SourceFile("t.mlir", "// expected-error@+\u0661 {{x}}\n// expected-error@+1 {{y}}\n")
    assert expected_errors(src) == [(3, "y")]
