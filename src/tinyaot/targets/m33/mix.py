"""The instruction mix of a profiling run: of the instructions each op executed, how many were loads, stores,
multiplies, branches (and how many of those were taken) and others.

QEMU runs the profiling image with a TCG plugin (insn_mix_plugin.c, built for the host) that counts the
executions of every guest instruction, and how often each one did not fall through to the next instruction in
memory, in segments closed by the harness's timer reads.  The segments are therefore exactly the windows whose
timer differences give the per-op instruction counts, and each op's mix is its window's counts less those of the
back-to-back calibration window, as the per-op count is (harness_main.c, report.GuestReport).  Instructions are
classified by their mnemonic in the ELF's disassembly (arm-none-eabi-objdump).  Nothing is estimated: a mix that
does not add up to the op's instruction count from the timer is an error.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, fields
from pathlib import Path

from tinyaot.targets.host import build_shared_library
from tinyaot.targets.m33.config import SUPPORT_DIR, M33RunError
from tinyaot.targets.toolchain import INSTALL_HINT, ToolchainMissing

PLUGIN_API_HEADER = "qemu_plugin_api.h"  # the plugin API declarations both plugins include
PLUGIN_SOURCE = "insn_mix_plugin.c"
TIMER_READERS = ("bench_begin", "bench_end", "bench_now")  # bench.c: each reads TIMER0's VALUE register once


@dataclass(frozen=True)
class InstructionMix:
    """Executed instructions by kind; loads + stores + macs + branches + other is the total.

    loads / stores: every LDR*/LDM/POP/VLDR/VLDM (STR*/STM/PUSH/...); multi_loads / multi_stores: those of them
    that move more than one register (LDRD, LDM, POP, VLDM ... with two or more registers; cost 1 + N cycles on the
    core). macs: multiplies and multiply-accumulates (MUL, MLA, SMLAD, SMLAL, SMMUL*, SMUL*, UMULL, VMUL, VFMA ...).
    branches: instructions that may write the PC (B, BL, BX, BLX, CBZ, CBNZ, TBB, TBH, POP/LDM with PC, LDR PC);
    taken: how many of those executions changed the flow (a refill of the pipeline). other: the rest (ALU, moves,
    compares, IT, saturation, division, ...)."""

    loads: int = 0
    multi_loads: int = 0
    stores: int = 0
    multi_stores: int = 0
    macs: int = 0
    branches: int = 0
    taken: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        return self.loads + self.stores + self.macs + self.branches + self.other

    def __add__(self, other: InstructionMix) -> InstructionMix:
        return InstructionMix(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: InstructionMix) -> InstructionMix:
        return InstructionMix(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# ---- classifying an instruction by its mnemonic -------------------------------------------------------------

_COND = "(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?"
_BRANCH = re.compile(rf"(?:b|bl|blx|bx|bxns|blxns){_COND}|cbz|cbnz|tbb|tbh")
_MAC = re.compile(r"mul|mla|mls|smul|smla|smls|smmul|smmla|smmls|smuad|smusd|umul|umla|umaal|"
                  r"vmul|vmla|vmls|vnmul|vnmla|vnmls|vfma|vfms|vfnma|vfnms")
_LOAD = re.compile(r"ldr|ldm|lda|pop|vldr|vldm|vpop")
_STORE = re.compile(r"str|stm|stl|push|vstr|vstm|vpush")
_REGLIST = re.compile(r"\{([^}]*)\}")
_RANGE = re.compile(r"([a-z]+)(\d+)-[a-z]+(\d+)")

# Kinds: a category of InstructionMix, with "multi_" when it moves several registers.
LOAD, MULTI_LOAD, STORE, MULTI_STORE, MAC, BRANCH, OTHER = (
    "load", "multi_load", "store", "multi_store", "mac", "branch", "other")


def classify(mnemonic: str, operands: str) -> str:
    """The kind of one instruction, from objdump's mnemonic (condition and .w/.n suffixes allowed) and operands."""
    base = mnemonic.lower().split(".")[0]
    ops = operands.lower()
    regs = _register_list(ops)
    if _BRANCH.fullmatch(base) or _writes_pc(base, ops, regs):
        return BRANCH
    if _LOAD.match(base):
        return MULTI_LOAD if _multi(base, regs) else LOAD
    if _STORE.match(base):
        return MULTI_STORE if _multi(base, regs) else STORE
    if _MAC.match(base):
        return MAC
    return OTHER


