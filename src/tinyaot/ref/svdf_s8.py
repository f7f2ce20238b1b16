"""svdf_s8: TFLite's SVDF with TensorFlow Lite Micro's integer semantics (EvalIntegerSvdfReference).

An SVDF layer of F inputs keeps, per filter, its last `memory` feature activations: TFLite's activation state, a
variable tensor that TFLM keeps from one Invoke to the next and zeroes at AllocateTensors / Reset (here the node's
slot of the state region, plan/state.py). Each invoke, per batch row and filter f:

1. the state row moves on by one (the oldest value dropped; TFLM shifts the whole flat buffer by one element,
   which is the same thing since every row's last value is written next);
2. its last value becomes clamp(requantize(sum_c weights_feature[f][c] * (x[c] - input_zp), scale_1)) to the
   state's type, plus the state's zero point (the int8 variant's sum can leave int8; it wraps, as TFLM's store);
3. the time dot product sum_j weights_time[f][j] * (state[f][j] - state_zp) in int32.

Then unit u = bias[u] + the time dot products of its `rank` filters, requantized by scale_2, plus the output
zero point, clamped to int8. Both scales are TFLM's Prepare products in float32 (input_scale * weights_feature_scale
/ state_scale, state_scale * weights_time_scale / output_scale) made multipliers in double. The int32 sums wrap, as
TFLM's do where they overflow (int16 x int16 products summed over the memory can). TFLM's integer kernel applies
no fused activation: the converter folds it into the output's range. Weight zero points are not read (TFLM
assumes symmetric weights) and a per-channel weight tensor's first scale is its scale, as in TFLM.

The C twin (c/kernels/svdf_s8.c) shifts the state, writes every filter's new value, then takes each unit's time
dot product over its rank filters' rows at once (contiguous in the state and in weights_time), the zero points
folded into feature_bias and unit_bias; no scratch buffer is needed. The output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier, wrap_i32
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks

STATE_BITS = {"int16": 16, "int8": 8}


@dataclass(frozen=True)
class SvdfParams:
    batches: int
    input_size: int  # F
    filters: int
    rank: int  # filters per unit: units = filters / rank
    memory: int  # state values per filter
    weights_feature: np.ndarray  # int8 [filters][input_size]
    weights_time: np.ndarray  # int16 or int8 (the state's type) [filters][memory]
    bias: np.ndarray  # int32 [units]
    feature_bias: np.ndarray  # int32 [filters]: -input_zero_point * sum_c weights_feature[f][c], wrapped (the C's)
    unit_bias: np.ndarray  # int32 [units]: bias - state_zero_point * the unit's weights_time sum, wrapped (the C's)
    input_zero_point: int
    state_zero_point: int
    output_zero_point: int
    feature_multiplier: int  # scale_1: input * weights_feature -> state
    feature_shift: int
    output_multiplier: int  # scale_2: state * weights_time -> output
    output_shift: int
    state_bits: int  # 16 or 8: the state's and weights_time's type

    @property
    def units(self) -> int:
        return self.filters // self.rank


def effective_scale(a: float, b: float, c: float) -> float:
    """a * b / c evaluated in float32, as TFLM's Prepare computes it from the tensors' float scales."""
    return float(np.float32(np.float32(a) * np.float32(b)) / np.float32(c))


def prepare(node: Node, g: Graph) -> SvdfParams:
    if len(node.inputs) != 4:
        raise ModelError(f"svdf '{node.name}' needs input, weights_feature, weights_time and bias, got "
                         f"{len(node.inputs)} operands")
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    w_feature, w_time, bias = (g.tensor(t) for t in node.inputs[1:])
    _checks.int8_per_tensor(node, x)
    _checks.int8_per_tensor(node, y)
    rank = int(node.attrs["rank"])
    state_qp = node.attrs.get("state_qparams")
    if state_qp is None:
        raise ModelError(f"svdf '{node.name}' has no state_qparams: a float graph's svdf is lowered first "
                         "(quantize/svdf.py chooses the int16 state's scale)")
    if w_feature.dtype != "int8" or w_feature.data is None or len(w_feature.shape) != 2 or w_feature.qparams is None:
        raise UnsupportedOpError(f"svdf '{node.name}': weights_feature must be constant int8 [filters, inputs] with a "
                                 "scale (TFLite Micro's integer SVDF)")
    if w_time.dtype not in STATE_BITS or w_time.data is None or len(w_time.shape) != 2 or w_time.qparams is None:
        raise UnsupportedOpError(f"svdf '{node.name}': weights_time must be constant int16 or int8 [filters, memory] "
                                 "with a scale (TFLite Micro's integer SVDF)")
    if bias.dtype != "int32" or bias.data is None:
        raise UnsupportedOpError(f"svdf '{node.name}': the bias must be constant int32 (TFLite Micro's rule)")
    batches, inputs = _two_d(node, x)
    filters, memory = w_time.shape
    if w_feature.shape != (filters, inputs) or filters % rank or bias.shape != (filters // rank,) \
            or tuple(y.shape) != (batches, filters // rank):
        raise ModelError(f"svdf '{node.name}': input {list(x.shape)}, weights_feature {list(w_feature.shape)}, "
                         f"weights_time {list(w_time.shape)}, bias {list(bias.shape)}, rank {rank} and output "
                         f"{list(y.shape)} do not fit TFLite's SVDF (num_filters = rank * num_units)")
    scale_1 = effective_scale(x.qparams.scale[0], w_feature.qparams.scale[0], state_qp.scale[0])
    scale_2 = effective_scale(state_qp.scale[0], w_time.qparams.scale[0], y.qparams.scale[0])
    m1, s1 = quantize_multiplier(scale_1)
    m2, s2 = quantize_multiplier(scale_2)
    in_zp, state_zp = int(x.qparams.zero_point[0]), int(state_qp.zero_point[0])
    wf, wt = w_feature.data.astype(np.int8), w_time.data.astype(w_time.dtype)
    b = bias.data.astype(np.int32)
    unit_bias = wrap_i32(b + _folded(wt.reshape(filters // rank, rank * memory), -state_zp)).astype(np.int32)
    out_zp = int(y.qparams.zero_point[0])
    return SvdfParams(batches, inputs, filters, rank, memory, wf, wt, b, _folded(wf, -in_zp).astype(np.int32),
                      unit_bias, in_zp, state_zp, out_zp, m1, s1, m2, s2, STATE_BITS[w_time.dtype])


def _folded(w: np.ndarray, offset: int) -> np.ndarray:
    """offset * each row's sum, wrapped to int32: a zero point folded out of a dot product (exact modulo 2^32)."""
    return wrap_i32(offset * w.astype(np.int64).sum(axis=1))


