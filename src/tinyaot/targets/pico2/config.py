"""The Pico 2 target's fixed choices: the board's memory, the Pico SDK's measured share of flash, RAM and stack,
the project's layout, and its error.

The compile flags are the RP2350 profile's (targets/profiles.py); the RP2350_* names are what they were always called.
"""
from __future__ import annotations

from tinyaot.errors import TinyAOTError
from tinyaot.targets.profiles import RP2350

TEMPLATE_PACKAGE = ("targets", "pico2_templates")
MODEL_DIR = "model"
SOURCE_TEMPLATES = ("pico_sdk_import.cmake", "main.c", "app.c", "app.h")
APP_SOURCES = ("app.c", "test_vectors.c")

RP2350_CPU_FLAGS = RP2350.cpu
RP2350_C_FLAGS = RP2350.c_flags
RP2350_DEFINES = RP2350.defines

RP2350_SRAM_BYTES = 520 * 1024
RP2350_MAIN_SRAM_BYTES = 512 * 1024  # SRAM0-7; the two 4 KB SCRATCH banks hold the stacks
PICO2_FLASH_BYTES = 4 * 1024 * 1024
# --- the clocks and the flash read path at Pico SDK 2.2.0's defaults (docs/timing.md) ---
SYS_CLOCK_HZ = 150_000_000  # SYS_CLK_HZ, src/rp2350/hardware_regs/include/hardware/platform_defs.h
FLASH_SPI_CLKDIV = 2  # PICO_FLASH_SPI_CLKDIV, src/boards/include/boards/pico2.h: QSPI clock = clk_sys / 2
FLASH_DATA_BITS_PER_CLOCK = 4  # boot2_w25q080.S: quad I/O fast read (EBh), data phase quad width
XIP_CACHE_BYTES = 16 * 1024  # the RP2350's XIP cache
# Test vectors stay well inside the flash, next to the SDK runtime and the model.
MAX_VECTOR_BYTES = 1024 * 1024
NO_LABEL = -1
REPEAT_MS = 5000  # main.c reruns the test this often, so a terminal opened late still sees it

# --- the stack (core 0, main stack; interrupts run on it too) ---
SDK_DEFAULT_STACK_BYTES = 0x800  # PICO_STACK_SIZE when a project does not set it
# The SDK's default memory map puts core 0's stack in the 4 KB SCRATCH_Y bank; a larger PICO_STACK_SIZE
# does not link ("region `SCRATCH_Y' overflowed").
CORE0_STACK_LIMIT_BYTES = 0x1000
STACK_ROUND_BYTES = 256
# On top of app.c + the model: main()'s frame, printf through the SDK's USB and UART stdio drivers, and
# interrupts, which run on the same stack: the USB stdio worker at the lowest priority, preempted by one
# default-priority handler (USB, timer) entered through the SDK's shared-handler trampoline, each with an
# exception frame holding FP state (26 words + alignment).  Worst call paths in Pico SDK 2.2.0's call graph
# (gcc -fcallgraph-info, pico2 Release; function-pointer calls may go to any stdio driver, USB class driver
# or timer callback; panic paths left out): main 24 + printf 980 + worker 364 + handler 372 + trampoline 8
# + 2 x 108 = 1,964 B.  tests/test_pico_sdk.py re-measures it on real builds.
SDK_STACK_MEASURED_BYTES = 24 + 980 + 364 + 372 + 8 + 2 * 108
SDK_STACK_BYTES = 2048
LIBRARY_CALL_BYTES = 32  # newlib's memcpy takes no stack on the M33, memset 16 B: allowed per library call
# Without arm-none-eabi-gcc nothing is measured: reserve all that the default memory map gives core 0.
UNMEASURED_STACK_BYTES = CORE0_STACK_LIMIT_BYTES

# --- the SDK runtime's size, measured with Pico SDK 2.2.0 (pico2, Release, USB + UART stdio) ---
SDK_MEASURED = "Pico SDK 2.2.0"
# Flash of the .bin besides the model's code and constants, app.c and the test vectors (boot block, crt0,
# runtime init, clocks, the USB device stack, stdio, printf, main.c).
SDK_FLASH_BYTES = 30_904
# SRAM the runtime takes in the default (flash) build: vector table 272 + .data 4,316 (time-critical
# code and initialised variables) + .bss 3,140 (USB and stdio buffers) + the .heap reservation 2,048.
SDK_RAM_BYTES = 272 + 4_316 + 3_140 + 2_048
# What copy_to_ram moves into SRAM on top of that, besides the model, app.c and the test vectors.
SDK_COPY_TO_RAM_BYTES = 25_902
APP_TIMER_CALLBACKS = ("qemu_print", "qemu_instructions")  # what app_run() calls back into board_qemu.c


class Pico2ExportError(TinyAOTError):
    """The Pico 2 project cannot be written as asked (inputs, labels or sizes do not fit)."""

