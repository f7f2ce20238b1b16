"""The Cortex-M33 target behind the common interface: build a model's objects once, run batches through them.

`M33Target.build` compiles the model with the harness and links a probe image to learn how many inputs fit in
the flash; `M33Target.run` links the inputs in (several images when they do not fit in one) and runs each on
QEMU.  `run_m33` and `build_and_run_m33` are the one-call forms.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from tinyaot.targets.base import ModelSources, RunResult
from tinyaot.targets.elf import ImageSizes
from tinyaot.targets.elf import elf_sizes as _image_sizes
from tinyaot.targets.m33 import mix as insn_mix
from tinyaot.targets.m33.build import (
    build_program,
    compile_model,
    inputs_per_run,
    link_with_inputs,
)
from tinyaot.targets.m33.config import (
    C_FLAGS,
    FLASH_BYTES,
    INPUTS_SECTION,
    M33InputError,
    M33RunError,
)
from tinyaot.targets.m33.mix import InstructionMix
from tinyaot.targets.m33.qemu import guest_output, run_elf
from tinyaot.targets.m33.report import GuestReport, parse_report
from tinyaot.targets.profiles import M33
from tinyaot.targets.toolchain import M33Toolchain, find_m33_toolchain

_NAME_RE = re.compile(r"[a-z_][a-z0-9_]*\Z")


@dataclass(frozen=True)
class M33Result(RunResult):
    """What one run on the emulated Cortex-M33 measured.

    `instructions` is one inference (the first input), net of the empty-region calibration; `stack_bytes` its
    high-water mark below the caller's SP; `sizes` the image's flash (code + rodata, harness included, embedded
    inputs excluded), initialised RAM and zeroed RAM (the model's static arena included).
    """

    elf_path: Path | None = None
    step_instructions: dict[int, int] | None = None  # profile=True: generated step index -> instructions
    step_mix: dict[int, InstructionMix] | None = None  # mix=True: generated step index -> its instruction mix


@dataclass(frozen=True)
class M33Build:
    """A model compiled with the harness: the objects every run links its inputs to."""

    path: Path  # the probe image (no inputs)
    toolchain: M33Toolchain
    objects: tuple[Path, ...]
    build_dir: Path
    name: str
    input_size: int
    output_size: int
    inputs_per_run: int  # how many inputs one image holds
    dsp: bool


@dataclass(frozen=True)
class M33Target:
    """arm-none-eabi-gcc + QEMU mps2-an505 with -icount: exact outputs, instructions and stack.

    `dsp=False` builds for an M33 without the DSP extension (the portable C kernels); `profile=True` adds a
    timestamp after every kernel (`M33Result.step_instructions`); `mix=True` (with profile) also counts what
    kinds of instructions each kernel executed, running the measured image under a QEMU plugin
    (`M33Result.step_mix`, see mix.py; needs a host C compiler); `timeout` applies to each QEMU run;
    `build_dir` defaults to <model dir>/build_m33; `flash_bytes` bounds the inputs one image holds.
    """

    name = "m33"
    dsp: bool = True
    profile: bool = False
    timeout: float = 120.0
    build_dir: Path | None = None
    flash_bytes: int = FLASH_BYTES
    mix: bool = False

    def __post_init__(self):
        if self.mix and not self.profile:
            raise M33InputError("M33Target(mix=True) needs profile=True: the mix is counted per profiled step")

    def build(self, sources: ModelSources) -> M33Build:
        """Compile the model where `sources.directory` holds it, or, held only in memory, in build_dir/model."""
        model_dir = self._model_dir(sources)
        _check_model(model_dir, sources.name)
        # Absolute, because gcc runs in several subdirectories of it.
        build = Path(self.build_dir).resolve() if self.build_dir is not None else model_dir / "build_m33"
        tc = find_m33_toolchain()
        objects = compile_model(tc.gcc, model_dir, sources.name, build, (sources.input_size, sources.output_size,
                                                                         sources.input_sizes, sources.output_sizes),
                                self.dsp, self.profile)
        probe = link_with_inputs(tc.gcc, objects, np.zeros((0, sources.input_size), np.int8), build,
                                 f"{sources.name}_probe", self.dsp)
        per_run = inputs_per_run(probe, sources.input_size, self.flash_bytes)
        return M33Build(probe, tc, tuple(objects), build, sources.name, sources.input_size, sources.output_size,
                        per_run, self.dsp)

    def run(self, artifact: M33Build, inputs: np.ndarray) -> M33Result:
        """Run `inputs` (int8, one row per sample) through the build; the first one is measured."""
        samples = as_samples(inputs, artifact.input_size)
        step = artifact.inputs_per_run
        chunks = [samples[i : i + step] for i in range(0, len(samples), step)]
        elf = self._link(artifact, chunks[0], artifact.name)
        first, step_mix = (self._run_mix(artifact, elf, len(chunks[0])) if self.mix
                           else (self._run(artifact, elf, len(chunks[0])), None))
        outputs = [first.outputs]
        for chunk in chunks[1:]:
            batch_elf = self._link(artifact, chunk, f"{artifact.name}_batch")
            outputs.append(self._run(artifact, batch_elf, len(chunk)).outputs)
        return M33Result(outputs=np.concatenate(outputs), instructions=first.instructions,
                         stack_bytes=first.stack_bytes, sizes=elf_sizes(elf), elf_path=elf,
                         step_instructions=first.step_instructions(), step_mix=step_mix)

    def _model_dir(self, sources: ModelSources) -> Path:
        if sources.directory is not None:
            return Path(sources.directory).resolve()
        if self.build_dir is None:
            raise M33InputError(f"model '{sources.name}' is held in memory only: give M33Target a build_dir")
        model_dir = Path(self.build_dir).resolve() / "model"
        model_dir.mkdir(parents=True, exist_ok=True)
        for fname, text in sources.texts().items():
            (model_dir / fname).write_text(text)
        return model_dir

    def _link(self, artifact: M33Build, samples: np.ndarray, stem: str) -> Path:
        return link_with_inputs(artifact.toolchain.gcc, list(artifact.objects), samples, artifact.build_dir, stem,
                                artifact.dsp)

    def _run(self, artifact: M33Build, elf: Path, n_inputs: int, extra: tuple[str, ...] = ()) -> GuestReport:
        stdout = run_elf(artifact.toolchain.qemu, elf, self.timeout, extra)
        try:
            return parse_report(stdout, n_inputs, artifact.output_size)
        except (M33RunError, ValueError) as exc:
            raise M33RunError(f"{elf.name}: {exc}\n{guest_output(stdout)}") from exc

    def _run_mix(self, artifact: M33Build, elf: Path, n_inputs: int) -> tuple[GuestReport, dict]:
        """The run under the instruction-mix plugin: its report, and each profiled step's mix."""
        dis = insn_mix.disassemble(insn_mix.find_objdump(artifact.toolchain.gcc), elf)
        counts = artifact.build_dir / f"{elf.stem}.mix"
        plugin = insn_mix.plugin_args(insn_mix.build_plugin(artifact.toolchain.qemu), counts, dis.timer_reads)
        try:
            report = self._run(artifact, elf, n_inputs, tuple(plugin))
        except M33RunError as exc:
            if "plugin" not in str(exc):
                raise
            raise M33RunError(f"the instruction mix needs a qemu-system-arm with TCG plugins (QEMU 4.2 or "
                              f"later, built with --enable-plugins as Debian's is): {exc}") from None
        steps = [step for step, _ in report.marks]
        return report, insn_mix.step_mixes(insn_mix.read_segments(counts), dis, steps, report.step_instructions())


def elf_sizes(elf: Path) -> ImageSizes:
    """Berkeley-style (text, data, bss) of an ELF, leaving out the embedded inputs."""
    return _image_sizes(elf, skip=(INPUTS_SECTION,))


def run_m33(
    model_dir: Path,
    name: str,
    inputs: np.ndarray,
    output_size: int,
    *,
    build_dir: Path | None = None,
    timeout: float = 120.0,
    dsp: bool = True,
    profile: bool = False,
    input_sizes: tuple[int, ...] = (),
    output_sizes: tuple[int, ...] = (),
) -> M33Result:
    """Build the model in `model_dir` for Cortex-M33, run `inputs` through it on QEMU (M33Target's options).

    `inputs` is int8 with one row per sample (extra dimensions are flattened). A model with several inputs
    (outputs) takes each row as its inputs back to back, of `input_sizes` bytes (and answers likewise).
    """
    samples = as_samples(inputs)
    target = M33Target(dsp=dsp, profile=profile, timeout=timeout, build_dir=build_dir)
    sources = replace(ModelSources.in_directory(model_dir, name, samples.shape[1], output_size),
                      input_sizes=tuple(input_sizes), output_sizes=tuple(output_sizes))
    return target.run(target.build(sources), samples)


def build_and_run_m33(
    sources: list[Path],
    build_dir: Path,
    *,
    include_dirs: tuple[Path, ...] = (),
    cpu_flags: tuple[str, ...] | None = None,
    c_flags: tuple[str, ...] = C_FLAGS,
    elf_name: str = "app",
    timeout: float = 120.0,
) -> tuple[str, Path]:
    """Build a program that brings its own main() (see build.build_program) and run it on QEMU.

    Returns what the guest printed and the ELF; raises M33BuildError / M33RunError as run_m33 does.
    """
    tc = find_m33_toolchain()
    profile = M33.derived("m33-program", cpu=M33.cpu if cpu_flags is None else tuple(cpu_flags), c_flags=tuple(c_flags))
    elf = build_program(tc.gcc, sources, build_dir, include_dirs=include_dirs, profile=profile, elf_name=elf_name)
    return run_elf(tc.qemu, elf, timeout), elf


def _check_model(model_dir: Path, name: str) -> None:
    if not _NAME_RE.match(name):
        raise M33InputError(f"model name {name!r} is not a lowercase C identifier")
    if not (model_dir / f"{name}.h").is_file():
        raise M33InputError(f"{model_dir / (name + '.h')} does not exist")
    if not any(model_dir.glob("*.c")):
        raise M33InputError(f"no .c files in {model_dir}")


def as_samples(inputs: np.ndarray, input_size: int | None = None) -> np.ndarray:
    """One contiguous int8 row per sample; refuses silent casts from other dtypes and rows of another size."""
    arr = np.asarray(inputs)
    if arr.dtype != np.int8:
        raise M33InputError(f"inputs must be int8, got {arr.dtype}")
    if arr.ndim < 2 or arr.shape[0] == 0 or arr[0].size == 0:
        raise M33InputError(f"inputs must have shape (n >= 1, input_size, ...), got {arr.shape}")
    rows = np.ascontiguousarray(arr.reshape(arr.shape[0], -1))
    if input_size is not None and rows.shape[1] != input_size:
        raise M33InputError(f"inputs have {rows.shape[1]}-byte rows; this build takes {input_size}-byte rows")
    return rows
