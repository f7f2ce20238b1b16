"""Building for the Cortex-M33: compile, link, and embed the inputs a run feeds the model.

The public pieces (`compile_sources`, `build_program`) are what other targets build on: the Pico 2 app run
links its own main() with the same startup, console and bench code.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

from tinyaot.targets.base import io_copies
from tinyaot.targets.elf import elf_sizes
from tinyaot.targets.m33.config import (
    FLASH_MARGIN,
    HARNESS_TEMPLATE,
    INPUTS_SECTION,
    LINK_FLAGS,
    LINKER_SCRIPT,
    SUPPORT_C_FLAGS,
    SUPPORT_DIR,
    SUPPORT_SOURCES,
    M33BuildError,
)
from tinyaot.targets.objects import compile_objects
from tinyaot.targets.profiles import M33, ToolchainProfile, m33_profile
from tinyaot.targets.templates import fill, read_template


def run_gcc(gcc: Path, args: list[str], cwd: Path) -> None:
    """One arm-none-eabi-gcc call; its full command and output are the error when it fails."""
    cmd = [str(gcc), *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise M33BuildError(
            f"arm-none-eabi-gcc failed (exit {proc.returncode}) in {cwd}:\n"
            f"  {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
        )


def compile_sources(gcc: Path, sources: list[Path], out_dir: Path, flags: list[str]) -> list[Path]:
    """Compile `sources` into `out_dir`; separate dirs keep equal basenames apart. Each source is compiled once per
    content and flags (targets/objects.py): the harness and the kernels every model shares are not compiled again
    for every run."""
    return compile_objects([str(gcc)], flags, sources, out_dir, lambda argv, cwd: run_gcc(Path(argv[0]), argv[1:], cwd))


def compile_support(gcc: Path, obj: Path, profile: ToolchainProfile, extra: tuple[str, ...] = ()) -> list[Path]:
    """The harness's startup, console and bench code (freestanding), compiled with the program's profile."""
    sources = [SUPPORT_DIR / s for s in SUPPORT_SOURCES]
    return compile_sources(gcc, sources, obj / "support",
                           profile.compile_flags(*extra, *SUPPORT_C_FLAGS, f"-I{SUPPORT_DIR}"))


def link(gcc: Path, objects: list[Path], build: Path, stem: str, profile: ToolchainProfile) -> Path:
    """Link `objects` for the profile's core with the an505 linker script into build/<stem>.elf (and its map)."""
    elf = build / f"{stem}.elf"
    run_gcc(gcc, [*profile.cpu, *LINK_FLAGS, "-T", str(SUPPORT_DIR / LINKER_SCRIPT), f"-Wl,-Map={stem}.map",
                  *(str(o) for o in objects), "-o", elf.name], build)
    return elf


def fresh_objects(build: Path) -> Path:
    """build/obj, emptied: no stale objects from an earlier model in this build dir."""
    obj = build / "obj"
    if obj.exists():
        shutil.rmtree(obj)
    return obj


def build_program(
    gcc: Path,
    sources: list[Path],
    build_dir: Path,
    *,
    include_dirs: tuple[Path, ...] = (),
    profile: ToolchainProfile = M33,
    extra_flags: tuple[str, ...] = (),
    elf_name: str = "app",
) -> Path:
    """Link a program that brings its own main() with the harness's startup, console and bench code.

    Every source is compiled with `profile` (default: the M33 with DSP), then `extra_flags`; sources see the
    harness headers (console.h, bench.h, semihost.h). Returns the ELF.
    """
    build = Path(build_dir).resolve()
    obj = fresh_objects(build)
    incs = [f"-I{Path(d).resolve()}" for d in include_dirs] + [f"-I{SUPPORT_DIR}"]
    objects = compile_support(gcc, obj, profile, extra_flags)
    for i, group in enumerate(_by_directory(sources)):
        objects += compile_sources(gcc, group, obj / f"src{i}", profile.compile_flags(*extra_flags, *incs))
    return link(gcc, objects, build, elf_name, profile)


def _by_directory(sources: list[Path]) -> list[list[Path]]:
    """One group per source directory (one object dir each keeps equal basenames apart), in path order."""
    by_dir: dict[Path, list[Path]] = {}
    for src in sources:
        src = Path(src).resolve()
        by_dir.setdefault(src.parent, []).append(src)
    return [group for _, group in sorted(by_dir.items())]


# --- run_m33's harness: the model, a generated main() and the embedded inputs --------------------------------


