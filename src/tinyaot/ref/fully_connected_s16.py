"""fully_connected_s16: the 16x8 fully connected layer, TFLite Micro's int16 FULLY_CONNECTED (int16 input and
output, symmetric int8 weights per tensor or per output channel).

TFLM accumulates in the bias's type: an int64 bias (TFLite's 16x8 scheme; also a missing bias unless the
layer's quantized_bias_type says int32) sums exactly in int64 and rescales with the int64
MultiplyByQuantizedMultiplier (the multiplier rounded to 15 bits, one rounding shift); an int32 bias sums in
int32, wrapping, and rescales with the int32 one (double rounding), as the int8 kernel does. The input and
output zero points are 0 (int16 is symmetric), the fused activation clamps in int16 units.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import (
    activation_range,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_64,
    wrap_i32,
)
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.per_channel import per_channel_multipliers

INT16_MIN, INT16_MAX = -32768, 32767
# TFLite's int64 MultiplyByQuantizedMultiplier takes shifts in [-31, 7]: 15 - shift is its one rounding shift.
MAX_SHIFT_64 = 7


@dataclass(frozen=True)
class FullyConnected16Params:
    weights: np.ndarray  # int8 [out_features, in_features], symmetric
    bias: np.ndarray  # int64 [out_features] (an int32 bias's values when bias_bits is 32)
    multiplier: np.ndarray  # int32 [out_features], Q31 of input_scale * weight_scale[c] / output_scale
    shift: np.ndarray  # int32 [out_features], > 0: left
    bias_bits: int  # 64: int64 accumulation and rescale; 32: int32 (wrapping), TFLM's int32-bias path
    act_min: int  # fused activation, int16 units
    act_max: int
    batches: int
    in_features: int
    out_features: int
    # The weights widened to int16 for the Cortex-M33's SMLAD (two int16 MACs per instruction, no SXTB16): speed
    # mode's table, twice the flash of `weights`; NULL in the size and memory modes, where the kernel widens itself.
    weights16: np.ndarray = field(default=None, compare=False, repr=False)


def _bias_bits(node: Node, g: Graph) -> int:
    b = g.tensor(node.inputs[2])
    if b.dtype not in ("int32", "int64"):
        raise UnsupportedOpError(f"fully_connected '{node.name}': the 16x8 bias '{b.name}' is {b.dtype}; TFLite "
                                 "Micro takes an int64 or an int32 bias")
    return 64 if b.dtype == "int64" else 32


def prepare(node: Node, g: Graph) -> FullyConnected16Params:
    if len(node.inputs) != 3:
        raise ModelError(f"fully_connected '{node.name}' needs input, weights and bias, got {len(node.inputs)} "
                         "inputs")
    x, w, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    _checks.int16_per_tensor(node, x)
    _checks.int16_per_tensor(node, y)
    if w.dtype != "int8" or w.qparams is None or len(w.shape) != 2:
        raise UnsupportedOpError(f"fully_connected '{node.name}': 16x8 weights '{w.name}' must be int8 [out, in] "
                                 f"with qparams, got {w.dtype} {list(w.shape)}")
    if any(int(z) != 0 for z in w.qparams.zero_point):
        raise UnsupportedOpError(f"fully_connected '{node.name}': weights must be symmetric (zero point 0)")
    out_features, in_features = w.shape
    if x.size % in_features or y.size != x.size // in_features * out_features:
        raise ModelError(f"fully_connected '{node.name}': input {list(x.shape)} and output {list(y.shape)} are not "
                         f"whole rows of {in_features} -> {out_features} features")
    if tuple(b.shape) != (out_features,):
        raise ModelError(f"fully_connected '{node.name}': bias shape {list(b.shape)}, expected [{out_features}]")
    bits = _bias_bits(node, g)
    in_scale, out_scale = float(x.qparams.scale[0]), float(y.qparams.scale[0])
    multiplier, shift = per_channel_multipliers(in_scale, w.qparams.scale, out_scale, out_features)  # as TFLM
    if bits == 64 and shift.max() > MAX_SHIFT_64:
        raise ModelError(f"fully_connected '{node.name}': a requantization multiplier input_scale * weight_scale / "
                         f"output_scale is 2^{MAX_SHIFT_64} or more, beyond TFLite's int64 rescale (shifts -31..7); "
                         "the output scale is far too small for the layer")
    act_min, act_max = activation_range(node.attrs.get("clamp"), out_scale, 0, INT16_MIN, INT16_MAX)
    return FullyConnected16Params(
        weights=np.asarray(w.data, dtype=np.int8),
        weights16=np.asarray(w.data, dtype=np.int8).astype(np.int16),
        bias=np.asarray(b.data).astype(np.int64),
        multiplier=multiplier,
        shift=shift,
        bias_bits=bits, act_min=act_min, act_max=act_max,
        batches=x.size // in_features, in_features=in_features, out_features=out_features,
    )


def fully_connected_s16(x: np.ndarray, p: FullyConnected16Params) -> np.ndarray:
    x = x.reshape(p.batches, p.in_features).astype(np.int64)
    acc = x @ p.weights.astype(np.int64).T + p.bias[None, :]  # |acc| < 2^47 for any real layer: exact
    if p.bias_bits == 64:
        out = multiply_by_quantized_multiplier_64(acc, p.multiplier[None, :], p.shift[None, :])
    else:
        out = multiply_by_quantized_multiplier(wrap_i32(acc), p.multiplier[None, :], p.shift[None, :])
    return np.clip(out, p.act_min, p.act_max).astype(np.int16)
