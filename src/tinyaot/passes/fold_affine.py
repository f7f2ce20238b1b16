"""Merge chains of scalar arithmetic (`(x * 0.5 + 1) / 6`) into one table: one rounding instead of several."""
from __future__ import annotations

from tinyaot.ir import Graph


def _affine(node) -> bool:
    return node.op == "lut" and node.attrs.get("function") == "affine" and not node.attrs.get("clamp")


def fold_affine_chains(g: Graph) -> Graph:
    changed = True
    while changed:
        changed = False
        for second in [n for n in g.nodes if _affine(n)]:
            first = g.producer(second.inputs[0])
            if first is None or not _affine(first) or len(g.consumers(first.outputs[0])) != 1:
                continue
            if first.outputs[0] in g.outputs:
                continue
            a1, b1 = first.attrs["scale_by"], first.attrs["offset"]
            a2, b2 = second.attrs["scale_by"], second.attrs["offset"]
            second.set_attrs(scale_by=a1 * a2, offset=b1 * a2 + b2)  # a2 * (a1 x + b1) + b2
            second.inputs = [first.inputs[0]]
            g.nodes.remove(first)
            changed = True
            break
    g.prune()
    return g
