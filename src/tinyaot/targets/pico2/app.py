"""The Pico 2 app on QEMU: a written project's app.c, test vectors and model, compiled with the RP2350 profile and
linked with a QEMU board layer (semihosting, instruction-count timer) instead of main.c, so the tests run what the
board runs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tinyaot.targets.callgraph import CallGraph
from tinyaot.targets.m33 import ICOUNT_SHIFT, build_program, elf_sizes, run_elf
from tinyaot.targets.pico2.app_output import AppRun, parse_app
from tinyaot.targets.pico2.config import (
    APP_SOURCES,
    APP_TIMER_CALLBACKS,
    LIBRARY_CALL_BYTES,
    MODEL_DIR,
    TEMPLATE_PACKAGE,
    Pico2ExportError,
)
from tinyaot.targets.profiles import RP2350
from tinyaot.targets.templates import fill, read_template
from tinyaot.targets.toolchain import find_m33_toolchain

# What the app's build adds to the RP2350 profile: warnings as errors, and the call graph of its stack bound.
APP_FLAGS = ("-Wall", "-Wextra", "-Werror", "-fcallgraph-info=su")


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
        project, model = _project_dirs(project_dir)
        build = Path(self.build_dir).resolve() if self.build_dir is not None else project / "build_qemu"
        build.mkdir(parents=True, exist_ok=True)
        board = build / "board_qemu.c"
        board_c = read_template(TEMPLATE_PACKAGE, "board_qemu.c")
        board.write_text(fill(board_c, {"@ICOUNT_SHIFT@": str(ICOUNT_SHIFT)}))
        sources = [board, *(project / s for s in APP_SOURCES), *sorted(model.glob("*.c"))]
        elf = build_program(find_m33_toolchain().gcc, sources, build, include_dirs=(project, model),
                            profile=RP2350, extra_flags=APP_FLAGS, elf_name="app")
        graph = CallGraph.read(sorted(build.glob("obj/**/*.ci")))
        bound = graph.worst_path("app_run", indirect=APP_TIMER_CALLBACKS, leaf_bytes=LIBRARY_CALL_BYTES)
        return Pico2AppBuild(elf, bound.bytes)

    def run(self, artifact: Pico2AppBuild, inputs: np.ndarray | None = None) -> AppRun:
        """Run the app on QEMU and parse what app.c printed."""
        if inputs is not None:
            raise Pico2ExportError("the Pico 2 app runs the test vectors embedded in its project; export the "
                                   "project with inputs= to run others")
        stdout = run_elf(find_m33_toolchain().qemu, artifact.path, self.timeout)
        return parse_app(stdout, artifact.path, elf_sizes(artifact.path), artifact.stack_bound)


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


