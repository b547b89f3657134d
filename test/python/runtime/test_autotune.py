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
    assert list(saved.values())[0]["kwargs"] == {"BLOCK": 32}


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