def _register_list(ops: str) -> list[str]:
    match = _REGLIST.search(ops)
    if match is None:
        return []
    regs: list[str] = []
    for item in (r.strip() for r in match.group(1).split(",")):
        span = _RANGE.fullmatch(item)
        if span:
            regs += [f"{span.group(1)}{i}" for i in range(int(span.group(2)), int(span.group(3)) + 1)]
        elif item:
            regs.append(item)
    return regs


def _writes_pc(base: str, ops: str, regs: list[str]) -> bool:
    """POP/LDM with PC in the list, or an instruction (not a store) whose destination is PC (LDR PC, MOV PC)."""
    if _STORE.match(base):
        return False
    if regs:
        return "pc" in regs
    return ops.split(",")[0].strip() == "pc"


def _multi(base: str, regs: list[str]) -> bool:
    return base.startswith(("ldrd", "strd", "ldaexd", "stlexd")) or len(regs) > 1


# ---- the ELF: each instruction's kind and the timer reads ---------------------------------------------------

_INSN = re.compile(r"\s*([0-9a-f]+):\t([^\t\s]+)\t?(.*)$")
_FUNC = re.compile(r"([0-9a-f]+) <([^>]+)>:$")


@dataclass(frozen=True)
class Disassembly:
    kinds: dict[int, str]  # instruction address -> kind
    timer_reads: dict[int, str]  # address of the instruction reading the timer -> its function (TIMER_READERS)


def find_objdump(gcc: Path) -> Path:
    """arm-none-eabi-objdump next to the chosen gcc (so an override stays consistent), else on PATH."""
    if gcc.name.endswith("gcc"):
        sibling = gcc.with_name(gcc.name[: -len("gcc")] + "objdump")
        if sibling.is_file() and os.access(sibling, os.X_OK):
            return sibling
    found = shutil.which("arm-none-eabi-objdump")
    if found is None:
        raise ToolchainMissing(f"arm-none-eabi-objdump not found (the instruction mix classifies the ELF's "
                               f"instructions with it). On Debian/Ubuntu install it with:\n    {INSTALL_HINT}")
    return Path(found)


