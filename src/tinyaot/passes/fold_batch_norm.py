"""Fold BatchNorm into the conv/linear before it; a BatchNorm with no such producer becomes a 1x1 depthwise conv.

y = scale * (conv(x) + b) + shift = conv'(x) + b' with w' = w * scale[o], b' = b * scale + shift.

A standalone BatchNorm (on the input, after an activation, a concat or a reshape: DenseNet, pre-activation ResNets,
RepGhost / MobileOne identity branches) is a per-channel affine. Its cheapest exact integer form is a 1x1
depthwise conv: one rounding, per-channel int8 weights that hold each scale exactly (+-127 times its own weight
scale) and an int32 bias, and a following ReLU fuses into it like into any conv. A tensor that is not a 4-D
feature map (BatchNorm1d on (N, C) features) goes through it as a (N, 1, L, C) view, which costs no bytes.
"""
from __future__ import annotations

import math

import numpy as np

from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ir.ops import OPS, WEIGHTED, ops_where

FOLDABLE = ops_where(qparams=WEIGHTED)  # a per-output-channel weight (along spec.weight_axis) and a bias


def fold_batch_norm(g: Graph) -> Graph:
    """A new graph: `g` is left as it was."""
    g = g.copy()
    for bn in [n for n in g.nodes if n.op == "batch_norm"]:
        x = bn.inputs[0]
        producer = g.producer(x)
        scale = g.tensor(bn.inputs[1]).data.astype(np.float64)
        shift = g.tensor(bn.inputs[2]).data.astype(np.float64)
        if (producer is not None and producer.op in FOLDABLE and len(g.consumers(x)) == 1
                and x not in g.outputs and not producer.attrs.get("clamp")):
            _fold_into(g, producer, scale, shift)
            _replace_uses(g, bn.outputs[0], x)
            g.nodes.remove(bn)
        else:
            _as_depthwise(g, bn, scale, shift)
    g.prune()
    return g


def _fold_into(g: Graph, producer: Node, scale: np.ndarray, shift: np.ndarray) -> None:
    w = g.tensor(producer.inputs[1])
    b = g.tensor(producer.inputs[2])
    shape = [1] * w.data.ndim
    shape[OPS[producer.op].weight_axis] = -1
    w.data = (w.data * scale.reshape(shape)).astype(np.float32)
    b.data = (b.data * scale + shift).astype(np.float32)


def _as_depthwise(g: Graph, bn: Node, scale: np.ndarray, shift: np.ndarray) -> None:
    """Replace `bn` (channels on its last axis, as every front end gives it) by a 1x1 depthwise conv, between two
    views when its tensor is not (N, H, W, C)."""
    x, y = g.tensor(bn.inputs[0]), g.tensor(bn.outputs[0])
    channels = len(scale)
    w = g.add_tensor(Tensor(_fresh(g.tensors, f"{bn.name}_dw_weight"), (1, 1, 1, channels), "float32",
                            data=scale.reshape(1, 1, 1, -1).astype(np.float32)))
    b = g.add_tensor(Tensor(_fresh(g.tensors, f"{bn.name}_dw_bias"), (channels,), "float32",
                            data=shift.astype(np.float32)))
    attrs = {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "depth_multiplier": 1}
    at = g.nodes.index(bn)
    if len(x.shape) == 4:
        g.nodes[at] = Node("depthwise_conv2d", bn.name, [x.name, w.name, b.name], [y.name], attrs, bn.source)
        return
    shape4 = (x.shape[0], 1, math.prod(x.shape[1:-1]), channels)
    x4 = g.add_tensor(Tensor(_fresh(g.tensors, f"{bn.name}_in4d"), shape4, x.dtype))
    y4 = g.add_tensor(Tensor(_fresh(g.tensors, f"{bn.name}_out4d"), shape4, y.dtype))
    taken = {n.name for n in g.nodes}
    g.nodes[at:at + 1] = [
        Node("reshape", _fresh(taken, f"{bn.name}_view"), [x.name], [x4.name], source=bn.source),
        Node("depthwise_conv2d", bn.name, [x4.name, w.name, b.name], [y4.name], attrs, bn.source),
        Node("reshape", _fresh(taken, f"{bn.name}_unview"), [y4.name], [y.name], source=bn.source),
    ]


def _fresh(taken, base: str) -> str:
    """`base`, or `base_k` with the first k that no name in `taken` has."""
    name, k = base, 1
    while name in taken:
        name = f"{base}_{k}"
        k += 1
    return name


def _replace_uses(g: Graph, old: str, new: str) -> None:
    for node in g.nodes:
        node.inputs = [new if i == old else i for i in node.inputs]
    g.outputs = [new if o == old else o for o in g.outputs]
