"""Fold affine arithmetic into its neighbours at float level, before quantization, so int8 rounds once:

- chains of scalar arithmetic (`(x * 0.5 + 1) / 6`) into one table;
- a per-channel constant multiplied, added or subtracted right after a conv / linear (a learned scale or bias,
  `conv(x) * self.scale + self.shift`) into that layer's weights and bias, as fold_batch_norm does with a
  BatchNorm: y = s * (W x + b) + t = (s W) x + (s b + t). A non-negative scale also folds through a ReLU
  between them (relu(z) * s = relu(s * z) for s >= 0).

What does not fold stays an element-wise op whose constant operand is quantized on its own (quantize/lower.py).
"""
from __future__ import annotations

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS, RELU, WEIGHTED, ops_where

FOLDABLE = ops_where(qparams=WEIGHTED)  # a per-output-channel weight (along spec.weight_axis) and a bias
ADD = "add"
SUB = "sub"
MUL = "mul"


def _affine(node) -> bool:
    return node.op == "lut" and node.attrs.get("function") == "affine" and not node.attrs.get("clamp")


def fold_affine_chains(g: Graph) -> Graph:
    """A new graph: `g` is left as it was."""
    g = g.copy()
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
            folded = second.with_attrs(scale_by=a1 * a2, offset=b1 * a2 + b2)  # a2 * (a1 x + b1) + b2
            folded.inputs = [first.inputs[0]]
            g.nodes[g.nodes.index(second)] = folded
            g.nodes.remove(first)
            changed = True
            break
    while any(_fold_channel_constant(g, node) or _drop_identity(g, node) for node in list(g.nodes)):
        pass
    _drop_unread(g)
    g.prune()
    return g


def _drop_identity(g: Graph, node: Node) -> bool:
    """x + 0, x - 0, x * 1 (an all-zero or all-one constant, or a zero branch, that does not grow x's shape, as a
    freshly initialised attention bias, layer scale or residual branch is) and an affine table of 1 x + 0 are x
    itself. Left as ops, the constant's own
    qparams (of a range of zero) could make the add kernel's multiplier impossible (TFLite's rule)."""
    if node.attrs.get("clamp") or node.outputs[0] in g.outputs:
        return False
    if _affine(node):
        x = node.inputs[0] if node.attrs["scale_by"] == 1.0 and node.attrs["offset"] == 0.0 else None
    elif node.op in (ADD, SUB, MUL) and len(node.inputs) == 2:
        x = _identity_operand(g, node)
    else:
        return False
    if x is None:
        return False
    y = node.outputs[0]
    for reader in g.nodes:
        reader.inputs = [x if i == y else i for i in reader.inputs]
    g.nodes.remove(node)
    return True


def _identity_operand(g: Graph, node: Node) -> str | None:
    """The activation operand of add / sub / mul when the other leaves it unchanged: a constant of zeros (add,
    sub) or ones (mul), or, for add / sub, a layer whose weights and bias are all zero (a residual branch whose
    last BatchNorm starts at zero, as EfficientViT initialises it)."""
    a, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    if node.op == MUL:
        if a.is_const == b.is_const:
            return None
        x, c = (a, b) if b.is_const else (b, a)
        return x.name if x.shape == y.shape and np.all(np.asarray(c.data) == 1.0) else None
    for x, other in ((a, b), (b, a)) if node.op == ADD else ((a, b),):
        if not x.is_const and x.shape == y.shape and _all_zero(g, other):
            return x.name
    return None


def _all_zero(g: Graph, t) -> bool:
    """`t` is zero everywhere, whatever the input: a constant of zeros, or the output of a conv / linear with zero
    weights and bias whose clamp lets 0 through."""
    if t.is_const:
        return bool(np.all(np.asarray(t.data) == 0.0))
    p = g.producer(t.name)
    if p is None or p.op not in FOLDABLE:
        return False
    lo, hi = p.attrs.get("clamp") or (0.0, 0.0)
    return lo <= 0.0 <= hi and all(not np.any(g.tensor(c).data) for c in p.inputs[1:3])


def _drop_unread(g: Graph) -> None:
    """Layers nothing reads any more (a zero branch once its add is gone)."""
    while True:
        read = {i for n in g.nodes for i in n.inputs} | set(g.outputs)
        dead = [n for n in g.nodes if not read & set(n.outputs)]
        if not dead:
            return
        for n in dead:
            g.nodes.remove(n)


def _per_channel(g: Graph, node: Node) -> tuple[int, np.ndarray] | None:
    """(slot of the activation operand, the constant as one value per output channel) when `node` is a clamp-free
    add / sub / mul of an activation and a constant that varies along the last axis only and does not grow the
    activation's shape; else None."""
    if node.op not in (ADD, SUB, MUL) or len(node.inputs) != 2 or node.attrs.get("clamp"):
        return None
    ta, tb = (g.tensor(n) for n in node.inputs)
    if ta.is_const == tb.is_const:
        return None
    slot = 0 if tb.is_const else 1
    x, c = (ta, tb) if slot == 0 else (tb, ta)
    y = g.tensor(node.outputs[0])
    if x.shape != y.shape or not x.shape or c.data.ndim > len(x.shape):
        return None
    channels = x.shape[-1]
    data = np.asarray(c.data, dtype=np.float64)
    if any(d != 1 for d in data.shape[:-1]) or (data.ndim and data.shape[-1] not in (1, channels)):
        return None
    return slot, np.broadcast_to(data.reshape(-1), (channels,)).copy()


def _fold_channel_constant(g: Graph, node: Node) -> bool:
    found = _per_channel(g, node)
    if found is None:
        return False
    slot, c = found
    x = node.inputs[slot]
    producer, relu = g.producer(x), None
    if producer is not None and producer.op == "relu" and producer.attrs.get("clamp") == RELU and node.op == MUL \
            and (c >= 0).all() and _only_reader(g, producer.outputs[0]):
        relu, producer = producer, g.producer(producer.inputs[0])
    if producer is None or producer.op not in FOLDABLE or producer.attrs.get("clamp"):
        return False
    if not _only_reader(g, producer.outputs[0]):
        return False
    if node.op == MUL:
        scale, shift = c, np.zeros_like(c)
    elif node.op == ADD:
        scale, shift = np.ones_like(c), c
    else:  # sub: x - c, or c - x
        scale, shift = (np.ones_like(c), -c) if slot == 0 else (-np.ones_like(c), c)
    w, b = g.tensor(producer.inputs[1]), g.tensor(producer.inputs[2])
    shape = [1] * w.data.ndim
    shape[OPS[producer.op].weight_axis] = -1
    w.data = (w.data * scale.reshape(shape)).astype(np.float32)
    b.data = (b.data * scale + shift).astype(np.float32)
    y = node.outputs[0]
    (relu or producer).outputs = [y]  # the folded layer (or the ReLU after it) now writes the op's output
    g.nodes.remove(node)
    return True


def _only_reader(g: Graph, tensor: str) -> bool:
    return len(g.consumers(tensor)) == 1 and tensor not in g.outputs
