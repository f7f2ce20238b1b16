"""Fuse a residual add into the conv that produces one of its operands (conv2d_add).

In a ResNet block y = skip + conv(x), the conv's output exists only to be added. Fused, the conv computes
a few channels of one pixel, adds the skip's bytes of that pixel and writes the sum straight over them:
the conv's own output never exists, and the sum may sit exactly over the skip (an elementwise overlap rule,
plan/overlap.py), so the block holds two feature maps instead of three. Numerics are unchanged: the conv
still rounds to its own int8 output (qparams kept in the attrs), then TFLM's int8 add runs on that byte.
"""
from __future__ import annotations

import copy

from tinyaot.ir import Graph, Node

FUSED_OP = "conv2d_add"


def _fusable(g: Graph, conv: Node | None, mid: str, skip: str, y: str) -> bool:
    if conv is None or conv.op != "conv2d" or len(conv.inputs) != 3 or mid in g.outputs or mid == skip:
        return False
    if len(g.consumers(mid)) != 1:
        return False
    if g.tensor(conv.inputs[1]).shape[-1] != g.tensor(conv.inputs[0]).shape[-1]:
        return False  # a grouped conv: conv2d_add's kernel splits output channels into chunks without groups
    tm, ts, ty = g.tensor(mid), g.tensor(skip), g.tensor(y)
    same = tm.shape == ts.shape == ty.shape and len(ty.shape) == 4
    return same and not ts.is_const and all(t.dtype == "int8" and t.qparams is not None for t in (tm, ts, ty))


def fuse_residual_adds(g: Graph) -> Graph | None:
    """A copy of `g` with every int8 add whose operand is a conv2d output read only by it fused into one
    conv2d_add node (at the add's place, named after the add); None when nothing fuses."""
    out = g.replace()
    fused = 0
    for add in list(out.nodes):
        if add.op != "add" or len(add.inputs) != 2:
            continue
        a, b = add.inputs
        for mid, skip, skip_input in ((b, a, 1), (a, b, 2)):
            conv = out.producer(mid)
            if not _fusable(out, conv, mid, skip, add.outputs[0]):
                continue
            attrs = {k: copy.deepcopy(v) for k, v in conv.attrs.items() if k != "clamp"}
            attrs |= {"conv": conv.name, "conv_qparams": out.tensor(mid).qparams, "conv_clamp": conv.attrs.get("clamp"),
                      "clamp": add.attrs.get("clamp"), "skip_input": skip_input}
            node = Node(FUSED_OP, add.name, [*conv.inputs, skip], list(add.outputs), attrs, conv.source or add.source)
            out.nodes[out.nodes.index(add)] = node
            out.nodes.remove(conv)
            fused += 1
            break
    if not fused:
        return None
    out.prune()
    return out
