"""The C launcher (lib/launch.c via runtime/native.py), without a GPU: a ctypes callback
stands in for libcuda's cuLaunchKernel and reads back what the launcher packed. Also the CMake
build of the same source (CMakeLists.txt), loaded through SPARSECC_NATIVE_LIB."""

from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparsecc.runtime import driver, native

REPO = Path(native.__file__).resolve().parents[2]

CU_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
SLOT = {"Q": 8, "q": 8, "i": 8, "I": 8, "f": 8, "t": 128}


@pytest.fixture
def module():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine")
    native.reset()
    m = native.load()
    assert m is not None, native.why_not()
    yield m
    native.reset()


class FakeDriver:
    """A cuLaunchKernel stand-in recording each call with the bytes of every param slot."""

    def __init__(self, kinds: str, rc: int = 0):
        self.calls: list[tuple] = []
        self.rc = rc

        def fake(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            slots = [ctypes.string_at(params[i], SLOT[k]) for i, k in enumerate(kinds)]
            addresses = [params[i] for i in range(len(kinds))]
            self.calls.append(((function, gx, gy, gz, bx, by, bz, smem, stream, extra), slots, addresses))
            return self.rc

        self.fn = CU_LAUNCH(fake)  # keep the callback alive with the object
        self.address = ctypes.cast(self.fn, ctypes.c_void_p).value


def test_launcher_packs_every_kind_and_passes_the_launch_configuration(module):
    kinds = "Qqifti"
    cu = FakeDriver(kinds)
    launch = module.Launcher(cu.address, 0xABC0, (288, 1, 1), 200_000, kinds, None).launch
    tmap = bytes(range(128))
    launch(132, 2, 3, [2**48 + 16, -(2**40), -7, 0.1, tmap, 2**31 - 1], 0x5000)
    (config, slots, addresses), = cu.calls
    assert config == (0xABC0, 132, 2, 3, 288, 1, 1, 200_000, 0x5000, None)
    assert struct.unpack("<Q", slots[0])[0] == 2**48 + 16
    assert struct.unpack("<q", slots[1])[0] == -(2**40)
    assert struct.unpack("<i", slots[2][:4])[0] == -7
    assert struct.unpack("<f", slots[3][:4])[0] == pytest.approx(0.1, rel=1e-7)
    assert slots[4] == tmap and addresses[4] % 64 == 0  # a tensor map sits 64-byte aligned
    assert struct.unpack("<i", slots[5][:4])[0] == 2**31 - 1
    launch(1, 1, 1, (5, 6, 7, 2.0, tmap[::-1], 0), 0)  # a tuple works as well; slots are rewritten
    assert struct.unpack("<Q", cu.calls[-1][1][0])[0] == 5 and cu.calls[-1][1][4] == tmap[::-1]
    assert cu.calls[-1][0][8] is None  # stream 0 is the NULL stream


@pytest.mark.parametrize("values, error, match", [
    ([1, 2**31, 1.0, 1], OverflowError, r"argument #1 = 2147483648 does not fit in i32"),
    ([1, 2, "x", 1], TypeError, r"argument #2 \(kind 'f'\) cannot be packed from 'x'"),
    ([-1, 2, 1.0, 1], OverflowError, r"argument #0 \(kind 'Q'\)"),
    ([1, 2, 1.0, 2**32], OverflowError, r"argument #3 = 4294967296 does not fit in u32"),
    ([1, 2], TypeError, r"takes 4 parameters, got 2 values"),
])
def test_launcher_rejects_values_that_do_not_fit_without_launching(module, values, error, match):
    cu = FakeDriver("QifI")
    launch = module.Launcher(cu.address, 1, (32, 1, 1), 0, "QifI", None).launch
    with pytest.raises(error, match=match):
        launch(1, 1, 1, values, 0)
    with pytest.raises(OverflowError):
        launch(-1, 1, 1, [1, 2, 1.0, 1], 0)
    assert cu.calls == []


def test_launcher_rejects_a_short_tensor_map_and_unknown_kinds(module):
    cu = FakeDriver("t")
    with pytest.raises(TypeError, match="argument #0 must be a 128-byte tensor map"):
        module.Launcher(cu.address, 1, (32, 1, 1), 0, "t", None).launch(1, 1, 1, [b"\0" * 64], 0)
    with pytest.raises(ValueError, match="unknown param kind 'x' at 1"):
        module.Launcher(cu.address, 1, (32, 1, 1), 0, "Qx", None)
    assert cu.calls == []


def test_a_driver_error_goes_through_on_error(module):
    cu = FakeDriver("i", rc=700)
    seen = []

    def on_error(rc, gx, gy, gz):
        seen.append((rc, gx, gy, gz))
        raise driver.CudaError(f"kernel 'k': cuLaunchKernel failed with {rc}", rc)

    with pytest.raises(driver.CudaError, match="kernel 'k': cuLaunchKernel failed with 700"):
        module.Launcher(cu.address, 1, (32, 1, 1), 0, "i", on_error).launch(4, 5, 6, [1], 0)
    assert seen == [(700, 4, 5, 6)]
    with pytest.raises(RuntimeError, match="CUDA error 700"):  # no handler: still an error
        module.Launcher(cu.address, 1, (32, 1, 1), 0, "i", None).launch(1, 1, 1, [1], 0)


def test_driver_maps_its_param_kinds_onto_the_c_launcher(module):
    kinds = ["ptr", "i64", "i32", "u32", "f32", "tmap", "u64"]
    cu = FakeDriver("QqiIftQ")
    go = driver._native_launcher(cu.fn, 77, (128, 1, 1), 1024, kinds, lambda *a: None)
    go(2, 1, 1, [16, -1, -2, 3, 0.5, b"\1" * 128, 2**64 - 1], 9)
    (config, slots, _), = cu.calls
    assert config[:9] == (77, 2, 1, 1, 128, 1, 1, 1024, 9)
    assert struct.unpack("<Q", slots[6])[0] == 2**64 - 1 and slots[5] == b"\1" * 128


def test_the_c_launcher_is_faster_than_pack_into_plus_ctypes(module):
    """Why it exists: the same launch (9 params, a no-op 'driver' returning 0) through the C
    launcher and through the former struct.pack_into + ctypes path."""
    libc = ctypes.CDLL(None)
    noop = libc.abs  # abs(NULL) == 0: a C function that accepts the call and reports success
    address = ctypes.cast(noop, ctypes.c_void_p).value
    kinds = "QQQiiiiii"
    c_launch = module.Launcher(address, 0, (256, 1, 1), 0, kinds, None).launch
    typed = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7,
                             *[ctypes.c_void_p] * 3)(address)
    buf = ctypes.create_string_buffer(72)
    pack_into = struct.Struct("<QQQ" + "i4x" * 6).pack_into

    def by_ctypes(gx, gy, gz, values, stream):
        pack_into(buf, 0, *values)
        if typed(0, gx, gy, gz, 256, 1, 1, 0, stream, ctypes.addressof(buf), None):
            raise RuntimeError

    values = [2**40, 2**41, 2**42, 1, 2, 3, 4, 5, 6]

    def per_call(fn, n=20_000):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(n):
                fn(8, 1, 1, values, 0)
            best = min(best, (time.perf_counter() - t0) / n)
        return best * 1e6

    c_us, ct_us = per_call(c_launch), per_call(by_ctypes)
    print(f"\nC launcher {c_us:.2f} µs, pack_into + ctypes {ct_us:.2f} µs per launch")
    assert c_us < 0.5 * ct_us


