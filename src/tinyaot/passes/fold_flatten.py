"""Flatten of a channels-last feature map into a Linear: permute the Linear's columns, not the bytes.

PyTorch flattens (C, H, W); the IR holds (H, W, C). The front end writes transpose(NHWC->NCHW) +
reshape; when that feeds only a Linear, the permutation moves into the weights at compile time and
the transpose disappears, so no permute runs on the device.
"""
from __future__ import annotations

from tinyaot.ir import Graph


def fold_flatten_transpose(g: Graph) -> Graph:
    """A new graph: `g` is left as it was."""
    g = g.copy()
    for t in [n for n in g.nodes if n.op == "transpose" and tuple(n.attrs["perm"]) == (0, 3, 1, 2)]:
        users = g.consumers(t.outputs[0])
        if len(users) != 1 or users[0].op != "reshape" or t.outputs[0] in g.outputs:
            continue
        reshape = users[0]
        fc_users = g.consumers(reshape.outputs[0])
        out_shape = g.tensor(reshape.outputs[0]).shape
        n, h, w, c = g.tensor(t.inputs[0]).shape
        flattens = out_shape == (n, h * w * c)  # each sample's (C, H, W) into one row, not the batch folded in
        if (not flattens or not fc_users or any(u.op != "fully_connected" or u.inputs[0] != reshape.outputs[0]
                                                 for u in fc_users) or reshape.outputs[0] in g.outputs):
            continue
        for fc in fc_users:
            weight = g.tensor(fc.inputs[1])
            o = weight.data.shape[0]
            weight.data = weight.data.reshape(o, c, h, w).transpose(0, 2, 3, 1).reshape(o, -1).copy()
        reshape.inputs = [t.inputs[0]]
        g.nodes.remove(t)
    g.prune()
    return g
