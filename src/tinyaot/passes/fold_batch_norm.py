"""Fold BatchNorm into the conv/linear before it; a BatchNorm with no such producer becomes a 1x1 depthwise conv.

y = scale * (conv(x) + b) + shift = conv'(x) + b' with w' = w * scale[o], b' = b * scale + shift.
"""
from __future__ import annotations

import numpy as np

from tinyaot.errors import UnsupportedOpError
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ir.ops import OPS, WEIGHTED, ops_where

FOLDABLE = ops_where(qparams=WEIGHTED)  # a per-output-channel weight (along spec.weight_axis) and a bias


def fold_batch_norm(g: Graph) -> Graph:
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
    shape = g.tensor(bn.inputs[0]).shape
    if len(shape) != 4:
        raise UnsupportedOpError(
            f"BatchNorm '{bn.name}' ({bn.source or 'no source location'}) does not follow a Linear/conv it can fold "
            "into; a standalone BatchNorm1d on features is not supported"
        )
    w = g.add_tensor(Tensor(f"{bn.name}_dw_weight", (1, 1, 1, len(scale)), "float32",
                            data=scale.reshape(1, 1, 1, -1).astype(np.float32)))
    b = g.add_tensor(Tensor(f"{bn.name}_dw_bias", (len(shift),), "float32", data=shift.astype(np.float32)))
    bn.op = "depthwise_conv2d"
    bn.inputs = [bn.inputs[0], w.name, b.name]
    bn.attrs = {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "depth_multiplier": 1}


def _replace_uses(g: Graph, old: str, new: str) -> None:
    for node in g.nodes:
        node.inputs = [new if i == old else i for i in node.inputs]
    g.outputs = [new if o == old else o for o in g.outputs]
