"""The user guide's performance plots, drawn from the measured tables in bench/results/.

    python docs/plots.py --write   # parse the tables, draw docs/_static/plots/*.svg + data.json
    python docs/plots.py --check   # the committed plots' data is what the tables say today

Each figure's numbers are kept in ``docs/_static/plots/data.json`` next to the SVGs, and each SVG
carries the SHA-256 of its entry there (in its metadata). ``--check`` parses the tables again and
compares numbers, not SVG bytes (which vary across matplotlib versions); it needs no matplotlib.
test/python/test_docs.py runs it, so a table changed without `--write` fails the test suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PLOTS = ROOT / "docs" / "_static" / "plots"
DATA = "data.json"


# ----------------------------------------------------------------------------- parsing

class TableError(ValueError):
    """A results table is not in the shape this script reads."""


def markdown_tables(text: str) -> list[dict]:
    """Every pipe table of a Markdown text: {"header": [...], "rows": [[...], ...], "line": n}."""
    lines = text.splitlines()
    tables = []
    i = 0
    while i + 1 < len(lines):
        head, rule = lines[i].strip(), lines[i + 1].strip()
        if head.startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", rule):
            header = _cells(head)
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                row = _cells(lines[j].strip())
                if len(row) != len(header):
                    raise TableError(f"line {j + 1}: {len(row)} cells under a header of {len(header)}")
                rows.append(row)
                j += 1
            tables.append({"header": header, "rows": rows, "line": i + 1})
            i = j
        else:
            i += 1
    return tables


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_MISSING = ("—", "-", "–", "nan", "n/a", "")


def number(cell: str) -> float | None:
    """The leading number of a cell: '  976.4', '**1537**', '1221 (`_scaled_mm`)', '1.42×' and
    '1.61' read as numbers; '—', 'nan' and '— (no fp32 in ...)' as missing (None)."""
    text = cell.replace("*", "").replace("`", "").strip()
    if text.lower() in _MISSING or text.split(" ")[0].lower() in _MISSING:
        return None
    match = _NUMBER.match(text)
    if match is None:
        raise TableError(f"not a number: {cell!r}")
    return float(match.group())


def shape(cell: str) -> list[int]:
    """'4096×4096×4096' or '4096x4096' -> [4096, 4096, 4096] / [4096, 4096]."""
    parts = re.split(r"\s*[×xX*]\s*", cell.replace("`", "").strip())
    if not parts or not all(p.isdigit() for p in parts):
        raise TableError(f"not a shape: {cell!r}")
    return [int(p) for p in parts]


def shape_label(dims: list[int]) -> str:
    """4096³ for a cube; else two lines (M×N, ×K) so that neighbouring labels do not collide."""
    if len(set(dims)) == 1 and len(dims) == 3:
        return f"{dims[0]}³"
    if len(dims) == 3:
        return f"{dims[0]}×{dims[1]}\n×{dims[2]}"
    return "×".join(str(d) for d in dims)


def find_table(tables: list[dict], required: list[str], where: str) -> tuple[dict, dict[str, int]]:
    """The first table whose header has every required column (matched case-insensitively);
    returns it with each required column's index."""
    for table in tables:
        names = [h.lower() for h in table["header"]]
        if all(r.lower() in names for r in required):
            return table, {r: names.index(r.lower()) for r in required}
    raise TableError(f"{where}: no table with the columns {required}")


def gpu_of(path: Path) -> str:
    """'gemm-current-NVIDIA_H100_80GB_HBM3.md' -> 'NVIDIA H100 80GB HBM3'."""
    match = re.search(r"-current-(.+)\.md$", path.name)
    if match is None:
        raise TableError(f"{path.name}: no GPU in the file name")
    return match.group(1).replace("_", " ")


# ----------------------------------------------------------------------------- figure data

GEMM_COLUMNS = ["sparsecc", "cuBLAS dense", "torch 2:4", "Triton dense"]
GEMM_RATIO = "sparsecc/cuBLAS"


def gemm_rows(path: Path) -> list[dict]:
    table, col = find_table(markdown_tables(path.read_text()),
                            ["dtype", "M×N×K", *GEMM_COLUMNS, GEMM_RATIO], path.name)
    rows = []
    for row in table["rows"]:
        entry = {"dtype": row[col["dtype"]], "shape": shape(row[col["M×N×K"]])}
        for name in [*GEMM_COLUMNS, GEMM_RATIO]:
            entry[name] = number(row[col[name]])
        rows.append(entry)
    return rows


def is_decode(dims: list[int]) -> bool:
    """The GEMM table writes decode as M×N×K with N the tokens (1, 16, 128)."""
    return dims[1] <= 256


