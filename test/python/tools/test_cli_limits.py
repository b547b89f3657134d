"""sparsecc-opt's bounds on work: nesting depth, tensor size and `--split-input-file` stay
linear (each was once unbounded: 5000 nested loops took a minute, 20000 chunks 16 GB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsecc.tools import sparsecc_opt
from sparsecc.tools.diagnostics import MAX_REGION_DEPTH, SourceFile

CHUNK = """builtin.module {{
  tt.func public @k{i}(%x: i32) -> i32 {{
    %y = arith.addi %x, %x : i32
    tt.return %y : i32
  }}
}}
"""


def nested_loops(depth: int) -> str:
    """A kernel of `depth` nested scf.for (plus the module's and the function's regions)."""
    head = ["builtin.module {", "  tt.func public @k(%n: i32) {",
            "    %c0 = arith.constant 0 : i32", "    %c1 = arith.constant 1 : i32"]
    loops = [f"    scf.for %i{d} = %c0 to %n step %c1 : i32 {{" for d in range(depth)]
    return "\n".join(head + loops + ["    }"] * depth + ["    tt.return", "  }", "}", ""])


def run(tmp_path: Path, text: str, *args: str, capsys) -> tuple[int, str, str]:
    path = tmp_path / "in.mlir"
    path.write_text(text)
    status = sparsecc_opt.main([str(path), *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_regions_nested_past_the_limit_are_refused_where_they_open(tmp_path, capsys):
    loops = MAX_REGION_DEPTH - 2 + 1  # the module and the function hold two regions
    status, out, err = run(tmp_path, nested_loops(loops), capsys=capsys)
    line = 4 + loops  # the last loop's line: its `{` is the first region too deep
    col = nested_loops(loops).split("\n")[line - 1].index("{") + 1
    assert status == 1 and out == ""
    assert err.startswith(f"{tmp_path / 'in.mlir'}:{line}:{col}: error: regions nested more than "
                          f"{MAX_REGION_DEPTH} deep")


def test_regions_at_the_limit_are_fine(tmp_path, capsys):
    status, out, err = run(tmp_path, nested_loops(MAX_REGION_DEPTH - 2), capsys=capsys)
    assert status == 0, err
    assert out.count("scf.for") == MAX_REGION_DEPTH - 2


def test_split_input_file_chunks_are_not_padded():
    """20000 chunks: the chunks together hold no more text than the input (the padding was
    quadratic), and each maps its offsets to the lines of the whole file."""
    n = 20000
    text = "// -----\n".join(CHUNK.format(i=i) for i in range(n))
    chunks = sparsecc_opt.split_chunks(SourceFile("in.mlir", text))
    assert len(chunks) == n
    assert sum(len(c.text) for c in chunks) <= len(text)
    for i in (0, 1, 7, n // 2, n - 1):
        chunk = chunks[i]
        pos = chunk.text.index("arith.addi")
        line, col = chunk.line_col(pos)
        assert line == 3 + 7 * i  # six lines a chunk, and its marker
        assert text.split("\n")[line - 1][col - 1:].startswith("arith.addi")
        assert chunk.line_text(line).strip().startswith("%y = arith.addi")


def test_split_input_file_errors_name_whole_file_lines(tmp_path, capsys):
    chunks = [CHUNK.format(i=i) for i in range(300)]
    chunks[250] = chunks[250].replace("arith.addi %x, %x", "arith.addi %x, %nope")
    status, out, err = run(tmp_path, "// -----\n".join(chunks), "--split-input-file", capsys=capsys)
    line = 250 * 7 + 3
    assert status == 1 and out == ""
    assert f"in.mlir:{line}:" in err and "%nope" in err
    assert err.split("\n")[1].strip().startswith("%y = arith.addi %x, %nope")


@pytest.mark.parametrize("shape", ["1048576x1048576", "2048x1024", "1048577"])
def test_tensors_past_the_frontend_limit_are_refused(tmp_path, capsys, shape):
    text = f"builtin.module {{\n  %c = arith.constant dense<1.0> : tensor<{shape}xf32>\n}}\n"
    status, out, err = run(tmp_path, text, capsys=capsys)
    assert status == 1 and out == ""
    assert ":2:36: error: a shape of " in err and "at most 1048576 per tensor" in err
