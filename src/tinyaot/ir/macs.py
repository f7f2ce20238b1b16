"""Multiply-accumulates per node: the work measure behind instructions per MAC."""
from __future__ import annotations

from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS


def node_macs(node: Node, g: Graph) -> int:
    """MACs of conv, depthwise and fully connected layers (weights x output positions); 0 for other ops."""
    kind = OPS[node.op].macs if node.op in OPS else None
    if kind is None or len(node.inputs) < 2:
        return 0
    w, y = g.tensor(node.inputs[1]), g.tensor(node.outputs[0])
    if kind == "dense":
        return y.size * w.shape[1]
    if kind == "recurrent":  # lstm / gru: every step runs the input and the recurrent weights once
        return g.tensor(node.inputs[0]).shape[1] * (w.size + g.tensor(node.inputs[2]).size)
    if kind == "svdf":  # every filter's feature dot product over the input and time dot product over its memory
        return g.tensor(node.inputs[0]).shape[0] * (w.size + g.tensor(node.inputs[2]).size)
    if kind == "transposed":  # every input value meets every tap of its out_c filters (cropped taps included)
        return g.tensor(node.inputs[0]).size * w.shape[0] * w.shape[1] * w.shape[2]
    _, kh, kw, w_in = w.shape
    per_output = kh * kw * (1 if kind == "depthwise" else w_in)
    return y.size * per_output


def graph_macs(g: Graph) -> int:
    return sum(node_macs(n, g) for n in g.nodes)
