"""Shared fixtures: where the test data lives, which toolchains exist, small model builders.

Test markers (declared in pyproject.toml) say which external tools a test needs; each test carries the one for the
most it needs, and the hook below turns a missing tool into a skip whose reason is the install command:

- ``@pytest.mark.host``: the host C compiler (gcc, or $CC): builds or runs the generated C on this machine.
- ``@pytest.mark.arm``: arm-none-eabi-gcc with newlib, no emulator: Cortex-M33 code and RAM sizes, Pico 2 builds.
- ``@pytest.mark.m33``: arm-none-eabi-gcc and qemu-system-arm: runs on the emulated Cortex-M33.

The markers are levels, each including the ones before it (an m33 test may also build for the host and measure
sizes): ``pytest -m "not m33"`` runs no QEMU, ``-m "not arm and not m33"`` no cross compiler, and
``-m "not host and not arm and not m33"`` no C compiler at all. The autouse fixture ``_tools_follow_markers`` holds
every test to its marker: running a tool its level does not include fails the test, whether the test, tinyaot or a
child process (the CLI, cmake) runs it.
"""
from __future__ import annotations

import importlib.util
import os
import random
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import zlib
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TINYAOT_SHARED", REPO.parent / "shared"))

# ---- which tools this machine has -------------------------------------------------------------------------------

ARM_GCC_ENV, QEMU_ENV = "TINYAOT_ARM_GCC", "TINYAOT_QEMU"  # the overrides tinyaot's M33 target honours
_APT = "apt-get install --no-install-recommends"
_INSTALL = {
    "host": f"{_APT} gcc (or set CC)",
    "arm": f"{_APT} gcc gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "m33": f"{_APT} gcc gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm",
}
LEVELS = ("host", "arm", "m33")  # each marker allows the tools of the ones before it


@cache
def have_host_cc() -> bool:
    cc = shlex.split(os.environ.get("CC", "gcc")) or ["gcc"]
    return shutil.which(cc[0]) is not None


@cache
def have_arm_gcc() -> bool:
    """arm-none-eabi-gcc (or $TINYAOT_ARM_GCC) that can link for the Cortex-M33 (newlib installed)."""
    gcc = shutil.which(os.environ.get(ARM_GCC_ENV) or "arm-none-eabi-gcc")
    if gcc is None:
        return False
    probe = subprocess.run([gcc, "-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16",
                            "-print-file-name=nosys.specs"], capture_output=True, text=True, check=False)
    return probe.returncode == 0 and Path(probe.stdout.strip()).is_file()


@cache
def have_m33() -> bool:
    return have_arm_gcc() and shutil.which(os.environ.get(QEMU_ENV) or "qemu-system-arm") is not None


def _missing_tools() -> dict[str, list[str]]:
    """For each marker, what of its tools (its own and the ones before it) this machine lacks."""
    host = [] if have_host_cc() else [os.environ.get("CC", "gcc")]
    arm = host + ([] if have_arm_gcc() else ["arm-none-eabi-gcc with newlib"])
    qemu = shutil.which(os.environ.get(QEMU_ENV) or "qemu-system-arm") is not None
    return {"host": host, "arm": arm, "m33": arm + ([] if qemu else ["qemu-system-arm"])}


# Probed now, before any test runs (and before the guard below could take a probe for a violation).
_MISSING = _missing_tools()

# The markers under their older names (they were skipif objects; other test files still import them).
needs_host = pytest.mark.host
needs_m33 = pytest.mark.m33


def _level(item) -> int:
    """-1 for a test without a tool marker, else the index in LEVELS of its highest one."""
    return max((i for i, name in enumerate(LEVELS) if item.get_closest_marker(name) is not None), default=-1)


def pytest_collection_modifyitems(config, items):
    for item in items:
        level = _level(item)
        missing = _MISSING[LEVELS[level]] if level >= 0 else []
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"{' and '.join(missing)} not found (@pytest.mark."
                                                    f"{LEVELS[level]}): {_INSTALL[LEVELS[level]]}"))


# ---- holding each test to its marker ----------------------------------------------------------------------------

