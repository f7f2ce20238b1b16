"""conv2d_add_s8: a conv2d whose int8 output is added to a skip tensor in the conv's epilogue (ResNet blocks).

Exactly conv2d_s8 (rounded to the conv's own int8 output qparams and clamp, kept in the node's attrs) followed
by add_s8 (TFLM's int8 Add, operand order kept): the fusion saves memory, never changes a bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ref import add_s8, conv2d_s8
from tinyaot.ref.add_s8 import AddParams
from tinyaot.ref.conv2d_s8 import ConvParams

_FUSION_ATTRS = ("conv", "conv_qparams", "conv_clamp", "clamp", "skip_input")


@dataclass(frozen=True)
class ConvAddParams:
    conv: ConvParams  # the conv, to its own int8 output
    add: AddParams  # the add of that output and the skip
    skip_input: int  # 1: the skip is the add's first operand, 2: its second


def parts(node: Node, g: Graph) -> tuple[Node, Node, Graph]:
    """The conv and add nodes the fused node stands for, in a graph holding their tensors (the conv's output
    recreated from the attrs)."""
    if len(node.inputs) != 4 or node.attrs.get("skip_input") not in (1, 2) or "conv_qparams" not in node.attrs:
        raise ModelError(f"layer '{node.name}': conv2d_add needs inputs (x, weights, bias, skip) and the fused "
                         "conv's attrs (conv_qparams, skip_input); build it with passes.fuse_residual")
    x, w, b, skip = node.inputs
    y = g.tensor(node.outputs[0])
    mid = Tensor(f"{node.name}__conv_out", y.shape, "int8", qparams=node.attrs["conv_qparams"])
    tensors = {n: g.tensor(n) for n in (x, w, b, skip)} | {mid.name: mid, y.name: y}
    conv_attrs = {k: v for k, v in node.attrs.items() if k not in _FUSION_ATTRS} | {
        "clamp": node.attrs.get("conv_clamp")}
    conv = Node("conv2d", node.attrs.get("conv", node.name), [x, w, b], [mid.name], conv_attrs, node.source)
    operands = [skip, mid.name] if node.attrs["skip_input"] == 1 else [mid.name, skip]
    add = Node("add", node.name, operands, [y.name], {"clamp": node.attrs.get("clamp")}, node.source)
    return conv, add, Graph(tensors, [conv, add], [x, skip], [y.name], "NHWC")


def prepare(node: Node, g: Graph) -> ConvAddParams:
    conv, add, sub = parts(node, g)
    return ConvAddParams(conv2d_s8.prepare(conv, sub), add_s8.prepare(add, sub), int(node.attrs["skip_input"]))


def conv2d_add_s8(x: np.ndarray, skip: np.ndarray, p: ConvAddParams) -> np.ndarray:
    mid = conv2d_s8.conv2d_s8(x, p.conv)
    a, b = (skip, mid) if p.skip_input == 1 else (mid, skip)
    return add_s8.add_s8(a, b, p.add).reshape(mid.shape)
