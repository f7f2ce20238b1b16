"""Optional uint8 model input (camera pixels, ADC codes): one in-place uint8_to_int8 step at the start.

The int8 input's scale stays; the uint8 zero point is the int8 one + 128, so no value changes.
"""
from __future__ import annotations

from tinyaot.ir import Graph, Node, QParams, Tensor


def accept_uint8_input(q: Graph) -> Graph:
    """Every input becomes uint8 (each with its own step; a model with several inputs takes them all as uint8). A new
    graph: `q` is left as it was."""
    q = q.copy()
    inputs = []
    for k, name in enumerate(q.inputs):
        old = q.tensor(name)
        qp = old.qparams
        new = q.add_tensor(Tensor("input_u8" if k == 0 else f"{name}_u8", old.shape, "uint8",
                                  qparams=QParams(qp.scale, (qp.zero_point[0] + 128,))))
        q.nodes.insert(k, Node("uint8_to_int8", "input_to_int8" if k == 0 else f"{name}_to_int8", [new.name],
                               [old.name], {}, source="input_dtype='uint8'"))
        if name in q.io_layouts:
            q.io_layouts[new.name] = q.io_layouts[name]
        inputs.append(new.name)
    q.inputs = inputs
    return q
