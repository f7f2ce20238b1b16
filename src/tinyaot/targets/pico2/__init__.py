"""Pico 2 target: write a ready Pico SDK project for a compiled model, and run its app logic on QEMU.

The project (CMakeLists.txt, our own pico_sdk_import.cmake, main.c, app.c/app.h, test_vectors.c/.h,
README.md and the model's C under model/) builds with the Raspberry Pi Pico SDK for the RP2350's
Cortex-M33 core.  main.c is a thin board layer (stdio, microsecond timer) around app.c, which holds all
the logic; `Pico2AppTarget` (`run_app_m33` in one call) links the very same app.c and model sources,
compiled with the RP2350 profile, with a QEMU board layer (semihosting, instruction-count timer), so the
tests exercise what the board runs.

The modules: config (the board's memory, the SDK's measured share, the project's layout, the error), export
(export_pico2: the project), texts (the test vectors, the CMake binary type and the README's figures), measure
(code and stack measured with arm-none-eabi-gcc alone when the project is written), app (Pico2AppTarget,
run_app_m33) and app_output (what the app printed on QEMU, read back).
"""
from tinyaot.targets.callgraph import CallGraph, CallGraphError
from tinyaot.targets.pico2.app import Pico2AppBuild, Pico2AppTarget, run_app_m33
from tinyaot.targets.pico2.app_output import AppRun
from tinyaot.targets.pico2.config import (
    APP_SOURCES,
    APP_TIMER_CALLBACKS,
    CORE0_STACK_LIMIT_BYTES,
    LIBRARY_CALL_BYTES,
    MAX_VECTOR_BYTES,
    MODEL_DIR,
    NO_LABEL,
    PICO2_FLASH_BYTES,
    REPEAT_MS,
    RP2350_C_FLAGS,
    RP2350_CPU_FLAGS,
    RP2350_DEFINES,
    RP2350_MAIN_SRAM_BYTES,
    RP2350_SRAM_BYTES,
    SDK_COPY_TO_RAM_BYTES,
    SDK_DEFAULT_STACK_BYTES,
    SDK_FLASH_BYTES,
    SDK_MEASURED,
    SDK_RAM_BYTES,
    SDK_STACK_BYTES,
    SDK_STACK_MEASURED_BYTES,
    STACK_ROUND_BYTES,
    UNMEASURED_STACK_BYTES,
    Pico2ExportError,
)
from tinyaot.targets.pico2.export import export_pico2
from tinyaot.targets.pico2.measure import Pico2Sizes, StackPlan, measure_project
from tinyaot.targets.pico2.texts import app_checksum

__all__ = [
    "APP_SOURCES", "APP_TIMER_CALLBACKS", "CORE0_STACK_LIMIT_BYTES", "LIBRARY_CALL_BYTES", "MAX_VECTOR_BYTES",
    "MODEL_DIR", "NO_LABEL", "PICO2_FLASH_BYTES", "REPEAT_MS", "RP2350_CPU_FLAGS", "RP2350_C_FLAGS",
    "RP2350_DEFINES", "RP2350_MAIN_SRAM_BYTES", "RP2350_SRAM_BYTES", "SDK_COPY_TO_RAM_BYTES",
    "SDK_DEFAULT_STACK_BYTES", "SDK_FLASH_BYTES", "SDK_MEASURED", "SDK_RAM_BYTES", "SDK_STACK_BYTES",
    "SDK_STACK_MEASURED_BYTES", "STACK_ROUND_BYTES", "UNMEASURED_STACK_BYTES", "AppRun", "CallGraph",
    "CallGraphError", "Pico2AppBuild", "Pico2AppTarget", "Pico2ExportError", "Pico2Sizes", "StackPlan",
    "app_checksum", "export_pico2", "measure_project", "run_app_m33",
]
