"""The Cortex-M33 target's fixed choices: the harness's flags, the emulated board's limits, and its errors."""
from __future__ import annotations

from pathlib import Path

from tinyaot.errors import TinyAOTError
from tinyaot.targets.profiles import M33, m33_profile

SUPPORT_DIR = Path(__file__).parent  # the harness's C (startup, console, bench), linker script and main template
SUPPORT_SOURCES = ("startup.c", "bench.c", "console.c")
LINKER_SCRIPT = "an505.ld"
HARNESS_TEMPLATE = "harness_main.c"  # run_m33's main(), filled per model

FLASH_BYTES = 4 * 1024 * 1024
FLASH_MARGIN = 256  # room for the alignment of the inputs section and its count word
INPUTS_SECTION = ".tinyaot_inputs"

ICOUNT_SHIFT = 7  # 2^7 ns per instruction; the 32-bit timer wraps after ~1.68 G instructions
TIMER_NS_PER_TICK = 50  # IoTKit TIMER0 runs at 20 MHz
FAULT_EXIT_STATUS = 99  # set by Fault_Handler in startup.c

# The compile flags are the M33 profile's (targets/profiles.py); these names are what the harness always called them.
CPU_FLAGS = M33.cpu[1:]  # all but -mcpu, which says whether the core has the DSP extension
C_FLAGS = M33.c_flags
# Only the harness is freestanding: with -ffreestanding GCC stops expanding
# small memcpy calls inline, which would make model code several times slower.
SUPPORT_C_FLAGS = ("-ffreestanding",)
LINK_FLAGS = ("-nostartfiles", "--specs=nosys.specs", "-Wl,--gc-sections")


def cpu_flags(dsp: bool) -> list[str]:
    """The RP2350's core, with or without the DSP extension (without it the portable C kernels are used)."""
    return list(m33_profile(dsp).cpu)


class M33Error(TinyAOTError, RuntimeError):
    """The model could not be built or run on the Cortex-M33 target."""


class M33BuildError(M33Error):
    """Compiling or linking for the target failed."""


class M33RunError(M33Error):
    """QEMU faulted, timed out, exited non-zero or printed unexpected output."""


class M33InputError(M33Error, ValueError):
    """What run_m33 was given cannot be run: a model name, folder or input array it cannot use."""
