"""Memory report: every byte of the arena, which tensor holds it, when, written by which op, and why.

RAM is reported honestly: arena + the model's other static state + the stack high-water mark of one
inference measured on the emulated Cortex-M33 (when its toolchain is present).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from rich.table import Table

from tinyaot.ir.ops import OPS
from tinyaot.plan.contract import ContractReport
from tinyaot.plan.lifetimes import busiest_step_text
from tinyaot.report.budget import Budget
from tinyaot.report.picture import Box, memory_html, plan_svg
from tinyaot.report.render import render_text
from tinyaot.report.sram_offer import SramOffer
from tinyaot.targets.sizes import m33_static_state_bytes
from tinyaot.targets.toolchain import have_m33_toolchain


@dataclass(frozen=True)
class TensorRow:
    name: str
    producer: str  # node name, or "input"
    nbytes: int
    first: int
    last: int
    offset: int
    aliases: tuple[str, ...]  # views (reshape) sharing these bytes
    op: str = ""  # producer's op kind, or "input"
    note: str = ""  # e.g. "in place over fc1_out"


@dataclass(frozen=True)
class MemoryReport:
    model: str
    arena_bytes: int
    lower_bound_bytes: int
    alignment: int
    planner: str
    float_arena_bytes: int
    float_weight_bytes: int
    constant_bytes: int
    code_bytes: int | None
    flash_bytes: int | None
    input: dict
    output: dict
    tensors: tuple[TensorRow, ...]
    n_steps: int = 0
    busiest_step: str = ""  # what the lower bound is made of
    schedule: str = "source"  # how the op order was chosen
    source_lower_bound: int | None = None  # the bound of the source order, when the order changed
    candidates: tuple[tuple[str, int], ...] = ()  # every placement tried
    static_state_bytes: int | None = None  # RAM besides the arena (.data + .bss on Cortex-M33)
    stack_bytes: int | None = None  # stack high-water mark of one inference on the emulated Cortex-M33
    float_lower_bound_bytes: int = 0
    float_n_steps: int = 0
    float_tensors: tuple[TensorRow, ...] = ()
    float_reasons: tuple[str, ...] = ()
    overlap_note: str = ""  # why the arena is below the layer-by-layer bound, if it is
    contract: ContractReport | None = None  # input kept? output apart? what preserve/separate cost
    inputs: tuple[dict, ...] = ()  # every input (input is the first), for models with several
    outputs: tuple[dict, ...] = ()
    state_bytes: int = 0  # the state region (kept between invokes: streamed layers' state), apart from the arena
    int16_layers: dict = field(default_factory=dict)  # layer -> why it has int16 activations (quantize/mixed.py)
    budget: Budget | None = None  # the flash and RAM the target leaves the model, and whether it fits
    sram_constant_bytes: int = 0  # of constant_bytes, the arrays start-up copies to SRAM (sram_constants)
    sram_offer: SramOffer | None = None  # the Pico 2's estimated gain from copying more constants to SRAM

    @property
    def ram_bytes(self) -> int | None:
        """arena + state region + other static state + stack; None until both were measured."""
        if self.static_state_bytes is None or self.stack_bytes is None:
            return None
        return self.arena_bytes + self.state_bytes + self.static_state_bytes + self.stack_bytes

    @staticmethod
    def of(cm, measure_stack: bool = False) -> MemoryReport:
        plan = cm.plan
        static, stack = _static_state_bytes(cm), None
        if cm.last_m33 is not None:
            stack = cm.last_m33.stack_bytes
        elif measure_stack:
            stack = _measure_stack(cm)
        float_graph = cm.float_graph if cm.float_graph is not None else cm.graph
        return MemoryReport(
            model=cm.name, arena_bytes=cm.arena_bytes, lower_bound_bytes=cm.lower_bound_bytes,
            alignment=plan.alignment, planner=plan.planner, float_arena_bytes=cm.float_arena_bytes,
            float_weight_bytes=cm.float_weight_bytes, constant_bytes=cm.constant_bytes,
            code_bytes=cm.code_bytes, flash_bytes=cm.flash_bytes,
            input=io_dicts(cm.graph, cm.graph.inputs)[0], output=io_dicts(cm.graph, cm.graph.outputs)[0],
            inputs=tuple(io_dicts(cm.graph, cm.graph.inputs)), outputs=tuple(io_dicts(cm.graph, cm.graph.outputs)),
            tensors=tensor_rows(plan, cm.graph),
            n_steps=plan.n_steps, busiest_step=busiest_step_text(plan),
            schedule=getattr(plan, "schedule", "source"), source_lower_bound=getattr(plan, "source_lower_bound", None),
            candidates=tuple(getattr(plan, "candidates", ())),
            static_state_bytes=static, stack_bytes=stack,
            float_lower_bound_bytes=cm.float_plan.lower_bound, float_n_steps=cm.float_plan.n_steps,
            float_tensors=tensor_rows(cm.float_plan, float_graph),
            float_reasons=tuple(float_reasons(cm)), overlap_note=overlap_note(plan),
            contract=cm.contract, state_bytes=cm.state_bytes, int16_layers=dict(getattr(cm, "int16_layers", {})),
            budget=getattr(cm, "budget", None), sram_constant_bytes=cm.sram_constant_bytes,
            sram_offer=cm.sram_offer(),
        )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ram_bytes"] = self.ram_bytes
        d["contract"] = self.contract.to_dict() if self.contract is not None else None  # with its cost
        d["budget"] = self.budget.to_dict() if self.budget is not None else None  # with its verdict
        d["sram_offer"] = self.sram_offer.to_dict() if self.sram_offer is not None else None
        return d

    # ---- text --------------------------------------------------------------------------------
    def __rich_console__(self, console, options):
        t = Table(title=f"memory plan of '{self.model}' (arena {self.arena_bytes:,} B, lower bound "
                  f"{self.lower_bound_bytes:,} B, planner {self.planner}, {self.alignment}-byte aligned)")
        for col in ("tensor", "written by", "op", "bytes", "steps", "offset", "views / overlap"):
            t.add_column(col, justify="right" if col in ("bytes", "offset") else "left")
        for r in self.tensors:
            extra = ", ".join(r.aliases) + ("; " if r.aliases and r.note else "") + r.note
            t.add_row(r.name, r.producer, r.op, f"{r.nbytes:,}", f"{r.first}-{r.last}", f"{r.offset:,}", extra)
        yield t
        yield "lower bound = " + self.busiest_step
        if self.overlap_note:
            yield self.overlap_note
        if self.contract is not None:
            yield str(self.contract)
        if self.int16_layers:
            yield ("int16 activations (16x8; 2-byte tensors, marked int16): "
                   + "; ".join(f"{k} ({v})" for k, v in self.int16_layers.items()))
        if self.source_lower_bound is not None and self.source_lower_bound != self.lower_bound_bytes:
            yield (f"op order chosen by {self.schedule} search: lower bound {self.lower_bound_bytes:,} B "
                   f"(the source order needs {self.source_lower_bound:,} B)")
        s = Table(title="RAM and flash", show_header=True)
        s.add_column("what")
        s.add_column("bytes", justify="right")
        s.add_column("note")
        s.add_row("arena (int8)", f"{self.arena_bytes:,}", "all activations, input and output included")
        s.add_row("lower bound", f"{self.lower_bound_bytes:,}", "live bytes at the busiest step")
        if self.state_bytes:
            s.add_row("state region", f"{self.state_bytes:,}",
                      "kept between invokes (streamed layers' past frames, recurrent h and c, SVDF states)")
        s.add_row("static state", _opt(self.static_state_bytes), "other .data + .bss of the model (Cortex-M33)")
        s.add_row("stack", _opt(self.stack_bytes), "high-water mark of one inference on the emulated Cortex-M33")
        s.add_row("RAM total", _opt(self.ram_bytes), "arena + state region + static state + stack")
        s.add_row("arena if fp32", f"{self.float_arena_bytes:,}", "same graph planned with float32 activations")
        s.add_row("flash: constants", f"{self.constant_bytes:,}", "int8 weights, int32 bias, multipliers")
        if self.sram_constant_bytes:
            s.add_row("  of them in SRAM", f"{self.sram_constant_bytes:,}",
                      "sram_constants: copied to SRAM at start-up (in static state and the RAM budget)")
        s.add_row("flash: code", _opt(self.code_bytes), "Cortex-M33 -O2 .text of model + kernels")
        s.add_row("fp32 weights", f"{self.float_weight_bytes:,}", "what the float model's parameters take")
        for row in self.budget.rows() if self.budget is not None else ():
            s.add_row(*row)
        yield s
        for f in self.budget.findings if self.budget is not None else ():
            yield f"does not fit: {f}"
        if self.sram_offer is not None:
            yield self.sram_offer.text()

    def comparison_table(self):
        """int8 vs fp32 side by side, with the reasons."""
        t = Table(title=f"'{self.model}': fp32 vs int8")
        t.add_column("what")
        t.add_column("fp32", justify="right")
        t.add_column("int8", justify="right")
        t.add_row("arena (activations, RAM)", f"{self.float_arena_bytes:,}", f"{self.arena_bytes:,}")
        t.add_row("lower bound", f"{self.float_lower_bound_bytes:,}", f"{self.lower_bound_bytes:,}")
        t.add_row("weights (flash, const)", f"{self.float_weight_bytes:,}", f"{self.constant_bytes:,}")
        n_in = sum(_io_bytes(d) for d in self.inputs or (self.input,))
        t.add_row("input bytes", f"{n_in * 4:,}", f"{n_in:,}")
        return t

    def __str__(self) -> str:
        return render_text(self)

    # ---- picture -----------------------------------------------------------------------------
    def svg(self, float_plan: bool = False, y_max: int | None = None) -> str:
        if float_plan:
            return plan_svg(_boxes(self.float_tensors), self.float_arena_bytes, self.float_lower_bound_bytes,
                            self.float_n_steps, f"{self.model}: fp32 arena {self.float_arena_bytes:,} B", y_max=y_max)
        return plan_svg(_boxes(self.tensors), self.arena_bytes, self.lower_bound_bytes, self.n_steps,
                        f"{self.model}: int8 arena {self.arena_bytes:,} B", y_max=y_max)

    def html(self, compare_float: bool = False) -> str:
        y_max = max(self.float_arena_bytes, self.arena_bytes) if compare_float else None
        svgs = [self.svg(y_max=y_max)] + ([self.svg(float_plan=True, y_max=y_max)] if compare_float else [])
        headers = ["tensor", "written by", "op", "bytes", "steps", "offset", "views / overlap"]
        rows = [[r.name, r.producer, r.op, f"{r.nbytes:,}", f"{r.first}-{r.last}", f"{r.offset:,}",
                 ", ".join(r.aliases + ((r.note,) if r.note else ()))] for r in self.tensors]
        ram = [["arena (int8)", f"{self.arena_bytes:,}"], ["lower bound", f"{self.lower_bound_bytes:,}"],
               *([["state region", f"{self.state_bytes:,}"]] if self.state_bytes else []),
               ["static state", _opt(self.static_state_bytes)], ["stack", _opt(self.stack_bytes)],
               ["RAM total", _opt(self.ram_bytes)], ["flash: constants", f"{self.constant_bytes:,}"],
               ["flash: code", _opt(self.code_bytes)],
               *([f"{what} ({note})", avail] for what, avail, note in (self.budget.rows() if self.budget else ()))]
        notes = ["lower bound = " + self.busiest_step] + ([self.overlap_note] if self.overlap_note else [])
        if compare_float:
            notes += list(self.float_reasons)
        sections = [("Tensors (int8 plan)", headers, rows, {3, 5}), ("RAM and flash", ["what", "bytes"], ram, {1})]
        return memory_html(f"tinyaot memory report: {self.model}", svgs, sections, notes)

    def write_picture(self, path, compare_float: bool = False) -> list[Path]:
        """Write the HTML page at `path` and the SVG(s) beside it; returns the files written."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.html(compare_float))
        svg = path.with_suffix(".svg")
        y_max = max(self.float_arena_bytes, self.arena_bytes) if compare_float else None
        svg.write_text(self.svg(y_max=y_max))
        written = [path, svg]
        if compare_float:
            fsvg = path.with_name(path.stem + "_fp32.svg")
            fsvg.write_text(self.svg(float_plan=True, y_max=y_max))
            written.append(fsvg)
        return written


