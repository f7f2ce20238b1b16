"""Two cores (compile(cores=2)): which layers core 0 and core 1 share, and where each one's part ends.

A split layer runs its own kernel twice, once per core, on two halves of its output: by output rows (conv2d,
conv2d_add, depthwise_conv2d, max / avg pooling: the kernel sees the image from the half's first input row, its
top padding only in the first half; a fully_connected layer over several rows, such as a sequence's tokens: the
half's rows) or by output channels (a one-row fully_connected: the half's weights, bias and requantization
rows). Every output value is computed by the same arithmetic as on one core, so the bytes are the one-core
model's. The cut balances the halves by an estimate of each output row's (or channel's) instructions:
rows at a padded border read fewer taps. A layer stays on core 0 (with the reason, for the reports) where its
kernel cannot be given a half (the in-place ring, whose write order is its own; 16x8 kernels; batches > 1),
where its output shares arena bytes with its input (a half written over input rows the other core still reads)
or the plan has no work buffer for core 1 (a plan made for one core), or where it is too small to pay for the
barrier.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.plan.lifetimes import Buffer
from tinyaot.plan.planner import MemoryPlan
from tinyaot.ref.fully_connected_wide_s8 import wide_cut_keeps_layout

ROWS, CHANNELS = "rows", "channels"  # the registry's `split` trait (ir/ops.py)
COLUMNS = "columns"  # a 1-D (one-row) layer of a ROWS op: its columns halved
CORE1_WORK = "__core1"  # core 1's twin of a split layer's work buffer: <work><CORE1_WORK>
MIN_SPLIT_MACS = 4096  # below this a layer costs about what the barrier and the second call do (~100 instructions)
_CHANNEL_VARIANTS = {"plain": 4, "wide": 8, "wide_w8": 8}  # kernels that take a channel range: their group


@dataclass(frozen=True)
class CoreSplit:
    """One layer shared by the cores: core 0 computes [0, cut) of `axis`, core 1 [cut, total)."""

    node: str
    job: int  # its number in the mailbox (tinyaot_multicore.h), in step order
    axis: str  # ROWS or CHANNELS
    cut: int
    total: int
    cost: tuple[int, int]  # each core's estimated multiply-accumulates
    reason: str


@dataclass(frozen=True)
class CorePlan:
    """The two-core plan: the split layers in step order, and why each other heavy layer stays on core 0."""

    cores: int
    splits: tuple[CoreSplit, ...] = ()
    kept: tuple[tuple[str, str], ...] = ()  # (layer, why it runs on core 0 alone)

    def split_of(self, node: str) -> CoreSplit | None:
        return next((s for s in self.splits if s.node == node), None)


def split_candidates(g: Graph, kernels) -> frozenset[str]:
    """The layers two cores would share if their output does not overlap their input: planning with cores=2
    places these apart from their inputs (no overlap, no ring), which is the second core's arena cost."""
    by_node = {k.node: k for k in kernels}
    return frozenset(n.name for n in g.nodes if OPS[n.op].split
                     and _split_kind(n, g, by_node.get(n.name))[1] is not None)


def core1_work_buffers(g: Graph, kernels, apart: frozenset[str]) -> list[Buffer]:
    """Core 1's own work buffer for each layer in `apart` whose kernel has one: the same size, live at the same
    step, placed in the arena like the first (both cores' kernels write theirs at once)."""
    step = {n.name: s for s, n in enumerate(g.nodes)}
    return [Buffer(c.work + CORE1_WORK, (c.work + CORE1_WORK,), c.work_bytes, step[c.node], step[c.node], c.node,
                   scratch=True) for c in kernels if c.work and c.node in apart]


def plan_cores(g: Graph, plan: MemoryPlan, cores: int) -> CorePlan:
    """The layers two cores share (none for one core)."""
    if cores == 1:
        return CorePlan(1)
    splits, kept = [], []
    for node in g.nodes:
        if not OPS[node.op].split or plan.reads_in_place(node):
            continue
        why, split = _split(node, g, plan, len(splits))
        if split is None:
            kept.append((node.name, why))
        else:
            splits.append(split)
    return CorePlan(cores, tuple(splits), tuple(kept))


