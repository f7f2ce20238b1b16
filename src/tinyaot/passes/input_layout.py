"""Optional NCHW input: one transpose at the start, for callers whose data is channels-first."""
from __future__ import annotations

from tinyaot.ir import Graph, Node, Tensor


def accept_nchw_input(g: Graph) -> Graph:
    if g.layout != "NHWC" or g.torch_input_rank != 4:
        return g  # nothing to convert: the input is not a channels-last feature map
    old = g.tensor(g.inputs[0])
    n, h, w, c = old.shape
    if c == 1 or h * w == 1:
        op, attrs = "reshape", {}
    else:
        op, attrs = "transpose", {"perm": (0, 2, 3, 1)}
    new = g.add_tensor(Tensor("input_nchw", (n, c, h, w), old.dtype))
    g.nodes.insert(0, Node(op, "input_to_nhwc", [new.name], [old.name], attrs, source="input_layout='NCHW'"))
    g.inputs = [new.name]
    g.layout = "NCHW"
    g.torch_input_rank = 0  # the model now takes torch's layout as is
    return g
