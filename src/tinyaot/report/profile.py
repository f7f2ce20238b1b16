"""Per-op profile on the emulated Cortex-M33: exact instructions per op, MACs, instructions per MAC, and (with
mix=True) what kinds of instructions they were: loads, stores, multiplies, branches taken or not, others, and from
them estimated cycles and milliseconds at the Pico 2's clock (targets/m33/timing.py, docs/timing.md).  The share
of conv / FC MACs on fast kernels comes from the plan (report/kernels.py)."""
from __future__ import annotations

import re
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from rich.table import Table

from tinyaot.report.kernels import Coverage, choice_reason, fast_kernel_coverage
from tinyaot.report.macs import node_macs
from tinyaot.report.render import render_text
from tinyaot.report.sram_offer import SramOffer
from tinyaot.targets.base import ModelSources
from tinyaot.targets.engines import raw_rows
from tinyaot.targets.m33 import M33Target
from tinyaot.targets.m33.mix import InstructionMix
from tinyaot.targets.m33.timing import (
    SYS_CLOCK_HZ,
    XIP_CACHE_BYTES,
    XipEstimate,
    cycles_to_ms,
    estimate_cycles,
    xip_estimate,
)


@dataclass(frozen=True)
class OpProfile:
    step: int
    layer: str
    op: str
    macs: int
    instructions: int
    mix: InstructionMix | None = None  # profile(mix=True): the instructions by kind; mix.total == instructions
    kernel: str = ""  # the C kernel the generated invoke calls for this op: the plan's choice (pairs, ring, ...)
    why: str = ""  # the plan's reason (report/kernels.py choice_reason): why a faster variant did not qualify,
    #                or what the fast one took (constant channels, zero shifts)

    @property
    def per_mac(self) -> float | None:
        return self.instructions / self.macs if self.macs else None

    @property
    def estimated_cycles(self) -> int | None:
        """From the mix (timing.py); None without it."""
        return None if self.mix is None else estimate_cycles(self.mix)


