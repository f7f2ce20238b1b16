"""Writing a Pico 2 project: a ready Pico SDK project for a compiled model, with its test vectors and a README of
what it takes (measured with measure.py before anything is written, so a project that does not fit leaves nothing
half-written behind)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from tinyaot.errors import ModelError, TinyAOTError
from tinyaot.targets.pico2.config import (
    APP_SOURCES,
    CORE0_STACK_LIMIT_BYTES,
    MAX_VECTOR_BYTES,
    MODEL_DIR,
    NO_LABEL,
    PICO2_FLASH_BYTES,
    REPEAT_MS,
    RP2350_MAIN_SRAM_BYTES,
    RP2350_SRAM_BYTES,
    SDK_RAM_BYTES,
    SDK_STACK_BYTES,
    SOURCE_TEMPLATES,
    TEMPLATE_PACKAGE,
    Pico2ExportError,
)
from tinyaot.targets.pico2.measure import Pico2Sizes, measure_project
from tinyaot.targets.pico2.texts import binary_type_cmake, readme_fields, vectors_c, vectors_h
from tinyaot.targets.templates import fill, read_template
from tinyaot.version import __version__


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
        **_two_cores(cm),
    }
    texts = {f: fill(_template(f), fields) for f in SOURCE_TEMPLATES}
    texts["test_vectors.h"] = vectors_h(name, len(x_q))
    texts["test_vectors.c"] = vectors_c(name, x_q, label_list)
    # Measured on a staged copy, so a project that does not fit leaves nothing half-written behind.
    with tempfile.TemporaryDirectory(prefix="tinyaot-pico2-stage-") as stage:
        cm.c_sources.write(Path(stage) / MODEL_DIR)
        for fname, text in texts.items():
            _write(Path(stage) / fname, text)
        sizes = measure_project(stage, name, cm.c_sources.c_files, vector_bytes=x_q.nbytes + 4 * len(x_q),
                                copy_to_ram=copy_to_ram)
    _check_memory(cm, sizes)
    texts["CMakeLists.txt"] = fill(_template("CMakeLists.txt"), fields | {
        "@STACK_SIZE@": f"0x{sizes.stack.reserved_bytes:x}",
        "@BINARY_TYPE@": binary_type_cmake(cm, sizes, target),
    })
    texts["README.md"] = fill(_template("README.md"), fields | readme_fields(cm, sizes, x_q, expected, label_list))

    out.mkdir(parents=True, exist_ok=True)
    model_files = cm.c_sources.write(out / MODEL_DIR)
    written = [_write(out / fname, text) for fname, text in texts.items()]
    return sorted(written + model_files)


CORE1_LAUNCH = """

#include "pico/multicore.h"

/* The model was compiled for two cores (tinyaot_multicore.h): its init launches core 1 through this, once, into
 * a loop that waits for the split layers' second halves (a mailbox in shared SRAM, DMB + SEV / WFE). Core 1 runs
 * on the SDK's core-1 stack (SCRATCH_X): PICO_CORE1_STACK_SIZE follows PICO_STACK_SIZE, sized for core 0's
 * calls, of which core 1's (a split layer's kernel) are a part. */
int tinyaot_core1_launch(void (*entry)(void))
{
    multicore_launch_core1(entry);
    return 0;
}"""


ONE_CORE_RUN = """
    /* The model was compiled for two cores: the same inputs again on core 0 alone, to compare. */
    uint64_t one_core = 0u;
    int cores = NAME_set_cores(1);
    for (size_t k = 0u; k < APP_N_INPUTS; k++) {
        memcpy(NAME_input(), app_inputs[k], UNAME_INPUT_SIZE);
        uint64_t start = now();
        rc = NAME_invoke();
        one_core += now() - start;
        if (rc != UNAME_OK) {
            (void)NAME_set_cores(2);
            return fail(print, "NAME_invoke", rc);
        }
    }
    cores = NAME_set_cores(2);
    put_u64(print, one_core / APP_N_INPUTS);
    print(" ");
    print(time_unit);
    print(" per inference on one core (mean); the times above used ");
    put_u64(print, (uint64_t)cores);
    print(cores == 2 ? " cores\\n" : " core (no second core started)\\n");"""


def _two_cores(cm) -> dict[str, str]:
    """A model compiled with cores=2: main.c launches core 1 with pico_multicore, and app.c times the inputs on
    both cores and on core 0 alone; one core: nothing added (the templates' text is today's)."""
    if "multicore.c" not in cm.c_sources.files:
        return {"@CORE1@": "", "@MULTICORE_LIB@": "", "@ONE_CORE_RUN@": ""}
    run = ONE_CORE_RUN.replace("UNAME_", f"{cm.name.upper()}_").replace("NAME_", f"{cm.name}_")
    return {"@CORE1@": CORE1_LAUNCH, "@MULTICORE_LIB@": " pico_multicore", "@ONE_CORE_RUN@": run}


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


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


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


