"""Cortex-M33 target: cross-compile a generated model, run it on QEMU, count instructions.

The model is built with arm-none-eabi-gcc for the RP2350's core (ARMv8-M Mainline, DSP, single-precision FPU)
and run on ``qemu-system-arm -M mps2-an505`` with ``-icount``: virtual time then advances 2^7 ns per executed
instruction, so the guest's 20 MHz timer reads become an exact, deterministic instruction count for one
inference.  Outputs, timer ticks and the stack high-water mark come back over semihosting as text lines.

The modules: config (flags, limits, errors), build (compile, link, embed inputs; the harness's main() is the
harness_main.c template in this folder), qemu (run, explain faults), report (parse what the guest printed),
target (M33Target behind the common interface, run_m33, build_and_run_m33).
"""
from tinyaot.targets.m33.build import build_program, compile_sources
from tinyaot.targets.m33.config import (
    C_FLAGS,
    CPU_FLAGS,
    FAULT_EXIT_STATUS,
    FLASH_BYTES,
    FLASH_MARGIN,
    ICOUNT_SHIFT,
    INPUTS_SECTION,
    LINK_FLAGS,
    SUPPORT_C_FLAGS,
    SUPPORT_DIR,
    TIMER_NS_PER_TICK,
    M33BuildError,
    M33Error,
    M33InputError,
    M33RunError,
    cpu_flags,
)
from tinyaot.targets.m33.qemu import run_elf
from tinyaot.targets.m33.report import ticks_to_instructions
from tinyaot.targets.m33.target import (
    M33Build,
    M33Result,
    M33Target,
    build_and_run_m33,
    elf_sizes,
    run_m33,
)

__all__ = [
    "C_FLAGS", "CPU_FLAGS", "FAULT_EXIT_STATUS", "FLASH_BYTES", "FLASH_MARGIN", "ICOUNT_SHIFT", "INPUTS_SECTION",
    "LINK_FLAGS", "SUPPORT_C_FLAGS", "SUPPORT_DIR", "TIMER_NS_PER_TICK", "M33Build", "M33BuildError", "M33Error",
    "M33InputError", "M33Result", "M33RunError", "M33Target", "build_and_run_m33", "build_program",
    "compile_sources", "cpu_flags", "elf_sizes", "run_elf", "run_m33", "ticks_to_instructions",
]
