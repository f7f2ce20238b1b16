"""Pico 2 target: write a ready Pico SDK project for a compiled model, and run its app logic on QEMU.

The project (CMakeLists.txt, our own pico_sdk_import.cmake, main.c, app.c/app.h, test_vectors.c/.h,
README.md and the model's C under model/) builds with the Raspberry Pi Pico SDK for the RP2350's
Cortex-M33 core.  main.c is a thin board layer (stdio, microsecond timer) around app.c, which holds all
the logic; `Pico2AppTarget` (`run_app_m33` in one call) links the very same app.c and model sources,
compiled with the RP2350 flags, with a QEMU board layer (semihosting, instruction-count timer), so the
tests exercise what the board runs.

Sizes and the stack are measured when the project is written, with arm-none-eabi-gcc alone (no SDK, no
QEMU): the model and app.c are compiled with the project's flags and `-fcallgraph-info=su`, which gives
every function's stack frame and callees (targets/callgraph.py).  The model's code is what is reachable
from its entry points (what the linker keeps with --gc-sections), its stack the worst call path of one
inference.  The SDK's share (runtime size, printf and interrupt stack) are figures measured with Pico
SDK 2.2.0; the tests check them against real SDK builds.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tinyaot import __version__
from tinyaot.errors import ModelError, TinyAOTError
from tinyaot.targets.base import RunResult
from tinyaot.targets.callgraph import CallGraph, CallGraphError
from tinyaot.targets.sizes import matching_section_bytes
from tinyaot.targets.templates import fill, read_template
from tinyaot.targets.toolchain import find_arm_gcc

TEMPLATE_PACKAGE = ("targets", "pico2_templates")
MODEL_DIR = "model"
SOURCE_TEMPLATES = ("pico_sdk_import.cmake", "main.c", "app.c", "app.h")
APP_SOURCES = ("app.c", "test_vectors.c")

# What Pico SDK 2.2.0 compiles with for PICO_BOARD=pico2 (Release), and the defines every file sees.
RP2350_CPU_FLAGS = ("-mcpu=cortex-m33", "-mthumb", "-march=armv8-m.main+fp+dsp", "-mfloat-abi=softfp", "-mcmse")
RP2350_C_FLAGS = ("-O3", "-DNDEBUG", "-ffunction-sections", "-fdata-sections", "-std=gnu11")
RP2350_DEFINES = ("-DPICO_RP2350=1", "-DPICO_ON_DEVICE=1", '-DPICO_BOARD="pico2"')

RP2350_SRAM_BYTES = 520 * 1024
RP2350_MAIN_SRAM_BYTES = 512 * 1024  # SRAM0-7; the two 4 KB SCRATCH banks hold the stacks
PICO2_FLASH_BYTES = 4 * 1024 * 1024
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


@dataclass(frozen=True)
class AppRun(RunResult):
    """What app.c printed for each test input on the emulated Cortex-M33.

    `instructions` is the first inference (app.c's timer calls included), `stack_bytes` the high-water mark of
    app_run() (the stack painted before it), `sizes` the whole QEMU image (harness + app + model + test vectors;
    bss includes the model's arena).
    """

    predictions: list[int] = field(default_factory=list)
    labels: list[int | None] = field(default_factory=list)
    inference_instructions: list[int] = field(default_factory=list)  # every inference, as app.c timed it
    checksum: int | None = None  # app_checksum as the board layer printed it
    elf_path: Path | None = None
    stack_bound: int | None = None  # worst call path of app_run() in the same image (gcc -fcallgraph-info)


@dataclass(frozen=True)
class StackPlan:
    """How much stack the project reserves (PICO_STACK_SIZE) and why."""

    reserved_bytes: int  # PICO_STACK_SIZE
    inference_bytes: int | None  # worst call path of <name>_invoke()
    app_bytes: int | None  # worst call path of app_run(), the inference included; callbacks into main.c excluded
    inference_path: tuple[str, ...] = ()
    note: str = ""  # why nothing was measured, when so


@dataclass(frozen=True)
class Pico2Sizes:
    """What the project takes, as far as it is known when the project is written."""

    code_bytes: int | None  # the model code app_run() reaches (what the link keeps)
    app_flash_bytes: int | None  # app.c's code and strings
    vector_bytes: int  # test_vectors.c
    stack: StackPlan
    copy_to_ram: bool

    def flash_estimate(self, constant_bytes: int) -> int | None:
        if self.code_bytes is None or self.app_flash_bytes is None:
            return None
        return self.code_bytes + constant_bytes + self.vector_bytes + self.app_flash_bytes + SDK_FLASH_BYTES

    def copy_to_ram_bytes(self, constant_bytes: int) -> int | None:
        """SRAM that copy_to_ram adds: the program's code and constants."""
        if self.code_bytes is None or self.app_flash_bytes is None:
            return None
        return self.code_bytes + constant_bytes + self.vector_bytes + self.app_flash_bytes + SDK_COPY_TO_RAM_BYTES

    def ram_estimate(self, arena_bytes: int, constant_bytes: int) -> int | None:
        ram = arena_bytes + self.stack.reserved_bytes + SDK_RAM_BYTES
        if not self.copy_to_ram:
            return ram
        copied = self.copy_to_ram_bytes(constant_bytes)
        return None if copied is None else ram + copied


# --- export ---------------------------------------------------------------------------------------


def export_pico2(cm, out_dir, inputs=None, labels=None, copy_to_ram: bool = False) -> list[Path]:
    """Write a Pico SDK project for `cm` into `out_dir`; returns the files written.

    `inputs` are the embedded test vectors: int8 (used as is) or float (quantized with the model's input
    parameters), one input or a batch along dim 0.  Default: one input of zeros (the input zero point).
    `labels` gives the expected class of each input (optional).  `copy_to_ram=True` builds the firmware
    with `pico_set_binary_type(... copy_to_ram)`: the boot code copies all code and constants from flash
    into SRAM, so inference never waits on the RP2350's 16 KB XIP flash cache (the README gives the SRAM
    this costs).
    """
    out = Path(out_dir)
    if cm.n_inputs > 1 or cm.n_outputs > 1:
        raise ModelError(f"the Pico 2 project runs models with one input and one output; '{cm.name}' has "
                         f"{cm.n_inputs} inputs and {cm.n_outputs} outputs. Export the C (target 'c') and call "
                         f"{cm.name}_input(i) / {cm.name}_output(i) from your firmware (see {cm.name}.h)")
    wide = [t for t in (*cm.graph.inputs, *cm.graph.outputs) if cm.graph.tensor(t).dtype in ("int16", "int32")]
    if wide:
        raise ModelError(f"the Pico 2 project embeds int8 test vectors; '{cm.name}' has int16 or int32 input or output "
                         f"({', '.join(wide)}: a 16x8 model, or one with a QUANTIZE at its edge). Export the C (target "
                         f"'c') and pass data of the header's types to {cm.name}_input() (see {cm.name}.h)")
    x_q = _test_inputs(cm, inputs)
    label_list = _labels(labels, len(x_q), cm.output_size)
    _check_fits(cm, x_q)
    name = cm.name
    target = f"{name}_pico2"
    expected = cm.run(x_q.view(cm.input_dtype).reshape((len(x_q),) + tuple(cm.input_shape[1:])), engine="reference")
    expected = np.asarray(expected, dtype=np.int8).reshape(len(x_q), -1)

    model_c = [f"{MODEL_DIR}/{f}" for f in cm.c_sources.c_files]
    fields = {
        "@VERSION@": __version__,
        "@NAME@": name,
        "@UNAME@": name.upper(),
        "@TARGET@": target,
        "@MODEL_DIR@": MODEL_DIR,
        "@REPEAT_MS@": str(REPEAT_MS),
        "@SOURCES@": "\n".join(f"  {s}" for s in ("main.c", *APP_SOURCES, *model_c)),
        "@OUTPUT_TYPE@": cm.output_dtype,
        "@OUTPUT_CTYPE@": f"{cm.output_dtype}_t",  # int8, or uint8 (a legacy .tflite's output)
    }
    texts = {f: _fill(_template(f), fields) for f in SOURCE_TEMPLATES}
    texts["test_vectors.h"] = _vectors_h(name, len(x_q))
    texts["test_vectors.c"] = _vectors_c(name, x_q, label_list)
    # Measured on a staged copy, so a project that does not fit leaves nothing half-written behind.
    with tempfile.TemporaryDirectory(prefix="tinyaot-pico2-stage-") as stage:
        cm.c_sources.write(Path(stage) / MODEL_DIR)
        for fname, text in texts.items():
            _write(Path(stage) / fname, text)
        sizes = measure_project(stage, name, cm.c_sources.c_files, vector_bytes=x_q.nbytes + 4 * len(x_q),
                                copy_to_ram=copy_to_ram)
    _check_memory(cm, sizes)
    texts["CMakeLists.txt"] = _fill(_template("CMakeLists.txt"), fields | {
        "@STACK_SIZE@": f"0x{sizes.stack.reserved_bytes:x}",
        "@BINARY_TYPE@": _binary_type_cmake(cm, sizes, target),
    })
    texts["README.md"] = _fill(_template("README.md"), fields | _readme_fields(cm, sizes, x_q, expected, label_list))

    out.mkdir(parents=True, exist_ok=True)
    model_files = cm.c_sources.write(out / MODEL_DIR)
    written = [_write(out / fname, text) for fname, text in texts.items()]
    return sorted(written + model_files)


def _binary_type_cmake(cm, sizes: Pico2Sizes, target: str) -> str:
    cost = sizes.copy_to_ram_bytes(cm.constant_bytes)
    about = "" if cost is None else f" (about {_kb(cost)} more SRAM than from flash)"
    if sizes.copy_to_ram:
        return (f"# The boot code copies all code and constants from flash into SRAM{about}\n"
                "# and the program runs from there, clear of the RP2350's 16 KB XIP flash cache (exported with\n"
                "# copy_to_ram=True; see README.md).\n"
                f"pico_set_binary_type({target} copy_to_ram)")
    more = "" if cost is None else f", about {_kb(cost)} more SRAM"
    return ("# The program runs from flash through the RP2350's 16 KB XIP cache (the SDK's default). To run it\n"
            f"# from SRAM instead{more} (see README.md), re-export with copy_to_ram=True or add:\n"
            f"#   pico_set_binary_type({target} copy_to_ram)")


def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB"


def _test_inputs(cm, inputs) -> np.ndarray:
    """The test vectors as contiguous int8 rows, one per input."""
    if inputs is None:
        _, zp = cm.input_qparams
        return np.full((1, cm.input_size), zp, dtype=cm.input_dtype).view(np.int8)
    x = np.asarray(inputs)
    if cm.input_dtype == "uint8":  # raw bytes either way; the project's arrays are int8-typed
        batch = cm.quantize_input(x) if np.issubdtype(x.dtype, np.floating) else x
        return np.ascontiguousarray(cm._as_batch(batch)[0].astype(np.uint8).reshape(len(batch), -1)
                                    ).view(np.int8)
    try:
        batch, _ = cm._as_batch(x)
    except TinyAOTError as exc:
        raise Pico2ExportError(f"test inputs: {exc}") from None
    if np.issubdtype(batch.dtype, np.floating):
        batch = cm.quantize_input(batch)
    elif batch.dtype != np.int8:
        if not np.issubdtype(batch.dtype, np.integer) or batch.min() < -128 or batch.max() > 127:
            raise Pico2ExportError(
                f"test inputs of dtype {batch.dtype} are neither int8 nor float; pass int8 values in "
                "[-128, 127] or float inputs to be quantized with the model's input scale"
            )
        batch = batch.astype(np.int8)
    if len(batch) == 0:
        raise Pico2ExportError("no test inputs given; pass at least one, or none for a zero input")
    return np.ascontiguousarray(batch.reshape(len(batch), -1))


def _labels(labels, n: int, n_classes: int) -> list[int]:
    if labels is None:
        return [NO_LABEL] * n
    arr = np.asarray(labels).reshape(-1)
    if len(arr) != n:
        raise Pico2ExportError(f"got {len(arr)} labels for {n} test inputs; give one class index per input")
    if not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= n_classes:
        raise Pico2ExportError(
            f"labels must be class indices in [0, {n_classes - 1}] (argmax of the {n_classes}-byte output), "
            f"got {arr.tolist()[:8]}"
        )
    return [int(v) for v in arr]


def _check_fits(cm, x_q: np.ndarray) -> None:
    if cm.arena_bytes > RP2350_SRAM_BYTES:
        raise Pico2ExportError(
            f"model '{cm.name}' needs a {cm.arena_bytes:,} B arena, more than the RP2350's "
            f"{RP2350_SRAM_BYTES // 1024} KB of SRAM; use a smaller model"
        )
    if x_q.nbytes > MAX_VECTOR_BYTES:
        raise Pico2ExportError(
            f"{len(x_q)} test inputs take {x_q.nbytes:,} B; keep the embedded test vectors under "
            f"{MAX_VECTOR_BYTES // 1024} KB of the Pico 2's {PICO2_FLASH_BYTES // 1024 // 1024} MB flash "
            "by passing fewer inputs"
        )
    if cm.constant_bytes + x_q.nbytes > PICO2_FLASH_BYTES - MAX_VECTOR_BYTES:
        raise Pico2ExportError(
            f"model '{cm.name}' has {cm.constant_bytes:,} B of constants, too many for the Pico 2's "
            f"{PICO2_FLASH_BYTES // 1024 // 1024} MB flash next to the SDK runtime; use a smaller model"
        )


def _template(fname: str) -> str:
    return read_template(TEMPLATE_PACKAGE, fname)


_fill = fill


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _vectors_h(name: str, n: int) -> str:
    uname = name.upper()
    return f"""\
/* test_vectors.h - generated by tinyaot {__version__} for model '{name}'. Do not edit. */
#ifndef APP_TEST_VECTORS_H
#define APP_TEST_VECTORS_H

#include <stdint.h>

#include "{name}.h"

#define APP_N_INPUTS {n}u
#define APP_NO_LABEL ({NO_LABEL})

/* int8 inputs, already quantized: real = {uname}_INPUT_SCALE * (q - {uname}_INPUT_ZERO_POINT). */
extern const int8_t app_inputs[APP_N_INPUTS][{uname}_INPUT_SIZE];
/* Expected class of each input (argmax of the output), or APP_NO_LABEL. */
extern const int32_t app_labels[APP_N_INPUTS];

#endif /* APP_TEST_VECTORS_H */
"""


def _vectors_c(name: str, x_q: np.ndarray, labels: list[int]) -> str:
    uname = name.upper()
    size = x_q.shape[1]
    lines = [
        f"/* test_vectors.c - generated by tinyaot {__version__} for model '{name}'. Do not edit. */",
        '#include "test_vectors.h"',
        "",
        f"#if {uname}_INPUT_SIZE != {size}",
        f'#error "these test vectors hold {size}-byte inputs, but {name}.h declares another {uname}_INPUT_SIZE"',
        "#endif",
        "",
        f"const int8_t app_inputs[APP_N_INPUTS][{uname}_INPUT_SIZE] = {{",
    ]
    for k, row in enumerate(x_q):
        label = "" if labels[k] == NO_LABEL else f", label {labels[k]}"
        lines.append(f"    /* input {k}{label} */")
        lines.append("    {")
        for i in range(0, size, 16):
            lines.append("        " + ", ".join(str(int(v)) for v in row[i : i + 16]) + ",")
        lines.append("    },")
    lines += ["};", "", "const int32_t app_labels[APP_N_INPUTS] = {"]
    lines.append("    " + ", ".join(str(v) for v in labels) + ",")
    lines += ["};", ""]
    return "\n".join(lines)


def _describe_model_file(fname: str, name: str) -> str:
    if fname == f"{name}.h":
        return "the model's API: arena size, input/output shapes, scales and zero points, entry points"
    if fname == f"{name}.c":
        return "the model: constants, arena offsets from the memory plan, the layer calls"
    if fname.endswith(".h"):
        return "tinyaot C kernel library header"
    return "tinyaot C kernel (portable C, with an SMLAD path under `__ARM_FEATURE_DSP`)"


def _expected_text(cm, expected: np.ndarray, labels: list[int]) -> str:
    lines = [f"tinyaot model '{cm.name}': arena {cm.arena_bytes} B, {len(expected)} test inputs"]
    correct = 0
    for k, y in enumerate(expected):
        pred = int(np.argmax(y.view(cm.output_dtype)))  # the bytes as the output's type: uint8 compares unsigned
        text = f"#{k} predicted {pred}"
        if labels[k] != NO_LABEL:
            ok = pred == labels[k]
            correct += ok
            text += f" expected {labels[k]} {'ok' if ok else 'WRONG'}"
        lines.append(f"{text}, <time> us, output {y.tobytes().hex()}")
    summary = "summary: "
    if any(v != NO_LABEL for v in labels):
        summary += f"{correct}/{sum(v != NO_LABEL for v in labels)} predictions match the labels, "
    lines.append(summary + "<time> us per inference (mean)")
    lines.append(f"checksum {app_checksum(expected):08x}, next run in {REPEAT_MS} ms")
    return "\n".join(lines)


def app_checksum(outputs: np.ndarray) -> int:
    """app.c's app_checksum over all output bytes of one run: c = c * 31 + byte (mod 2^32)."""
    c = 0
    for b in np.asarray(outputs, dtype=np.int8).reshape(-1).view(np.uint8):
        c = (c * 31 + int(b)) & 0xFFFFFFFF
    return c


def _check_memory(cm, sizes: Pico2Sizes) -> None:
    need = sizes.stack.app_bytes
    if need is not None and sizes.stack.reserved_bytes > CORE0_STACK_LIMIT_BYTES:
        raise Pico2ExportError(
            f"model '{cm.name}' needs {sizes.stack.reserved_bytes:,} B of stack (one inference "
            f"{sizes.stack.inference_bytes:,} B: {' -> '.join(sizes.stack.inference_path)}; app.c {need:,} B in "
            f"all, plus {SDK_STACK_BYTES:,} B for the SDK's printf and interrupts), more than the "
            f"{CORE0_STACK_LIMIT_BYTES:,} B the Pico SDK's default memory map gives core 0 (the SCRATCH_Y bank); "
            "call the model from your own firmware with a larger stack (a custom linker script)"
        )
    ram = sizes.ram_estimate(cm.arena_bytes, cm.constant_bytes)
    if sizes.copy_to_ram and ram is not None and ram - sizes.stack.reserved_bytes > RP2350_MAIN_SRAM_BYTES:
        raise Pico2ExportError(
            f"with copy_to_ram the firmware would need about {ram:,} B of SRAM (its code and constants "
            f"{sizes.copy_to_ram_bytes(cm.constant_bytes):,} B, the arena {cm.arena_bytes:,} B, the SDK's "
            f"{SDK_RAM_BYTES:,} B), more than the RP2350's {RP2350_MAIN_SRAM_BYTES // 1024} KB of main SRAM; "
            "export with copy_to_ram=False (constants stay in flash)"
        )


def _readme_fields(cm, sizes: Pico2Sizes, x_q: np.ndarray, expected: np.ndarray, labels: list[int]) -> dict:
    stack = sizes.stack
    flash = sizes.flash_estimate(cm.constant_bytes)
    ram = sizes.ram_estimate(cm.arena_bytes, cm.constant_bytes)
    copied = sizes.copy_to_ram_bytes(cm.constant_bytes)
    measured = sizes.code_bytes is not None
    return {
        "@N_INPUTS@": f"{len(x_q)} embedded test input" + ("s" if len(x_q) > 1 else ""),
        "@ARENA@": f"{cm.arena_bytes:,}",
        "@LOWER_BOUND@": f"{cm.lower_bound_bytes:,} B",
        "@STACK@": "n/a" if stack.inference_bytes is None else f"{stack.inference_bytes:,}",
        "@STACK_HOW@": _inference_stack_how(cm.name, stack),
        "@STACK_SIZE@": f"{stack.reserved_bytes:,}",
        "@STACK_SIZE_HEX@": f"0x{stack.reserved_bytes:x}",
        "@STACK_SIZE_HOW@": _stack_size_how(stack),
        "@RAM@": "n/a" if ram is None else f"about {ram:,}",
        "@RAM_HOW@": _ram_how(cm, sizes, copied),
        "@CONST@": f"{cm.constant_bytes:,}",
        "@CONST_WHERE@": "copied to SRAM at boot by copy_to_ram" if sizes.copy_to_ram else "read from flash",
        "@CODE@": "n/a" if not measured else f"{sizes.code_bytes:,}",
        "@CODE_HOW@": ("model + kernels: the functions `app_run()` reaches (what the linker keeps), compiled "
                       "with this project's flags" if measured else stack.note),
        "@VECTORS@": f"{sizes.vector_bytes:,}",
        "@FLASH@": "n/a" if flash is None else f"about {flash:,}",
        "@FLASH_HOW@": ("the rows above + app.c's code and strings "
                        f"({sizes.app_flash_bytes:,} B) + the SDK runtime with USB and UART stdio "
                        f"({SDK_FLASH_BYTES:,} B with {SDK_MEASURED}); your build's `.bin` is the exact figure"
                        if flash is not None else stack.note),
        "@RUN_FROM@": textwrap.fill(_run_from_text(f"{cm.name}_pico2", sizes, copied), width=114,
                                    break_long_words=False, break_on_hyphens=False),
        "@MODEL_FILES@": "\n".join(f"| `{MODEL_DIR}/{f}` | {_describe_model_file(f, cm.name)} |"
                                   for f in sorted(cm.c_sources.files)),
        "@EXPECTED@": _expected_text(cm, expected, labels),
    }


def _inference_stack_how(name: str, stack: StackPlan) -> str:
    if stack.inference_bytes is None:
        return stack.note
    path = " -> ".join(f"`{f}`" for f in stack.inference_path)
    return (f"the worst call path of `{name}_invoke()`: {path} (gcc -fcallgraph-info with this project's "
            f"flags; {LIBRARY_CALL_BYTES} B allowed for each library call such as memcpy)")


def _stack_size_how(stack: StackPlan) -> str:
    where = f"the {CORE0_STACK_LIMIT_BYTES:,} B SCRATCH_Y bank, where the SDK's memory map puts core 0's stack"
    if stack.app_bytes is None:
        return f"{stack.note}; so all of {where}"
    return (f"set in `CMakeLists.txt`: at most {stack.app_bytes:,} B for app.c with one inference (worst call path "
            f"of `app_run()`) + {SDK_STACK_BYTES:,} B for main(), the SDK's printf and the interrupt handlers that "
            f"share this stack (at most {SDK_STACK_MEASURED_BYTES:,} B along the worst paths of {SDK_MEASURED}'s "
            f"call graph), rounded up to {STACK_ROUND_BYTES} B; at least the SDK's default "
            f"{SDK_DEFAULT_STACK_BYTES:,} B, at most {where}")


def _ram_how(cm, sizes: Pico2Sizes, copied: int | None) -> str:
    base = (f"arena + stack + the SDK runtime's {SDK_RAM_BYTES:,} B ({SDK_MEASURED}: vector table, `.data`, "
            "`.bss` with the USB and stdio buffers, a 2 KB `.heap` that nothing here uses)")
    if not sizes.copy_to_ram:
        return base + "; of the RP2350's 520 KB"
    if copied is None:
        return base + " + the program's code and constants (copy_to_ram; not measured)"
    return base + f" + {copied:,} B of code and constants copied from flash (copy_to_ram); of the RP2350's 520 KB"


def _run_from_text(target: str, sizes: Pico2Sizes, copied: int | None) -> str:
    cost = "" if copied is None else (
        f" about {copied:,} B ({_kb(copied)}) of SRAM: the model's code and constants, app.c, the test inputs "
        f"and {SDK_COPY_TO_RAM_BYTES:,} B of the SDK runtime's code and read-only data (measured with "
        f"{SDK_MEASURED}; the sections of your build's `.elf` give the exact figure)")
    if sizes.copy_to_ram:
        return ("This project was exported with `copy_to_ram=True`: `pico_set_binary_type(... copy_to_ram)` in "
                "`CMakeLists.txt` makes the boot code copy all code and constants from flash into SRAM, and the "
                "program runs from there, never waiting on the RP2350's 16 KB XIP flash cache. This costs"
                f"{cost or ' SRAM for all code and constants'}. The `.uf2` is flashed as usual.")
    return ("The program runs from flash, which the RP2350 reads through a 16 KB XIP cache: weights larger than "
            "that are streamed from the flash chip on every inference, and the first run after reset also "
            "waits for the code. To run everything from SRAM, export with `copy_to_ram=True` "
            f"(`tinyaot export ... --copy-to-ram`), or add `pico_set_binary_type({target} copy_to_ram)` to "
            "`CMakeLists.txt`; the boot code then copies all code and constants into SRAM, which costs"
            f"{cost or ' SRAM for all code and constants'}.")


def measure_project(project_dir, name: str, c_files, vector_bytes: int, copy_to_ram: bool = False) -> Pico2Sizes:
    """Compile a written project's model and app.c with the RP2350 flags and measure code and stack.

    Needs only arm-none-eabi-gcc (10 or newer, for -fcallgraph-info); without it the sizes are None and
    the stack reservation is the conservative UNMEASURED_STACK_BYTES.
    """
    project = Path(project_dir).resolve()
    gcc = find_arm_gcc()
    if gcc is None:
        return _unmeasured("not measured: arm-none-eabi-gcc was missing when this project was written",
                           vector_bytes, copy_to_ram)
    with tempfile.TemporaryDirectory(prefix="tinyaot-pico2-") as tmp:
        try:
            graph, app_obj = _project_call_graph(gcc, project, c_files, Path(tmp))
        except Pico2ExportError as exc:
            return _unmeasured(f"not measured: {exc}", vector_bytes, copy_to_ram)
        code, app_flash = _linked_code(graph, app_obj)
        try:
            stack = _stack_plan(graph, name)
        except CallGraphError as exc:
            stack = StackPlan(UNMEASURED_STACK_BYTES, None, None, note=f"not bounded: {exc}")
    return Pico2Sizes(code, app_flash, vector_bytes, stack, copy_to_ram)


def _project_call_graph(gcc: Path, project: Path, c_files, tmp: Path) -> tuple[CallGraph, Path]:
    """Compile the model (into tmp/model) and app.c (into tmp/app) with the project's flags; the call graph
    of both and app.c's object."""
    flags = [*RP2350_CPU_FLAGS, *RP2350_C_FLAGS, *RP2350_DEFINES, "-fcallgraph-info=su",
             f"-I{project}", f"-I{project / MODEL_DIR}"]
    model_objs = _cc(gcc, [project / MODEL_DIR / f for f in c_files], tmp / "model", flags)
    app_objs = _cc(gcc, [project / "app.c"], tmp / "app", flags)
    return CallGraph.read([o.with_suffix(".ci") for o in (*model_objs, *app_objs)]), app_objs[0]


def _linked_code(graph: CallGraph, app_obj: Path) -> tuple[int, int]:
    """What the firmware links (--gc-sections): the code app_run() reaches in the model, and app.c's code and
    strings."""
    linked = graph.reachable(["app_run"])
    app_dir = app_obj.parent
    code = graph.code_bytes(f for f in linked if graph.source[f].parent == app_dir.with_name("model"))
    app_code = graph.code_bytes(f for f in linked if graph.source[f].parent == app_dir)
    return code, app_code + matching_section_bytes(app_obj, lambda n: n == ".rodata" or n.startswith(".rodata."))


def _stack_plan(graph: CallGraph, name: str) -> StackPlan:
    """PICO_STACK_SIZE from the worst call path of app_run() plus the SDK's share."""
    inference = graph.worst_path(f"{name}_invoke", leaf_bytes=LIBRARY_CALL_BYTES)
    # app_run's calls through the print and clock callbacks go to main.c: in SDK_STACK_BYTES.
    app = graph.worst_path("app_run", leaf_bytes=LIBRARY_CALL_BYTES)
    reserved = _round_up(max(app.bytes + SDK_STACK_BYTES, SDK_DEFAULT_STACK_BYTES), STACK_ROUND_BYTES)
    return StackPlan(reserved, inference.bytes, app.bytes, tuple(f.rsplit(":", 1)[-1] for f in inference.path))


def _unmeasured(why: str, vector_bytes: int, copy_to_ram: bool) -> Pico2Sizes:
    note = why.replace("|", "\\|")  # it goes into the README's table
    return Pico2Sizes(None, None, vector_bytes, StackPlan(UNMEASURED_STACK_BYTES, None, None, note=note),
                      copy_to_ram)


def _round_up(n: int, step: int) -> int:
    return -(-n // step) * step


def _cc(gcc: Path, sources: list[Path], out_dir: Path, flags: list[str]) -> list[Path]:
    """Compile `sources` in `out_dir` (objects and .ci call graphs land there); returns the objects."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [str(gcc), *flags, "-c", *map(str, sources)]
    proc = subprocess.run(cmd, cwd=out_dir, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        if "callgraph-info" in proc.stderr:
            raise Pico2ExportError(f"{gcc.name} does not support -fcallgraph-info (GCC 10 or newer does)")
        errors = [line for line in proc.stderr.splitlines() if "error:" in line] or proc.stderr.splitlines()[:1]
        first = re.sub(r"^\S*/", "", errors[0]) if errors else f"exit {proc.returncode}"  # one line, no temp path
        raise Pico2ExportError(f"{gcc.name} could not compile {', '.join(s.name for s in sources)} ({first})")
    return [out_dir / (s.stem + ".o") for s in sources]


# --- the app on QEMU --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pico2AppBuild:
    """A project's app linked with the QEMU board layer."""

    path: Path  # the ELF
    stack_bound: int  # worst call path of app_run() in this image


@dataclass(frozen=True)
class Pico2AppTarget:
    """A written project's app.c + test vectors + model, compiled with the RP2350 flags and linked with a QEMU
    board layer (semihosting, instruction-count timer), so the tests run what the board runs.

    The inputs are the project's embedded test vectors (export with inputs= to change them); `build_dir`
    defaults to <project>/build_qemu, `timeout` applies to the QEMU run.
    """

    name = "pico2-app"
    build_dir: Path | None = None
    timeout: float = 120.0

    def build(self, project_dir) -> Pico2AppBuild:
        from tinyaot.targets.m33 import ICOUNT_SHIFT, build_program
        from tinyaot.targets.toolchain import find_m33_toolchain

        project, model = _project_dirs(project_dir)
        build = Path(self.build_dir).resolve() if self.build_dir is not None else project / "build_qemu"
        build.mkdir(parents=True, exist_ok=True)
        board = build / "board_qemu.c"
        board.write_text(_fill(_template("board_qemu.c"), {"@ICOUNT_SHIFT@": str(ICOUNT_SHIFT)}))
        sources = [board, *(project / s for s in APP_SOURCES), *sorted(model.glob("*.c"))]
        flags = (*RP2350_C_FLAGS, *RP2350_DEFINES, "-Wall", "-Wextra", "-Werror", "-fcallgraph-info=su")
        elf = build_program(find_m33_toolchain().gcc, sources, build, include_dirs=(project, model),
                            cpu=list(RP2350_CPU_FLAGS), c_flags=flags, elf_name="app")
        graph = CallGraph.read(sorted(build.glob("obj/**/*.ci")))
        bound = graph.worst_path("app_run", indirect=APP_TIMER_CALLBACKS, leaf_bytes=LIBRARY_CALL_BYTES)
        return Pico2AppBuild(elf, bound.bytes)

    def run(self, artifact: Pico2AppBuild, inputs: np.ndarray | None = None) -> AppRun:
        """Run the app on QEMU and parse what app.c printed."""
        from tinyaot.targets.m33 import elf_sizes, run_elf
        from tinyaot.targets.toolchain import find_m33_toolchain

        if inputs is not None:
            raise Pico2ExportError("the Pico 2 app runs the test vectors embedded in its project; export the "
                                   "project with inputs= to run others")
        stdout = run_elf(find_m33_toolchain().qemu, artifact.path, self.timeout)
        return _parse_app(stdout, artifact.path, elf_sizes(artifact.path), artifact.stack_bound)


def run_app_m33(project_dir, build_dir=None, timeout: float = 120.0) -> AppRun:
    """Build a written project's app with Pico2AppTarget and run it on the emulated Cortex-M33.

    The board layer paints the stack before app_run() and reports its high-water mark; the image's own
    call graph (-fcallgraph-info) gives app_run()'s static bound in `AppRun.stack_bound`."""
    target = Pico2AppTarget(build_dir=build_dir, timeout=timeout)
    return target.run(target.build(project_dir))


def _project_dirs(project_dir) -> tuple[Path, Path]:
    """The project and its model folder, checked to be what export_pico2 writes."""
    project = Path(project_dir).resolve()
    model = project / MODEL_DIR
    if not (project / "app.c").is_file() or not model.is_dir():
        raise Pico2ExportError(f"{project} is not a project written by export_pico2 (no app.c or {MODEL_DIR}/)")
    return project, model


_LINE_RE = re.compile(
    r"#(\d+) predicted (\d+)(?: expected (\d+) (?:ok|WRONG))?, (\d+) \S+, output ([0-9a-f]+)\Z"
)


def _parse_app(stdout: str, elf: Path, sizes, stack_bound: int | None = None) -> AppRun:
    """app.c's lines "#k predicted p [expected e ok|WRONG], n <unit>, output <hex>", its summary, the board
    layer's checksum and stack lines."""
    rows: dict[int, tuple[int, int | None, int, bytes]] = {}
    for line in stdout.splitlines():
        m = _LINE_RE.match(line.strip())
        if m:
            label = None if m.group(3) is None else int(m.group(3))
            rows[int(m.group(1))] = (int(m.group(2)), label, int(m.group(4)), bytes.fromhex(m.group(5)))
    if not rows or sorted(rows) != list(range(len(rows))) or "summary:" not in stdout:
        raise Pico2ExportError(f"app.c printed an incomplete report on QEMU:\n{stdout}")
    ordered = [rows[k] for k in range(len(rows))]
    m = re.search(r"^checksum ([0-9a-f]{8})$", stdout, re.MULTILINE)
    stack = re.search(r"^stack (\d+)$", stdout, re.MULTILINE)
    return AppRun(
        outputs=np.stack([np.frombuffer(r[3], dtype=np.int8) for r in ordered]),
        instructions=ordered[0][2],
        stack_bytes=None if stack is None else int(stack.group(1)),
        sizes=sizes,
        predictions=[r[0] for r in ordered],
        labels=[r[1] for r in ordered],
        inference_instructions=[r[2] for r in ordered],
        checksum=None if m is None else int(m.group(1), 16),
        elf_path=elf,
        stack_bound=stack_bound,
    )
