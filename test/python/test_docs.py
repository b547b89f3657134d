"""The user guide (docs/) builds with Sphinx, warnings as errors, and covers what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_docs_build_without_warnings(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(DOCS), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in ("index", "getting-started", "kernels", "formats", "compiler", "seed", "torch", "language",
                 "performance", "development"):
        assert (tmp_path / f"{page}.html").is_file(), page


def test_every_page_is_in_the_toctree():
    index = (DOCS / "index.md").read_text()
    for page in DOCS.glob("*.md"):
        if page.stem != "index":
            assert f"\n{page.stem}\n" in index, f"{page.name} is not in index.md's toctree"


def test_the_seed_pages_ir_is_what_the_compiler_prints():
    """docs/seed.md includes the seed kernel's stages from docs/seed/; they must be today's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("seed_kernel", DOCS / "seed_kernel.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    for name, text in module.stages().items():
        assert (DOCS / "seed" / name).read_text() == text, (
            f"docs/seed/{name} is stale: run `python docs/seed_kernel.py --write`")


def _plots_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_plots", DOCS / "plots.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_the_committed_plots_show_the_tables_numbers():
    """docs/_static/plots/ was drawn from today's bench/results tables (`docs/plots.py --check`)."""
    proc = subprocess.run([sys.executable, str(DOCS / "plots.py"), "--check"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_plot_check_fails_when_a_table_changes(tmp_path):
    """A number changed in a table, without `--write`, is a difference --check reports."""
    plots = _plots_module()
    for table in plots.RESULTS.glob("*-current-*.md"):
        (tmp_path / table.name).write_text(table.read_text())
    assert plots.check(tmp_path) == []
    gemm = next(tmp_path.glob("gemm-current-*.md"))
    text = gemm.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| fp16 | 4096×4096×4096 |"))
    gemm.write_text(text.replace(row, row.replace("976.4", "999.9", 1)))
    problems = plots.check(tmp_path)
    assert len(problems) == 1 and problems[0].startswith("gemm-large-"), problems
    assert "976.4 -> 999.9" in problems[0], problems
    gemm.unlink()
    assert any("no gemm-current-" in p for p in plots.check(tmp_path))


def test_the_plot_parser_reads_every_cell_form():
    plots = _plots_module()
    assert plots.number("  976.4 ") == 976.4
    assert plots.number("**1537**") == 1537
    assert plots.number("1221 (`_scaled_mm`)") == 1221
    assert plots.number("1.42×") == 1.42
    for missing in ("—", "nan", "— (no fp32 in torch's cuSPARSELt)"):
        assert plots.number(missing) is None, missing
    assert plots.shape("28672×4096×8192") == [28672, 4096, 8192]
    assert plots.shape("4096x14336") == [4096, 14336]
    tables = plots.markdown_tables("text\n\n| a | b |\n|---|---|\n| 1 | **2** |\n\nmore\n")
    assert tables == [{"header": ["a", "b"], "rows": [["1", "**2**"]], "line": 3}]
    import pytest

    with pytest.raises(plots.TableError):
        plots.number("fast")
    with pytest.raises(plots.TableError):
        plots.markdown_tables("| a | b |\n|---|---|\n| 1 |\n")


def test_written_plots_pass_the_check_and_carry_their_data(tmp_path):
    """--write draws an SVG per figure whose metadata names its data; --check accepts the result
    and rejects an SVG drawn from other numbers."""
    import pytest

    pytest.importorskip("matplotlib")
    plots = _plots_module()
    written = plots.write(plots.RESULTS, tmp_path)
    names = {p.name for p in written}
    assert names == {p.name for p in plots.PLOTS.iterdir()}, "committed plots differ in name"
    assert plots.check(plots.RESULTS, tmp_path) == []
    svg = next(tmp_path.glob("linear-*.svg"))
    svg.write_text(svg.read_text().replace("sparsecc-plot-data ", "sparsecc-plot-data 0"))
    assert plots.check(plots.RESULTS, tmp_path) == [f"{svg.name} was not drawn from the data in data.json"]


def test_the_performance_page_shows_every_plot():
    page = (DOCS / "performance.md").read_text()
    svgs = sorted(p.name for p in (DOCS / "_static" / "plots").glob("*.svg"))
    assert svgs
    for name in svgs:
        assert f"_static/plots/{name}" in page, f"performance.md does not show {name}"


ROOT = DOCS.parent
README = ROOT / "README.md"


def test_the_readme_keeps_the_two_commands_and_links_that_resolve():
    import re

    text = README.read_text()
    commands = re.findall(r"^make (\w+) ", text, flags=re.M)
    assert commands == ["demo", "test"], commands
    makefile = (ROOT / "Makefile").read_text()
    for target in commands:
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    links = [t for t in re.findall(r"\]\(([^)#]+)\)", prose) if "://" not in t]
    assert {"docs/index.md", "CHANGELOG.md", "LICENSE", "bench/results/"} <= set(links), links
    for target in links:
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"
    for page in DOCS.glob("*.md"):
        assert f"(docs/{page.name})" in text, f"the README does not link docs/{page.name}"


def test_the_readme_example_runs_and_prints_what_it_says(tmp_path):
    """The README's one example compiles, runs on the interpreter (CPU tensors) and checks itself."""
    import re

    example = re.search(r"```python\n(.*?)```", README.read_text(), flags=re.S).group(1)
    script = tmp_path / "readme_example.py"
    script.write_text(example)
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "SPARSECC_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '#tt.sparse<"NV24">' in proc.stdout and "tensor<2x64xi16>" in proc.stdout, proc.stdout
