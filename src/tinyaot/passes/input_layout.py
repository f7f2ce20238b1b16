"""Optional NCHW input: one transpose at the start, for callers whose data is channels-first."""
from __future__ import annotations

from tinyaot.ir import Graph, Node, Tensor


def accept_nchw_input(g: Graph) -> Graph:
    """Each channels-last feature-map input (4-D in torch) gets one transpose (a reshape when only a copy of the
    bytes' order would change); the others are left as they are. A new graph: `g` is left as it was."""
    g = g.copy()
    inputs = []
    for k, name in enumerate(g.inputs):
        layout, rank = g.io_layout_of(name)
        if layout != "NHWC" or rank != 4:
            inputs.append(name)  # nothing to convert: the input is not a channels-last feature map
            continue
        old = g.tensor(name)
        n, h, w, c = old.shape
        if c == 1 or h * w == 1:
            op, attrs = "reshape", {}
        else:
            op, attrs = "transpose", {"perm": (0, 2, 3, 1)}
        suffix = "" if k == 0 else f"_{k}"
        new = g.add_tensor(Tensor(f"input_nchw{suffix}", (n, c, h, w), old.dtype))
        g.nodes.insert(0, Node(op, f"input_to_nhwc{suffix}", [new.name], [old.name], attrs,
                               source="input_layout='NCHW'"))
        g.io_layouts[new.name] = ("NCHW", 0)  # the model now takes torch's layout as is
        inputs.append(new.name)
        if k == 0:
            g.layout, g.torch_input_rank = "NCHW", 0
    g.inputs = inputs
    return g
