"""Which kernel runs each layer that has a choice, and why not the others: read from the plan's records
(plan/choice.py KernelChoice), which keep every variant's reason, so the report states what the plan decided
rather than guessing it again."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from rich.table import Table

from tinyaot.ir.ops import OPS
from tinyaot.ir.variants import PLAIN, RING
from tinyaot.report.macs import node_macs
from tinyaot.report.render import render_text

COVERED_MACS = ("conv", "depthwise", "transposed", "dense")  # OpSpec.macs kinds of the conv / FC layers
SLOW_VARIANTS = (PLAIN, RING)  # the ring calls its plain twin (ir/variants.py): no faster than plain


def choice_reason(op: str, choice) -> str:
    """Why the plan ran this kernel, in one phrase: for a plain kernel, why its op's faster variants for the plan's
    mode did not qualify (the record's reasons, without the variants another mode or an earlier variant settled,
    nor the ring, which the placement chooses for memory); for a fast one, what its home noted of the layer
    (constant channels, zero and left shifts); "" otherwise."""
    if choice is None:
        return ""
    if not choice.plain:
        return choice.note
    spec = OPS[op]
    return "; ".join(f"{name}: {why}" for name, why in choice.rejected
                     if not spec.variant(name).placed and not why.startswith("optimize=")
                     and not why.endswith(" comes first"))


@dataclass(frozen=True)
class KernelRow:
    layer: str
    op: str
    variant: str  # the kernel variant the plan chose (ir/variants.py), or "plain"
    c_kernel: str  # its C function ("" for the plain kernel, which its emitter picks: codegen/)
    weights: str  # the variant's weights in flash (int16: widened at compile time); "" for the plain kernel's
    work_bytes: int  # its scratch in the arena (a pairs work buffer, a ring)
    rejected: tuple[tuple[str, str], ...]  # (variant, why not)
    note: str = ""  # what the chosen variant's home noted of the layer (constant channels, zero shifts)


@dataclass(frozen=True)
class KernelReport:
    model: str
    optimize: str
    rows: tuple[KernelRow, ...]

    def to_dict(self) -> dict:
        return {"model": self.model, "optimize": self.optimize,
                "layers": [asdict(r) | {"rejected": dict(r.rejected)} for r in self.rows]}

    def __rich_console__(self, console, options):
        t = Table(title=f"Kernel choices of '{self.model}' (optimize={self.optimize!r})")
        for col in ("layer", "op", "kernel", "work B", "why not the others", "note"):
            t.add_column(col, justify="right" if col == "work B" else "left", overflow="fold")
        for r in self.rows:
            t.add_row(r.layer, r.op, r.variant, f"{r.work_bytes:,}" if r.work_bytes else "",
                      "; ".join(f"{name}: {why}" for name, why in r.rejected), r.note)
        yield t

    def __str__(self) -> str:
        return render_text(self, width=150)


def kernel_report(graph, plan, model: str = "model") -> KernelReport:
    """One row per layer whose op has kernel variants, in graph order."""
    ops = {n.name: n.op for n in graph.nodes}
    rows = []
    for k in plan.kernels:
        v = OPS[ops[k.node]].variant(k.variant)
        rows.append(KernelRow(k.node, ops[k.node], k.variant, v.c_kernel if v else "", v.weights if v else "",
                              k.work_bytes, k.rejected, k.note))
    return KernelReport(model, plan.optimize, tuple(rows))


@dataclass(frozen=True)
class Coverage:
    """The share of conv / fully-connected MACs (depthwise and transposed convs included) that run a fast kernel
    variant (pairs, pairs_w8, wide, wide_w8 ...: any variant but plain and ring), read from the plan's records."""

    fast_macs: int
    macs: int

    @property
    def share(self) -> float | None:
        return self.fast_macs / self.macs if self.macs else None

    def to_dict(self) -> dict:
        return {"fast_macs": self.fast_macs, "conv_fc_macs": self.macs, "fast_mac_share": self.share}


def fast_kernel_coverage(graph, plan) -> Coverage:
    fast = total = 0
    for node in graph.nodes:
        if node.op not in OPS or OPS[node.op].macs not in COVERED_MACS:
            continue
        macs = node_macs(node, graph)
        total += macs
        choice = plan.kernel_of(node.name)
        if choice is not None and choice.variant not in SLOW_VARIANTS:
            fast += macs
    return Coverage(fast, total)
