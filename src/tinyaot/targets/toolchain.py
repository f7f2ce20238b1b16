"""Locate the external tools the Cortex-M33 target needs.

The cross compiler and the emulator are system packages, not Python
dependencies, so a missing tool must fail with an error that says exactly
what to install instead of a bare ``FileNotFoundError`` from subprocess.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tinyaot.errors import TinyAOTError
from tinyaot.targets.profiles import M33

GCC_ENV = M33.compiler_env
QEMU_ENV = "TINYAOT_QEMU"

ARM_GCC = M33.compiler
ARM_SIZE = "arm-none-eabi-size"
QEMU_ARM = "qemu-system-arm"

INSTALL_HINT = (
    "apt-get install --no-install-recommends "
    "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"
)

# The multilib the M33 flags select; newlib's specs live in its directory.
_MULTILIB_FLAGS = M33.cpu


class ToolchainMissing(TinyAOTError):
    """A tool the Cortex-M33 target needs is not installed or not found."""


@dataclass(frozen=True)
class M33Toolchain:
    """Resolved paths of the cross compiler, size tool and emulator."""

    gcc: Path
    size: Path
    qemu: Path


def _missing(what: str, detail: str = "") -> ToolchainMissing:
    extra = f" ({detail})" if detail else ""
    return ToolchainMissing(
        f"{what} not found{extra}. On Debian/Ubuntu install it with:\n    {INSTALL_HINT}"
    )


def _resolve(name: str, env_var: str | None = None) -> Path:
    """Find `name` on PATH, or the program an environment override names."""
    override = os.environ.get(env_var, "") if env_var else ""
    wanted = override or name
    found = shutil.which(wanted)
    if found is None:
        detail = f"{env_var}={override}" if override else "not on PATH"
        raise _missing(name, detail)
    return Path(found)


def _sibling_size(gcc: Path) -> Path:
    """Prefer the size tool next to the chosen gcc, so an override stays consistent."""
    if gcc.name.endswith("gcc"):
        candidate = gcc.with_name(gcc.name[: -len("gcc")] + "size")
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return _resolve(ARM_SIZE)


def _check_newlib(gcc: Path) -> None:
    """gcc without libnewlib-arm-none-eabi compiles but cannot link."""
    probe = subprocess.run(
        [str(gcc), *_MULTILIB_FLAGS, "-print-file-name=nosys.specs"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0 or not Path(probe.stdout.strip()).is_file():
        raise _missing("newlib for arm-none-eabi (nosys.specs)", f"asked {gcc}")


def find_m33_toolchain() -> M33Toolchain:
    """Resolve all tools, honouring TINYAOT_ARM_GCC and TINYAOT_QEMU.

    Raises ToolchainMissing naming the first missing tool.
    """
    gcc = _resolve(ARM_GCC, GCC_ENV)
    size = _sibling_size(gcc)
    qemu = _resolve(QEMU_ARM, QEMU_ENV)
    _check_newlib(gcc)
    return M33Toolchain(gcc=gcc, size=size, qemu=qemu)


def find_arm_gcc() -> Path | None:
    """arm-none-eabi-gcc alone (or what TINYAOT_ARM_GCC names), None if missing: measuring needs no emulator."""
    found = shutil.which(os.environ.get(GCC_ENV) or ARM_GCC)
    return None if found is None else Path(found)


def have_m33_toolchain() -> bool:
    """True when find_m33_toolchain() would succeed (for test skips)."""
    try:
        find_m33_toolchain()
    except ToolchainMissing:
        return False
    return True
