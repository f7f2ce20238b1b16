"""Fold a ReLU/ReLU6/clamp into the op that produces its input, so int8 needs no separate pass.

A standalone activation is a `relu` node with a `clamp` attribute (see ir/ops.py).
"""
from __future__ import annotations

from tinyaot.ir import Graph
from tinyaot.ir.ops import ops_where

FUSABLE_PRODUCERS = ops_where(fuses_clamp=True)


def fuse_activations(g: Graph) -> Graph:
    """A new graph: `g` is left as it was."""
    g = g.copy()
    for act in [n for n in g.nodes if n.op == "relu"]:
        src = act.inputs[0]
        producer = g.producer(src)
        if producer is None or producer.op not in FUSABLE_PRODUCERS:
            continue
        if producer.attrs.get("clamp") or len(g.consumers(src)) != 1 or src in g.outputs:
            continue
        g.nodes[g.nodes.index(producer)] = producer.with_attrs(clamp=act.attrs["clamp"])
        _rename_uses(g, act.outputs[0], src)
        g.nodes.remove(act)
    g.prune()
    return g


def _rename_uses(g: Graph, old: str, new: str) -> None:
    for node in g.nodes:
        node.inputs = [new if i == old else i for i in node.inputs]
    g.outputs = [new if o == old else o for o in g.outputs]
