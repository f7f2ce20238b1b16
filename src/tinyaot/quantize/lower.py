"""Turn a calibrated float graph into an int8 graph: activations int8, weights int8, bias int32.

Which ops choose their own output parameters (from calibration) and which inherit their input's
follows TFLite: pooling, padding, views, transposes and standalone clamps keep the input's scale
and zero point; softmax always outputs scale 1/256, zero point -128.
"""
from __future__ import annotations

import numpy as np

from tinyaot.errors import UnsupportedOpError
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.quantize.calibrate import Range
from tinyaot.quantize.scheme import activation_qparams, quantize_bias, quantize_weights_per_channel

SOFTMAX_QPARAMS = QParams.per_tensor(1.0 / 256.0, -128)
WEIGHT_AXIS = {"fully_connected": 0, "conv2d": 0, "depthwise_conv2d": 3}
INHERIT = {"reshape", "max_pool2d", "avg_pool2d", "pad", "transpose", "relu"}
OWN = {"add", "mul", "mean", "concat", "lut"}


def lower_to_int8(g: Graph, ranges: dict[str, Range]) -> Graph:
    q = Graph(tensors={}, nodes=[], inputs=list(g.inputs), outputs=list(g.outputs), layout=g.layout,
              output_layout=g.output_layout, torch_input_rank=g.torch_input_rank)
    for name in g.inputs:
        _add_activation(q, g.tensor(name), _qparams_for(ranges, name))
    for node in g.nodes:
        out = g.tensor(node.outputs[0])
        if node.op in WEIGHT_AXIS:
            _lower_weighted(g, q, node, WEIGHT_AXIS[node.op])
            qp = _qparams_for(ranges, out.name)
        elif node.op in INHERIT:
            qp = q.tensor(node.inputs[0]).qparams
        elif node.op in OWN:
            qp = _qparams_for(ranges, out.name)
        elif node.op == "softmax":
            qp = SOFTMAX_QPARAMS
        else:
            raise UnsupportedOpError(
                f"op '{node.op}' in layer '{node.name}' ({node.source or 'no source location'}) has no int8 "
                f"lowering; int8 ops available: {', '.join(sorted(set(WEIGHT_AXIS) | INHERIT | OWN | {'softmax'}))}"
            )
        _add_activation(q, out, qp)
        q.nodes.append(Node(node.op, node.name, list(node.inputs), list(node.outputs), dict(node.attrs), node.source))
    return q


def _qparams_for(ranges: dict[str, Range], name: str) -> QParams:
    r = ranges[name]
    return activation_qparams(r.lo, r.hi)


def _add_activation(q: Graph, t: Tensor, qp: QParams) -> Tensor:
    return q.add_tensor(Tensor(t.name, t.shape, "int8", qparams=qp))


def _lower_weighted(g: Graph, q: Graph, node: Node, axis: int) -> None:
    x_name, w_name, b_name = node.inputs
    x_q = q.tensor(x_name).qparams
    w_q, w_qp = quantize_weights_per_channel(g.tensor(w_name).data, axis=axis)
    b_q, b_qp = quantize_bias(g.tensor(b_name).data, x_q.scale[0], np.asarray(w_qp.scale))
    q.add_tensor(Tensor(w_name, w_q.shape, "int8", data=w_q, qparams=w_qp))
    q.add_tensor(Tensor(b_name, b_q.shape, "int32", data=b_q, qparams=b_qp))