def tensor_rows(plan, g) -> tuple[TensorRow, ...]:
    ops = {n.name: n.op for n in g.nodes}
    notes: dict[str, str] = {}
    for ov in getattr(plan, "overlaps", ()):
        if plan.shares_bytes(ov):
            notes[ov.output] = (f"in place over {ov.input}" if ov.distance <= 0
                                else f"over {ov.input}, {ov.distance} B below it")
    for b in plan.buffers:  # 16x8 activations: two bytes a value
        if b.name in g.tensors and g.tensor(b.name).dtype == "int16":
            notes[b.name] = "; ".join(filter(None, ("int16", notes.get(b.name))))
    for v in getattr(plan, "rings", ()):  # in-place ring kernels (plan/inplace.py)
        pixels = f"{v.ring_pixels} pixel" + "s" * (v.ring_pixels != 1)
        notes[v.scratch] = f"ring of {pixels}, scratch of {v.node} at its step only"
    return tuple(
        TensorRow(b.name, b.producer, b.nbytes, b.first, b.last, plan.offsets[b.name],
                  tuple(t if not b.offset_in(t) else f"{t} (+{b.offset_in(t)} B: a slice read in place)"
                        for t in b.tensors if t != b.name), ops.get(b.producer, "input"), notes.get(b.name, ""))
        for b in sorted(plan.buffers, key=lambda b: (b.first, plan.offsets[b.name]))
    )


