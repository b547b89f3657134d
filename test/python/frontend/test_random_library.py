"""Triton's random numbers (`tl.rand` & co.) are @jit library code of the frontend
(sparsecc/frontend/random_library.py), registered with `sparsecc.language` as the frontend loads,
so the language never imports the frontend (test_imports.py: no cycle). Checked here: after the
frontend loads, every library name of the language is that module's jit function; before, a
kernel-less `tl.rand` says what it is instead of a bare AttributeError."""

from __future__ import annotations

import subprocess
import sys

import pytest

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend import random_library


def test_the_frontend_registers_every_library_name():
    for name in tl._LIBRARY_NAMES:
        fn = getattr(tl, name)
        assert isinstance(fn, sparsecc.JITFunction) and fn is getattr(random_library, name), name
        assert name in tl.__all__


def test_only_library_names_can_be_registered():
    with pytest.raises(ValueError, match=r"internal error: \['rnd'\] are not library names"):
        tl._register_library({"rnd": random_library.rand})
    with pytest.raises(AttributeError, match="has no attribute 'rnd'"):
        tl.rnd  # noqa: B018


def test_before_the_frontend_loads_tl_rand_says_why_it_is_missing():
    code = ("import sparsecc.language as tl\n"
            "try:\n    tl.rand\nexcept AttributeError as e:\n    print(e)\n"
            "import sparsecc.frontend\nprint(tl.rand.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "sparsecc.language.rand is library kernel code that the frontend defines as it loads: use it in a "
        "@sparsecc.jit kernel, or import sparsecc.frontend first", "sparsecc.frontend.random_library"]
