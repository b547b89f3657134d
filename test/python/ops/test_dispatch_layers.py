"""`bench/dispatch_table.py --layers`: issue 26's layer table from a shipped dispatch table, checked
against the table's own numbers (CPU)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from sparsecc.ops import dispatch

ROOT = Path(__file__).resolve().parents[3]


def _dispatch_table_module():
    spec = importlib.util.spec_from_file_location("dispatch_table_bench", ROOT / "bench" / "dispatch_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("gpu", sorted(p.stem for p in dispatch.TABLES.glob("*.json")))
def test_layer_table_ratios_are_the_tables_times(gpu: str) -> None:
    bench = _dispatch_table_module()
    text = bench.layer_table(gpu)
    doc = json.loads(dispatch.shipped_path(gpu).read_text())
    rows = [line for line in text.splitlines() if re.match(r"\| \w+ \| \d+x\d+ \|", line)]
    assert len(rows) == len(doc["entries"])
    bold = 0
    for row, entry in zip(rows, doc["entries"]):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == entry["scheme"] and cells[1] == f"{entry['n']}x{entry['k']}"
        bold += sum(cell.startswith("**") for cell in cells[2:])
        for m, cell in zip(bench.LAYER_MS, cells[2:]):
            measured = entry["m"].get(str(m))
            if measured is None:
                continue  # interpolated by the dispatcher: checked through its own tests
            ratio, mode = re.fullmatch(r"\**([0-9.]+)x (\w+)\**", cell).groups()
            path_us = {"sparse": measured["sparse"], "sparse16": (entry["dequant_us"] or 0) + measured["sparse16"],
                       "dense": entry["densify_us"] + measured["mm"]}[mode]
            assert float(ratio) == pytest.approx(measured["mm"] / path_us, abs=0.006)
            assert cell.startswith("**") == (float(ratio) < bench.LAYER_FLOOR)
    assert f"\n{bold} cells under {bench.LAYER_FLOOR}x." in text