# What each tool needs, by the name of the program run (argv[0]'s basename).
_QEMU = re.compile(r"qemu-system-")
_ARM = re.compile(r"arm-none-eabi-")
_HOST_CC = re.compile(r"^(?:[\w.]+-)*(?:gcc|cc|clang|g\+\+|c\+\+)(?:-[\d.]+)?$")
_NEEDS = {"m33": "QEMU", "arm": "arm-none-eabi-gcc", "host": "the host C compiler"}
_ARM_TOOLS = ("gcc", "g++", "size", "objdump", "objcopy", "nm", "readelf", "as", "ld")


class MarkerMissing(RuntimeError):
    """A test ran a tool that its marker does not allow."""


def _needed_level(argv) -> str | None:
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
    argv = [os.fsdecode(a) for a in argv]
    if not argv:
        return None
    words = argv[0].split() if len(argv) == 1 else argv  # a shell=True command line: its first word
    prog = os.path.basename(words[0]) if words else ""
    if _QEMU.match(prog):
        return "m33"
    if _ARM.match(prog):
        return "arm"
    cc = shlex.split(os.environ.get("CC", "")) or ["gcc"]
    if _HOST_CC.match(prog) or prog in (os.path.basename(cc[0]), "tinyaot-guard-cc"):
        if "-Wl,-t" in words:  # ctypes.util.find_library asking gcc where a library is: no build
            return None
        return "host"
    return None


def _message(level: str, what: str) -> str:
    also = " (or m33 if it also runs QEMU)" if level == "arm" else ""
    return f"this test runs {_NEEDS[level]}: mark it @pytest.mark.{level}{also} ({what})"


_GUARD_SH = """#!/bin/sh
# Put first on PATH by tests/conftest.py for a test whose marker does not allow this tool.
echo "{level} $(basename "$0") $*" >> "$TINYAOT_TEST_GUARD_LOG"
echo "tinyaot tests: {message}" >&2
exit 97
"""


class _Guard:
    """What the running test may run: its level (None between tests: anything), and what it ran that it may not."""

    level: int | None = None
    dirs: dict[int, Path] = {}
    log: Path | None = None
    violations: list[str] = []
    env: pytest.MonkeyPatch | None = None


def _guard_dirs(root: Path) -> dict[int, Path]:
    """For each level (-1 = no marker), a directory of stand-ins for the tools it does not allow."""
    dirs = {}
    for level in range(-1, len(LEVELS)):
        d = root / f"level{level}"
        d.mkdir(parents=True, exist_ok=True)
        tools = []
        if level < LEVELS.index("m33"):
            tools.append(("m33", "qemu-system-arm"))
        if level < LEVELS.index("arm"):
            tools += [("arm", f"arm-none-eabi-{t}") for t in _ARM_TOOLS]
        if level < LEVELS.index("host"):
            tools.append(("host", "tinyaot-guard-cc"))  # becomes $CC: PATH's gcc is left alone (ctypes asks it)
        for need, name in tools:
            script = d / name
            script.write_text(_GUARD_SH.format(level=need, message=_message(need, name)))
            script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        dirs[level] = d
    (root / "empty-cache").mkdir(exist_ok=True)
    return dirs


_REAL_POPEN = subprocess.Popen


class _GuardedPopen(_REAL_POPEN):
    """subprocess.Popen (and so run, check_output, ...) that refuses a tool the running test may not run."""

    def __init__(self, args, *a, **kw):
        level = _Guard.level
        need = None if level is None else _needed_level(args)
        if need is not None and LEVELS.index(need) > level:
            what = " ".join(map(os.fsdecode, args)) if isinstance(args, (list, tuple)) else os.fsdecode(args)
            what = what.replace(f"{_Guard.dirs[level]}{os.sep}", "").replace("tinyaot-guard-cc", "$CC")[:200]
            _Guard.violations.append(_message(need, what))
            raise MarkerMissing(_Guard.violations[-1])
        super().__init__(args, *a, **kw)


def pytest_configure(config):
    _Guard.dirs = _guard_dirs(Path(tempfile.mkdtemp(prefix="tinyaot-tool-guards-")))
    subprocess.Popen = _GuardedPopen


def pytest_unconfigure(config):
    subprocess.Popen = _REAL_POPEN
    if _Guard.dirs:
        shutil.rmtree(next(iter(_Guard.dirs.values())).parent, ignore_errors=True)