def overlap_note(plan) -> str:
    used = [o for o in getattr(plan, "overlaps", ()) if plan.shares_bytes(o)]
    if not used:
        return ""
    return (f"{len(used)} outputs are written over their dying inputs (in place, or streamed at a safe distance "
            f"from the kernel's loop order), so the arena ({plan.arena_bytes:,} B) may go below the "
            f"layer-by-layer bound ({plan.lower_bound:,} B), which assumes an op's input and output never share bytes.")


def float_reasons(cm) -> list[str]:
    """Why fp32 needs what it needs, stated only from what the two plans and graphs show."""
    int8_act = sum(b.nbytes for b in cm.plan.buffers)
    f32_act = sum(b.nbytes for b in cm.float_plan.buffers)
    ratio = cm.float_arena_bytes / max(cm.arena_bytes, 1)
    scale = "exactly 4x" if cm.float_arena_bytes == 4 * cm.arena_bytes else f"{ratio:.2f}x"
    out = [
        (f"activations: fp32 arena {cm.float_arena_bytes:,} B vs int8 {cm.arena_bytes:,} B ({scale}): every "
         f"activation element takes 4 bytes in fp32 and 1 in int8 ({f32_act:,} B vs {int8_act:,} B summed over "
         "the buffers of each plan)."),
        (f"weights: fp32 {cm.float_weight_bytes:,} B vs int8 {cm.constant_bytes:,} B (int8 weights, int32 biases, "
         "per-channel multipliers), all const in flash; the arena holds activations only, so no weight is "
         "copied into RAM at run time."),
    ]
    n8 = sum(cm.plan.shares_bytes(o) for o in cm.plan.overlaps)
    n32 = sum(cm.float_plan.shares_bytes(o) for o in cm.float_plan.overlaps)
    if n8 != n32:
        out.append(f"overlap: the int8 plan writes {n8} outputs over their dying inputs, the fp32 plan {n32} (the "
                   "streaming distances come from tinyaot's int8 kernels; there are no fp32 kernels to stream).")
    kinds = Counter(n.op for n in cm.graph.nodes)
    copies = dict(Counter(n.op for n in cm.graph.nodes if n.op == "quantize" or OPS[n.op].moves_only and
                          not OPS[n.op].view and not cm.plan.reads_in_place(n)))
    listed = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
    if copies:
        out.append(f"run-time copies in the int8 graph: {copies} (ops: {listed}).")
    else:
        out.append(f"no run-time quantize/dequantize or transpose copies: the int8 graph's ops are {listed}; "
                   f"each of its {len(cm.plan.buffers)} buffers is a layer output or the input.")
    ib = sum(cm.input_sizes)
    what = "the input takes" if cm.n_inputs == 1 else f"the {cm.n_inputs} inputs take"
    out.append(f"int8 input and output: {what} {ib:,} B in the arena (fp32: {4 * ib:,} B) and no "
               "float conversion runs on the device.")
    return out


