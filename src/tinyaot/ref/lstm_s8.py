"""lstm_s8: one unidirectional LSTM layer over a sequence, with TensorFlow Lite Micro's integer semantics.

TFLM's UNIDIRECTIONAL_SEQUENCE_LSTM for int8 activations, step by step (zero initial state per invoke):
every gate is two int8 fully connected layers into int16 at scale 2^-12 (Q3.12; the input one with the bias,
the recurrent one over the previous hidden state without), added with int16 saturation, then TFLM's int16
sigmoid (i, f, o) or tanh (g), both a 256-entry table of sigmoid(k / 24) interpolated, out in Q0.15. The cell
state is int16 at a power-of-two scale: c = sat16(f * c) + sat16(i * g) (saturating), clipped when cell_clip > 0;
the hidden state is int8: h = requantize(tanh(c) * o) + zero point. Each step's h is the output row.

Stateful (the node's `stateful`: a streamed layer, passes/streaming.py, or an imported .tflite LSTM, whose state
TFLM keeps in variable tensors across invokes), the initial state is the node's slot of the state region
(plan/state.py `hidden_and_cell`: c, then h - zero point, both int16, so zero bytes are the zero state, TFLM's reset
one) and the final state is written back there: one frame per invoke is T = 1 carried on from the invoke before.

The int16 helpers here (sigmoid, tanh, the multiplier products) are the building blocks gru_s8 uses too.
The C twin (c/kernels/lstm_s8.c) keeps c, the four gates and h in the layer's second output, int16 working
memory the plan places; this reference computes the same values in NumPy arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier, wrap_i32
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS

GATE_SCALE = 2.0**-12  # every gate's pre-activation: int16 Q3.12
ACTIVATED_SCALE = 2.0**-15  # sigmoid / tanh outputs: int16 Q0.15
GATES = 4  # i, f, g, o (PyTorch's order; TFLite's four tensors are stacked in it)
WORK_ROWS = OPS["lstm"].work_rows  # int16 working memory: cell state, the four gates, h (int8, last row)

# sigmoid(k / 24) in unsigned Q0.16, k = 0..255: the table TFLM's int16 LOGISTIC and TANH interpolate
# (tensorflow/lite/kernels/internal/common.h); the values are that table's, which no rounding rule reproduces
# exactly. c/kernels/lstm_s8.c holds the same numbers (tests/test_lstm.py compares them).
SIGMOID_Q16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], dtype=np.int64)


# ---- int16 building blocks (shared with gru_s8) ----

def sigmoid_q15(x: np.ndarray) -> np.ndarray:
    """TFLM's int16 Logistic as the LSTM calls it: x in Q3.12 (scaled by 3 first), result in Q0.15."""
    v = np.asarray(x, dtype=np.int64) * 3
    a = np.abs(v)
    k = np.minimum(a >> 9, 254)
    lo, hi = SIGMOID_Q16[k], SIGMOID_Q16[k + 1]
    r = np.where((a >> 9) >= 255, 0x7FFF << 10, (lo << 9) + (a & 0x1FF) * (hi - lo))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return (r >> 10).astype(np.int64)


def tanh_input_scaling(scale_power: int) -> tuple[int, int]:
    """(multiplier, right shift) of TFLM's int16 Tanh for an input at scale 2^scale_power: v = (x * m + round)
    >> right, v then read in Q3.12 times 3 (m = 3 << left for a left shift)."""
    left = 15 + scale_power - 3
    return (3, -left) if left < 0 else (3 << left, 0)


def tanh_q15(x: np.ndarray, multiplier: int = 3, right: int = 0) -> np.ndarray:
    """TFLM's int16 Tanh (tanh(x) = 2 sigmoid(2x) - 1 through the same table), result in Q0.15."""
    rounding = (1 << (right - 1)) if right > 0 else 0
    v = (np.asarray(x, dtype=np.int64) * multiplier + rounding) >> right
    a = np.abs(v)
    k = np.minimum(a >> 8, 254)
    lo, hi = SIGMOID_Q16[k], SIGMOID_Q16[k + 1]
    r = np.where((a >> 8) >= 255, 0xFFFF << 8, (lo << 8) + (a & 0xFF) * (hi - lo))
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return (r >> 8).astype(np.int64)


