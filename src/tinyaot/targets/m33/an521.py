"""Two Cortex-M33 cores: QEMU ``mps2-an521`` (Arm's SSE-200 subsystem), and each core's instruction count.

The image is the an505 one (the same memory map: code in SSRAM1's Secure alias, data and core 0's stack in
SSRAM2+3) plus an521.c: core 1 is held at reset by the SSE-200 system control's CPUWAIT; `tinyaot_core1_launch`
points its INITSVTOR1 at a vector table of its own (its own stack) and releases it. Under ``-icount`` QEMU runs
the two vCPUs in turn on one thread, so a run is deterministic; the timer then counts both cores' instructions
together, so each core's count comes from a TCG plugin (core_count_plugin.c) that counts per vCPU and writes
the count at every call of ``tinyaot_core_mark``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from elftools.elf.elffile import ELFFile

from tinyaot.targets.host import build_shared_library
from tinyaot.targets.m33.build import (
    build_program,
    compile_sources,
    compile_support,
    fresh_objects,
    harness_main,
    link_with_inputs,
)
from tinyaot.targets.m33.config import SUPPORT_C_FLAGS, SUPPORT_DIR, M33RunError
from tinyaot.targets.m33.mix import plugin_api
from tinyaot.targets.m33.qemu import guest_output, run_elf
from tinyaot.targets.m33.report import parse_report
from tinyaot.targets.profiles import M33, ToolchainProfile, m33_profile
from tinyaot.targets.toolchain import find_m33_toolchain

MACHINE = "mps2-an521"
# QEMU's SSE-200 gives core 0 neither FPU nor DSP extension by default (CPU0_FPU / CPU0_DSP false, CPU1's true:
# hw/arm/armsse.c): both cores here are the RP2350's, with both.
CORE0_AS_RP2350 = ("-global", "sse-200.CPU0_FPU=on", "-global", "sse-200.CPU0_DSP=on")
CORE1_SOURCE = SUPPORT_DIR / "an521.c"
PLUGIN_API_HEADER = "qemu_plugin_api.h"  # the plugin API declarations both plugins include
PLUGIN_SOURCE = "core_count_plugin.c"
MARK_FUNCTION = "tinyaot_core_mark"


def multicore_include() -> Path:
    """The folder of tinyaot_multicore.h (the two-core contract the models and the harness share)."""
    return Path(str(resources.files("tinyaot").joinpath("c", "include")))


def build_two_core_program(gcc: Path, sources: list[Path], build_dir: Path, *, include_dirs: tuple[Path, ...] = (),
                           profile: ToolchainProfile = M33, elf_name: str = "app") -> Path:
    """build.build_program with core 1's launch and the mark function (an521.c) linked in."""
    return build_program(gcc, [*sources, CORE1_SOURCE], build_dir, include_dirs=(*include_dirs, multicore_include()),
                         profile=profile, elf_name=elf_name)


def build_plugin(qemu: Path) -> Path:
    """core_count_plugin.c as a host shared library for this QEMU (cached by the host build cache)."""
    files = {"core_count.c": (SUPPORT_DIR / PLUGIN_SOURCE).read_text(),
             PLUGIN_API_HEADER: (SUPPORT_DIR / PLUGIN_API_HEADER).read_text()}
    return build_shared_library(files, "core_count",
                                ["-fvisibility=hidden", f"-DQEMU_PLUGIN_API={plugin_api(qemu)}"])


@dataclass(frozen=True)
class CoreCounts:
    """What the plugin saw: each core's marks in order, (the mark's address, its running instruction count), and
    each core's total."""

    marks: dict[int, list[tuple[int, int]]]
    totals: dict[int, int]

    def core(self, vcpu: int) -> list[int]:
        return [count for _, count in self.marks.get(vcpu, [])]