def _two_d(node: Node, x) -> tuple[int, int]:
    if len(x.shape) != 2:
        raise UnsupportedOpError(f"svdf '{node.name}': input '{x.name}' has shape {list(x.shape)}; TFLite's SVDF "
                                 "takes a 2-D input [batches, inputs]")
    return int(x.shape[0]), int(x.shape[1])


def svdf_s8(x: np.ndarray, p: SvdfParams, state: np.ndarray) -> np.ndarray:
    """One invoke: `state` (the node's slot, bytes) is moved on in place; returns int8 [batches][units]."""
    dtype = np.int16 if p.state_bits == 16 else np.int8
    s = state.view(dtype).reshape(p.batches, p.filters, p.memory)
    s[:, :, :-1] = s[:, :, 1:].copy()
    info = np.iinfo(dtype)
    rows = np.asarray(x, dtype=np.int64).reshape(p.batches, p.input_size) - p.input_zero_point
    dots = wrap_i32(rows @ p.weights_feature.astype(np.int64).T)  # [batches][filters]
    feature = multiply_by_quantized_multiplier(dots, p.feature_multiplier, p.feature_shift)
    s[:, :, -1] = (np.clip(feature, info.min, info.max) + p.state_zero_point).astype(dtype)  # wraps like the C
    time = (s.astype(np.int64) - p.state_zero_point) * p.weights_time.astype(np.int64)  # [batches][filters][memory]
    sums = time.sum(axis=2).reshape(p.batches, p.units, p.rank).sum(axis=2) + p.bias.astype(np.int64)
    out = multiply_by_quantized_multiplier(wrap_i32(sums), p.output_multiplier, p.output_shift) + p.output_zero_point
    return np.clip(out, -128, 127).astype(np.int8)
