"""lstm_s16: the 16x8 LSTM (int16 input and hidden state, int8 weights, int64 gate biases), TensorFlow Lite Micro's
UNIDIRECTIONAL_SEQUENCE_LSTM for int16 activations (EvalLstm<int16_t, int8_t, int16_t, int64_t>).

The int8 LSTM (ref/lstm_s8.py) with its gate fully connected layers as TFLM's 16x8 FULLY_CONNECTED: int16 x int8
products summed exactly in int64 with the int64 bias (the recurrent one has none), rescaled to Q3.12 by the int64
MultiplyByQuantizedMultiplier (the multiplier rounded to 15 bits, one rounding shift) and saturated to int16. The
gates, their sigmoid / tanh, the int16 cell state and its update are the int8 LSTM's; the hidden state is int16
(zero point 0): h = sat16(requantize(tanh(c) * o)). Each step's h is the output row.

Stateful (the node's `stateful`: as imported from a .tflite, or streamed), the slot is the int8 LSTM's (c, then
h - zero point, int16; here the zero point is 0), so zero bytes are the zero state. The C twin
(c/kernels/lstm_s16.c) keeps c, the four gates and h in the layer's int16 working memory (the node's second output,
six rows of H as for the int8 LSTM).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier_64
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.fully_connected_s16 import MAX_SHIFT_64
from tinyaot.ref.lstm_s8 import (
    ACTIVATED_SCALE,
    GATES,
    WORK_ROWS,
    check_layer,
    mul_q,
    product_multiplier,
    row_multipliers,
    sat16,
    scale_power,
    sigmoid_q15,
    tanh_input_scaling,
    tanh_q15,
)


@dataclass(frozen=True)
class Lstm16Params:
    weights_ih: np.ndarray  # int8 [4H][F], rows: gates i, f, g, o
    weights_hh: np.ndarray  # int8 [4H][H]
    bias: np.ndarray  # int64 [4H]: the input FC's (TFLM's recurrent FC has none)
    input_multiplier: np.ndarray  # int32 [4H], x scale * w scale / 2^-12
    input_shift: np.ndarray
    recurrent_multiplier: np.ndarray  # int32 [4H], h scale * w scale / 2^-12
    recurrent_shift: np.ndarray
    forget_multiplier: int  # f * c -> c: 2^-15 * c scale / c scale
    forget_shift: int
    update_multiplier: int  # i * g -> c: 2^-30 / c scale
    update_shift: int
    hidden_multiplier: int  # tanh(c) * o -> h: 2^-30 / h scale
    hidden_shift: int
    tanh_multiplier: int  # the cell state into tanh's input: (c * m + round) >> right
    tanh_right: int
    cell_clip: int  # int16 units; 0: no clipping
    steps: int
    input_size: int
    hidden_size: int
    last_only: int  # 1: only the last step's h is written (output [1, H])
    # The weights widened to int16 for the Cortex-M33's SMLAD (the 16x8 FC's speed-mode table, twice the flash of
    # the int8 weights); NULL in the size and memory modes, where the kernel widens them as it reads.
    weights_ih16: np.ndarray = field(default=None, compare=False, repr=False)
    weights_hh16: np.ndarray = field(default=None, compare=False, repr=False)


def prepare(node: Node, g: Graph) -> Lstm16Params:
    x, w_ih, w_hh, b = (g.tensor(n) for n in node.inputs)
    y, state = g.tensor(node.outputs[0]), g.tensor(node.outputs[1])
    steps, features, hidden = check_layer(node, g, GATES, WORK_ROWS)
    _checks.int16_per_tensor(node, x)
    _checks.int16_per_tensor(node, y)
    if b.dtype != "int64":
        raise UnsupportedOpError(f"layer '{node.name}': the 16x8 LSTM's gate biases are {b.dtype}; TFLite Micro's "
                                 "16x8 LSTM sums in int64 with int64 biases")
    for w in (w_ih, w_hh):
        if w.dtype != "int8" or w.qparams is None or any(int(z) != 0 for z in w.qparams.zero_point):
            raise UnsupportedOpError(f"layer '{node.name}': 16x8 LSTM weights '{w.name}' must be int8, symmetric")
    x_scale, h_scale, c_scale = x.qparams.scale[0], y.qparams.scale[0], state.qparams.scale[0]
    in_m, in_s = row_multipliers(x_scale, w_ih.qparams.scale, GATES * hidden)
    rec_m, rec_s = row_multipliers(h_scale, w_hh.qparams.scale, GATES * hidden)
    if max(in_s.max(), rec_s.max()) > MAX_SHIFT_64:
        raise ModelError(f"layer '{node.name}': a gate multiplier (input or hidden scale * weight scale / 2^-12) "
                         f"is 2^{MAX_SHIFT_64} or more, beyond TFLite's int64 rescale (shifts -31..7); the input or "
                         "hidden scale is far too large for the layer's Q3.12 gates")
    fm, fs = product_multiplier(ACTIVATED_SCALE, c_scale, c_scale)
    um, us = product_multiplier(ACTIVATED_SCALE, ACTIVATED_SCALE, c_scale)
    hm, hs = product_multiplier(ACTIVATED_SCALE, ACTIVATED_SCALE, h_scale)
    tm, tr = tanh_input_scaling(scale_power(c_scale, node.name))
    clip = float(node.attrs.get("cell_clip") or 0.0)
    q_clip = int(min(max(clip / float(c_scale), -32768.0), 32767.0)) if clip > 0 else 0
    w_ih8, w_hh8 = (np.asarray(w.data, dtype=np.int8) for w in (w_ih, w_hh))
    return Lstm16Params(
        weights_ih=w_ih8, weights_hh=w_hh8, bias=np.asarray(b.data).astype(np.int64),
        input_multiplier=in_m, input_shift=in_s, recurrent_multiplier=rec_m, recurrent_shift=rec_s,
        forget_multiplier=fm, forget_shift=fs, update_multiplier=um, update_shift=us,
        hidden_multiplier=hm, hidden_shift=hs, tanh_multiplier=tm, tanh_right=tr, cell_clip=q_clip,
        steps=int(steps), input_size=int(features), hidden_size=hidden,
        last_only=int(bool(node.attrs.get("last_only"))),
        weights_ih16=w_ih8.astype(np.int16), weights_hh16=w_hh8.astype(np.int16))


def gate_fc16(x: np.ndarray, weights: np.ndarray, bias, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """TFLM's 16x8 FULLY_CONNECTED into Q3.12: the exact int64 sum (|sum| < 2^47 for any real layer), the int64
    rescale, saturated to int16."""
    acc = weights.astype(np.int64) @ np.asarray(x, np.int64) + bias
    return sat16(multiply_by_quantized_multiplier_64(acc, multiplier, shift))


def lstm_s16(x: np.ndarray, p: Lstm16Params, state: np.ndarray | None = None) -> np.ndarray:
    """The layer over x [1, T, F]; `state` (a stateful node's slot) holds the initial state and gets the final."""
    x = np.asarray(x).reshape(p.steps, p.input_size).astype(np.int64)
    hsz = p.hidden_size
    slot = None if state is None else state.view(np.int16).reshape(2, hsz)  # c, h (zero point 0)
    c = np.zeros(hsz, dtype=np.int64) if slot is None else slot[0].astype(np.int64)
    h = np.zeros(hsz, dtype=np.int64) if slot is None else slot[1].astype(np.int64)
    rows = []
    for t in range(p.steps):
        gates = sat16(gate_fc16(x[t], p.weights_ih, p.bias, p.input_multiplier, p.input_shift)
                      + gate_fc16(h, p.weights_hh, 0, p.recurrent_multiplier, p.recurrent_shift))
        i, f, g, o = (gates[k * hsz:(k + 1) * hsz] for k in range(GATES))
        i, f, o, g = sigmoid_q15(i), sigmoid_q15(f), sigmoid_q15(o), tanh_q15(g)
        c = sat16(sat16(mul_q(f, c, p.forget_multiplier, p.forget_shift))
                  + sat16(mul_q(i, g, p.update_multiplier, p.update_shift)))
        if p.cell_clip > 0:
            c = np.clip(c, -p.cell_clip, p.cell_clip)
        tc = tanh_q15(c, p.tanh_multiplier, p.tanh_right)
        h = sat16(mul_q(tc, o, p.hidden_multiplier, p.hidden_shift))
        rows.append(h.copy())
    if slot is not None:
        slot[0], slot[1] = c, h
    out = np.stack(rows) if not p.last_only else rows[-1]
    return out.astype(np.int16).reshape((1, p.steps, hsz) if not p.last_only else (1, hsz))
