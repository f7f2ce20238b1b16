"""Turn a calibrated float graph into an int8 graph: every activation int8, weights int8, bias int32."""
from __future__ import annotations

import numpy as np

from tinyaot.errors import UnsupportedOpError
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.quantize.calibrate import Range
from tinyaot.quantize.scheme import activation_qparams, quantize_bias, quantize_weights_per_channel

VIEW_OPS = {"reshape"}


def lower_to_int8(g: Graph, ranges: dict[str, Range]) -> Graph:
    q = Graph(tensors={}, nodes=[], inputs=list(g.inputs), outputs=list(g.outputs), layout=g.layout)
    for name in g.inputs:
        _add_activation(q, g.tensor(name), _qparams_for(ranges, name))
    for node in g.nodes:
        lower = _LOWERINGS.get(node.op)
        if lower is None:
            raise UnsupportedOpError(
                f"op '{node.op}' in layer '{node.name}' ({node.source or 'no source location'}) "
                f"has no int8 lowering; int8 ops available: {', '.join(sorted(_LOWERINGS))}"
            )
        lower(g, q, node, ranges)
    return q


def _qparams_for(ranges: dict[str, Range], name: str) -> QParams:
    r = ranges[name]
    return activation_qparams(r.lo, r.hi)


def _add_activation(q: Graph, t: Tensor, qp: QParams) -> Tensor:
    return q.add_tensor(Tensor(t.name, t.shape, "int8", qparams=qp))


def _lower_fully_connected(g: Graph, q: Graph, node: Node, ranges: dict[str, Range]) -> None:
    x_name, w_name, b_name = node.inputs
    x_q = q.tensor(x_name).qparams
    w_q, w_qp = quantize_weights_per_channel(g.tensor(w_name).data, axis=0)
    b_q, b_qp = quantize_bias(g.tensor(b_name).data, x_q.scale[0], np.asarray(w_qp.scale))
    q.add_tensor(Tensor(w_name, w_q.shape, "int8", data=w_q, qparams=w_qp))
    q.add_tensor(Tensor(b_name, b_q.shape, "int32", data=b_q, qparams=b_qp))
    out = g.tensor(node.outputs[0])
    _add_activation(q, out, _qparams_for(ranges, out.name))
    q.nodes.append(Node(node.op, node.name, list(node.inputs), list(node.outputs), dict(node.attrs), node.source))


def _lower_view(g: Graph, q: Graph, node: Node, ranges: dict[str, Range]) -> None:
    out = g.tensor(node.outputs[0])
    _add_activation(q, out, q.tensor(node.inputs[0]).qparams)
    q.nodes.append(Node(node.op, node.name, list(node.inputs), list(node.outputs), dict(node.attrs), node.source))


_LOWERINGS = {
    "fully_connected": _lower_fully_connected,
    "reshape": _lower_view,
}