@dataclass(frozen=True)
class ProfileReport:
    model: str
    total_instructions: int  # one inference, measured without per-op markers
    ops: tuple[OpProfile, ...]
    stack_bytes: int
    constant_bytes: int = 0  # what the Pico 2 reads through its XIP cache (xip): the constants left in flash
    coverage: Coverage | None = None  # conv / FC MACs on fast kernels, from the plan
    clock_hz: int = SYS_CLOCK_HZ
    sram_offer: SramOffer | None = None  # which constants to copy to SRAM on a Pico 2, and the estimated gain

    @property
    def estimated_cycles(self) -> int | None:
        """One inference, estimated: its measured instructions at the ops' estimated cycles per instruction (so
        the few instructions between the ops count at the ops' average); None without the mix."""
        if not self.has_mix:
            return None
        ops = [o for o in self.ops if o.mix is not None]
        instructions = sum(o.instructions for o in ops)
        cycles = sum(o.estimated_cycles for o in ops)
        return round(self.total_instructions * cycles / instructions) if instructions else 0

    @property
    def estimated_ms(self) -> float | None:
        c = self.estimated_cycles
        return None if c is None else cycles_to_ms(c, self.clock_hz)

    @property
    def xip(self) -> XipEstimate:
        return xip_estimate(self.constant_bytes, self.clock_hz)

    @property
    def total_macs(self) -> int:
        return sum(o.macs for o in self.ops)

    @property
    def has_mix(self) -> bool:
        return any(o.mix is not None for o in self.ops)

    def to_dict(self) -> dict:
        d = {"model": self.model, "total_instructions": self.total_instructions, "total_macs": self.total_macs,
             "stack_bytes": self.stack_bytes, "constant_bytes": self.constant_bytes,
             "ops": [_op_dict(o, self.clock_hz) for o in self.ops]}
        if self.coverage is not None:
            d["coverage"] = self.coverage.to_dict()
        d["estimated"] = {"note": "estimates from a simple Cortex-M33 timing model (docs/timing.md); the "
                          "instructions are exact", "clock_hz": self.clock_hz,
                          "cycles": self.estimated_cycles, "ms": self.estimated_ms,
                          "pico2_xip": self.xip.to_dict(),
                          "pico2_sram_offer": None if self.sram_offer is None else self.sram_offer.to_dict()}
        return d

    def speed_lines(self) -> list[str]:
        """The totals, for reports that show speed beside memory: exact instructions, then the estimates."""
        lines = [f"Cortex-M33 instructions per inference: {self.total_instructions:,} (QEMU -icount, exact), "
                 f"{self.total_macs:,} MACs"]
        offer = self.sram_offer.text() if self.sram_offer is not None else None
        return lines + [line for line in self._summary_lines() if line != offer]  # the report has the offer

    def __rich_console__(self, console, options):
        t = Table(title=f"Cortex-M33 profile of '{self.model}': {self.total_instructions:,} instructions per "
                  f"inference, {self.total_macs:,} MACs (QEMU -icount, exact)")
        estimated = ("est. cycles", "est. ms") if self.has_mix else ()
        whys = any(o.why for o in self.ops)
        cols = ("step", "layer", "kernel", "MACs", "instructions", "instr/MAC", "share", *estimated) + ("why",) * whys
        for col in cols:
            names = col in ("layer", "kernel", "why")  # long names wrap rather than lose their ends
            t.add_column(col, justify="left" if names else "right", overflow="fold" if names else "ellipsis",
                         ratio=3 if col == "why" else None)
        summed = sum(o.instructions for o in self.ops) or 1
        for o in self.ops:
            t.add_row(str(o.step), o.layer, o.kernel.removeprefix("tinyaot_") or o.op, f"{o.macs:,}",
                      f"{o.instructions:,}", "" if o.per_mac is None else f"{o.per_mac:.2f}",
                      f"{o.instructions / summed:.1%}", *self._estimated_cells(o), *((o.why,) * whys))
        yield t
        yield from self._summary_lines()
        if self.has_mix:
            yield _mix_table(self)

    def _estimated_cells(self, o: OpProfile) -> list[str]:
        if not self.has_mix:
            return []
        c = o.estimated_cycles
        return ["", ""] if c is None else [f"{c:,}", f"{cycles_to_ms(c, self.clock_hz):.3f}"]

    def _summary_lines(self):
        mhz = f"{self.clock_hz / 1e6:g} MHz"
        if self.has_mix:
            yield (f"estimated: {self.estimated_cycles:,} cycles = {self.estimated_ms:.2f} ms at {mhz} for "
                   f"{self.total_instructions:,} instructions (Cortex-M4 TRM figures, docs/timing.md)")
        else:
            yield "estimated cycles and ms: run with --mix (they are estimated from the instruction mix)"
        x, cache = self.xip, f"{XIP_CACHE_BYTES // 1024} KB XIP cache"
        if x.streamed_bytes:
            yield (f"estimated Pico 2 XIP cost, an upper bound: {x.streamed_bytes:,} B of constants beyond the "
                   f"{cache} at {x.bytes_per_second / 1e6:g} MB/s = {x.ms:.2f} ms ({x.cycles:,} cycles) "
                   "per inference more")
        else:
            yield f"estimated Pico 2 XIP cost: none ({x.constant_bytes:,} B of constants fit the {cache})"
        if self.sram_offer is not None:
            yield self.sram_offer.text()
        if self.coverage is not None and self.coverage.share is not None:
            c = self.coverage
            yield (f"fast-kernel coverage: {c.share:.1%} of conv / FC MACs ({c.fast_macs:,} of {c.macs:,}) run a "
                   "fast kernel variant")

    def __str__(self) -> str:
        return render_text(self)


def _op_dict(o: OpProfile, clock_hz: int) -> dict:
    d = asdict(o) | {"instructions_per_mac": o.per_mac}
    if o.mix is None:
        del d["mix"]
    else:
        d["estimated_cycles"] = o.estimated_cycles
        d["estimated_ms"] = cycles_to_ms(o.estimated_cycles, clock_hz)
    return d


_MIX_COLUMNS = (("loads", "load"), ("multi_loads", "ldm"), ("stores", "store"), ("multi_stores", "stm"),
                ("macs", "mul"), ("branches", "branch"), ("taken", "taken"), ("other", "other"))


