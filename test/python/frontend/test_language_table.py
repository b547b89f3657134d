"""docs/language.md lists which triton.language names sparsecc supports: keep it true."""

from __future__ import annotations

import re
from pathlib import Path

import sparsecc.language as tl

TABLE = Path(__file__).resolve().parents[3] / "docs" / "language.md"


def _rows() -> dict[str, str]:
    rows = {}
    for line in TABLE.read_text().splitlines():
        m = re.match(r"\| `([\w.*]+)` \| (yes|not yet) \|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_every_supported_name_exists():
    rows = _rows()
    assert len(rows) > 100
    for name, status in rows.items():
        if status == "yes" and name != "math.*":
            assert hasattr(tl, name), f"docs/language.md says tl.{name} is supported"


def test_every_public_name_is_listed():
    rows = _rows()
    missing = [n for n in tl.__all__ if n not in rows and n not in ("DTYPES", "OutsideKernelError", "math")]
    assert not missing, f"add these to docs/language.md: {missing}"


def test_not_yet_names_are_really_missing():
    rows = _rows()
    present = [n for n, s in rows.items() if s == "not yet" and hasattr(tl, n)]
    assert not present, f"docs/language.md says 'not yet' but sparsecc.language has: {present}"
