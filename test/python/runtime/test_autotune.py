"""The autotuner picks the fastest config per key, caches it on disk, skips failing configs."""

from __future__ import annotations

import json

import pytest
import torch

from sparsecc.runtime.autotune import Autotuner, Config, autotune


class FakeKernel:
    """Records launches; its 'time' is a function of BLOCK (set by the fake timer)."""

    arg_names = ["X", "M"]
    __name__ = "fake_kernel"

    def __init__(self, fail_block: int | None = None):
        self.launches: list[dict] = []
        self.fail_block = fail_block

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            if kwargs.get("BLOCK") == self.fail_block:
                raise RuntimeError("does not compile")
            self.launches.append(kwargs)

        return run


def timer_from(costs: dict[int, float], kernel: FakeKernel):
    def timer(fn):
        fn()
        return costs[kernel.launches[-1]["BLOCK"]]

    return timer


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_picks_fastest_and_reuses(cache_dir):
    k = FakeKernel()
    configs = [Config({"BLOCK": b}, num_warps=4) for b in (16, 32, 64)]
    tuned = Autotuner(k, configs, key=["M"], timer=timer_from({16: 3.0, 32: 1.0, 64: 2.0}, k), verbose=False)
    x = torch.randn(4)
    tuned[(1,)](x, 100)
    assert k.launches[-1]["BLOCK"] == 32
    n = len(k.launches)
    tuned[(1,)](x, 100)  # cached: exactly one more launch, with the winner
    assert len(k.launches) == n + 1 and k.launches[-1]["BLOCK"] == 32
    files = list((cache_dir / "autotune").iterdir())
    assert len(files) == 1
    saved = json.loads(files[0].read_text())
    assert list(saved["best"].values())[0]["kwargs"] == {"BLOCK": 32}


def test_new_key_retunes_and_disk_cache_is_read():
    k = FakeKernel()
    configs = [Config({"BLOCK": b}) for b in (16, 32)]
    tuned = Autotuner(k, configs, key=["M"], timer=timer_from({16: 1.0, 32: 2.0}, k), verbose=False)
    tuned[(1,)](torch.randn(2), 7)
    assert k.launches[-1]["BLOCK"] == 16
    # a fresh tuner (new process) with the opposite costs still uses the saved winner
    k2 = FakeKernel()
    tuned2 = Autotuner(k2, configs, key=["M"], timer=timer_from({16: 9.0, 32: 1.0}, k2), verbose=False)
    tuned2[(1,)](torch.randn(2), 7)
    assert [launch["BLOCK"] for launch in k2.launches] == [16]
    tuned2[(1,)](torch.randn(2), 8)  # another key tunes afresh
    assert k2.launches[-1]["BLOCK"] == 32


def test_failing_config_is_skipped(capsys):
    k = FakeKernel(fail_block=16)
    tuned = autotune([Config({"BLOCK": 16}), Config({"BLOCK": 32})], key=["M"],
                     timer=lambda fn: (fn(), 1.0)[1])(k)
    tuned[(1,)](torch.randn(2), 3)
    assert k.launches[-1]["BLOCK"] == 32
    assert "skipped" in capsys.readouterr().err


def test_all_fail_and_bad_key():
    k = FakeKernel(fail_block=16)
    tuned = Autotuner(k, [Config({"BLOCK": 16}), Config({"BLOCK": 16}, num_warps=8)], key=["M"],
                      timer=lambda fn: (fn(), 1.0)[1], verbose=False)
    with pytest.raises(RuntimeError, match="every config failed"):
        tuned[(1,)](torch.randn(2), 3)
    bad = Autotuner(k, [Config({"BLOCK": 32})], key=["Q"], verbose=False)
    with pytest.raises(ValueError, match="not among"):
        bad[(1,)](torch.randn(2), 3)


# ---- the disk file is not trusted (issue 28) -----------------------------------------------

_KERNELS = """
import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def kernel(X, Y, N, {block}: tl.constexpr):
    offs = tl.program_id(0) * {block} + tl.arange(0, {block})
    mask = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * {scale} + 1.0, mask=mask)
"""


