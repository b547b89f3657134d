"""docs/language.md lists which triton.language names sparsecc supports: keep it true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError

TABLE = Path(__file__).resolve().parents[3] / "docs" / "language.md"
SPARSECC_ONLY = ("advance", "tanh")
TRITON_VERSION = "3.9.0"
"""The Triton whose `triton.language.__all__` the table lists."""


def _rows() -> dict[str, str]:
    rows = {}
    for line in TABLE.read_text().splitlines():
        m = re.match(r"\| `([\w.*]+)` \| (yes|not yet) \|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_every_supported_name_exists():
    rows = _rows()
    assert len(rows) > 140
    for name, status in rows.items():
        if status == "yes":
            assert hasattr(tl, name), f"docs/language.md says tl.{name} is supported"


def test_every_public_name_is_listed():
    rows = _rows()
    missing = [n for n in tl.__all__ if n not in rows and n not in ("DTYPES", "OutsideKernelError")]
    assert not missing, f"add these to docs/language.md: {missing}"


def test_not_yet_names_are_really_missing():
    rows = _rows()
    present = [n for n, s in rows.items() if s == "not yet" and hasattr(tl, n)]
    assert not present, f"docs/language.md says 'not yet' but sparsecc.language has: {present}"


TRITON_NAMES = Path(__file__).with_name(f"triton_language_{TRITON_VERSION}.txt")
"""`triton.language.__all__` of TRITON_VERSION, one name a line: CI checks the table without
installing triton (1 GB; it only needs ptxas, from the `ptx` extra)."""


def _triton_names() -> list[str]:
    return TRITON_NAMES.read_text().split()


def test_every_triton_name_is_listed():
    rows = _rows()
    names = _triton_names()
    missing = [n for n in names if n not in rows]
    assert not missing, f"add these triton.language names to docs/language.md: {missing}"
    assert set(rows) - set(names) == set(SPARSECC_ONLY)


def test_the_triton_name_list_is_tritons():
    triton_language = pytest.importorskip("triton.language")
    import triton

    if triton.__version__ != TRITON_VERSION:
        pytest.skip(f"the list is Triton {TRITON_VERSION}'s names, Triton {triton.__version__} is installed")
    assert _triton_names() == sorted(triton_language.__all__)


def test_the_count_is_the_tables():
    rows = _rows()
    triton_rows = {n: s for n, s in rows.items() if n not in SPARSECC_ONLY}
    supported = sum(s == "yes" for s in triton_rows.values())
    m = re.search(r"\*\*Supported: (\d+) of the (\d+) names\*\*", TABLE.read_text())
    assert m, "docs/language.md states how many names are supported"
    assert (int(m[1]), int(m[2])) == (supported, len(triton_rows))


def test_the_triton_3_6_count_is_the_tables():
    """The GPU machine's Triton is 3.6: the page also counts its names (`triton_3_6_names.txt`,
    its `triton.language.__all__`), each of which the table lists."""
    names = (Path(__file__).parent / "triton_3_6_names.txt").read_text().split()
    rows = _rows()
    assert not [n for n in names if n not in rows], "docs/language.md lacks Triton 3.6 names"
    m = re.search(r"\((\d+) of the (\d+) names in Triton 3\.6's", TABLE.read_text())
    assert m, "docs/language.md states how many of Triton 3.6's names are supported"
    assert (int(m[1]), int(m[2])) == (sum(rows[n] == "yes" for n in names), len(names))


@pytest.mark.parametrize("name", sorted(n for n, s in _rows().items() if s == "not yet"))
def test_an_unsupported_name_is_a_located_error_naming_it(name, tmp_path, monkeypatch):
    path = tmp_path / f"k_{name}.py"
    path.write_text("import sparsecc\nimport sparsecc.language as tl\n\n\n@sparsecc.jit\n"
                    f"def k(X):\n    x = tl.load(X)\n    tl.store(X, tl.{name}(x))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(f"k_{name}")
    with pytest.raises(CompilationError) as info:
        sparsecc.compile(module.k, {"X": "*fp32"}, {})
    text = str(info.value)
    assert f"{path}:8:" in text, text
    assert f"tl.{name} (triton.language.{name}) is not supported by sparsecc yet" in text, text
    assert "AttributeError" not in text
