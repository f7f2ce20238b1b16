"""gru_s8: one unidirectional GRU layer over a sequence, from the LSTM's integer building blocks.

TFLite has no GRU builtin, so tinyaot defines it with TFLite Micro's LSTM arithmetic (ref/lstm_s8.py): gates are
int8 fully connected layers into int16 Q3.12, TFLM's int16 sigmoid / tanh into Q0.15, products requantized with
QuantizeMultiplier. PyTorch's GRU (gates r, z, n):

    r = sigmoid(W_ir x + W_hr h + b_r)           z = sigmoid(W_iz x + W_hz h + b_z)
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    h' = (1 - z) * n + z * h

The state is h twice: int16 at the state's power-of-two scale (what the update z * h reads, so the recurrence
keeps 16 bits) and int8 at the output's qparams (what the recurrent layer reads and the output row holds).
The int8 one is a function of the int16 one (narrow), so a streamed GRU (the node's `stateful`,
passes/streaming.py) keeps only h16 in its slot of the state region (plan/state.py `hidden`; zero bytes: the zero
state) and narrows it again at the start of the next invoke.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.ref.lstm_s8 import (
    ACTIVATED_SCALE,
    check_layer,
    folded_bias,
    gate_fc,
    mul_q,
    product_multiplier,
    row_multipliers,
    sat16,
    sigmoid_q15,
    tanh_q15,
)

GATES = 3  # r, z, n (PyTorch's order)
WORK_ROWS = OPS["gru"].work_rows  # int16: h, r, z, the candidate's two parts, h as int8 (last row)
ONE_Q15 = 1 << 15  # 1.0 in Q0.15, for 1 - z


@dataclass(frozen=True)
class GruParams:
    weights_ih: np.ndarray  # int8 [3H][F], rows r, z, n
    weights_hh: np.ndarray  # int8 [3H][H]
    input_bias: np.ndarray  # int32 [3H]: r, z rows b_ih + b_hh, n rows b_in; + input_offset * row sums
    recurrent_bias: np.ndarray  # int32 [3H]: n rows b_hn at h scale * w scale; + hidden_offset * row sums
    input_multiplier: np.ndarray  # int32 [3H], x scale * w scale / 2^-12
    input_shift: np.ndarray
    recurrent_multiplier: np.ndarray  # int32 [3H], h scale * w scale / 2^-12
    recurrent_shift: np.ndarray
    reset_multiplier: int  # r * (W_hn h + b_hn): Q0.15 x Q3.12 -> Q3.12
    reset_shift: int
    keep_multiplier: int  # z * h16 -> h16
    keep_shift: int
    new_multiplier: int  # (1 - z) * n -> h16
    new_shift: int
    narrow_multiplier: int  # h16 -> h int8
    narrow_shift: int
    hidden_offset: int  # h zero point
    steps: int
    input_size: int
    hidden_size: int
    last_only: int  # 1: only the last step's h is written (output [1, H])


def prepare(node: Node, g: Graph) -> GruParams:
    x, w_ih, w_hh, b_ih, b_hh = (g.tensor(n) for n in node.inputs)
    y, state = g.tensor(node.outputs[0]), g.tensor(node.outputs[1])
    steps, features, hidden = check_layer(node, g, GATES, WORK_ROWS)
    x_scale, x_zp = x.qparams.scale[0], x.qparams.zero_point[0]
    h_scale, h_zp = y.qparams.scale[0], y.qparams.zero_point[0]
    s_scale = state.qparams.scale[0]
    in_m, in_s = row_multipliers(x_scale, w_ih.qparams.scale, GATES * hidden)
    rec_m, rec_s = row_multipliers(h_scale, w_hh.qparams.scale, GATES * hidden)
    rm, rs = product_multiplier(ACTIVATED_SCALE, 1.0, 1.0)  # Q0.15 x Q3.12 -> Q3.12
    km, ks = product_multiplier(ACTIVATED_SCALE, s_scale, s_scale)
    nm, ns = product_multiplier(ACTIVATED_SCALE, ACTIVATED_SCALE, s_scale)
    hm, hs = quantize_multiplier(float(s_scale) / float(h_scale))
    return GruParams(
        weights_ih=w_ih.data.astype(np.int8), weights_hh=w_hh.data.astype(np.int8),
        input_bias=folded_bias(w_ih.data, -x_zp, b_ih.data), recurrent_bias=folded_bias(w_hh.data, -h_zp, b_hh.data),
        input_multiplier=in_m, input_shift=in_s, recurrent_multiplier=rec_m, recurrent_shift=rec_s,
        reset_multiplier=rm, reset_shift=rs, keep_multiplier=km, keep_shift=ks, new_multiplier=nm, new_shift=ns,
        narrow_multiplier=hm, narrow_shift=hs, hidden_offset=int(h_zp), steps=int(steps), input_size=int(features),
        hidden_size=hidden, last_only=int(bool(node.attrs.get("last_only"))))


def narrow(h16: np.ndarray, p: GruParams) -> np.ndarray:
    """The int8 hidden state of the int16 one (0 -> the zero point)."""
    return np.clip(multiply_by_quantized_multiplier(h16, p.narrow_multiplier, p.narrow_shift) + p.hidden_offset,
                   -128, 127)


def gru_s8(x: np.ndarray, p: GruParams, state: np.ndarray | None = None) -> np.ndarray:
    """The layer over x [1, T, F]; `state` (a stateful node's slot, h16) holds the initial state and gets the
    final."""
    x = np.asarray(x).reshape(p.steps, p.input_size).astype(np.int64)
    hsz = p.hidden_size
    slot = None if state is None else state.view(np.int16).reshape(hsz)
    h16 = np.zeros(hsz, dtype=np.int64) if slot is None else slot.astype(np.int64)
    h8 = narrow(h16, p)  # zero state: the zero point
    rows = []
    for t in range(p.steps):
        from_x = gate_fc(x[t], p.weights_ih, p.input_bias, p.input_multiplier, p.input_shift)
        from_h = gate_fc(h8, p.weights_hh, p.recurrent_bias, p.recurrent_multiplier, p.recurrent_shift)
        r = sigmoid_q15(sat16(from_x[:hsz] + from_h[:hsz]))
        z = sigmoid_q15(sat16(from_x[hsz:2 * hsz] + from_h[hsz:2 * hsz]))
        reset = sat16(mul_q(r, from_h[2 * hsz:], p.reset_multiplier, p.reset_shift))
        n = tanh_q15(sat16(from_x[2 * hsz:] + reset))
        h16 = sat16(sat16(mul_q(ONE_Q15 - z, n, p.new_multiplier, p.new_shift))
                    + sat16(mul_q(z, h16, p.keep_multiplier, p.keep_shift)))
        h8 = narrow(h16, p)
        rows.append(h8.copy())
    if slot is not None:
        slot[...] = h16
    out = np.stack(rows) if not p.last_only else rows[-1]
    return out.astype(np.int8).reshape((1, p.steps, hsz) if not p.last_only else (1, hsz))