def _mix_table(rep: ProfileReport):
    """The instruction mix per op as shares of its instructions (the exact counts are in to_dict)."""
    t = Table(title="Instruction mix: share of each op's instructions (QEMU plugin, exact)",
              caption="ldm/stm: the loads/stores of several registers (LDRD, LDM, POP / STRD, STM, PUSH: 1 + N "
              "cycles on the core); mul: multiplies and MACs (MUL, MLA, SMLAD, SMLAL, SMMUL ...); taken: branches "
              "that did not fall through (a pipeline refill each); exact counts: --json")
    for col in ("step", *(title for _, title in _MIX_COLUMNS)):
        t.add_column(col, justify="right")
    total = InstructionMix()
    for o in rep.ops:
        if o.mix is not None:
            total = total + o.mix
            t.add_row(str(o.step), *_shares(o.mix))
    t.add_row("all", *_shares(total), style="bold")
    return t


def _shares(mix: InstructionMix) -> list[str]:
    n = mix.total or 1
    return [f"{getattr(mix, field) / n:.1%}" for field, _ in _MIX_COLUMNS]


def profile(cm, x=None, mix: bool = False) -> ProfileReport:
    """Run one inference on the M33 twice: plain (the total, untouched by markers) and with a marker after each
    op (per-op counts, the markers' own cost removed).  mix=True runs the marked image under QEMU's instruction
    counting plugin, which adds each op's instruction mix (a host C compiler builds the plugin)."""
    if x is None:
        x = np.zeros((1, sum(cm.input_sizes)), dtype=np.int8)
    elif isinstance(x, (list, tuple)):  # several inputs: their bytes back to back, as the harness takes them
        x = raw_rows([np.asarray(v).reshape(1, -1) for v in x])
    else:  # one input in its own dtype (int16 for a 16x8 model): its bytes
        x = raw_rows(np.asarray(x, dtype=cm.input_dtype).reshape(1, -1))
    flat = np.asarray(x, dtype=np.int8).reshape(1, -1)
    with tempfile.TemporaryDirectory(prefix="tinyaot-prof-") as tmp:
        cm.c_sources.write(Path(tmp))
        sources = replace(ModelSources.in_directory(tmp, cm.name, sum(cm.input_sizes), sum(cm.output_sizes)),
                          input_sizes=tuple(cm.input_sizes), output_sizes=tuple(cm.output_sizes))
        plain = _run_once(M33Target(build_dir=Path(tmp) / "plain"), sources, flat)
        marked = _run_once(M33Target(build_dir=Path(tmp) / "marked", profile=True, mix=mix), sources, flat)
    steps = marked.step_instructions or {}
    mixes = marked.step_mix or {}
    kernels = kernel_calls(cm.c_sources.files[f"{cm.c_sources.name}.c"])
    nodes = cm.graph.nodes
    ops = tuple(OpProfile(step, nodes[step].name, nodes[step].op, node_macs(nodes[step], cm.graph), n,
                          mixes.get(step), kernels.get(step, ""),
                          choice_reason(nodes[step].op, cm.plan.kernel_of(nodes[step].name)))
                for step, n in sorted(steps.items()))
    return ProfileReport(cm.name, plain.instructions, ops, plain.stack_bytes,
                         cm.constant_bytes - cm.sram_constant_bytes, fast_kernel_coverage(cm.graph, cm.plan),
                         sram_offer=cm.sram_offer())


def kernel_calls(c_source: str) -> dict[int, str]:
    """step -> the kernel function the generated invoke calls there (read from the C itself, so the profile names
    exactly what ran: the plan's per-layer choice of pairs, wide, ring or plain kernel)."""
    body = c_source[c_source.index("_instance_invoke(const"):]
    calls, start = {}, 0
    for m in re.finditer(r"_PROFILE_STEP\((\d+)\);", body):
        call = re.search(r"\b(tinyaot_\w+)\(", body[start:m.start()])
        if call:
            calls[int(m.group(1))] = call.group(1)
        start = m.end()
    return calls


def _run_once(target, sources, flat):
    """Build and run on one target: the two runs differ only in the target's options."""
    return target.run(target.build(sources), flat)