LOW_COLUMNS = ["type", "M×N×K", "dense", "cuSPARSELt 2:4", "sparsecc 2:4", "vs dense"]


def low_precision_rows(path: Path) -> list[dict]:
    """The first table (every column from one run); later tables are other runs."""
    table, col = find_table(markdown_tables(path.read_text()), LOW_COLUMNS, path.name)
    rows = []
    for row in table["rows"]:
        dense = row[col["dense"]]
        peer = re.search(r"\(`?([^`)]*)`?", dense)
        rows.append({"type": row[col["type"]], "shape": shape(row[col["M×N×K"]]),
                     "dense": number(dense), "dense peer": peer.group(1) if peer else None,
                     "cuSPARSELt": number(row[col["cuSPARSELt 2:4"]]),
                     "sparsecc": number(row[col["sparsecc 2:4"]]),
                     "vs dense": number(row[col["vs dense"]])})
    return rows


def linear_rows(path: Path) -> list[dict]:
    table, col = find_table(markdown_tables(path.read_text()),
                            ["M", "N×K", "sparse user kernel µs", "F.linear µs", "speed-up"], path.name)
    rows = []
    for row in table["rows"]:
        rows.append({"M": int(number(row[col["M"]])), "NxK": shape(row[col["N×K"]]),
                     "sparse µs": number(row[col["sparse user kernel µs"]]),
                     "F.linear µs": number(row[col["F.linear µs"]]),
                     "speed-up": number(row[col["speed-up"]])})
    return rows


def user_kernel_rows(path: Path) -> list[dict]:
    table, col = find_table(markdown_tables(path.read_text()), ["shape", "kernel", "TFLOP/s"], path.name)
    return [{"shape": shape(row[col["shape"]]), "kernel": row[col["kernel"]],
             "TFLOP/s": number(row[col["TFLOP/s"]])} for row in table["rows"]]


# (figure stem, table glob, rows function, drawing function name)
SOURCES = [
    ("gemm-large", "gemm-current-*.md", lambda p: [r for r in gemm_rows(p) if not is_decode(r["shape"])],
     "draw_gemm_large"),
    ("gemm-decode", "gemm-current-*.md", lambda p: [r for r in gemm_rows(p) if is_decode(r["shape"])],
     "draw_gemm_decode"),
    ("low-precision", "low-precision-current-*.md", low_precision_rows, "draw_low_precision"),
    ("linear", "linear-current-*.md", linear_rows, "draw_linear"),
    ("user-kernels", "user-kernels-current-*.md", user_kernel_rows, "draw_user_kernels"),
]


def figure_name(stem: str, gpu: str) -> str:
    return f"{stem}-{gpu.replace(' ', '_')}"


def collect(results: Path = RESULTS) -> dict[str, dict]:
    """Every figure's data, parsed from the tables: {name: {"table", "gpu", "draw", "rows"}}."""
    figures = {}
    for stem, pattern, rows_of, draw in SOURCES:
        paths = sorted(results.glob(pattern))
        if not paths:
            raise TableError(f"{results}: no {pattern}")
        for path in paths:
            gpu = gpu_of(path)
            rows = rows_of(path)
            if not rows:
                raise TableError(f"{path.name}: no rows for {stem}")
            figures[figure_name(stem, gpu)] = {"table": f"bench/results/{path.name}", "gpu": gpu,
                                               "draw": draw, "rows": rows}
    return figures


def digest(entry: dict) -> str:
    return hashlib.sha256(json.dumps(entry, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# ----------------------------------------------------------------------------- drawing

COLORS = {"sparsecc": "#d62728", "cuBLAS dense": "#1f77b4", "torch 2:4": "#ff7f0e",
          "Triton dense": "#7f7f7f", "dense": "#1f77b4", "cuSPARSELt": "#ff7f0e"}
LABELS = {"sparsecc": "sparsecc 2:4", "cuBLAS dense": "cuBLAS dense (torch.mm)",
          "torch 2:4": "torch 2:4 (cuSPARSELt)", "Triton dense": "Triton dense"}


def _bars(ax, groups: list[str], series: dict[str, list], colors: dict[str, str], labels=None,
          log=False):
    """Grouped bars: one group per x label, one bar per series; missing values say n/a."""
    import numpy as np

    x = np.arange(len(groups))
    width = 0.8 / len(series)
    for k, (name, values) in enumerate(series.items()):
        pos = x - 0.4 + width * (k + 0.5)
        heights = [v if v is not None else 0.0 for v in values]
        ax.bar(pos, heights, width, label=(labels or {}).get(name, name), color=colors.get(name),
               edgecolor="white", linewidth=0.5)
        for p, v in zip(pos, values):
            if v is None:  # at the bottom of the axes, whatever its scale
                ax.text(p, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=7,
                        color="0.3", transform=ax.get_xaxis_transform())
    ax.set_xticks(x, groups)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    return x, width


def _labels(ax, x, width, index: int, heights, texts):
    """Write texts (None: nothing) above the bars of series `index`."""
    for xi, h, t in zip(x, heights, texts):
        if h is not None and t is not None:
            ax.annotate(t, (xi - 0.4 + width * (index + 0.5), h), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 2), textcoords="offset points")


def _legend_below(ax, ncol: int, y: float = -0.2):
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, y), ncol=ncol, frameon=False)


