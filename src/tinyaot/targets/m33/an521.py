"""Two Cortex-M33 cores: QEMU ``mps2-an521`` (Arm's SSE-200 subsystem), and each core's instruction count.

The image is the an505 one (the same memory map: code in SSRAM1's Secure alias, data and core 0's stack in
SSRAM2+3) plus an521.c: core 1 is held at reset by the SSE-200 system control's CPUWAIT; `tinyaot_core1_launch`
points its INITSVTOR1 at a vector table of its own (its own stack) and releases it. Under ``-icount`` QEMU runs
the two vCPUs in turn on one thread, so a run is deterministic; the timer then counts both cores' instructions
together, so each core's count comes from a TCG plugin (core_count_plugin.c) that counts per vCPU and writes
the count at every call of ``tinyaot_core_mark``.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from elftools.elf.elffile import ELFFile

from tinyaot.targets.host import build_shared_library
from tinyaot.targets.m33.build import build_program
from tinyaot.targets.m33.config import SUPPORT_DIR, M33RunError
from tinyaot.targets.m33.mix import plugin_api
from tinyaot.targets.m33.qemu import run_elf
from tinyaot.targets.profiles import M33, ToolchainProfile

MACHINE = "mps2-an521"
CORE1_SOURCE = SUPPORT_DIR / "an521.c"
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
    return build_shared_library({"core_count.c": (SUPPORT_DIR / PLUGIN_SOURCE).read_text()}, "core_count",
                                ["-fvisibility=hidden", f"-DQEMU_PLUGIN_API={plugin_api(qemu)}"])


@dataclass(frozen=True)
class CoreCounts:
    """What the plugin saw: each core's running instruction count at each of its marks, in order, and its total."""

    marks: dict[int, list[int]]
    totals: dict[int, int]

    def core(self, vcpu: int) -> list[int]:
        return self.marks.get(vcpu, [])


def read_counts(path: Path) -> CoreCounts:
    marks: dict[int, list[int]] = {}
    totals: dict[int, int] = {}
    ended = False
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["M"] and len(parts) == 4:
            marks.setdefault(int(parts[1]), []).append(int(parts[3]))
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


def run_two_cores(qemu: Path, elf: Path, timeout: float = 120.0) -> tuple[str, CoreCounts]:
    """Run `elf` on mps2-an521 under the core-count plugin: what the guest printed, and each core's counts."""
    out = elf.with_suffix(".cores")
    opts = [str(build_plugin(qemu)), f"out={out}", f"mark=0x{function_address(elf, MARK_FUNCTION):x}"]
    stdout = run_elf(qemu, elf, timeout, ["-plugin", ",".join(o.replace(",", ",,") for o in opts)], MACHINE)
    return stdout, read_counts(out)
