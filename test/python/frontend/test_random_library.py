"""Triton's random numbers (`tl.rand` & co.) are @jit library code of the frontend
(sparsecc/frontend/random_library.py), registered with `sparsecc.language` as the frontend loads,
so the language never imports the frontend at module level (test_imports.py: no cycle). Checked
here: every library name of the language is that module's jit function, and `tl.rand` or
`from sparsecc.language import *` before anything loaded the frontend loads it."""

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


def test_tl_rand_and_star_imports_load_the_frontend_on_first_use():
    code = ("import sys\n"
            "import sparsecc.language as tl\n"
            "print('sparsecc.frontend' in sys.modules)\n"
            "print(tl.rand.__module__)\n"
            "from sparsecc.language import *\n"
            "print(randint4x.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["False", "sparsecc.frontend.random_library", "sparsecc.frontend.random_library"]