def read_counts(path: Path) -> CoreCounts:
    marks: dict[int, list[tuple[int, int]]] = {}
    totals: dict[int, int] = {}
    ended = False
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["M"] and len(parts) == 4:
            marks.setdefault(int(parts[1]), []).append((int(parts[2], 16), int(parts[3])))
        elif parts[:1] == ["T"] and len(parts) == 3:
            totals[int(parts[1])] = int(parts[2])
        elif parts == ["E"]:
            ended = True
    if not ended:
        raise M33RunError(f"the core-count plugin's output {path} is incomplete (QEMU stopped early?)")
    return CoreCounts(marks, totals)


def function_address(elf: Path, name: str) -> int:
    """The address of a function's first instruction (Thumb bit cleared)."""
    with open(elf, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        for sym in symtab.iter_symbols() if symtab is not None else ():
            if sym.name == name and sym["st_info"]["type"] == "STT_FUNC":
                return sym["st_value"] & ~1
    raise M33RunError(f"{elf.name} has no function {name}")


def run_two_cores(qemu: Path, elf: Path, timeout: float = 120.0,
                  marks: tuple[str, ...] = (MARK_FUNCTION,)) -> tuple[str, CoreCounts]:
    """Run `elf` on mps2-an521 under the core-count plugin (marks: the functions whose entry is a mark): what the
    guest printed, and each core's counts."""
    out = elf.with_suffix(".cores")
    opts = [str(build_plugin(qemu)), f"out={out}", *(f"mark=0x{function_address(elf, m):x}" for m in marks)]
    plugin = ["-plugin", ",".join(o.replace(",", ",,") for o in opts)]
    stdout = run_elf(qemu, elf, timeout, [*CORE0_AS_RP2350, *plugin], MACHINE)
    return stdout, read_counts(out)


# ---- a compiled model on both cores: the harness's main (harness_main.c), marks at every step ----------------


@dataclass(frozen=True)
class StepCounts:
    """One generated step of the measured inference: core 0's instructions (for a split layer its part, the post
    included, and its wait at the barrier apart), core 1's part (the handshake's finish included)."""

    step: int
    job: int | None  # the split layer's job number, None for a layer core 0 runs alone
    core0: int
    core1: int = 0
    wait: int = 0  # core 0 at the barrier: the join's own instructions and any spinning


@dataclass(frozen=True)
class TwoCoreRun:
    outputs: np.ndarray
    steps: tuple[StepCounts, ...]
    join: int  # the barrier's cost when core 1 is already done: the least any split step waited (an upper bound)
    core1_stack_bytes: int  # core 1's stack region (an521.c)

    @property
    def critical_path(self) -> int:
        """The sum over steps of the slower core, plus the barrier at each split step."""
        return sum(s.core0 if s.job is None else max(s.core0, s.core1) + self.join for s in self.steps)

    @property
    def core_instructions(self) -> tuple[int, int]:
        return (sum(s.core0 + s.wait for s in self.steps), sum(s.core1 for s in self.steps))


_STEP = re.compile(r"(?:_split\(arena, (\d+)\);[^\n]*\n\s*)?[A-Z0-9_]+_PROFILE_STEP\((\d+)\);")
CORE1_STACK_BYTES = 16384


def invoke_steps(c_source: str) -> list[tuple[int, int | None]]:
    """(step, job or None) of every PROFILE_STEP in a generated model's invoke, in order."""
    return [(int(m.group(2)), None if m.group(1) is None else int(m.group(1))) for m in _STEP.finditer(c_source)]


def run_model_two_cores(model_dir: Path, name: str, inputs: np.ndarray, output_size: int, build_dir: Path,
                        timeout: float = 300.0, input_sizes: tuple[int, ...] = (),
                        output_sizes: tuple[int, ...] = ()) -> TwoCoreRun:
    """Build a cores=2 model (its C in `model_dir`) with the harness for mps2-an521 and run `inputs` through it:
    the outputs, and each step's instructions on each core for the first inference. A model with several inputs
    (outputs) takes each row as its inputs back to back, of `input_sizes` bytes (and answers likewise), as
    run_m33."""
    tc = find_m33_toolchain()
    model_dir, build = Path(model_dir).resolve(), Path(build_dir).resolve()
    samples = np.ascontiguousarray(np.asarray(inputs, dtype=np.int8).reshape(len(inputs), -1))
    obj = fresh_objects(build)
    build.mkdir(parents=True, exist_ok=True)
    (build / "main.c").write_text(harness_main(name, samples.shape[1], output_size, tuple(input_sizes),
                                               tuple(output_sizes)))
    core = m33_profile(True)
    hooks = [f"-D{name.upper()}_PROFILE_{h}(x)=tinyaot_core_mark()" for h in ("STEP", "PART", "CORE1")]
    model_flags = core.compile_flags(f"-I{model_dir}", "-include", str(SUPPORT_DIR / "core_mark.h"), *hooks)
    objects = [*compile_sources(tc.gcc, sorted(model_dir.glob("*.c")), obj / "model", model_flags),
               *compile_support(tc.gcc, obj, core),
               *compile_sources(tc.gcc, [CORE1_SOURCE], obj / "core1",
                                core.compile_flags(*SUPPORT_C_FLAGS, f"-I{multicore_include()}")),
               *compile_sources(tc.gcc, [build / "main.c"], obj / "main",
                                core.compile_flags(*SUPPORT_C_FLAGS, f"-I{SUPPORT_DIR}", f"-I{model_dir}"))]
    elf = link_with_inputs(tc.gcc, objects, samples, build, name, True)
    stdout, counts = run_two_cores(tc.qemu, elf, timeout, (MARK_FUNCTION, "bench_begin", "bench_end"))
    try:
        report = parse_report(stdout, len(samples), output_size)
    except (M33RunError, ValueError) as exc:
        raise M33RunError(f"{elf.name}: {exc}\n{guest_output(stdout)}") from exc
    steps = invoke_steps((model_dir / f"{name}.c").read_text())
    return TwoCoreRun(report.outputs, _step_counts(elf, counts, steps), _join(counts, elf, steps), CORE1_STACK_BYTES)


def _window(elf: Path, counts: CoreCounts) -> list[int]:
    """Core 0's counts from the measured inference's bench_begin mark to its bench_end mark (the harness's
    other bench_begin / bench_end pair, its empty calibration, has no marks between)."""
    begin, end = function_address(elf, "bench_begin"), function_address(elf, "bench_end")
    marks = counts.marks.get(0, [])
    windows = []
    for i, (a, _) in enumerate(marks):
        if a == begin:
            last = next((j for j in range(i + 1, len(marks)) if marks[j][0] == end), None)
            if last is not None:
                windows.append([c for _, c in marks[i:last + 1]])
    if not windows:
        raise M33RunError("the two-core run marked no measured inference on core 0")
    return max(windows, key=len)


def _step_counts(elf: Path, counts: CoreCounts, steps) -> tuple[StepCounts, ...]:
    core0 = _window(elf, counts)
    core1 = counts.core(1)
    out, k = [], 1
    for step, job in steps:
        if job is None:
            out.append(StepCounts(step, None, core0[k] - core0[k - 1]))
            k += 1
            continue
        begin, end = core1[2 * job], core1[2 * job + 1]
        out.append(StepCounts(step, job, core0[k] - core0[k - 1], end - begin, core0[k + 1] - core0[k]))
        k += 2
    if k != len(core0) - 1:
        raise M33RunError(f"the two-core run marked {len(core0)} points on core 0; its {len(steps)} steps need {k + 1}")
    return tuple(out)


def _join(counts: CoreCounts, elf: Path, steps) -> int:
    waits = [s.wait for s in _step_counts(elf, counts, steps) if s.job is not None]
    return min(waits) if waits else 0
