"""The host target under AddressSanitizer and UndefinedBehaviorSanitizer, and its build cache.

Every zoo model's C is built once with -fsanitize=address,undefined -fno-sanitize-recover=all into a standalone
runner (targets/host.py build_executable: a heap arena of exactly the planned size, so a byte read or written past
it is a report) and run on inputs that reach the int8 extremes; any report fails the run, and the outputs must equal
the reference interpreter byte for byte. Then the cache: bounded, least recently used out first, its location set
by TINYAOT_CACHE_DIR, and safe when processes build the same entry at once.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import random_int8

from tinyaot.errors import TinyAOTError
from tinyaot.targets import host
from tinyaot.targets.base import ModelSources

N_INPUTS = 3


def _sanitizers_or_skip() -> None:
    problem = host.sanitizer_problem()
    if problem is not None:
        pytest.skip(f"no sanitizer support on this machine: {problem}")


def _zoo_model(entry):
    """Untrained weights (seeded) are as good as trained ones for memory safety and bit-exactness, and skip the
    training; the calibration is the zoo's synthetic data, so activations use their int8 ranges."""
    torch = pytest.importorskip("torch")
    from zoo import synthetic_data

    import tinyaot

    torch.manual_seed(0)
    model = entry.build().eval()
    x, _ = synthetic_data(entry, 64, seed=1)
    return tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x, name=entry.name)


def _inputs(cm, seed: int) -> np.ndarray:
    """Random int8, plus the all -128 and all 127 inputs (the extremes exercise saturation and clamps)."""
    shape = (N_INPUTS,) + cm.input_shape[1:]
    x = random_int8(shape, seed)
    x[0], x[1] = -128, 127
    return x


try:
    from zoo import ZOO
except ImportError:  # no torch: the zoo tests below are skipped as an empty parameter set
    ZOO = []


ONE_IO = [e for e in ZOO if e.inputs == 1 and e.outputs == 1]  # several: tests/test_multi_io.py runs them sanitized


