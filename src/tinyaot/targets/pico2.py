"""Pico 2 target: write a ready Pico SDK project for a compiled model, and run its app logic on QEMU.

The project (CMakeLists.txt, our own pico_sdk_import.cmake, main.c, app.c/app.h, test_vectors.c/.h,
README.md and the model's C under model/) builds with the Raspberry Pi Pico SDK for the RP2350's
Cortex-M33 core.  main.c is a thin board layer (stdio, microsecond timer) around app.c, which holds all
the logic; `run_app_m33` links the very same app.c and model sources, compiled with the RP2350 flags,
with a QEMU board layer (semihosting, instruction-count timer), so the tests exercise what the board runs.
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from tinyaot import __version__
from tinyaot.errors import TinyAOTError

TEMPLATE_PACKAGE = ("targets", "pico2_templates")
MODEL_DIR = "model"
PROJECT_TEMPLATES = ("CMakeLists.txt", "pico_sdk_import.cmake", "main.c", "app.c", "app.h", "README.md")
APP_SOURCES = ("app.c", "test_vectors.c")

# What Pico SDK 2.2.0 compiles with for PICO_BOARD=pico2 (Release), and the defines every file sees.
RP2350_CPU_FLAGS = ("-mcpu=cortex-m33", "-mthumb", "-march=armv8-m.main+fp+dsp", "-mfloat-abi=softfp", "-mcmse")
RP2350_C_FLAGS = ("-O3", "-DNDEBUG", "-ffunction-sections", "-fdata-sections", "-std=gnu11")
RP2350_DEFINES = ("-DPICO_RP2350=1", "-DPICO_ON_DEVICE=1", '-DPICO_BOARD="pico2"')

RP2350_SRAM_BYTES = 520 * 1024
PICO2_FLASH_BYTES = 4 * 1024 * 1024
# Test vectors stay well inside the flash, next to the SDK runtime and the model.
MAX_VECTOR_BYTES = 1024 * 1024
NO_LABEL = -1
REPEAT_MS = 5000  # main.c reruns the test this often, so a terminal opened late still sees it


class Pico2ExportError(TinyAOTError):
    """The Pico 2 project cannot be written as asked (inputs, labels or sizes do not fit)."""


@dataclass(frozen=True)
class AppRun:
    """What app.c printed for each test input on the emulated Cortex-M33."""

    outputs: np.ndarray  # int8, (n_inputs, output_size)
    predictions: list[int]
    labels: list[int | None]
    instructions: list[int]  # per inference, timer calls included
    checksum: int | None  # app_checksum as the board layer printed it
    text_bytes: int  # flash of the whole QEMU image (harness + app + model + test vectors)
    data_bytes: int
    bss_bytes: int  # the model's arena included
    elf_path: Path


# --- export ---------------------------------------------------------------------------------------


def export_pico2(cm, out_dir, inputs=None, labels=None) -> list[Path]:
    """Write a Pico SDK project for `cm` into `out_dir`; returns the files written.

    `inputs` are the embedded test vectors: int8 (used as is) or float (quantized with the model's input
    parameters), one input or a batch along dim 0.  Default: one input of zeros (the input zero point).
    `labels` gives the expected class of each input (optional).
    """
    out = Path(out_dir)
    x_q = _test_inputs(cm, inputs)
    label_list = _labels(labels, len(x_q), cm.output_size)
    _check_fits(cm, x_q)
    name = cm.name
    target = f"{name}_pico2"
    expected = cm.run(x_q.reshape((len(x_q),) + tuple(cm.input_shape[1:])), engine="reference")
    expected = np.asarray(expected, dtype=np.int8).reshape(len(x_q), -1)

    out.mkdir(parents=True, exist_ok=True)
    model_files = cm.c_sources.write(out / MODEL_DIR)
    model_c = [f"{MODEL_DIR}/{f}" for f in cm.c_sources.c_files]
    fields = {
        "@VERSION@": __version__,
        "@NAME@": name,
        "@UNAME@": name.upper(),
        "@TARGET@": target,
        "@MODEL_DIR@": MODEL_DIR,
        "@REPEAT_MS@": str(REPEAT_MS),
        "@SOURCES@": "\n".join(f"  {s}" for s in ("main.c", *APP_SOURCES, *model_c)),
    }
    sizes = _model_sizes(out / MODEL_DIR, cm.c_sources.c_files)
    readme_fields = fields | {
        "@N_INPUTS@": f"{len(x_q)} embedded test input" + ("s" if len(x_q) > 1 else ""),
        "@ARENA@": f"{cm.arena_bytes:,}",
        "@LOWER_BOUND@": f"{cm.lower_bound_bytes:,} B",
        "@STACK@": "n/a" if sizes.stack_bytes is None else f"at most {sizes.stack_bytes:,}",
        "@CONST@": f"{cm.constant_bytes:,}",
        "@CODE@": "n/a" if sizes.code_bytes is None else f"{sizes.code_bytes:,}",
        "@CODE_HOW@": sizes.how if sizes.code_bytes is None else f"measured: {sizes.how}",
        "@STACK_HOW@": _stack_how(sizes),
        "@VECTORS@": f"{x_q.nbytes + 4 * len(x_q):,}",
        "@MODEL_FILES@": "\n".join(f"| `{MODEL_DIR}/{f}` | {_describe_model_file(f, name)} |"
                                   for f in sorted(cm.c_sources.files)),
        "@EXPECTED@": _expected_text(cm, expected, label_list),
    }
    written = []
    for fname in PROJECT_TEMPLATES:
        text = _fill(_template(fname), readme_fields if fname == "README.md" else fields)
        written.append(_write(out / fname, text))
    written.append(_write(out / "test_vectors.h", _vectors_h(name, len(x_q))))
    written.append(_write(out / "test_vectors.c", _vectors_c(name, x_q, label_list)))
    return sorted(written + model_files)


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
    return resources.files("tinyaot").joinpath(*TEMPLATE_PACKAGE, fname).read_text()


def _fill(text: str, fields: dict[str, str]) -> str:
    for key, value in fields.items():
        text = text.replace(key, value)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise AssertionError(f"template placeholders left unfilled: {sorted(set(left))}")
    return text


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
        pred = int(np.argmax(y))
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


@dataclass(frozen=True)
class _ModelSizes:
    code_bytes: int | None  # .text of the model's objects
    stack_bytes: int | None  # sum of the model's stack frames: a bound for its own code (no recursion)
    how: str


def _stack_how(sizes: _ModelSizes) -> str:
    if sizes.code_bytes is None:
        return sizes.how
    if sizes.stack_bytes is None:
        return "not bounded: a model function has a dynamic stack frame (gcc -fstack-usage)"
    return f"the model's stack frames added up (no recursion): gcc -fstack-usage, {sizes.how}"


def _model_sizes(model_dir: Path, c_files: list[str]) -> _ModelSizes:
    """Code and stack of the model built with the RP2350 flags; None without arm-none-eabi-gcc."""
    from tinyaot.targets.m33 import M33BuildError, _compile
    from tinyaot.targets.sizes import section_bytes
    from tinyaot.targets.toolchain import ToolchainMissing, find_m33_toolchain

    try:
        tc = find_m33_toolchain()
    except ToolchainMissing:
        return _ModelSizes(None, None, "not measured: arm-none-eabi-gcc was missing when this project was written")
    with tempfile.TemporaryDirectory(prefix="tinyaot-pico2-") as tmp:
        flags = [*RP2350_CPU_FLAGS, *RP2350_C_FLAGS, *RP2350_DEFINES, "-fstack-usage", f"-I{model_dir.resolve()}"]
        try:
            objs = _compile(tc, [(model_dir / f).resolve() for f in c_files], Path(tmp), flags)
        except M33BuildError:
            return _ModelSizes(None, None, "not measured: the Cortex-M33 compile failed (see `tinyaot report`)")
        code = sum(section_bytes(o, ".text") for o in objs)
        stack = 0
        for su in Path(tmp).glob("*.su"):
            for line in su.read_text().splitlines():
                _, frame, kind = line.rsplit("\t", 2)
                if kind != "static":
                    stack = None
                if stack is not None:
                    stack += int(frame)
    return _ModelSizes(code, stack, "arm-none-eabi-gcc with this project's Release flags")


# --- the app on QEMU --------------------------------------------------------------------------------


def run_app_m33(project_dir, build_dir=None, timeout: float = 120.0) -> AppRun:
    """Build a written project's app.c + test vectors + model with the RP2350 flags and a QEMU board
    layer, run it on the emulated Cortex-M33 and parse what app.c printed."""
    from tinyaot.targets.m33 import ICOUNT_SHIFT, build_and_run_m33, elf_sizes

    project = Path(project_dir).resolve()
    model = project / MODEL_DIR
    if not (project / "app.c").is_file() or not model.is_dir():
        raise Pico2ExportError(f"{project} is not a project written by export_pico2 (no app.c or {MODEL_DIR}/)")
    build = Path(build_dir).resolve() if build_dir is not None else project / "build_qemu"
    build.mkdir(parents=True, exist_ok=True)
    board = build / "board_qemu.c"
    board.write_text(_fill(_template("board_qemu.c"), {"@ICOUNT_SHIFT@": str(ICOUNT_SHIFT)}))
    sources = [board, *(project / s for s in APP_SOURCES), *sorted(model.glob("*.c"))]
    flags = (*RP2350_C_FLAGS, *RP2350_DEFINES, "-Wall", "-Wextra", "-Werror")
    stdout, elf = build_and_run_m33(sources, build, include_dirs=(project, model), cpu_flags=RP2350_CPU_FLAGS,
                                    c_flags=flags, elf_name="app", timeout=timeout)
    text, data, bss = elf_sizes(elf)
    return _parse_app(stdout, elf, text, data, bss)


_LINE_RE = re.compile(
    r"#(\d+) predicted (\d+)(?: expected (\d+) (?:ok|WRONG))?, (\d+) \S+, output ([0-9a-f]+)\Z"
)


def _parse_app(stdout: str, elf: Path, text: int, data: int, bss: int) -> AppRun:
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
    return AppRun(
        checksum=None if m is None else int(m.group(1), 16),
        outputs=np.stack([np.frombuffer(r[3], dtype=np.int8) for r in ordered]),
        predictions=[r[0] for r in ordered],
        labels=[r[1] for r in ordered],
        instructions=[r[2] for r in ordered],
        text_bytes=text,
        data_bytes=data,
        bss_bytes=bss,
        elf_path=elf,
    )
