"""lut_s16: the lut op on int16 (16x8) tensors; its tflm_logistic and tflm_tanh are TFLite Micro's int16 LOGISTIC
and TANH (reference_integer_ops::Logistic / Tanh), bit-exact.

No table of 65536 outputs: TFLM's int16 kernels interpolate the 256-entry table of sigmoid(k / 24) (the one the
LSTM's gates use, ref/lstm_s8.py SIGMOID_Q16) after rescaling the input, v = (x * input_multiplier + round) >>
input_shift, to steps of 1 / (3 * 4096) for the logistic (1 / (3 * 2048) read for tanh's 2x). Prepare is TFLM's:
an input scale that is a power of two giving shift 0 (tanh: 0 or 1) multiplies by 3 << shift; any other scale
gets the largest multiplier below 32768 of scale * 3 * 4096 * 2^shift, truncated. The output is Q0.15 (scale
2^-15, zero point 0), as TFLM requires.

The lut op's other functions (a PyTorch model's sigmoid, tanh, silu, gelu, ... with int16 activations chosen by
quantize/mixed.py, any output scale) go through TFLite's int16 table instead: 513 samples of the real function
over the input's int16 range made as LUTPopulate<int16_t> makes them (ref/softmax_s16.py lut_populate), read with
its 9-bit index and 7-bit interpolation (LUTLookup). An optional fused clamp narrows the output. Runs in place.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import activation_range
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks, activations, lut_s8
from tinyaot.ref.lstm_s8 import SIGMOID_Q16, tanh_q15
from tinyaot.ref.softmax_s16 import lut_lookup, lut_populate

FUNCTIONS = ("tflm_logistic", "tflm_tanh")  # TFLM's own int16 kernels; every other lut function: a table
LOGISTIC, TANH, TABLE = 0, 1, 2  # Lut16Params.mode
_INPUT_INTEGER_BITS = 3  # TFLM's int16 LOGISTIC / TANH read the input in Q3.12 (times 3)
_OUTPUT_FRACTIONAL_BITS = 15
_MAX_MULTIPLIER = 32767


@dataclass(frozen=True)
class Lut16Params:
    size: int  # elements
    mode: int  # LOGISTIC, TANH (TFLM's int16 kernels) or TABLE (an interpolated table of the function)
    input_multiplier: int  # LOGISTIC / TANH: v = (x * input_multiplier + round) >> input_shift, then the sigmoid
    input_shift: int  # table (shift >= 0); 0 for TABLE
    table: np.ndarray  # int16 [513]: TABLE's samples (LUTPopulate); LOGISTIC / TANH: the one entry 0, unread
    act_min: int  # fused clamp, int16 output units
    act_max: int


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLite's CheckedLog2 in float32: (is x a power of two within 1e-3 in log2, the rounded log2)."""
    f32 = np.float32
    log2 = f32(np.log(np.float64(f32(x)))) * (f32(1.0) / f32(np.log(np.float64(2.0))))
    rounded = f32(math.copysign(math.floor(abs(float(log2)) + 0.5), float(log2)))
    return bool(abs(log2 - rounded) < f32(1e-3)), int(rounded)


def input_rescaling(function: str, in_scale: float) -> tuple[int, int]:
    """TFLM's int16 Prepare of LOGISTIC / TANH: (multiplier, shift) with the power-of-two case made explicit."""
    pot, log2 = checked_log2(in_scale)
    shift = (15 - _INPUT_INTEGER_BITS) + log2
    if pot and (shift == 0 or (function == "tflm_tanh" and shift == 1)):
        return 3 << shift, 0
    multiplier = float(np.float32(in_scale)) * 4096.0 * 3.0
    shift = 0
    while multiplier <= _MAX_MULTIPLIER / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return int(multiplier), shift


def prepare(node: Node, g: Graph) -> Lut16Params:
    x, y = _checks.io16(node, g)
    function = node.attrs.get("function")
    if x.size != y.size:
        raise ModelError(f"lut '{node.name}': output {list(y.shape)} must have as many elements as {list(x.shape)}")
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, -32768, 32767)
    if function not in FUNCTIONS:
        table = _table(node, function, x.qparams.scale[0], y.qparams.scale[0])
        return Lut16Params(x.size, TABLE, 0, 0, table, act_min, act_max)
    pot, log2 = checked_log2(y.qparams.scale[0])
    if not pot or log2 != -_OUTPUT_FRACTIONAL_BITS:
        raise ModelError(f"lut '{node.name}': int16 output '{y.name}' has scale {y.qparams.scale[0]:.6g}; TFLite "
                         f"Micro's int16 {function} writes Q0.15 (scale 2^-15, zero point 0)")
    multiplier, shift = input_rescaling(function, x.qparams.scale[0])
    if multiplier > _MAX_MULTIPLIER:
        raise UnsupportedOpError(f"lut '{node.name}': input scale {x.qparams.scale[0]:.6g} is too large for TFLite "
                                 f"Micro's int16 {function} (it needs scale * 3 * 4096 < 32768)")
    unread = np.zeros(1, dtype=np.int16)
    return Lut16Params(x.size, TANH if function == "tflm_tanh" else LOGISTIC, multiplier, shift, unread, act_min,
                       act_max)


def _table(node: Node, function, in_scale: float, out_scale: float) -> np.ndarray:
    if function == "affine":
        fn = lut_s8.affine(float(node.attrs["scale_by"]), float(node.attrs["offset"]))
    elif function in activations.FUNCTIONS:
        fn = activations.FUNCTIONS[function]
    else:
        available = [*FUNCTIONS, *sorted(activations.FUNCTIONS), "affine"]
        raise UnsupportedOpError(f"lut '{node.name}': function {function!r} has no int16 kernel; the 16x8 lut "
                                 f"takes {', '.join(available)}; keep this layer int8")
    return lut_populate(lambda v: fn(np.asarray(v, dtype=np.float64)).astype(np.float32), in_scale, 0, out_scale, 0)


def logistic_q15(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """TFLM's int16 Logistic after its input rescaling, result in Q0.15."""
    rounding = (1 << (shift - 1)) if shift > 0 else 0
    v = (np.asarray(x, dtype=np.int64) * multiplier + rounding) >> shift
    a = np.abs(v)
    k = np.minimum(a >> 9, 254)
    lo, hi = SIGMOID_Q16[k], SIGMOID_Q16[k + 1]
    r = np.where((a >> 9) >= 255, 0x7FFF << 10, (lo << 9) + (a & 0x1FF) * (hi - lo))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return r >> 10


def lut_s16(x: np.ndarray, p: Lut16Params) -> np.ndarray:
    if p.mode == TANH:
        y = tanh_q15(x, p.input_multiplier, p.input_shift)
    elif p.mode == LOGISTIC:
        y = logistic_q15(x, p.input_multiplier, p.input_shift)
    else:
        y = lut_lookup(x, p.table)
    return np.clip(y, p.act_min, p.act_max).astype(np.int16)