def _split_kind(node: Node, g: Graph, choice) -> tuple[str, tuple | None]:
    """Why the layer cannot be split, or (axis, estimated cost per row or channel, cut)."""
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if x.dtype != "int8" or y.dtype != "int8":
        return "a 16x8 kernel: no half-layer form", None
    variant = choice.variant if choice is not None else "plain"
    if OPS[node.op].split == CHANNELS:
        if variant not in _CHANNEL_VARIANTS:
            return f"the {variant} kernel's weights are laid out for whole layers only", None
        rows = int(np.prod(y.shape[:-1], dtype=np.int64))  # the kernel's batches: every leading axis
        if rows > 1:  # whole rows of the output are contiguous: halve them (a channel half would be strided)
            axis, per, group = ROWS, np.full(rows, int(_channel_costs(node, g).sum())), 1
        else:
            axis, per, group = CHANNELS, _channel_costs(node, g), _CHANNEL_VARIANTS[variant]
    elif not y.shape or y.shape[0] != 1:
        return "batches > 1: the halves would be strided", None
    else:
        if variant not in ("plain", "pairs", "pairs_w8", "rows"):
            return f"the {variant} kernel writes in its own order (in place): no half of it stands alone", None
        axis = COLUMNS if one_row(row_params(node, g)) else ROWS
        per, group = _row_costs(node, g, axis == COLUMNS), 1
    total = int(per.sum())
    if total < MIN_SPLIT_MACS:
        return f"{total} MACs: too small to pay for the barrier", None
    allowed = None
    if axis == CHANNELS and variant == "wide":  # its rows of six and of eight: only some cuts keep the layout
        allowed = [c for c in range(1, len(per)) if wide_cut_keeps_layout(len(per), c)]
        if not allowed:
            return "the wide kernel's groups of six and eight rows: no cut leaves both halves their layout", None
    cut = _balanced_cut(per, group, allowed)
    if cut in (0, len(per)):
        return "one part would be empty", None
    return "", (axis, per, cut)


def _split(node: Node, g: Graph, plan: MemoryPlan, job: int) -> tuple[str, CoreSplit | None]:
    why, kind = _split_kind(node, g, plan.kernel_of(node.name))
    if kind is None:
        return why, None
    axis, per, cut = kind
    choice = plan.kernel_of(node.name)
    if choice is not None and choice.work and not any(b.name == choice.work + CORE1_WORK for b in plan.buffers):
        return "the plan has no work buffer for core 1 (planned for one core)", None
    if axis != CHANNELS and any(_overlaps(g, plan, t, node.outputs[0]) for t in node.inputs
                            if not g.tensor(t).is_const):
        return "its output shares arena bytes with an input: one core's rows would overwrite the other's", None
    cost = (int(per[:cut].sum()), int(per[cut:].sum()))
    reason = (f"{axis} [0, {cut}) on core 0, [{cut}, {len(per)}) on core 1: {cost[0]} / {cost[1]} MACs "
              "(estimate)")
    return reason, CoreSplit(node.name, job, axis, cut, len(per), cost, reason)


def _overlaps(g: Graph, plan: MemoryPlan, a: str, b: str) -> bool:
    a0, b0 = plan.offset_of(a), plan.offset_of(b)
    return a0 < b0 + g.tensor(b).nbytes and b0 < a0 + g.tensor(a).nbytes


def row_params(node: Node, g: Graph):
    """The geometry of a row-split layer's kernel (its reference Params; a conv2d_add's conv)."""
    p = import_module(f"tinyaot.ref.{OPS[node.op].ref}").prepare(node, g)
    return getattr(p, "conv", p)  # a conv2d_add's conv


def one_row(p) -> bool:
    """A 1-D layer (Conv1d, pooling over time): one row in and out, no window along the rows. Its columns are then
    split instead, the kernel seeing the row as a column (codegen/emit_cores.py: the same bytes in memory)."""
    return p.out_h == 1 and p.in_h == 1 and p.kernel_h == 1 and p.pad_top == 0 and p.out_w > 1


def _row_costs(node: Node, g: Graph, columns: bool = False) -> np.ndarray:
    """Estimated multiply-accumulates of each output row (or column): its taps inside the image, times the row's
    outputs and each output's window depth, plus one per output value (requantization)."""
    p = row_params(node, g)
    h, w = ("w", "h") if columns else ("h", "w")
    dilation = getattr(p, f"dilation_{h}", 1)
    out, size, kernel = getattr(p, f"out_{h}"), getattr(p, f"in_{h}"), getattr(p, f"kernel_{h}")
    pad = p.pad_left if columns else p.pad_top
    oy = np.arange(out)[:, None] * getattr(p, f"stride_{h}") - pad + np.arange(kernel)[None, :] * dilation
    taps = ((oy >= 0) & (oy < size)).sum(axis=1)
    channels = getattr(p, "out_c", getattr(p, "channels", 1))
    dense = OPS[node.op].macs == "conv"  # every input channel per output (depthwise: one)
    depth = getattr(p, f"kernel_{w}") * (p.in_c // max(p.groups, 1) if dense else 1)
    across = getattr(p, f"out_{w}")
    return taps * across * channels * depth + across * channels


def _channel_costs(node: Node, g: Graph) -> np.ndarray:
    in_features = g.tensor(node.inputs[1]).shape[1]
    return np.full(g.tensor(node.inputs[1]).shape[0], in_features + 1)


def _balanced_cut(per: np.ndarray, group: int, allowed: list[int] | None = None) -> int:
    """The cut (a multiple of `group`, or one of `allowed`) that makes the larger half smallest."""
    prefix = np.concatenate([[0], np.cumsum(per)])
    total = prefix[-1]
    cuts = np.arange(0, len(per) + 1, group) if allowed is None else np.asarray(allowed)
    worst = np.maximum(prefix[cuts], total - prefix[cuts])
    return int(cuts[int(np.argmin(worst))])