def test_switch_and_build_failures_fall_back_to_ctypes(monkeypatch, tmp_path):
    native.reset()
    monkeypatch.setenv("SPARSECC_NATIVE_LAUNCH", "0")
    assert native.load() is None and native.why_not() == "SPARSECC_NATIVE_LAUNCH=0"
    assert driver._native_launcher(FakeDriver("i").fn, 1, (32, 1, 1), 0, ["i32"], print) is None
    native.reset()
    monkeypatch.delenv("SPARSECC_NATIVE_LAUNCH")
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))  # nothing built there yet
    monkeypatch.setenv("CC", "false")  # a compiler that always fails
    assert native.load() is None and "building launch.c failed" in native.why_not()
    assert not any(tmp_path.rglob("*.so"))  # nothing half-written left behind
    native.reset()


def test_cmake_builds_the_launcher_and_native_loads_it(monkeypatch, tmp_path):
    """`cmake -S . -B build && cmake --build build` makes a module that SPARSECC_NATIVE_LIB loads
    instead of building one, and it packs and launches like the first-use build."""
    if shutil.which("cmake") is None:
        pytest.skip("no cmake on this machine")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine")
    build = tmp_path / "build"
    configure = ["cmake", "-S", str(REPO), "-B", str(build), f"-DPython3_EXECUTABLE={sys.executable}"]
    for command in (configure, ["cmake", "--build", str(build)]):
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    library, = build.glob("_sparsecc_launch*.so")
    monkeypatch.setenv(native.LIBRARY_ENV, str(library))
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path / "cache"))  # must stay unbuilt
    monkeypatch.setenv("CC", "false")  # a first-use build would fail
    native.reset()
    try:
        module = native.load()
        assert module is not None, native.why_not()
        assert Path(module.__file__) == library
        cu = FakeDriver("Qi")
        module.Launcher(cu.address, 5, (64, 1, 1), 0, "Qi", None).launch(3, 1, 1, [2**40, -9], 0)
        (config, slots, _), = cu.calls
        assert config[:8] == (5, 3, 1, 1, 64, 1, 1, 0)
        assert struct.unpack("<Q", slots[0])[0] == 2**40 and struct.unpack("<i", slots[1][:4])[0] == -9
        assert not (tmp_path / "cache").exists()
    finally:
        native.reset()


def test_a_prebuilt_library_that_does_not_load_falls_back_with_a_reason(monkeypatch, tmp_path):
    missing = tmp_path / "_sparsecc_launch.so"
    monkeypatch.setenv(native.LIBRARY_ENV, str(missing))
    native.reset()
    try:
        assert native.load() is None
        assert native.why_not() == f"{native.LIBRARY_ENV}={missing}: OSError: no such file: {missing}"
    finally:
        native.reset()


def test_the_launcher_source_is_found_in_the_checkout():
    assert native.source() == REPO / "lib" / "launch.c"
    assert "PyInit__sparsecc_launch" in native.source().read_text()