def sat16(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -32768, 32767)


def product_multiplier(scale_a: float, scale_b: float, scale_out: float) -> tuple[int, int]:
    """QuantizeMultiplier(a * b / out) in double, as TFLM's CreateInterGateMulParams."""
    return quantize_multiplier(float(scale_a) * float(scale_b) / float(scale_out))


def mul_q(a: np.ndarray, b: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """MulElementwise's int32 product, requantized (offsets 0: both operands are symmetric)."""
    return multiply_by_quantized_multiplier(wrap_i32(np.asarray(a, np.int64) * b), multiplier, shift)


def gate_fc(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, multiplier: np.ndarray,
            shift: np.ndarray) -> np.ndarray:
    """int8 x int8 rows into int16: bias holds the offset times the row sums folded in (exact in int32)."""
    acc = wrap_i32(weights.astype(np.int64) @ np.asarray(x, np.int64) + bias)
    return sat16(multiply_by_quantized_multiplier(acc, multiplier, shift))


def row_multipliers(in_scale: float, w_scales, rows: int, out_scale: float = GATE_SCALE) -> tuple[np.ndarray, ...]:
    """Per weight row (one value per gate block when the weights are per tensor), in double as TFLM's FC."""
    scales = list(w_scales) if len(w_scales) > 1 else list(w_scales) * rows
    pairs = [quantize_multiplier(float(in_scale) * float(s) / out_scale) for s in scales]
    return (np.array([m for m, _ in pairs], dtype=np.int32), np.array([s for _, s in pairs], dtype=np.int32))


def folded_bias(weights: np.ndarray, offset: int, bias: np.ndarray | None = None) -> np.ndarray:
    """bias + offset * sum_k w[r, k] in int32 (the sum TFLM forms per input, folded at compile time)."""
    total = offset * weights.astype(np.int64).sum(axis=1)
    if bias is not None:
        total = total + bias.astype(np.int64)
    return wrap_i32(total).astype(np.int32)


def scale_power(scale: float, layer: str) -> int:
    """log2 of a state scale, rounded as TFLM's CheckedLog2 (a power of two is what the integer tanh expects)."""
    if not (scale > 0 and math.isfinite(scale)):
        raise UnsupportedOpError(f"layer '{layer}': its int16 state scale {scale!r} is not a positive number")
    return int(round(math.log(float(np.float32(scale))) / math.log(2.0)))


@dataclass(frozen=True)
class LstmParams:
    weights_ih: np.ndarray  # int8 [4H][F], rows: gates i, f, g, o
    weights_hh: np.ndarray  # int8 [4H][H]
    input_bias: np.ndarray  # int32 [4H]: bias + input_offset * row sums of weights_ih
    recurrent_bias: np.ndarray  # int32 [4H]: hidden_offset * row sums of weights_hh (TFLM's recurrent FC has none)
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
    hidden_offset: int  # h zero point
    tanh_multiplier: int  # the cell state into tanh's input: (c * m + round) >> right
    tanh_right: int
    cell_clip: int  # int16 units; 0: no clipping
    steps: int
    input_size: int
    hidden_size: int
    last_only: int  # 1: only the last step's h is written (output [1, H])


def check_layer(node: Node, g: Graph, gates: int, work_rows: int) -> tuple[int, int, int]:
    """(steps, features, hidden) of a recurrent layer whose weights and int16 working memory fit its input."""
    x, w_ih, w_hh = (g.tensor(n) for n in node.inputs[:3])
    state = g.tensor(node.outputs[1])
    hidden = int(node.attrs["hidden"])
    _, steps, features = x.shape
    if w_ih.shape != (gates * hidden, features) or w_hh.shape != (gates * hidden, hidden) or \
            state.dtype != "int16" or state.size < work_rows * hidden:
        raise UnsupportedOpError(f"layer '{node.name}': {node.op} weights {w_ih.shape} / {w_hh.shape} and state "
                                 f"{state.shape} {state.dtype} do not fit input {x.shape} with {hidden} units")
    return steps, features, hidden


def prepare(node: Node, g: Graph) -> LstmParams:
    x, w_ih, w_hh, b = (g.tensor(n) for n in node.inputs)
    y, state = g.tensor(node.outputs[0]), g.tensor(node.outputs[1])
    steps, features, hidden = check_layer(node, g, GATES, WORK_ROWS)
    x_scale, x_zp = x.qparams.scale[0], x.qparams.zero_point[0]
    h_scale, h_zp = y.qparams.scale[0], y.qparams.zero_point[0]
    c_scale = state.qparams.scale[0]
    in_m, in_s = row_multipliers(x_scale, w_ih.qparams.scale, GATES * hidden)
    rec_m, rec_s = row_multipliers(h_scale, w_hh.qparams.scale, GATES * hidden)
    fm, fs = product_multiplier(ACTIVATED_SCALE, c_scale, c_scale)
    um, us = product_multiplier(ACTIVATED_SCALE, ACTIVATED_SCALE, c_scale)
    hm, hs = product_multiplier(ACTIVATED_SCALE, ACTIVATED_SCALE, h_scale)
    tm, tr = tanh_input_scaling(scale_power(c_scale, node.name))
    clip = float(node.attrs.get("cell_clip") or 0.0)
    q_clip = int(min(max(clip / float(c_scale), -32768.0), 32767.0)) if clip > 0 else 0
    return LstmParams(
        weights_ih=w_ih.data.astype(np.int8), weights_hh=w_hh.data.astype(np.int8),
        input_bias=folded_bias(w_ih.data, -x_zp, b.data), recurrent_bias=folded_bias(w_hh.data, -h_zp),
        input_multiplier=in_m, input_shift=in_s, recurrent_multiplier=rec_m, recurrent_shift=rec_s,
        forget_multiplier=fm, forget_shift=fs, update_multiplier=um, update_shift=us,
        hidden_multiplier=hm, hidden_shift=hs, hidden_offset=int(h_zp), tanh_multiplier=tm, tanh_right=tr,
        cell_clip=q_clip, steps=int(steps), input_size=int(features), hidden_size=hidden,
        last_only=int(bool(node.attrs.get("last_only"))))


def lstm_s8(x: np.ndarray, p: LstmParams, state: np.ndarray | None = None) -> np.ndarray:
    """The layer over x [1, T, F]; `state` (a stateful node's slot) holds the initial state and gets the final."""
    x = np.asarray(x).reshape(p.steps, p.input_size).astype(np.int64)
    hsz = p.hidden_size
    slot = None if state is None else state.view(np.int16).reshape(2, hsz)  # c, h - zero point
    c = np.zeros(hsz, dtype=np.int64) if slot is None else slot[0].astype(np.int64)
    h = (np.zeros(hsz, dtype=np.int64) if slot is None else slot[1].astype(np.int64)) + p.hidden_offset
    rows = []
    for t in range(p.steps):
        gates = sat16(gate_fc(x[t], p.weights_ih, p.input_bias, p.input_multiplier, p.input_shift)
                      + gate_fc(h, p.weights_hh, p.recurrent_bias, p.recurrent_multiplier, p.recurrent_shift))
        i, f, g, o = (gates[k * hsz:(k + 1) * hsz] for k in range(GATES))
        i, f, o, g = sigmoid_q15(i), sigmoid_q15(f), sigmoid_q15(o), tanh_q15(g)
        c = sat16(sat16(mul_q(f, c, p.forget_multiplier, p.forget_shift))
                  + sat16(mul_q(i, g, p.update_multiplier, p.update_shift)))
        if p.cell_clip > 0:
            c = np.clip(c, -p.cell_clip, p.cell_clip)
        tc = tanh_q15(c, p.tanh_multiplier, p.tanh_right)
        h = np.clip(mul_q(tc, o, p.hidden_multiplier, p.hidden_shift) + p.hidden_offset, -128, 127)
        rows.append(h.copy())
    if slot is not None:
        slot[0], slot[1] = c, h - p.hidden_offset
    out = np.stack(rows) if not p.last_only else rows[-1]
    return out.astype(np.int8).reshape((1, p.steps, hsz) if not p.last_only else (1, hsz))