def _jit_module(tmp_path, name: str, block: str, scale: float):
    """A module defining a @sparsecc.jit `kernel` (same name in every module, other parameters)."""
    import importlib.util

    path = tmp_path / "src" / name / "kmod.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_KERNELS.format(block=block, scale=scale))
    spec = importlib.util.spec_from_file_location(f"autotune_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kernel


def _tuned_jit(kernel, block: str, costs: list[float]) -> Autotuner:
    """`kernel` autotuned over block sizes 16, 32, 64 on the CPU interpreter; the configs are
    timed in that order, and 'take' `costs` (one problem key per tuner)."""
    times = iter(costs)

    def timer(fn):
        fn()
        return next(times)

    return Autotuner(kernel, [Config({block: b}) for b in (16, 32, 64)], key=["N"], timer=timer, verbose=False)


def _run_and_check(tuned: Autotuner, block: str, scale: float, n: int = 1000) -> None:
    """Launch on random data with a NaN-poisoned output; compare with torch."""
    x = torch.randn(n)
    y = torch.full((n,), float("nan"))
    tuned[lambda meta: (-(-n // meta[block]),)](x, y, n)
    torch.testing.assert_close(y, x * scale + 1.0)


@pytest.fixture()
def quiet_interpreter():
    import warnings

    from sparsecc.frontend.jit import InterpreterFallbackWarning
    from sparsecc.runtime.autotune import AutotuneCacheWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterFallbackWarning)
        warnings.simplefilter("error", AutotuneCacheWarning)  # a test expecting one says so
        yield


def _only_file(cache_dir):
    files = [f for f in (cache_dir / "autotune").iterdir() if f.suffix == ".json"]
    assert len(files) == 1, files
    return files[0]


def test_stored_winner_not_in_config_list_is_retuned(cache_dir):
    from sparsecc.runtime.autotune import AutotuneCacheWarning

    k = FakeKernel()
    configs = [Config({"BLOCK": b}) for b in (16, 32)]
    tuned = Autotuner(k, configs, key=["M"], timer=timer_from({16: 2.0, 32: 1.0}, k), verbose=False)
    tuned[(1,)](torch.randn(2), 5)
    f = _only_file(cache_dir)
    saved = json.loads(f.read_text())
    (key,) = saved["best"]
    saved["best"][key] = {"kwargs": {"BLOCK": 999}, "num_warps": 4, "num_stages": 3}  # forged winner
    f.write_text(json.dumps(saved))
    k2 = FakeKernel()
    fresh = Autotuner(k2, configs, key=["M"], timer=timer_from({16: 2.0, 32: 1.0}, k2), verbose=False)
    with pytest.warns(AutotuneCacheWarning, match="not among"):
        fresh[(1,)](torch.randn(2), 5)
    assert {launch["BLOCK"] for launch in k2.launches} == {16, 32}  # tuned again
    assert k2.launches[-1]["BLOCK"] == 32
    assert json.loads(f.read_text())["best"][key]["kwargs"] == {"BLOCK": 32}  # and the file repaired


def test_empty_cache_dir_means_the_default(monkeypatch, tmp_path):
    from sparsecc.runtime import cache

    monkeypatch.setenv("SPARSECC_CACHE_DIR", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    k = FakeKernel()
    tuned = Autotuner(k, [Config({"BLOCK": b}) for b in (16, 32)], key=["M"],
                      timer=timer_from({16: 1.0, 32: 2.0}, k), verbose=False)
    tuned[(1,)](torch.randn(2), 3)
    assert not (tmp_path / "autotune").exists()
    default = tmp_path / "home" / ".cache" / "sparsecc"
    assert cache.cache_dir() == default  # the compile cache agrees
    assert _only_file(default).is_file()


def test_cache_off_disables_the_autotune_file(monkeypatch, cache_dir):
    monkeypatch.setenv("SPARSECC_CACHE", "0")
    configs = [Config({"BLOCK": b}) for b in (16, 32)]
    for _ in range(2):  # a second tuner (process) tunes again: nothing was stored
        k = FakeKernel()
        Autotuner(k, configs, key=["M"], timer=timer_from({16: 1.0, 32: 2.0}, k), verbose=False)[(1,)](
            torch.randn(2), 3)
        assert {launch["BLOCK"] for launch in k.launches} == {16, 32}
    assert not (cache_dir / "autotune").exists()


def test_same_named_kernels_keep_separate_files(tmp_path, cache_dir, quiet_interpreter):
    a = _tuned_jit(_jit_module(tmp_path, "a", "BLOCK", 2.0), "BLOCK", [3.0, 1.0, 2.0])
    _run_and_check(a, "BLOCK", 2.0)
    b = _tuned_jit(_jit_module(tmp_path, "b", "SIZE", 3.0), "SIZE", [1.0, 3.0, 2.0])
    _run_and_check(b, "SIZE", 3.0)  # was: a's winner {"BLOCK": 32} -> "missing a required argument"
    files = sorted((cache_dir / "autotune").glob("*.json"))
    assert len(files) == 2 and all(f.name.startswith("kernel-") for f in files)


def test_another_kernels_file_is_ignored_with_a_warning(tmp_path, cache_dir, quiet_interpreter):
    from sparsecc.runtime.autotune import AutotuneCacheWarning

    a = _tuned_jit(_jit_module(tmp_path, "a", "BLOCK", 2.0), "BLOCK", [3.0, 1.0, 2.0])
    _run_and_check(a, "BLOCK", 2.0)
    a_file = _only_file(cache_dir)
    b = _tuned_jit(_jit_module(tmp_path, "b", "SIZE", 3.0), "SIZE", [1.0, 3.0, 2.0])
    b_path = cache_dir / "autotune" / (a_file.name.rsplit("-", 1)[0] + "-" + b._ident[1][:16] + ".json")
    assert b._disk_path == str(b_path)
    b_path.write_text(a_file.read_text())  # a's winners where b looks
    with pytest.warns(AutotuneCacheWarning, match="not the autotune file"):
        _run_and_check(b, "SIZE", 3.0)
    assert json.loads(b_path.read_text())["best"]  # replaced by b's own winners


@pytest.mark.parametrize("damage", ["list", "truncated", "not-json", "best-not-a-dict", "config-garbage",
                                    "deep-nesting"])
def test_invalid_file_is_ignored_with_a_warning(cache_dir, damage):
    from sparsecc.runtime.autotune import AutotuneCacheWarning

    k = FakeKernel()
    configs = [Config({"BLOCK": b}) for b in (16, 32)]
    tuned = Autotuner(k, configs, key=["M"], timer=timer_from({16: 1.0, 32: 2.0}, k), verbose=False)
    path = tuned._disk_path
    good = {"kernel": tuned._ident[0], "id": tuned._ident[1], "best": {}}
    text = {"list": "[]", "truncated": json.dumps(good)[:20], "not-json": "\x00\xff",
            "best-not-a-dict": json.dumps({**good, "best": [1, 2]}),
            "config-garbage": json.dumps({**good, "best": {tuned._problem_key((torch.randn(2), 3), {}): [None]}}),
            "deep-nesting": "[" * 100000 + "]" * 100000}[damage]
    (cache_dir / "autotune").mkdir()
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    with pytest.warns(AutotuneCacheWarning):
        tuned[(1,)](torch.randn(2), 3)
    assert {launch["BLOCK"] for launch in k.launches} == {16, 32} and k.launches[-1]["BLOCK"] == 16


def test_cache_dir_that_is_a_file_is_a_warning(monkeypatch, tmp_path):
    from sparsecc.runtime.autotune import AutotuneCacheWarning

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(blocker))
    k = FakeKernel()
    tuned = Autotuner(k, [Config({"BLOCK": b}) for b in (16, 32)], key=["M"],
                      timer=timer_from({16: 2.0, 32: 1.0}, k), verbose=False)
    with pytest.warns(AutotuneCacheWarning, match="cannot"):  # NotADirectoryError before
        tuned[(1,)](torch.randn(2), 3)
    assert k.launches[-1]["BLOCK"] == 32 and blocker.read_text() == "not a folder"
    tuned[(1,)](torch.randn(2), 3)  # remembered in memory
    assert k.launches[-1]["BLOCK"] == 32 and len(k.launches) == 4  # 2 timed + 2 launches


def test_unwritable_cache_dir_is_a_warning(monkeypatch, cache_dir):
    """As root a 0555 folder is still writable, so the refusal is simulated; the real one runs
    as a user."""
    import os
    import tempfile

    from sparsecc.runtime.autotune import AutotuneCacheWarning

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    if os.geteuid() == 0:
        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    else:
        (cache_dir / "autotune").mkdir()
        os.chmod(cache_dir / "autotune", 0o555)
    k = FakeKernel()
    tuned = Autotuner(k, [Config({"BLOCK": b}) for b in (16, 32)], key=["M"],
                      timer=timer_from({16: 2.0, 32: 1.0}, k), verbose=False)
    with pytest.warns(AutotuneCacheWarning, match="Permission denied"):
        tuned[(1,)](torch.randn(2), 3)
    assert k.launches[-1]["BLOCK"] == 32
    assert [p for p in cache_dir.rglob("*") if p.is_file()] == []  # no temporary file left behind


def test_unreadable_cache_file_is_a_warning(monkeypatch, cache_dir):
    import builtins

    from sparsecc.runtime.autotune import AutotuneCacheWarning

    k = FakeKernel()
    tuned = Autotuner(k, [Config({"BLOCK": b}) for b in (16, 32)], key=["M"],
                      timer=timer_from({16: 2.0, 32: 1.0}, k), verbose=False)
    real_open = builtins.open

    def guarded(file, *args, **kwargs):
        if str(file) == tuned._disk_path and (not args or "r" in args[0]):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    with pytest.warns(AutotuneCacheWarning, match="cannot read"):
        tuned[(1,)](torch.randn(2), 3)
    assert k.launches[-1]["BLOCK"] == 32
