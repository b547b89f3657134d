"""sparsecc-opt as a user runs it: exit codes, located errors, never a traceback, -o atomicity."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

GOOD = """builtin.module {
  tt.func public @k(%x: i32) -> i32 {
    %y = arith.addi %x, %x : i32
    tt.return %y : i32
  }
}
"""

DOT_MISMATCH = """builtin.module {
  tt.func public @bad(%a: tensor<32x64xf16>, %b: tensor<64x16xf16>, %c: tensor<32x32xf32>) {
    %d = tt.dot %a, %b, %c : tensor<32x64xf16> * tensor<64x16xf16> -> tensor<32x32xf32>
    tt.return
  }
}
"""

SPARSE_STORE = """builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %D: !tt.ptr<f16, #tt.sparse<"NV24">>) {
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %pd = tt.make_tensor_ptr %D, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %a = tt.load %pa : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    tt.store %pd, %a : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    tt.return
  }
}
"""


def run_opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "sparsecc.tools.sparsecc_opt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def write(tmp_path: Path, text: str, name: str = "in.mlir") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_good_input_round_trips_and_exits_zero(tmp_path: Path) -> None:
    res = run_opt(write(tmp_path, GOOD))
    assert res.returncode == 0, res.stderr
    assert res.stdout == GOOD
    assert res.stderr == ""


def test_stdin_and_dash(tmp_path: Path) -> None:
    assert run_opt(stdin=GOOD).stdout == GOOD
    assert run_opt("-", stdin=GOOD).stdout == GOOD


def test_generic_form_parses_back_to_the_same_text(tmp_path: Path) -> None:
    generic = run_opt("--print-op-generic", stdin=GOOD)
    assert generic.returncode == 0 and '"arith.addi"' in generic.stdout
    assert run_opt(stdin=generic.stdout).stdout == GOOD


# Each user-error class: (input text, extra args, message fragment, expected "line:col" or None).
ERRORS = {
    "malformed": (GOOD.replace("%x, %x", "%x %x"), [], "Expected ','", "3:24"),
    "unknown-op": (
        GOOD.replace("arith.addi %x, %x : i32", "tt.nope %x"),
        [],
        "Operation tt.nope is not registered",
        "3:10",
    ),
    "unknown-dialect-attr": (
        GOOD.replace("-> i32 {", "-> i32 attributes {a = #foo.bar} {"),
        [],
        "'foo.bar' is not registered",
        "2:61",
    ),
    "unknown-sparse-format": (
        GOOD.replace("(%x: i32)", '(%x: i32, %p: !tt.ptr<f16, #tt.sparse<"NV99">>)'),
        [],
        'unknown sparse format "NV99"',
        "2:47",
    ),
    "verifier": (DOT_MISMATCH, [], "dot shapes do not agree", "3:5"),
    "pass-failure": (
        SPARSE_STORE,
        ["-p", "decompose-sparse-tensors"],
        "cannot store a sparse",
        "9:5",
    ),
    "unknown-pass": (GOOD, ["-p", "no-such-pass"], "unknown pass 'no-such-pass'", None),
    "bad-pipeline": (GOOD, ["-p", "cse{"], "invalid pass pipeline", None),
    "bad-pass-option": (GOOD, ["-p", "convert-tt-to-ttg{num-warps=x}"], "convert-tt-to-ttg", None),
}


@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_user_errors_are_one_located_diagnostic(tmp_path: Path, kind: str) -> None:
    text, extra, fragment, line_col = ERRORS[kind]
    path = write(tmp_path, text)
    res = run_opt(path, *extra)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert res.stdout == ""
    assert "error: " in res.stderr and fragment in res.stderr
    first = res.stderr.splitlines()[0]
    if line_col is not None:
        assert first.startswith(f"{path}:{line_col}: error: "), first
        # the source line and a caret under the column follow
        col = int(line_col.split(":")[1])
        assert res.stderr.splitlines()[2] == " " * (col - 1) + "^"
    else:
        assert first.startswith(f"{path}: error: "), first


def test_unknown_pass_lists_the_known_ones() -> None:
    res = run_opt("-p", "nope", stdin=GOOD)
    assert res.returncode == 1
    assert "decompose-sparse-tensors" in res.stderr and "convert-tt-to-ttg" in res.stderr


def test_missing_input_file(tmp_path: Path) -> None:
    res = run_opt(str(tmp_path / "absent.mlir"))
    assert res.returncode == 1 and "cannot read input" in res.stderr
    assert "Traceback" not in res.stderr


def test_output_file_written_only_on_success(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    res = run_opt(write(tmp_path, GOOD), "-o", str(out))
    assert res.returncode == 0 and res.stdout == ""
    assert out.read_text() == GOOD

    out.write_text("keep me\n")
    for text, extra in (
        (DOT_MISMATCH, []),
        (GOOD, ["-p", "nope"]),
        (SPARSE_STORE, ["-p", "decompose-sparse-tensors"]),
    ):
        res = run_opt(write(tmp_path, text), "-o", str(out), *extra)
        assert res.returncode == 1
        assert out.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mlir", "out.mlir"]  # no temp left


def test_list_passes() -> None:
    res = run_opt("--list-passes")
    assert res.returncode == 0
    names = res.stdout.split()
    for name in (
        "decompose-sparse-tensors",
        "convert-tt-to-ttg",
        "sparse-gpu-encoding",
        "tritongpu-pipeline",
        "tritongpu-insert-barriers",
        "allocate-shared-memory",
    ):
        assert name in names
    for line in res.stdout.splitlines():  # every pass says what it does
        name, _, description = line.partition(" ")
        assert description.strip(), f"{name} has no description"


def test_print_ir_after_all_goes_to_stderr() -> None:
    dup = GOOD.replace("    tt.return %y", "    %z = arith.addi %x, %x : i32\n    tt.return %y")
    res = run_opt("-p", "cse", "--print-ir-before-all", "--print-ir-after-all", stdin=dup)
    assert res.returncode == 0
    before, after = res.stderr.split("// -----// IR Dump After cse //----- //")
    assert "IR Dump Before cse" in before and "%z = arith.addi" in before
    assert "%z" not in after and "%z" not in res.stdout


def test_verify_diagnostics(tmp_path: Path) -> None:
    lines = DOT_MISMATCH.splitlines()
    expected = lines[:2] + ["    // expected-error@+1 {{dot shapes do not agree}}"] + lines[2:]
    ok = run_opt(write(tmp_path, "\n".join(expected) + "\n"), "--verify-diagnostics")
    assert ok.returncode == 0, ok.stderr

    wrong_line = lines[:2] + ["    // expected-error@-1 {{dot shapes do not agree}}"] + lines[2:]
    bad = run_opt(write(tmp_path, "\n".join(wrong_line) + "\n"), "--verify-diagnostics")
    assert bad.returncode == 1
    assert "was not produced" in bad.stderr and "unexpected error" in bad.stderr

    missing = run_opt(
        write(tmp_path, "// expected-error {{never}}\n" + GOOD), "--verify-diagnostics"
    )
    assert missing.returncode == 1 and 'expected error "never" was not produced' in missing.stderr


def test_split_input_file_keeps_line_numbers_and_prints_only_on_success(tmp_path: Path) -> None:
    text = GOOD + "\n// -----\n" + DOT_MISMATCH + "// -----\n" + GOOD.replace("@k", "@k2")
    path = write(tmp_path, text)
    whole = run_opt(path)  # without splitting, the three modules are one input
    assert whole.returncode == 1

    bad = run_opt(path, "--split-input-file")
    assert bad.returncode == 1 and bad.stdout == ""
    dot_line = text.splitlines().index(DOT_MISMATCH.splitlines()[2]) + 1
    assert f"in.mlir:{dot_line}:5: error: 'tt.dot' op dot shapes do not agree" in bad.stderr
    assert "Traceback" not in bad.stderr

    ok_text = GOOD + "// -----\n" + GOOD.replace("@k", "@k2")
    ok = run_opt(write(tmp_path, ok_text, "ok.mlir"), "--split-input-file")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == GOOD + "// -----\n" + GOOD.replace("@k", "@k2")
