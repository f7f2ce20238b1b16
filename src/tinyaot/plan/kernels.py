"""Kernel choices the plan makes per layer, and the working memory they need as arena buffers.

`optimize="speed"` gives every conv2d / conv2d_add that qualifies the pairs kernel (c/kernels/conv2d_pairs_s8.c):
two output pixels at a time through an int16 microkernel, with weights widened at compile time (twice their
int8 flash) and the two windows widened into a work buffer live only at the layer's step. It qualifies when its
requantization can take the fast exact path: every channel's shift is a right shift and every accumulator
provably fits in 31 bits (tinyaot_requantize_right), and the arena is at least word aligned (LDRD).
`optimize="size"` keeps the int8-weight kernels. A pairs layer is never given a ring (plan/inplace.py): its
kernel reads a pair's windows before writing either pixel, so its own overlap rule (plan/overlap.py, pairs=True)
already lets its output start closer to its input than the plain kernel's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.plan.lifetimes import Buffer
from tinyaot.quantize.fixedpoint import quantize_multiplier

OPTIMIZE = ("speed", "size")
PAIRS = "pairs"


@dataclass(frozen=True)
class KernelChoice:
    """A layer run by a kernel other than its op's plain one, with its work buffer (the plan places it)."""

    node: str
    kernel: str  # PAIRS
    work: str  # the work buffer's name
    work_bytes: int
    taps_padded: int


def check_optimize(optimize: str) -> str:
    if optimize not in OPTIMIZE:
        raise ModelError(f"optimize must be one of {', '.join(OPTIMIZE)}, got {optimize!r}: 'speed' (the default) "
                         "widens conv weights to int16 for a faster kernel, 'size' keeps them int8")
    return optimize


def taps_padded(node: Node, g: Graph) -> int:
    _, kh, kw, in_c = g.tensor(node.inputs[1]).shape
    return -(-kh * kw * in_c // 8) * 8


def kernel_choices(g: Graph, optimize: str, taken: set[str], alignment: int) -> list[KernelChoice]:
    """The pairs kernel for every conv that qualifies (speed), in graph order; none for size, or when the
    arena's alignment is below the word alignment the kernel's LDRD needs."""
    if check_optimize(optimize) == "size" or alignment < 4:
        return []
    out = []
    for node in g.nodes:
        if OPS[node.op].macs != "conv" or not _qualifies(node, g):  # conv2d, conv2d_add
            continue
        name = f"{node.name}_work"
        while name in taken:
            name += "_"
        taken.add(name)
        taps = taps_padded(node, g)
        out_c = g.tensor(node.outputs[0]).shape[-1]
        extra = 2 * out_c if node.op == "conv2d_add" else 0  # the conv's own int8 output of the pair
        out.append(KernelChoice(node.name, PAIRS, name, 5 * taps + extra, taps))
    return out


def work_buffers(g: Graph, choices: list[KernelChoice]) -> list[Buffer]:
    """Each choice's work buffer, live only at its node's step (a kernel's scratch)."""
    step = {n.name: s for s, n in enumerate(g.nodes)}
    return [Buffer(c.work, (c.work,), c.work_bytes, step[c.node], step[c.node], c.node, scratch=True)
            for c in choices]


def _qualifies(node: Node, g: Graph) -> bool:
    x, w, b = (g.tensor(n) for n in node.inputs[:3])
    y = g.tensor(node.outputs[0])
    if len(x.shape) != 4 or len(w.shape) != 4 or x.dtype != "int8" or w.data is None or w.qparams is None:
        return False
    out_qp = node.attrs.get("conv_qparams") if node.op == "conv2d_add" else y.qparams
    if x.qparams is None or out_qp is None or w.shape[3] != x.shape[3]:
        return False
    scales = list(w.qparams.scale) if len(w.qparams.scale) > 1 else [w.qparams.scale[0]] * w.shape[0]
    shifts = [quantize_multiplier(float(x.qparams.scale[0]) * float(s) / float(out_qp.scale[0]))[1] for s in scales]
    if max(shifts) > -1 or min(shifts) < -31:
        return False
    weights = np.abs(w.data.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1)
    bias = np.abs(b.data.astype(np.int64)) if b is not None and b.data is not None else 0
    return bool(np.all(bias + 255 * weights < 2**30))  # |x + input_offset| <= 255
