"""Kernel choices the plan makes per layer, and the working memory they need as arena buffers.

`optimize="speed"` gives every conv2d / conv2d_add that qualifies the pairs kernel (c/kernels/conv2d_pairs_s8.c):
two output pixels at a time through an int16 microkernel, with weights widened at compile time (twice their
int8 flash) and the two windows widened into a work buffer live only at the layer's step; fully connected
layers get the wide kernel (int16 weights, eight outputs at a time, no work buffer). `optimize="size"` gives
both the same kernels with int8 weights widened as they are read (no more flash than the int8 model).
`optimize="memory"` keeps the plain int8 kernels, whose ring variants give the smallest arena.
A layer qualifies when its requantization can take the fast exact path: every channel's shift is a right
shift (of at most 22, so the speed kernels can fold the zero point into one int32 beside it) and every
accumulator provably fits in 31 bits (tinyaot_requantize_right), and the arena is at least word aligned (LDRD).
A pairs layer is never given a ring (plan/inplace.py): its kernel reads a pair's windows
before writing either pixel, so its own overlap rule (plan/overlap.py, pairs=True) already lets its output
start closer to its input than the plain kernel's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.plan.lifetimes import Buffer
from tinyaot.quantize.fixedpoint import quantize_multiplier

OPTIMIZE = ("speed", "size", "memory")
PAIRS = "pairs"  # conv2d / conv2d_add: c/kernels/conv2d_pairs_s8.c, int16 weights, with a work buffer
PAIRS_W8 = "pairs_w8"  # the same kernel with int8 weights (size mode)
WIDE = "wide"  # fully_connected: tinyaot_fully_connected_wide_s8, int16 weights, no work buffer
WIDE_W8 = "wide_w8"  # the same with int8 weights (size mode)


@dataclass(frozen=True)
class KernelChoice:
    """A layer run by a kernel other than its op's plain one, with its work buffer (the plan places it)."""

    node: str
    kernel: str  # PAIRS | PAIRS_W8 | WIDE | WIDE_W8
    work: str  # the work buffer's name ("" when the kernel needs none)
    work_bytes: int
    taps_padded: int


def check_optimize(optimize: str) -> str:
    if optimize not in OPTIMIZE:
        raise ModelError(f"optimize must be one of {', '.join(OPTIMIZE)}, got {optimize!r}: 'speed' (the default) "
                         "widens conv and fully connected weights to int16 for the fastest kernels, 'size' keeps "
                         "them int8 (a fast conv kernel, no more flash than the int8 model), 'memory' the plain "
                         "int8 kernels and the smallest arena")
    return optimize


def taps_padded(node: Node, g: Graph) -> int:
    _, kh, kw, in_c = g.tensor(node.inputs[1]).shape
    return -(-kh * kw * in_c // 8) * 8


def kernel_choices(g: Graph, optimize: str, taken: set[str], alignment: int) -> list[KernelChoice]:
    """The pairs kernel for every conv that qualifies (int16 weights for speed, int8 for size) and the wide
    fully connected kernel (speed), in graph order; none when the arena's alignment is below the word
    alignment the kernels' LDRD needs."""
    speed = check_optimize(optimize) == "speed"
    if optimize == "memory" or alignment < 4:
        return []
    out = []
    for node in g.nodes:
        if OPS[node.op].macs == "dense" and _fc_qualifies(node, g):
            out.append(KernelChoice(node.name, WIDE if speed else WIDE_W8, "", 0, 0))
        if OPS[node.op].macs != "conv" or not _qualifies(node, g):  # conv2d, conv2d_add
            continue
        name = f"{node.name}_work"
        while name in taken:
            name += "_"
        taken.add(name)
        taps = taps_padded(node, g)
        out_c = g.tensor(node.outputs[0]).shape[-1]
        extra = 2 * out_c if node.op == "conv2d_add" else 0  # the conv's own int8 output of the pair
        out.append(KernelChoice(node.name, PAIRS if speed else PAIRS_W8, name, 5 * taps + extra, taps))
    return out


def work_buffers(g: Graph, choices: list[KernelChoice]) -> list[Buffer]:
    """Each choice's work buffer, live only at its node's step (a kernel's scratch)."""
    step = {n.name: s for s, n in enumerate(g.nodes)}
    return [Buffer(c.work, (c.work,), c.work_bytes, step[c.node], step[c.node], c.node, scratch=True)
            for c in choices if c.work]


def _right_shifts_only(x_scale: float, w_qp, out_scale: float, n: int, most: int = 31) -> bool:
    """Every channel's QuantizeMultiplier shift (TFLM's per-channel rule) is a right shift of 1..`most`."""
    scales = list(w_qp.scale) if len(w_qp.scale) > 1 else [w_qp.scale[0]] * n
    shifts = [quantize_multiplier(float(x_scale) * float(s) / float(out_scale))[1] for s in scales]
    return max(shifts) <= -1 and min(shifts) >= -most


def _accumulators_fit(w, b, x_bound: int) -> bool:
    """|bias| + x_bound * sum |w| < 2^30 for every output channel: the bound tinyaot_requantize_right needs."""
    weights = np.abs(w.data.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1)
    bias = np.abs(b.data.astype(np.int64)) if b is not None and b.data is not None else 0
    return bool(np.all(bias + x_bound * weights < 2**30))


def _fc_qualifies(node: Node, g: Graph) -> bool:
    """in_features a multiple of 8 (the kernel reads whole groups), right shifts, |acc| < 2^30 with the input
    offset folded into the bias (|bias| + 256 * sum |w|)."""
    x, w, b = (g.tensor(n) for n in node.inputs[:3])
    y = g.tensor(node.outputs[0])
    if len(w.shape) != 2 or w.shape[1] % 8 or x.dtype != "int8" or w.data is None or None in (
            w.qparams, x.qparams, y.qparams):
        return False
    if not _right_shifts_only(x.qparams.scale[0], w.qparams, y.qparams.scale[0], w.shape[0], most=22):
        return False  # the speed kernel folds zero point << right into one int32 (codegen: requant_triples)
    return _accumulators_fit(w, b, 256)


def _qualifies(node: Node, g: Graph) -> bool:
    x, w, b = (g.tensor(n) for n in node.inputs[:3])
    y = g.tensor(node.outputs[0])
    if len(x.shape) != 4 or len(w.shape) != 4 or x.dtype != "int8" or w.data is None or w.qparams is None:
        return False
    out_qp = node.attrs.get("conv_qparams") if node.op == "conv2d_add" else y.qparams
    if x.qparams is None or out_qp is None or w.shape[3] != x.shape[3]:
        return False
    if not _right_shifts_only(x.qparams.scale[0], w.qparams, out_qp.scale[0], w.shape[0], most=22):
        return False  # speed folds zero point << right into one int32 (codegen: requant_triples)
    return _accumulators_fit(w, b, 255)  # |x + input_offset| <= 255