@pytest.mark.host
@pytest.mark.parametrize("entry", ONE_IO, ids=[e.name for e in ONE_IO])
def test_zoo_model_is_clean_under_asan_and_ubsan(entry):
    _sanitizers_or_skip()
    cm = _zoo_model(entry)
    target = host.SanitizedHostTarget()
    exe = target.build(ModelSources.of(cm))
    x = _inputs(cm, seed=len(entry.name))
    got = target.run(exe, x).outputs
    want = cm.run(x, engine="reference").reshape(len(x), -1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.host
def test_the_sanitized_runner_does_report_an_out_of_bounds_write(tmp_path):
    """The harness can fail: a model whose C writes one byte past the arena is caught by ASan (a test that could
    only pass would prove nothing)."""
    _sanitizers_or_skip()
    pytest.importorskip("torch")
    cm = _zoo_model(next(e for e in ZOO if e.name == "autoencoder"))
    files = dict(cm.c_sources.files)
    guard = f"return {cm.name.upper()}_ERROR_NOT_INITIALIZED;\n    }}\n"  # the start of instance_invoke
    assert files[f"{cm.name}.c"].count(guard) == 1, "the generated invoke changed; adapt the injected bug"
    files[f"{cm.name}.c"] = files[f"{cm.name}.c"].replace(
        guard, f"{guard}    ((volatile uint8_t *)arena)[{cm.name.upper()}_ARENA_SIZE] = 1;\n")
    exe = host.build_executable(files, cm.name, host.SANITIZE_CFLAGS)
    with pytest.raises(TinyAOTError, match="heap-buffer-overflow"):
        host.run_executable(exe, _inputs(cm, 0).reshape(N_INPUTS, -1), cm.output_size, env=host.SANITIZE_ENV)


# ---- the build cache -----------------------------------------------------------------------------------------


def _sources(i: int) -> dict[str, str]:
    """A tiny library that is a different cache entry for every i."""
    return {"m.c": f"int m_value(void) {{ return {i}; }}\n", "m.h": "int m_value(void);\n"}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYAOT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "host"


@pytest.mark.host
def test_cache_location_comes_from_tinyaot_cache_dir(cache_dir, monkeypatch):
    lib = host.build_shared_library(_sources(1), "m")
    assert lib.parent.parent == cache_dir and lib.is_file()
    assert host.build_shared_library(_sources(1), "m") == lib  # a hit: the same entry, no second build
    assert len(list(cache_dir.iterdir())) == 1
    monkeypatch.delenv("TINYAOT_CACHE_DIR")
    monkeypatch.delenv("TINYAOT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_dir.parent.parent / "xdg"))
    assert host.cache_root() == cache_dir.parent.parent / "xdg" / "tinyaot"  # default: the user's cache dir


@pytest.mark.host
def test_cache_evicts_the_least_recently_used_beyond_its_bounds(cache_dir):
    libs = [host.build_shared_library(_sources(i), "m") for i in range(5)]
    now = time.time()
    for age, lib in zip([500, 400, 300, 200, 100], libs):  # entry 0 is the oldest ...
        os.utime(lib.parent, (now - age, now - age))
    os.utime(libs[0].parent, (now - 50, now - 50))  # ... until it is used again: now entry 1 is
    removed = host.evict(cache_dir, max_entries=3, grace_seconds=10)
    assert sorted(removed) == sorted([libs[1].parent.name, libs[2].parent.name])
    assert [lib.exists() for lib in libs] == [True, False, False, True, True]
    size = sum(f.stat().st_size for f in libs[0].parent.iterdir())
    assert host.evict(cache_dir, max_bytes=2 * size + size // 2, grace_seconds=10) == [libs[3].parent.name]
    assert host.evict(cache_dir, max_entries=0, grace_seconds=1000) == []  # recently used: never evicted
    crashed, building = cache_dir / ".tmp-crashed", cache_dir / ".tmp-building"  # builds in progress
    crashed.mkdir(), building.mkdir()
    os.utime(crashed, (now - 7200, now - 7200))
    host.evict(cache_dir)
    assert not crashed.exists() and building.exists()  # an hour old: a build that died
    assert host.CACHE_MAX_ENTRIES == 200 and host.CACHE_MAX_BYTES == 256 * 2**20


@pytest.mark.host
def test_every_new_build_keeps_the_cache_bounded(cache_dir, monkeypatch):
    monkeypatch.setattr(host, "CACHE_MAX_ENTRIES", 2)
    monkeypatch.setattr(host, "CACHE_GRACE_SECONDS", 0)
    for i in range(4):
        host.build_shared_library(_sources(i), "m")
        time.sleep(0.01)  # distinct modification times
    names = sorted(p.name for p in cache_dir.iterdir())
    assert len(names) == 2 and not any(n.startswith(".tmp") for n in names)


_RACE = """
import sys
from tinyaot.targets import host
lib = host.build_shared_library({"m.c": "int m_value(void) { return 42; }\\n"}, "m")
import ctypes
print(lib, ctypes.CDLL(str(lib)).m_value())
"""


@pytest.mark.host
def test_concurrent_processes_building_the_same_entry_agree(cache_dir):
    """Four processes build the same library at once: each gets a complete library at the same path, and no
    temporary directory is left behind (builds are renamed into place in one step)."""
    env = {**os.environ, "TINYAOT_CACHE_DIR": str(cache_dir.parent)}
    procs = [subprocess.Popen([sys.executable, "-c", _RACE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    paths = {out.split()[0] for out, _ in outs}
    assert len(paths) == 1 and all(out.split()[1] == "42" for out, _ in outs)
    assert [p.name for p in cache_dir.iterdir()] == [Path(next(iter(paths))).parent.name]
    assert [p.name.rsplit("-", 1)[0] for p in (cache_dir.parent / "objects").iterdir()] == ["m"]  # one object


_SHARED_KERNEL = "int k_twice(int x) { return 2 * x; }\n"


def _uses_kernel(i: int) -> dict[str, str]:
    """A model i that links the shared kernel file k.c (as every model links the same kernel files)."""
    return {f"m{i}.c": f'#include "k.h"\nint m{i}_value(void) {{ return k_twice({i}); }}\n',
            "k.h": "int k_twice(int x);\n", "k.c": f'#include "k.h"\n{_SHARED_KERNEL}'}


@pytest.mark.host
def test_a_kernel_file_is_compiled_once_for_every_model_that_links_it(cache_dir):
    import ctypes

    libs = [host.build_shared_library(_uses_kernel(i), f"m{i}") for i in range(3)]
    assert [getattr(ctypes.CDLL(str(lib)), f"m{i}_value")() for i, lib in enumerate(libs)] == [0, 2, 4]
    objects = sorted(p.name.rsplit("-", 1)[0] for p in (cache_dir.parent / "objects").iterdir())
    assert objects == ["k", "m0", "m1", "m2"]  # k.c once, each model's own file once
    changed = {**_uses_kernel(3), "k.h": "int k_twice(int x); /* another header: another object */\n"}
    host.build_shared_library(changed, "m3")
    assert sorted(p.name.rsplit("-", 1)[0] for p in (cache_dir.parent / "objects").iterdir()).count("k") == 2


@pytest.mark.host
def test_an_evicted_runner_is_built_again_when_it_runs(cache_dir):
    """A runner built long before its run (a module fixture) may be evicted by another process meanwhile."""
    from test_fuzz import seed_models
    from tflite_builder import build

    import tinyaot

    cm = tinyaot.compile(build(seed_models()["fc"]), name="evicted")
    target = host.SanitizedHostTarget(extra_flags=(), env={})
    runner = target.build(ModelSources.of(cm))
    assert host.evict(cache_dir, max_entries=0, grace_seconds=0) == [runner.path.parent.name]
    assert not runner.path.exists()
    x = random_int8((2, cm.input_size), 5)
    np.testing.assert_array_equal(target.run(runner, x).outputs,
                                  cm.run(x.reshape((2,) + cm.input_shape)).reshape(2, -1))


def test_an_unwritable_cache_dir_is_a_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TINYAOT_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(TinyAOTError, match="cannot create the host build cache.*set TINYAOT_CACHE_DIR"):
        host.build_shared_library(_sources(0), "m")


def test_every_host_error_is_a_tinyaot_error():
    assert issubclass(host.HostCompilerMissing, TinyAOTError)


@pytest.mark.host
def test_the_host_target_runs_a_build_with_any_arena():
    """HostTarget: one build, runs with the static arena or a caller's; the engine "host" is the same."""
    from test_fuzz import seed_models
    from tflite_builder import build

    import tinyaot
    from tinyaot.errors import ArenaTooSmallError

    cm = tinyaot.compile(build(seed_models()["fc"]), name="target")
    target = host.HostTarget()
    lib = target.build(ModelSources.of(cm))
    x = random_int8((2, cm.input_size), 3)
    want = cm.run(x.reshape((2,) + cm.input_shape), engine="host").reshape(2, -1)
    result = target.run(lib, x)
    np.testing.assert_array_equal(result.outputs, want)
    assert result.instructions is None and result.stack_bytes is None and result.sizes is None
    np.testing.assert_array_equal(target.run(lib, x, arena_bytes=cm.arena_bytes).outputs, want)
    with pytest.raises(ArenaTooSmallError):
        target.run(lib, x, arena_bytes=cm.arena_bytes - 1)


@pytest.mark.host
def test_host_model_checks_the_row_size_it_copies():
    """HostModel.run copies input_size bytes per row: rows of another size were read past their end before."""
    from test_fuzz import seed_models
    from tflite_builder import build

    import tinyaot

    cm = tinyaot.compile(build(seed_models()["fc"]), name="rows")
    lib = host.build_shared_library(cm.c_sources.files, cm.name)
    hm = host.HostModel(lib, cm.name, cm.input_size, cm.output_size, cm.arena_bytes)
    hm.init()
    x = random_int8((3, cm.input_size), 1)
    np.testing.assert_array_equal(hm.run(x), cm.run(x.reshape((3,) + cm.input_shape)).reshape(3, -1))
    assert hm.run(x[:0]).shape == (0, cm.output_size)
    for bad in (x[0], x[:, :5], x.reshape(-1)):
        with pytest.raises(TinyAOTError, match=f"rows of {cm.input_size} bytes"):
            hm.run(bad)
