"""Lowering of the recurrent layers (lstm, gru) to their integer form.

As TFLite's converter quantizes an LSTM: int8 symmetric weights (here one scale per weight row, i.e. per gate
and unit), int32 bias at input scale x weight scale, the output (the hidden state) int8 with qparams from its
calibrated range, and the int16 state at the power-of-two scale that covers the calibrated range of the float
node's second output (the cell state at every step; for a GRU the hidden state itself). After lowering the
second output is the kernel's int16 working memory, work_rows x hidden values.
"""
from __future__ import annotations

import math

import numpy as np

from tinyaot.diagnostics import Finding
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.ir.ops import OPS
from tinyaot.quantize.observers import Range
from tinyaot.quantize.scheme import activation_qparams, quantize_bias, quantize_weights_per_channel

INT16_MAX = 32767
SMALLEST_STATE_POWER = -15  # a state that never leaves 0 still gets a scale: Q0.15


def state_scale(r: Range) -> float:
    """2^p, the smallest power of two with max |state| <= 32767 * 2^p (the integer tanh needs a power of two)."""
    largest = max(abs(r.lo), abs(r.hi))
    if not largest > 0:
        return 2.0**SMALLEST_STATE_POWER
    return 2.0 ** max(math.ceil(math.log2(largest / INT16_MAX)), SMALLEST_STATE_POWER)


def lower_recurrent(g: Graph, q: Graph, node: Node, ranges: dict[str, Range]) -> list[Finding]:
    x_name, w_ih_name, w_hh_name, *bias_names = node.inputs
    y_name, state_name = node.outputs
    x_q = q.tensor(x_name).qparams
    y, r = g.tensor(y_name), ranges[y_name]
    y_q = activation_qparams(r.lo, r.hi)
    for name in (w_ih_name, w_hh_name):
        w_q, w_qp = quantize_weights_per_channel(g.tensor(name).data, axis=0)
        q.add_tensor(Tensor(name, w_q.shape, "int8", data=w_q, qparams=w_qp))
    w_ih_scales = np.asarray(q.tensor(w_ih_name).qparams.scale)
    if len(bias_names) == 1:  # lstm: one bias, at the input layer's scales
        _add_bias(q, bias_names[0], g.tensor(bias_names[0]).data, x_q.scale[0], w_ih_scales)
    else:  # gru: b_hh's r and z rows join b_ih; its n rows (inside r * (W_hn h + b_hn)) stay with the recurrent layer
        b_ih, b_hh = (np.asarray(g.tensor(n).data, np.float64) for n in bias_names)
        gates = len(b_ih) // 3
        merged, apart = b_ih.copy(), np.zeros_like(b_hh)
        merged[: 2 * gates] += b_hh[: 2 * gates]
        apart[2 * gates :] = b_hh[2 * gates :]
        _add_bias(q, bias_names[0], merged, x_q.scale[0], w_ih_scales)
        _add_bias(q, bias_names[1], apart, y_q.scale[0], np.asarray(q.tensor(w_hh_name).qparams.scale))
    q.add_tensor(Tensor(y_name, y.shape, "int8", qparams=y_q))
    hidden = int(node.attrs["hidden"])
    q.add_tensor(Tensor(state_name, (OPS[node.op].work_rows, hidden), "int16",
                        qparams=QParams.per_tensor(state_scale(ranges[state_name]), 0)))
    q.nodes.append(Node(node.op, node.name, list(node.inputs), list(node.outputs), dict(node.attrs), node.source))
    return []


def _add_bias(q: Graph, name: str, bias: np.ndarray, in_scale: float, w_scales: np.ndarray) -> None:
    b_q, b_qp = quantize_bias(bias, in_scale, w_scales)
    q.add_tensor(Tensor(name, b_q.shape, "int32", data=b_q, qparams=b_qp))