def _ratio(v):
    return None if v is None else f"{v:.2f}×"


def _gemm(plt, figure: dict, log: bool, title: str):
    rows = figure["rows"]
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6.2 * len(dtypes), 4.4), sharey=True,
                             squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        sub = [r for r in rows if r["dtype"] == dtype]
        groups = [shape_label(r["shape"]) for r in sub]
        series = {name: [r[name] for r in sub] for name in GEMM_COLUMNS}
        x, width = _bars(ax, groups, series, COLORS, LABELS, log=log)
        _labels(ax, x, width, 0, series["sparsecc"], [_ratio(r[GEMM_RATIO]) for r in sub])
        ax.set_title(dtype)
        ax.set_xlabel("M×N×K (A is M×K, 2:4 sparse)")
        ax.tick_params(axis="x", labelsize=8)
    axes[0][0].set_ylabel("TFLOP/s" + (" (log scale)" if log else ""))
    fig.legend(*axes[0][0].get_legend_handles_labels(), fontsize=8, loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=len(GEMM_COLUMNS), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.suptitle(f"{title} on the {figure['gpu']} (above the bars: sparsecc / cuBLAS)")
    return fig


def draw_gemm_large(plt, figure):
    return _gemm(plt, figure, log=False, title="Large sparse GEMMs")


def draw_gemm_decode(plt, figure):
    return _gemm(plt, figure, log=True, title="Decode GEMMs (N = tokens)")


def _short_type(text: str) -> str:
    text = re.sub(r"\([^)]*\)", "", text)
    return re.sub(r"\s*→\s*", "\n→", " ".join(text.split()))


def draw_low_precision(plt, figure):
    rows = figure["rows"]
    groups = [f"{_short_type(r['type'])}\n{shape_label(r['shape'])}" for r in rows]
    series = {name: [r[name] for r in rows] for name in ("sparsecc", "dense", "cuSPARSELt")}
    peers = ", ".join(dict.fromkeys(r["dense peer"] for r in rows if r["dense peer"]))
    labels = {"sparsecc": "sparsecc 2:4 (1:2 for tf32)", "dense": f"dense torch ({peers})",
              "cuSPARSELt": "torch 2:4 (cuSPARSELt)"}
    fig, ax = plt.subplots(figsize=(13, 4.8))
    x, width = _bars(ax, groups, series, COLORS, labels)
    _labels(ax, x, width, 0, series["sparsecc"], [_ratio(r["vs dense"]) for r in rows])
    ax.tick_params(axis="x", labelsize=7.5)
    ax.set_xlabel("type and M×N×K of y = x @ W.T (x is M×K, W is N×K sparse)")
    ax.set_ylabel("TFLOP/s (TOPS for int8)")
    _legend_below(ax, 3, y=-0.3)
    ax.set_title(f"fp8, int8 and tf32 against their peers on the {figure['gpu']} "
                 "(above the bars: sparsecc / dense)")
    return fig


def draw_linear(plt, figure):
    rows = figure["rows"]
    shapes = list(dict.fromkeys(tuple(r["NxK"]) for r in rows))
    ms = sorted({r["M"] for r in rows})
    by = {(tuple(r["NxK"]), r["M"]): r["speed-up"] for r in rows}
    series = {f"M = {m}": [by.get((s, m)) for s in shapes] for m in ms}
    palette = ["#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    colors = {name: palette[i % len(palette)] for i, name in enumerate(series)}
    fig, ax = plt.subplots(figsize=(8, 4.4))
    x, width = _bars(ax, ["×".join(map(str, s)) for s in shapes], series, colors)
    for k, values in enumerate(series.values()):
        _labels(ax, x, width, k, values, [_ratio(v) for v in values])
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", label="F.linear (dense) = 1")
    ax.set_xlabel("weight N×K (fp16, 2:4 along K); M = tokens")
    ax.set_ylabel("speed-up over F.linear (×)")
    _legend_below(ax, 4)
    ax.set_title(f"y = x @ W.T from a user kernel vs F.linear on the {figure['gpu']}")
    return fig


def draw_user_kernels(plt, figure):
    rows = figure["rows"]
    shapes = list(dict.fromkeys(tuple(r["shape"]) for r in rows))
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    by = {(tuple(r["shape"]), r["kernel"]): r["TFLOP/s"] for r in rows}
    series = {k: [by.get((s, k)) for s in shapes] for k in kernels}
    palette = ["#d62728", "#ff9896", "#9467bd", "#1f77b4", "#7f7f7f"]
    colors = {k: ("#1f77b4" if "dense" in k else palette[i % len(palette)])
              for i, k in enumerate(kernels)}
    fig, ax = plt.subplots(figsize=(8, 4.4))
    x, width = _bars(ax, [shape_label(list(s)) for s in shapes], series, colors)
    for k, values in enumerate(series.values()):
        _labels(ax, x, width, k, values, [None if v is None else f"{v:.0f}" for v in values])
    ax.set_xlabel("M×N×K (fp16, A 2:4 sparse)")
    ax.set_ylabel("TFLOP/s")
    _legend_below(ax, 2)
    ax.set_title(f"Triton's tutorial matmul with a sparse operand on the {figure['gpu']}")
    return fig


# ----------------------------------------------------------------------------- write / check

def write(results: Path = RESULTS, plots: Path = PLOTS) -> list[Path]:
    """Draw every figure as SVG under `plots` and write data.json; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "sparsecc", "svg.fonttype": "none", "font.size": 9})
    figures = collect(results)
    plots.mkdir(parents=True, exist_ok=True)
    written = []
    for name, figure in figures.items():
        fig = globals()[figure["draw"]](plt, figure)
        path = plots / f"{name}.svg"
        fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None,
                                                   "Description": f"sparsecc-plot-data {digest(figure)}"})
        plt.close(fig)
        written.append(path)
    for stale in plots.glob("*.svg"):
        if stale.stem not in figures:
            stale.unlink()
    data = plots / DATA
    data.write_text(_dump(figures))
    written.append(data)
    return written


def _dump(figures: dict) -> str:
    """data.json with one table row per line, so that a table's change is a readable diff."""
    def one(value):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)

    out = []
    for name in sorted(figures):
        entry = figures[name]
        fields = [f"  {one(k)}: {one(v)}" for k, v in sorted(entry.items()) if k != "rows"]
        rows = ",\n".join(f"   {one(row)}" for row in entry["rows"])
        fields.append(f'  "rows": [\n{rows}\n  ]')
        out.append(f"{one(name)}: {{\n" + ",\n".join(fields) + "\n }")
    return "{\n" + ",\n".join(" " + o for o in out) + "\n}\n"


def check(results: Path = RESULTS, plots: Path = PLOTS) -> list[str]:
    """What differs between the tables and the committed plots (empty: they agree)."""
    try:
        expected = collect(results)
    except TableError as error:
        return [f"cannot read the tables: {error}"]
    data = plots / DATA
    if not data.is_file():
        return [f"{data} is missing"]
    committed = json.loads(data.read_text())
    problems = []
    for name in sorted(set(expected) | set(committed)):
        if name not in committed:
            problems.append(f"{name}: no committed plot for {expected[name]['table']}")
        elif name not in expected:
            problems.append(f"{name}: committed, but no table makes it any more")
        elif committed[name] != expected[name]:
            old, new = committed[name], expected[name]
            changed = [f"row {i + 1} {k}: {o.get(k)} -> {n[k]}"
                       for i, (o, n) in enumerate(zip(old.get("rows", []), new["rows"]))
                       for k in n if o.get(k) != n[k]][:3]
            if len(old.get("rows", [])) != len(new["rows"]):
                changed.append(f"{len(old.get('rows', []))} rows -> {len(new['rows'])}")
            problems.append(f"{name}: the plot's data differs from {new['table']} ({'; '.join(changed)})")
        else:
            svg = plots / f"{name}.svg"
            if not svg.is_file():
                problems.append(f"{svg} is missing")
            elif f"sparsecc-plot-data {digest(expected[name])}" not in svg.read_text():
                problems.append(f"{svg.name} was not drawn from the data in {DATA}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="draw the plots from the tables")
    mode.add_argument("--check", action="store_true", help="check the committed plots' data")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--plots", type=Path, default=PLOTS)
    args = parser.parse_args(argv)
    if args.write:
        for path in write(args.results, args.plots):
            print(path)
        return 0
    problems = check(args.results, args.plots)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("run `python docs/plots.py --write` and commit docs/_static/plots/", file=sys.stderr)
        return 1
    print(f"plots match the tables in {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
