"""The float model an int8 graph stands for: weights and biases dequantized, activations left unrounded.

An imported int8 model (.tflite, PT2E) has no float original in hand. Running this graph in float shows what its
fixed scales and zero points do to real data: which tensors clip, which use a handful of steps.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from tinyaot.ir import Graph, Node, Tensor


def dequantized_graph(g: Graph) -> Graph:
    tensors = {}
    for name, t in g.tensors.items():
        if t.is_const:
            data = t.qparams.dequantize(t.data) if t.qparams is not None else t.data.astype(np.float64)
            tensors[name] = Tensor(name, t.shape, "float32", data=data.astype(np.float32))
        else:
            tensors[name] = dataclasses.replace(t, dtype="float32", qparams=None)
    nodes = [Node(n.op, n.name, list(n.inputs), list(n.outputs), dict(n.attrs), n.source) for n in g.nodes]
    return g.replace(tensors=tensors, nodes=nodes)