def _start_guard(item) -> None:
    """From the test's setup (its module fixtures' too) to its teardown: the tools its marker lacks are refused
    in this process, and replaced for child processes by stand-ins first on PATH (and in $CC, $TINYAOT_ARM_GCC,
    $TINYAOT_QEMU) that log and fail; a test without a marker gets an empty host build cache, so that a host
    build is seen even when it is cached."""
    level = _level(item)
    _Guard.violations = []
    if level == len(LEVELS) - 1:
        return
    guards = _Guard.dirs[level]
    _Guard.level, _Guard.log, _Guard.env = level, guards.parent / f"log-{os.getpid()}", pytest.MonkeyPatch()
    _Guard.log.unlink(missing_ok=True)
    env = _Guard.env
    env.setenv("TINYAOT_TEST_GUARD_LOG", str(_Guard.log))
    env.setenv("PATH", f"{guards}{os.pathsep}{os.environ.get('PATH', '')}")
    if level < LEVELS.index("m33"):
        env.setenv(QEMU_ENV, str(guards / "qemu-system-arm"))
    if level < LEVELS.index("arm"):
        env.setenv(ARM_GCC_ENV, str(guards / "arm-none-eabi-gcc"))
    if level < LEVELS.index("host"):
        env.setenv("CC", str(guards / "tinyaot-guard-cc"))
        env.setenv("TINYAOT_CACHE_DIR", str(guards.parent / "empty-cache"))


def _take_violations() -> list[str]:
    if _Guard.log is not None and _Guard.log.exists():
        for line in _Guard.log.read_text().splitlines():
            need, _, what = line.partition(" ")
            _Guard.violations.append(_message(need, f"in a child process: {what.replace('tinyaot-guard-cc', '$CC')}"
                                                    [:260]))
        _Guard.log.unlink()
    found, _Guard.violations = list(dict.fromkeys(_Guard.violations)), []
    return found


def _check_phase(item, when: str):
    """Wraps a test's setup, call or teardown: a tool run against its marker fails the phase (when nothing
    else did: a test may have caught the error, or tinyaot may have taken a failed tool for a missing one)."""
    try:
        result = yield
    except BaseException:
        if found := _take_violations():
            item.add_report_section(when, "tools run against the marker", "\n".join(found))
        raise
    if found := _take_violations():
        pytest.fail("\n".join(found), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    _start_guard(item)
    return (yield from _check_phase(item, "setup"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    return (yield from _check_phase(item, "call"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield from _check_phase(item, "teardown"))
    finally:
        if _Guard.env is not None:
            _Guard.env.undo()
        _Guard.level, _Guard.log, _Guard.env = None, None, None


# ---- the same draws on every machine, in every order ----------------------------------------------------------

_HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _seed_of(nodeid: str) -> int:
    return zlib.crc32(nodeid.encode())


@pytest.fixture(autouse=True)
def _seeded_global_rngs(request):
    """Seed the global generators (torch, NumPy's legacy one, `random`) from the test's id before it runs: a test
    that draws without its own seed gets the same draws alone, in the whole suite, on any pytest-xdist worker and on
    any machine, instead of whatever the tests before it left behind."""
    seed = _seed_of(request.node.nodeid)
    random.seed(seed)
    np.random.seed(seed)
    if _HAVE_TORCH:  # imported for the seed even by a test that imports torch only in its body
        import torch

        torch.manual_seed(seed)
    yield


# Property tests (hypothesis): on CI the examples are derived from each test, not drawn anew, so CI runs what a
# developer can rerun; locally they keep exploring new examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def shared_file(rel: str) -> Path:
    path = SHARED / rel
    if not path.exists():
        pytest.skip(f"test data {rel} not found under {SHARED} (set TINYAOT_SHARED to the shared/ folder)")
    return path


def make_mlp(sizes: list[int], relu: bool, seed: int, flatten_from: tuple[int, ...] | None = None):
    """An nn.Sequential MLP with the given layer sizes, optionally ReLU between layers."""
    import torch
    import torch.nn as nn

    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    if flatten_from is not None:
        layers.append(nn.Flatten())
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if relu and i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).eval()


def random_int8(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int16).astype(np.int8)
