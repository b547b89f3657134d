"""sparsecc-opt against hostile input: no hang, no traceback, every user error located, internal
errors named as such, and `-o` writing like mlir-opt (through links and into devices, keeping
the file's mode, refusing read-only files)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparsecc import passes
from sparsecc.tools import sparsecc_opt

REPO = Path(__file__).resolve().parents[3]

GOOD = """builtin.module {
  tt.func public @k(%x: i32) -> i32 {
    %y = arith.addi %x, %x : i32
    tt.return %y : i32
  }
}
"""


def run_opt(*args: str | Path, stdin: bytes | None = None, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "sparsecc.tools.sparsecc_opt", *map(str, args)], input=stdin,
                          stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=120, check=False)


def opt_file(tmp_path: Path, data: str | bytes, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "in.mlir"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    proc = run_opt(path, *args)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert "Traceback" not in err
    return proc.returncode, out, err


def test_unterminated_string_fails_fast(tmp_path):
    start = time.perf_counter()
    code, _, err = opt_file(tmp_path, '%x = "' + "a" * 5000 + " b\n")
    assert time.perf_counter() - start < 20  # exponential backtracking took 15 s at 26 characters
    assert code == 1 and "in.mlir:1:6: error:" in err


def test_lexer_still_reads_strings_with_escapes():
    from sparsecc.dialects import make_context
    from sparsecc.tools.diagnostics import LocatingParser

    text = 'builtin.module attributes {a = "x\\"y\\n\\41", b = ""} {\n}\n'
    module = LocatingParser(make_context(), text, "t").parse_module()
    assert module.attributes["a"].data == 'x"y\nA' and module.attributes["b"].data == ""


@pytest.mark.parametrize("body, line, what", [
    ("    %a = arith.addi %b, %b : i32\n    %b = arith.constant 1 : i32\n", 3, "used before its definition"),
    ("    %r = scf.if %c -> (i32) {\n      %a = arith.constant 1 : i32\n    } else {\n"
     "      %b = arith.constant 2 : i32\n      scf.yield %b : i32\n    }\n", 3, "then region yields 0 value(s)"),
    ("    %c0 = arith.constant 0 : i32\n    scf.for %i = %c0 to %n step %s : i32 {\n"
     "      %s = arith.constant 1 : i32\n    }\n", 4, "never defined where this use can see it"),
    ("    scf.if %c {\n      %v = arith.constant 1 : i32\n    }\n    %w = arith.addi %v, %v : i32\n", 6,
     "use of undefined value '%v'"),
])
def test_values_a_use_cannot_see_are_located_errors(tmp_path, body, line, what):
    src = f"builtin.module {{\n  tt.func public @k(%n: i32, %c: i1) {{\n{body}    tt.return\n  }}\n}}\n"
    code, out, err = opt_file(tmp_path, src)
    assert code == 1 and out == ""
    assert f"in.mlir:{line}:" in err and what in err, err


def test_literal_out_of_range_is_located(tmp_path):
    code, _, err = opt_file(tmp_path, "builtin.module {\n  %c = arith.constant 1.0e39 : f32\n}\n")
    assert code == 1 and "in.mlir:2:3: error: a literal does not fit its type" in err


def test_encoding_problems(tmp_path):
    assert opt_file(tmp_path, b"\xef\xbb\xbf" + GOOD.encode())[:2] == (0, GOOD)  # a BOM is skipped
    code, _, err = opt_file(tmp_path, GOOD.encode().replace(b"%y =", b"%y\xff="))
    assert code == 1 and "in.mlir:3:7: error: invalid UTF-8 byte 0xff" in err
    code, _, err = opt_file(tmp_path, GOOD.replace("%y =", "%y\0="))
    assert code == 1 and "in.mlir:3:7: error: NUL byte in the input" in err


def _nested(levels: int) -> str:
    return ("builtin.module {\n  tt.func @f(%c: i1) {\n" + "scf.if %c {\n" * levels + "}\n" * levels
            + "  tt.return\n  }\n}\n")


def test_deep_nesting_parses_and_too_deep_is_a_located_error(tmp_path):
    code, out, _ = opt_file(tmp_path, _nested(150))
    assert code == 0 and out.count("scf.if") == 150
    code, _, err = opt_file(tmp_path, _nested(30000))  # refused at the region past MAX_REGION_DEPTH
    assert code == 1 and "in.mlir:257:11: error: regions nested more than 256 deep" in err


@pytest.fixture
def failing_pass(monkeypatch):
    """Registers `boom{kind=...}`: a pass that fails the way a bug would, or as a user error."""
    from dataclasses import dataclass

    from xdsl.passes import ModulePass
    from xdsl.utils.exceptions import DiagnosticException

    @dataclass(frozen=True)
    class Boom(ModulePass):
        name = "boom"
        kind: str = "bug"

        def apply(self, ctx, op) -> None:
            if self.kind == "bug":
                next(iter(()))  # StopIteration, as an unguarded search in a pass would raise
            raise DiagnosticException("this IR is not supported")

    monkeypatch.setitem(passes.PASSES, "boom", lambda: Boom)


def test_internal_errors_say_they_are_bugs(tmp_path, failing_pass, capsys):
    path = tmp_path / "in.mlir"
    path.write_text(GOOD)
    assert sparsecc_opt.main([str(path), "-p", "boom"]) == 1
    err = capsys.readouterr().err
    assert "internal error in pass 'boom': StopIteration" in err and "bug in sparsecc" in err
    assert sparsecc_opt.main([str(path), "-p", "boom{kind=user}"]) == 1
    err = capsys.readouterr().err
    assert "pass 'boom' failed: this IR is not supported" in err and "bug" not in err


def test_output_writes_through_links_and_keeps_the_mode(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    real = tmp_path / "real.mlir"
    real.write_text("old\n")
    os.chmod(real, 0o640)
    link = tmp_path / "link.mlir"
    link.symlink_to(real)
    assert run_opt(src, "-o", link).returncode == 0
    assert link.is_symlink() and real.read_text() == GOOD
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    fresh = tmp_path / "fresh.mlir"
    assert run_opt(src, "-o", fresh).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600


def test_output_into_a_device_stays_a_device(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    assert run_opt(src, "-o", os.devnull).returncode == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_read_only_output_is_not_replaced(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    target = tmp_path / "ro.mlir"
    target.write_text("keep\n")
    os.chmod(target, 0o444)
    proc = run_opt(src, "-o", target)
    assert proc.returncode == 1 and b"read-only" in proc.stderr and b"Traceback" not in proc.stderr
    assert target.read_text() == "keep\n"
    proc = run_opt(src, "-o", tmp_path)
    assert proc.returncode == 1 and b"is a directory" in proc.stderr


def test_output_the_user_may_not_write_is_not_replaced(tmp_path, monkeypatch, capsys):
    """A file with write bits that this user may not write (another user's 0644 in a world-
    writable folder) is not replaced: the rename would need only the folder's permission. As
    root os.access allows everything, so the refusal is simulated here (and real below)."""
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    target = tmp_path / "theirs.mlir"
    target.write_text("keep\n")
    os.chmod(target, 0o644)
    refused = {str(target)}
    real_access = os.access

    def access(path, mode, **kwargs):
        if str(path) in refused and mode & os.W_OK:
            return False
        return real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    assert sparsecc_opt._why_not_writable(str(target), target.stat()) == (
        "permission denied (this user may not write the file)")
    assert sparsecc_opt.main([str(src), "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert f"cannot write output '{target}': permission denied" in err and "Traceback" not in err
    assert target.read_text() == "keep\n" and sorted(p.name for p in tmp_path.iterdir()) == ["in.mlir", "theirs.mlir"]
    refused.clear()  # the same file, writable: replaced
    assert sparsecc_opt._why_not_writable(str(target), target.stat()) is None
    assert sparsecc_opt.main([str(src), "-o", str(target)]) == 0 and target.read_text() == GOOD


def _as_nobody(argv: list[str]) -> int:
    """Exit code of `sparsecc-opt argv` in a forked child that dropped root for user nobody
    (the tool ran once as root before, so nothing is imported from root-only folders)."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            code = sparsecc_opt.main(argv)
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root, to make a root-owned file and run the tool as another user")
def test_root_owned_output_in_a_shared_folder_is_not_replaced_for_a_user():
    import shutil
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="sparsecc-shared-", dir="/tmp"))  # pytest's tmp is root-only
    try:
        os.chmod(shared, 0o777)  # world-writable, no sticky bit: anyone may rename over anything
        src = shared / "in.mlir"
        src.write_text(GOOD)
        os.chmod(src, 0o644)
        target = shared / "root.mlir"
        target.write_text("keep\n")
        os.chmod(target, 0o644)
        assert sparsecc_opt.main([str(src), "-o", str(shared / "warm.mlir")]) == 0
        assert _as_nobody([str(src), "-o", str(shared / "mine.mlir")]) == 0  # the user can run the tool
        assert (shared / "mine.mlir").stat().st_uid == 65534
        assert _as_nobody([str(src), "-o", str(target)]) == 1
        assert target.read_text() == "keep\n" and target.stat().st_uid == 0
        assert not list(shared.glob(".sparsecc-opt-*"))
    finally:
        shutil.rmtree(shared)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_stdout_is_an_error_not_a_traceback(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    with open("/dev/full", "wb") as full:
        proc = run_opt(src, stdout=full)
    assert proc.returncode == 1 and b"cannot write output" in proc.stderr
    assert b"Traceback" not in proc.stderr


@pytest.mark.parametrize("a_is_bad", [True, False])
@pytest.mark.parametrize("bad", [None, [[1.0]], "x", 3])
def test_sparse_mm_names_a_bad_operand(a_is_bad, bad):
    import numpy as np

    from sparsecc.ops import sparse_mm

    good_a = sparsecc_compress()
    good_b = torch_randn(64, 8)
    for value in (bad, np.zeros((64, 8), dtype=np.float16)):
        args = (value, good_b) if a_is_bad else (good_a, value)
        with pytest.raises(TypeError, match="sparse_mm: (A must be a sparsecc.SparseTensor|B must be a torch.Tensor)"):
            sparse_mm(*args)


def test_sparse_mm_rejects_bad_configs_and_devices():
    import torch

    from sparsecc.ops import MMConfig, sparse_mm

    with pytest.raises(ValueError, match="MMConfig: block_m must be a positive int, got 0"):
        MMConfig(0, 16, 32)
    with pytest.raises(ValueError, match="num_stages must be a positive int"):
        MMConfig(16, 16, 32, num_stages=-1)
    a, b = sparsecc_compress(), torch_randn(64, 8)
    with pytest.raises(TypeError, match="config must be a sparsecc.ops.MMConfig, got dict"):
        sparse_mm(a, b, config={"block_m": 16})
    meta_a = sparsecc_compress(device="meta")
    with pytest.raises(ValueError, match="operands on meta are not supported"):
        sparse_mm(meta_a, torch.empty(64, 8, dtype=torch.float16, device="meta"))


def torch_randn(*shape):
    import torch

    return torch.randn(*shape, dtype=torch.float16)


def sparsecc_compress(device: str = "cpu"):
    import torch

    import sparsecc

    a = sparsecc.compress(sparsecc.prune_2to4(torch.randn(32, 64, dtype=torch.float16)))
    return a if device == "cpu" else sparsecc.SparseTensor(a.values.to(device), a.meta.to(device), a.shape)