def compile_model(
    gcc: Path,
    model_dir: Path,
    name: str,
    build: Path,
    sizes: tuple,
    dsp: bool,
    profile: bool = False,
) -> list[Path]:
    """The model's .c files, the harness and its main() for `sizes` = (input bytes, output bytes[, each
    input's bytes, each output's bytes])."""
    obj = fresh_objects(build)
    build.mkdir(parents=True, exist_ok=True)
    main_c = build / "main.c"
    main_c.write_text(harness_main(name, *sizes))
    core = m33_profile(dsp)
    model_inc, support_inc = f"-I{model_dir}", f"-I{SUPPORT_DIR}"
    model_flags = core.compile_flags(model_inc, *profile_flags(name, profile))
    return [
        *compile_sources(gcc, sorted(model_dir.glob("*.c")), obj / "model", model_flags),
        *compile_support(gcc, obj, core),
        *compile_sources(gcc, [main_c], obj / "main", core.compile_flags(*SUPPORT_C_FLAGS, support_inc, model_inc)),
    ]


def harness_main(name: str, input_size: int, output_size: int, input_sizes: tuple[int, ...] = (),
                 output_sizes: tuple[int, ...] = ()) -> str:
    """run_m33's main.c for one model, from the harness_main.c template. A model with several inputs (outputs)
    gets each at its index, back to back in the embedded rows (printed lines)."""
    ins, outs = input_sizes or (input_size,), output_sizes or (output_size,)
    fields = {"@NAME@": name, "@UNAME@": name.upper(), "@INPUT_SIZE@": str(sum(ins)),
              "@OUTPUT_SIZE@": str(sum(outs)), "@SIZE_CHECKS@": "\n".join(_size_checks(name, ins, outs)),
              "@COPY_IN@": "\n        ".join(io_copies(name, ins, "input", "row")),
              "@PRINT_OUT@": "\n        ".join(_prints(name, outs))}
    return fill(read_template(("targets", "m33"), HARNESS_TEMPLATE), fields)


def _size_checks(name: str, ins: tuple[int, ...], outs: tuple[int, ...]) -> list[str]:
    """#error if the header's sizes are not the ones the rows were packed with."""
    lines = []
    for kind, sizes in (("INPUT", ins), ("OUTPUT", outs)):
        numbered = len(ins) > 1 or len(outs) > 1
        for i, size in enumerate(sizes):
            macro = f"{name.upper()}_{kind}{i if numbered else ''}_SIZE"
            lines += [f"#if {macro} != {size}",
                      f'#error "run_m33 packed {size} bytes for {kind.lower()} {i}, but {name}.h declares another '
                      f'{macro}"', "#endif"]
    return lines


def _prints(name: str, outs: tuple[int, ...]) -> list[str]:
    if len(outs) == 1:
        return [f"console_put_hex_bytes({name}_output(), {outs[0]}u);"]
    return [f"console_put_hex_bytes({name}_output({i}u), {size}u);" for i, size in enumerate(outs)]


def profile_flags(name: str, profile: bool) -> list[str]:
    """Profiling builds call tinyaot_profile_step after every kernel (the model's <NAME>_PROFILE_STEP hook)."""
    if not profile:
        return []
    hook = f"-D{name.upper()}_PROFILE_STEP(step)=tinyaot_profile_step(step)"
    return ["-include", str(SUPPORT_DIR / "profile.h"), hook]


def link_with_inputs(gcc: Path, objects: list[Path], samples: np.ndarray, build: Path, stem: str,
                     dsp: bool) -> Path:
    """Link the objects with `samples` embedded in flash as the harness's inputs."""
    inputs_dir = build / "obj" / "inputs"  # .incbin resolves against the assembler's cwd
    inputs_dir.mkdir(parents=True, exist_ok=True)
    (inputs_dir / "inputs.bin").write_bytes(samples.tobytes())
    (inputs_dir / "inputs.S").write_text(inputs_asm(len(samples)))
    core = m33_profile(dsp)
    inputs_obj = compile_sources(gcc, [inputs_dir / "inputs.S"], inputs_dir, list(core.cpu))
    return link(gcc, [*objects, *inputs_obj], build, stem, core)


def inputs_per_run(probe_elf: Path, input_size: int, flash_bytes: int) -> int:
    """How many samples fit in the flash the model image (linked without inputs) leaves free."""
    text, data, _ = elf_sizes(probe_elf, skip=(INPUTS_SECTION,))
    free = flash_bytes - text - data - FLASH_MARGIN
    if free < input_size:
        raise M33BuildError(
            f"the model image ({text + data} bytes) leaves no room in the "
            f"{flash_bytes // 1024} KiB flash for one {input_size}-byte input"
        )
    return free // input_size


def inputs_asm(count: int) -> str:
    """The inputs as an assembler file: .incbin keeps big batches fast to build (no C initialiser to parse)."""
    return f"""\
/* Generated by tinyaot.targets.m33: the samples main.c runs, in flash. */
    .section {INPUTS_SECTION},"a",%progbits
    .balign 16
    .global tinyaot_inputs
    .type tinyaot_inputs, %object
tinyaot_inputs:
    .incbin "inputs.bin"
    .size tinyaot_inputs, . - tinyaot_inputs
    .balign 4
    .global tinyaot_n_inputs
    .type tinyaot_n_inputs, %object
tinyaot_n_inputs:
    .word {count}
    .size tinyaot_n_inputs, 4
"""
