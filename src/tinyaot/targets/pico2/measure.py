"""What a Pico 2 project takes, measured when it is written: the model's code, app.c's, and the stack it needs.

Needs arm-none-eabi-gcc alone (no SDK, no QEMU): the model and app.c are compiled with the RP2350 profile and
`-fcallgraph-info=su`, which gives every function's stack frame and callees (targets/callgraph.py). The model's
code is what is reachable from its entry points (what the linker keeps with --gc-sections), its stack the worst
call path of one inference. The SDK's share (runtime size, printf and interrupt stack) are figures measured with
Pico SDK 2.2.0 (config.py); tests/test_pico_sdk.py checks them against real SDK builds.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tinyaot.targets.callgraph import CallGraph, CallGraphError
from tinyaot.targets.elf import matching_section_bytes
from tinyaot.targets.objects import compile_objects
from tinyaot.targets.pico2.config import (
    LIBRARY_CALL_BYTES,
    MODEL_DIR,
    SDK_COPY_TO_RAM_BYTES,
    SDK_DEFAULT_STACK_BYTES,
    SDK_FLASH_BYTES,
    SDK_RAM_BYTES,
    SDK_STACK_BYTES,
    STACK_ROUND_BYTES,
    UNMEASURED_STACK_BYTES,
    Pico2ExportError,
)
from tinyaot.targets.profiles import RP2350
from tinyaot.targets.toolchain import find_arm_gcc


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
    flags = RP2350.compile_flags("-fcallgraph-info=su", f"-I{project}", f"-I{project / MODEL_DIR}")
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
    """Compile `sources` in `out_dir` (objects and .ci call graphs land there); returns the objects. A compiler
    that cannot is a Pico2ExportError: the project is then written unmeasured."""
    return compile_objects([str(gcc)], flags, sources, out_dir, lambda argv, cwd: _run_gcc(argv, cwd, sources))


def _run_gcc(argv: list[str], cwd: Path, sources: list[Path]) -> None:
    gcc = Path(argv[0])
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        if "callgraph-info" in proc.stderr:
            raise Pico2ExportError(f"{gcc.name} does not support -fcallgraph-info (GCC 10 or newer does)")
        errors = [line for line in proc.stderr.splitlines() if "error:" in line] or proc.stderr.splitlines()[:1]
        first = re.sub(r"^\S*/", "", errors[0]) if errors else f"exit {proc.returncode}"  # one line, no temp path
        raise Pico2ExportError(f"{gcc.name} could not compile {', '.join(s.name for s in sources)} ({first})")
