"""Fuzzing with hypothesis: generated and mutated input never crashes sparsecc (see
fuzz_targets.py for the areas and what counts as a crash).

In CI each area runs a few dozen derandomized cases (seconds). The long run, which writes the
outcome table:

    python test/python/fuzz_targets.py --examples 2000 --out bench/results/fuzz-current.md

Every crash a run finds becomes a case in REGRESSIONS below (or a test of its own) with its fix.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from fuzz_targets import (
    CORPUS,
    OUTCOMES,
    Crash,
    cache_case,
    dense_matrix,
    kernel_source,
    mutated_ir,
    quant_case,
    run_caches,
    run_cli,
    run_compress,
    run_compress_quant,
    run_frontend,
    run_torch,
    table,
    token_soup,
    torch_case,
)
from hypothesis import HealthCheck, given, settings

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = int(os.environ.get("SPARSECC_FUZZ_EXAMPLES", "0") or 0)
LONG = EXAMPLES > 0


def _settings(short: int) -> settings:
    return settings(max_examples=EXAMPLES or short, deadline=None, derandomize=not LONG, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    out = os.environ.get("SPARSECC_FUZZ_REPORT")
    if out:
        with open(out, "w") as f:
            f.write("# Fuzzing outcomes\n\n"
                    f"`python test/python/fuzz_targets.py --examples {EXAMPLES}`: cases per area and how "
                    "each ended (fuzz_targets.py defines the outcomes; a crash fails the run).\n\n" + table())


@_settings(40)
@given(mutated_ir())
def test_fuzz_cli_on_mutated_lit_inputs(case):
    run_cli(*case)


@_settings(40)
@given(token_soup())
def test_fuzz_parser_on_token_soup(text):
    run_cli(text, "", area="parser")


@_settings(15)
@given(kernel_source())
def test_fuzz_frontend_on_generated_kernels(case):
    run_frontend(*case)


ELEMENTWISE_SIG = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "n": "i32"}


def test_frontend_oracle_runs_what_compiles_and_wants_located_errors(monkeypatch, uncounted):
    """The frontend area's oracle: a kernel that compiles but fails on the interpreter (an
    unmasked store past Z's 1000 elements), and a refusal without file:line:col or naming no
    problem, are crashes; a located error naming the problem is clean."""
    head = "def kernel(X, Y, Z, n, BLOCK: tl.constexpr):\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    masked = head + "    tl.store(Z + offs, tl.load(X + offs, mask=offs < n, other=0.0) * 2.0, mask=offs < n)"
    assert run_frontend(masked, ELEMENTWISE_SIG, {"BLOCK": 64}) == "accepted"
    unmasked = head + "    tl.store(Z + offs, tl.load(X + offs, mask=offs < n, other=0.0) * 2.0)"
    with pytest.raises(Crash, match="compiled, but the interpreter failed.*out-of-bounds store"):
        run_frontend(unmasked, ELEMENTWISE_SIG, {"BLOCK": 64})
    assert run_frontend(head + "    x = tl.arange(0, 10)", ELEMENTWISE_SIG, {"BLOCK": 64}) == "clean error"

    import sparsecc

    def refusing_with(message):  # sparsecc.compile refusing every kernel with `message` ({file}: the kernel's)
        def refuse(kernel, *args, **kwargs):
            raise ValueError(message.format(file=kernel.fn.__code__.co_filename))
        monkeypatch.setattr(sparsecc, "compile", refuse)

    for message in ["the tile shape must be a power of two",  # no place
                    "{file}:7:5: error: invalid",  # a place, but no problem named
                    "{file}:7:5: error: shapes do not match\n{file}:8:5: error: and another",  # two errors
                    "{file}:700:5: error: the tile shape must be a power of two",  # not a line of the kernel
                    "other.py:7:5: error: the tile shape must be a power of two"]:  # not the kernel's file
        refusing_with(message)
        with pytest.raises(Crash, match="not a located error naming the problem"):
            run_frontend(masked, ELEMENTWISE_SIG, {"BLOCK": 64})
    refusing_with("{file}:7:5: error: the tile shape must be a power of two")
    assert run_frontend(masked, ELEMENTWISE_SIG, {"BLOCK": 64}) == "clean error"


@pytest.fixture
def uncounted():
    """A self-test of the oracles provokes crashes on purpose: its outcomes stay out of the
    table of what the fuzzing found."""
    saved = dict(OUTCOMES)
    yield
    OUTCOMES.clear()
    OUTCOMES.update(saved)


@_settings(40)
@given(dense_matrix())
def test_fuzz_compress_on_random_tensors(x):
    run_compress(x)


@_settings(20)
@given(quant_case())
def test_fuzz_quantized_compress_on_random_tensors(case):
    run_compress_quant(*case)


@_settings(25)
@given(cache_case())
def test_fuzz_caches_with_corrupt_and_forged_files(case):
    run_caches(*case)


@_settings(12)
@given(torch_case())
def test_fuzz_sparsify_on_odd_models(case):
    run_torch(case)


def test_corpus_covers_every_lit_folder():
    assert len(CORPUS) >= 40


REGRESSIONS = [
    # (input, pipeline): crashes a fuzz run found, kept with their fixes
    ('%x = "' + "a" * 40 + " b\n", ""),  # exponential backtracking in xDSL's string-literal regex
    ('"' + "a" * 40 + " b\n", ""),  # the same as the input's first token (lexed while the parser is built)
    ("builtin.module {\n  tt.func public @k(%n: i32) {\n    %c0 = arith.constant 0 : i32\n"
     "    scf.for %i = %c0 to %n step %s : i32 {\n      %s = arith.constant 1 : i32\n    }\n"
     "    tt.return\n  }\n}\n", ""),  # a loop step defined in its own body
    ("builtin.module {\n  %c = arith.constant 1.0e39 : f32\n}\n", ""),  # OverflowError while parsing
    ('builtin.module {\n  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %c: i1) {\n'
     "    %r = scf.if %c -> (i32) {\n      %a = arith.constant 1 : i32\n    } else {\n"
     "      %b = arith.constant 2 : i32\n      scf.yield %b : i32\n    }\n    tt.return\n  }\n}\n",
     "decompose-sparse-tensors"),  # StopIteration in the pass: a branch without its yield
    # issue 28 (a held-out trial), each now a located error:
    ('builtin.module {\n  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24.w4g\u0661\u0662\u0668">>) {\n'
     "    tt.return\n  }\n}\n", ""),  # Arabic-Indic digits taken for 128: output did not parse back
    ("builtin.module {\n  %c = arith.constant \u0667 : i32\n}\n", ""),  # xDSL's lexer read it as 7
    ("builtin.module {\n  %c = arith.constant dense<1.0> : tensor<1048576x1048576xf32>\n}\n", ""),  # MemoryError
    ('builtin.module {\n  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>) {\n'
     '    %x = tt.load %A : !tt.ptr<f16, #tt.sparse<"NV24">>\n    tt.return\n  }\n}\n',
     "decompose-sparse-tensors"),  # AssertionError in the pass: one element of a sparse matrix
    ("builtin.module {\n  tt.func public @k(%p: !tt.ptr<f32>) {\n    tt.return\n  }\n}\n",
     "convert-tt-to-ttg{target=\"sm_\u0669\u0660\"}"),  # copied into ttg.target unchecked
    ("builtin.module {\n  %c = arith.constant 1 : i32\n  : i32\n}\n", ""),  # only " in block definition"
    # stop 32: parsers that dropped a printed type
    ("builtin.module {\n  tt.func public @k() {\n    %p = tt.get_program_id x : f32\n    tt.return\n  }\n}\n",
     ""),  # accepted as an i32
    ("builtin.module {\n  tt.func public @k(%x: tensor<8x4xf32>) {\n"
     "    %r = tt.reduce sum %x {axis = 1 : i32} : tensor<8x4xf32> -> tensor<8xf32>, tensor<8xf32>\n"
     "    tt.return\n  }\n}\n", ""),  # a second result type ignored
    ("builtin.module {\n  tt.func public @k(%x: tensor<8x4xf32>) {\n"
     "    %r = tt.reduce sum %x {axis = 1 : i32} : tensor<8x4xf32> -> tensor<4xf32>\n"
     "    tt.return\n  }\n}\n", ""),  # a result type of the wrong shape taken from the operand
]


@pytest.mark.parametrize("text, pipeline", REGRESSIONS)
def test_fuzz_regressions_are_clean_errors(text, pipeline):
    assert run_cli(text, pipeline, area="regression") == "clean error"


def test_fuzz_regressions_that_are_accepted_round_trip():
    """Inputs a trial found crashing that sparsecc now accepts: through run_cli's oracles (the
    output round-trips, every pass runs on it without an internal error or a hang)."""
    roundtrip = (REPO / "test" / "lit" / "tt" / "roundtrip.mlir").read_text()
    assert run_cli(roundtrip, "decompose-sparse-tensors") == "accepted"  # was an AssertionError
    # stop 32: tt.reduce's parser dropped the printed result type, so a row sum's slice layout
    # after convert-tt-to-ttg did not parse back (the store saw an operand of two types)
    rows = (REPO / "test" / "lit" / "convert-ttg-to-ptx" / "reduce-rows.mlir").read_text()
    assert run_cli(rows, "convert-tt-to-ttg") == "accepted"


def test_a_run_past_the_deadline_is_a_crash(monkeypatch, uncounted):
    """The harness's hang oracle: a pass that does not finish within CLI_TIMEOUT_S fails the run
    (and the CLI's own `except Exception` around passes does not swallow the timeout)."""
    import time
    from dataclasses import dataclass

    import fuzz_targets
    from xdsl.passes import ModulePass

    from sparsecc import passes

    @dataclass(frozen=True)
    class Sleep(ModulePass):
        name = "sleep"

        def apply(self, ctx, op) -> None:
            time.sleep(30)

    monkeypatch.setitem(passes.PASSES, "sleep", lambda: Sleep)
    monkeypatch.setattr(fuzz_targets, "CLI_TIMEOUT_S", 0.5)
    start = time.monotonic()
    with pytest.raises(fuzz_targets.Crash, match="hang: no result after 0.5 s"):
        run_cli("builtin.module {\n}\n", "sleep", area="regression")
    assert time.monotonic() - start < 10


def test_compress_regressions():
    assert run_compress(torch.zeros(0, 16, dtype=torch.float16)) == "clean error"
    assert run_compress(torch.ones(4, 4, dtype=torch.int8)) == "clean error"


def test_quantized_compress_regressions():
    """Range edges a reliability trial found: +-inf, NaN, and tiny values quantized to scale 0."""
    fp16_max = torch.tensor([[65504.0, 0.0, -65504.0, 0.0] * 32], dtype=torch.float16)
    assert run_compress_quant(fp16_max, "w8g128") == "accepted"
    bf16_big = torch.tensor([[3e38, 0.0, -3e38, 0.0] * 32], dtype=torch.bfloat16)
    assert run_compress_quant(bf16_big, "w4g128z") == "accepted"
    tiny = torch.tensor([[0.0, 0.0, -3e-7, 2.4e-7] * 4], dtype=torch.float16)
    assert run_compress_quant(tiny, "w8c") == "accepted"


def test_torch_regressions():
    """A Linear shared by two places was replaced under its first name only; a bare Linear
    model was set as a child named ''; an fp16 meta loaded silently."""
    shared = {"layers": [(32, 32, True)], "tree": ("seq", [0, "relu", 0]), "seed": 0,
              "dtype": torch.float16, "quant": None, "corrupt": (1, "dtype")}
    assert run_torch(shared) == "clean error"
    bare = {**shared, "tree": 0, "corrupt": None, "quant": "w4g16"}
    assert run_torch(bare) == "accepted"
