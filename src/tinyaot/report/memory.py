"""Memory report: every byte of the arena, which tensor holds it, when, and why."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TensorRow:
    name: str
    producer: str
    nbytes: int
    first: int
    last: int
    offset: int
    aliases: tuple[str, ...]


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
    flash_bytes: int
    input: dict
    output: dict
    tensors: tuple[TensorRow, ...]

    @staticmethod
    def of(cm) -> "MemoryReport":
        plan = cm.plan
        rows = tuple(
            TensorRow(b.name, b.producer, b.nbytes, b.first, b.last, plan.offsets[b.name],
                      tuple(t for t in b.tensors if t != b.name))
            for b in sorted(plan.buffers, key=lambda b: (b.first, plan.offsets[b.name]))
        )
        return MemoryReport(
            model=cm.name, arena_bytes=cm.arena_bytes, lower_bound_bytes=cm.lower_bound_bytes,
            alignment=plan.alignment, planner=plan.planner, float_arena_bytes=cm.float_arena_bytes,
            float_weight_bytes=cm.float_weight_bytes, constant_bytes=cm.constant_bytes,
            code_bytes=cm.code_bytes, flash_bytes=cm.flash_bytes,
            input=_io(cm.input_shape, cm.input_qparams, cm.graph.layout),
            output=_io(cm.output_shape, cm.output_qparams, None),
            tensors=rows,
        )

    def to_dict(self) -> dict:
        return asdict(self)

    def __rich_console__(self, console, options):
        from rich.table import Table

        t = Table(title=f"memory plan of '{self.model}' (arena {self.arena_bytes} B, "
                  f"lower bound {self.lower_bound_bytes} B, planner {self.planner})")
        for col in ("tensor", "producer", "bytes", "steps", "offset", "views"):
            t.add_column(col, justify="right" if col in ("bytes", "offset") else "left")
        for r in self.tensors:
            t.add_row(r.name, r.producer, str(r.nbytes), f"{r.first}-{r.last}", str(r.offset),
                      ", ".join(r.aliases))
        yield t
        s = Table(title="RAM and flash", show_header=True)
        s.add_column("what")
        s.add_column("bytes", justify="right")
        s.add_column("note")
        s.add_row("arena (int8)", str(self.arena_bytes), "all activations, input and output included")
        s.add_row("lower bound", str(self.lower_bound_bytes), "live bytes at the busiest step")
        s.add_row("arena if fp32", str(self.float_arena_bytes), "same plan with float32 activations")
        s.add_row("flash: constants", str(self.constant_bytes), "int8 weights, int32 bias, multipliers")
        s.add_row("flash: code", "n/a" if self.code_bytes is None else str(self.code_bytes),
                  "Cortex-M33 -O2 .text of model + kernels")
        s.add_row("fp32 weights", str(self.float_weight_bytes), "what the float model's parameters take")
        yield s

    def __str__(self) -> str:
        from tinyaot.report.render import render_text

        return render_text(self)


def _io(shape, qparams, layout) -> dict:
    d = {"shape": list(shape), "dtype": "int8", "scale": qparams[0], "zero_point": qparams[1]}
    if layout:
        d["layout"] = layout
    return d