def disassemble(objdump: Path, elf: Path) -> Disassembly:
    """Every instruction's kind, and in each of TIMER_READERS its timer read: the first load that is not from a
    literal pool (bench.c's `s_timer[TIMER_VALUE]`)."""
    proc = subprocess.run([str(objdump), "-d", "--no-show-raw-insn", str(elf)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise M33RunError(f"{objdump.name} -d {elf.name} failed:\n{proc.stderr[-2000:]}")
    kinds: dict[int, str] = {}
    reads: dict[int, str] = {}
    func = None
    for line in proc.stdout.splitlines():
        head = _FUNC.match(line)
        if head:
            func = head.group(2)
            continue
        m = _INSN.match(line)
        if m is None:
            continue
        addr, mnemonic, operands = int(m.group(1), 16), m.group(2), m.group(3).split("@")[0].strip()
        kinds[addr] = classify(mnemonic, operands)
        if (func in TIMER_READERS and func not in reads.values() and mnemonic.startswith("ldr")
                and "[pc" not in operands):
            reads[addr] = func
    missing = set(TIMER_READERS) - set(reads.values())
    if missing:
        raise M33RunError(f"{elf.name}: found no timer read in {', '.join(sorted(missing))}")
    return Disassembly(kinds, reads)


# ---- the plugin and its counts ------------------------------------------------------------------------------


def build_plugin(qemu: Path) -> Path:
    """The plugin as a host shared library for this QEMU (the host build cache keeps it across runs)."""
    files = {"insn_mix.c": (SUPPORT_DIR / PLUGIN_SOURCE).read_text(),
             PLUGIN_API_HEADER: (SUPPORT_DIR / PLUGIN_API_HEADER).read_text()}
    return build_shared_library(files, "insn_mix",
                                ["-fvisibility=hidden", f"-DQEMU_PLUGIN_API={plugin_api(qemu)}"])


def plugin_api(qemu: Path) -> int:
    """The plugin API version to claim: QEMU 9.0 raised the minimum it loads from 1 to 2."""
    proc = subprocess.run([str(qemu), "--version"], capture_output=True, text=True, check=False)
    match = re.search(r"version (\d+)\.", proc.stdout)
    return 2 if match and int(match.group(1)) >= 9 else 1


def plugin_args(plugin: Path, out: Path, marks) -> list[str]:
    """QEMU's -plugin option: commas in a path are doubled, as QEMU's option parser wants."""
    opts = [str(plugin), f"out={out}", *(f"mark=0x{a:x}" for a in sorted(marks))]
    return ["-plugin", ",".join(o.replace(",", ",,") for o in opts)]


@dataclass(frozen=True)
class Segment:
    counts: dict[int, tuple[int, int]]  # address -> (executions, taken)
    closed_by: int | None  # address of the timer read that ends it; None for the last one


def read_segments(path: Path) -> list[Segment]:
    """The plugin's file, read line by line."""
    segments: list[Segment] = []
    counts: dict[int, tuple[int, int]] = {}
    ended = False
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                addr, n, taken = int(parts[0], 16), int(parts[1]), int(parts[2])
                old = counts.get(addr, (0, 0))
                counts[addr] = (old[0] + n, old[1] + taken)
            elif len(parts) == 2 and parts[0] == "R":
                segments.append(Segment(counts, int(parts[1], 16)))
                counts = {}
            elif parts == ["E"]:
                segments.append(Segment(counts, None))
                ended = True
    if not ended:
        raise M33RunError(f"the instruction-mix plugin's output {path} is incomplete (QEMU stopped early?)")
    return segments


_FIELD = {LOAD: "loads", MULTI_LOAD: "loads", STORE: "stores", MULTI_STORE: "stores", MAC: "macs",
          BRANCH: "branches", OTHER: "other"}


def segment_mix(segment: Segment, kinds: dict[int, str]) -> InstructionMix:
    """The segment's executions by kind."""
    acc = dict.fromkeys((f.name for f in fields(InstructionMix)), 0)
    for addr, (n, taken) in segment.counts.items():
        kind = kinds.get(addr)
        if kind is None:
            raise M33RunError(f"executed an instruction at 0x{addr:08x} that is not in the ELF's disassembly")
        acc[_FIELD[kind]] += n
        if kind in (MULTI_LOAD, MULTI_STORE):
            acc[kind + "s"] += n
        elif kind == BRANCH:
            acc["taken"] += taken
    return InstructionMix(**acc)


def step_mixes(segments: list[Segment], dis: Disassembly, steps: list[int],
               expected: dict[int, int] | None = None) -> dict[int, InstructionMix]:
    """Step -> its mix: the window from the measured inference's bench_begin read (then from each mark) to the
    step's mark, less the calibration window between the two back-to-back marks before it (harness_main.c).
    `expected` (step -> instructions from the timer) must equal each mix's total."""
    names = [dis.timer_reads.get(s.closed_by) if s.closed_by is not None else None for s in segments]
    begins = [i for i, n in enumerate(names) if n == "bench_begin"]
    if not begins:
        raise M33RunError("the instruction-mix run saw no bench_begin timer read")
    b = begins[-1]  # segments[b] ends at the measured inference's bench_begin read
    marks = names[b + 1 : b + 1 + len(steps)]
    if b < 2 or names[b - 2 : b] != ["bench_now", "bench_now"] or marks != ["bench_now"] * len(steps):
        raise M33RunError(f"unexpected timer reads in the instruction-mix run: {names}")
    calibration = segment_mix(segments[b - 1], dis.kinds)  # (first calibration mark, second]
    out = {}
    for k, step in enumerate(steps):
        mix = segment_mix(segments[b + 1 + k], dis.kinds) - calibration
        if expected is not None and mix.total != expected.get(step):
            raise M33RunError(f"step {step}: the instruction mix adds up to {mix.total} instructions, the timer "
                              f"counted {expected.get(step)}")
        out[step] = mix
    return out