def _boxes(rows):
    return [Box(r.name, r.op or ("input" if r.producer == "input" else r.producer), r.producer, r.nbytes,
                r.first, r.last, r.offset, r.note) for r in rows]


def _static_state_bytes(cm) -> int | None:
    """.data + .bss of the model's own object file minus the arena, compiled for Cortex-M33 (the same compile
    as code_bytes: targets/sizes.py measures both)."""
    return m33_static_state_bytes(cm.c_sources, cm.arena_bytes + cm.state_bytes)  # the state region has its row


def _measure_stack(cm) -> int | None:
    """One inference on the emulated Cortex-M33 (the harness paints the stack and reads it back)."""
    if not have_m33_toolchain():
        return None
    cm.run(np.zeros(cm.input_shape, dtype=np.int8), engine="m33")
    return cm.last_m33.stack_bytes


def _opt(v) -> str:
    return "n/a" if v is None else f"{v:,}"


def _io_bytes(d: dict) -> int:
    n = 1
    for s in d["shape"]:
        n *= s
    return n


def io_dicts(g, tensors, layout: bool = True) -> list[dict]:
    """Shape, dtype, scale and zero point of each input or output tensor (and an input's layout), for reports."""
    out = []
    for name in tensors:
        t = g.tensor(name)
        d = {"shape": list(t.shape), "dtype": t.dtype, "scale": t.qparams.scale[0],
             "zero_point": t.qparams.zero_point[0]}
        if layout and name in g.inputs:
            d["layout"] = g.io_layout_of(name)[0]
        out.append(d)
    return out

