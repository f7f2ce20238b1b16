"""prelu_s8: PReLU and leaky ReLU on int8 (the IR's `prelu` and `leaky_relu`), TFLite Micro's PRELU and
LEAKY_RELU bit for bit.

Both are TFLM's two-requantization kernel (reference_ops::BroadcastPrelu4DSlow, QuantizeLeakyRelu): with
v = q - input_zp, out = clamp(v >= 0 ? MultiplyByQuantizedMultiplier(v, m1, s1)
                                     : MultiplyByQuantizedMultiplier(v * (alpha_q - alpha_zp), m2, s2)
                              + output_zp, -128, 127).
prelu's alpha is an int8 constant with its own scale and zero point that broadcasts to the input (NumPy rules up
to 4-D: one value, or one per channel along the last axis of NHWC); m1 = input_scale / output_scale and
m2 = input_scale * alpha_scale / output_scale in double (TFLM's CalculatePreluParams). leaky_relu is the same
kernel with one alpha of 1 (zero point 0) and m2 = input_scale * alpha / output_scale (alpha as the file's float32),
both quotients in double. A negative alpha gives a negative m2: the kernel then requantizes by its magnitude and
negates the result, which is what the tflite-micro package computes (measured on 1,500 random LEAKY_RELU models,
720 with a negative alpha; a literal MultiplyByQuantizedMultiplier by the negative multiplier rounds ties the other
way). Runs in place: out[i] depends on in[i] and a constant.

The real-valued definitions (`real_prelu`, `real_leaky_relu`) live here too; calibration runs them
(quantize/float_eval.py finds them through the registry).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier, tflm_quantize_multiplier
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ref import _checks, broadcast

LEAKY_RELU = "leaky_relu"  # the IR op with one alpha attribute; its twin `prelu` reads an alpha tensor
MAX_SHIFT = 30  # TFLM's MultiplyByQuantizedMultiplier shifts an int32 left by at most 30 bits


@dataclass(frozen=True)
class PreluParams:
    out_shape: tuple[int, ...]  # the output (and input) as 4-D, axes merged (ref/broadcast.py)
    alpha_strides: tuple[int, ...]  # element strides of alpha over out_shape; 0 along the axes it broadcasts
    input_offset: int  # -input zero point
    alpha_offset: int  # -alpha zero point
    output_offset: int  # output zero point
    output_multiplier_1: int  # x >= its zero point: input_scale / output_scale
    output_shift_1: int
    output_multiplier_2: int  # below: input_scale * alpha_scale / output_scale, applied to v * alpha; negative:
    #                           (leaky ReLU's negative alpha) the negated requantization by its magnitude
    output_shift_2: int
    alpha: np.ndarray = field(compare=False, repr=False)  # int8, alpha's values in its collapsed shape


def _multiplier(node: Node, real: float, what: str) -> tuple[int, int]:
    """TFLM's QuantizeMultiplier (of the magnitude, the sign kept); a multiplier it cannot hold (2^30 or more) is
    refused, for every front end."""
    m, s = tflm_quantize_multiplier(abs(real))
    m = -m if real < 0 else m
    if s > MAX_SHIFT:
        raise ModelError(f"{node.op} '{node.name}': the multiplier {what} = {real:.3g} is 2^30 or more (shift {s} > "
                         f"{MAX_SHIFT}), which TFLite's QuantizeMultiplier cannot hold: the output scale is far too "
                         "small for the input's")
    return m, s


def leaky_multipliers(node: Node, in_scale: float, out_scale: float) -> tuple[int, int, int, int]:
    """(m1, s1, m2, s2) of a leaky_relu (its int16 kernel's too): TFLM's LEAKY_RELU Prepare, in double."""
    m1, s1 = _multiplier(node, float(in_scale) / float(out_scale), "input_scale / output_scale")
    slope = float(in_scale) * float(np.float32(node.attrs["alpha"])) / float(out_scale)
    m2, s2 = _multiplier(node, slope, "input_scale * alpha / output_scale")
    return m1, s1, m2, s2


def _alpha(node: Node, g: Graph, y: Tensor) -> tuple[Tensor, tuple[int, ...], tuple[int, ...]]:
    """prelu's alpha, checked, and the output / alpha shapes as collapsed 4-D ones."""
    if len(node.inputs) != 2:
        raise ModelError(f"prelu '{node.name}' needs two operands (x, alpha), got {len(node.inputs)}")
    a = g.tensor(node.inputs[1])
    if not a.is_const:
        raise UnsupportedOpError(f"prelu '{node.name}': alpha '{a.name}' is an activation; tinyaot takes a constant "
                                 "alpha (a parameter, as nn.PReLU and TFLite's converter write it)")
    if a.dtype != "int8" or a.qparams is None or not a.qparams.is_per_tensor:
        raise UnsupportedOpError(f"prelu '{node.name}': alpha '{a.name}' must be int8 with one scale and zero point "
                                 f"(TFLite Micro reads the first only), got {a.dtype}"
                                 f"{' per channel' if a.qparams is not None and not a.qparams.is_per_tensor else ''}")
    if len(a.shape) > broadcast.MAX_DIMS or len(y.shape) > broadcast.MAX_DIMS:
        raise UnsupportedOpError(f"prelu '{node.name}': x {list(y.shape)} and alpha {list(a.shape)}; TFLite Micro's "
                                 f"PRELU broadcasts up to {broadcast.MAX_DIMS}-D")
    try:
        want = np.broadcast_shapes(tuple(y.shape), tuple(a.shape))
    except ValueError:
        want = None
    if want != tuple(y.shape):
        raise ModelError(f"prelu '{node.name}': alpha {list(a.shape)} does not broadcast to x {list(y.shape)} "
                         "(NumPy rules: each axis of alpha equal to x's or 1)")
    out4, _, a4 = broadcast.collapse(broadcast.pad4(y.shape), broadcast.pad4(y.shape), broadcast.pad4(a.shape))
    return a, out4, a4


def prepare(node: Node, g: Graph) -> PreluParams:
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    for t in (x, y):
        _checks.int8_per_tensor(node, t)
    _checks.same_shape(node, y, x.shape)
    s_in, s_out = x.qparams.scale[0], y.qparams.scale[0]
    if node.op == LEAKY_RELU:
        out4, _, a4 = broadcast.collapse(broadcast.pad4(y.shape), broadcast.pad4(y.shape), (1, 1, 1, 1))
        values, alpha_zp = np.ones(1, np.int8), 0
        m1, s1, m2, s2 = leaky_multipliers(node, s_in, s_out)
    else:
        a, out4, a4 = _alpha(node, g, y)
        values, alpha_zp = np.asarray(a.data, np.int8), int(a.qparams.zero_point[0])
        m1, s1 = _multiplier(node, float(s_in) / float(s_out), "input_scale / output_scale")
        m2, s2 = _multiplier(node, float(s_in) * float(a.qparams.scale[0]) / float(s_out),
                             "input_scale * alpha_scale / output_scale")
    return PreluParams(out_shape=out4, alpha_strides=broadcast.strides(a4),
                       input_offset=-int(x.qparams.zero_point[0]), alpha_offset=-alpha_zp,
                       output_offset=int(y.qparams.zero_point[0]), output_multiplier_1=m1, output_shift_1=s1,
                       output_multiplier_2=m2, output_shift_2=s2, alpha=values.reshape(-1))


def prelu_s8(x: np.ndarray, p: PreluParams) -> np.ndarray:
    v = np.asarray(x).astype(np.int64).reshape(p.out_shape) + p.input_offset
    alpha_shape = tuple(d if s else 1 for d, s in zip(p.out_shape, p.alpha_strides))
    a = np.broadcast_to(p.alpha.astype(np.int64).reshape(alpha_shape), p.out_shape) + p.alpha_offset
    above = multiply_by_quantized_multiplier(v, p.output_multiplier_1, p.output_shift_1)
    below = multiply_by_quantized_multiplier(v * a, abs(p.output_multiplier_2), p.output_shift_2)
    below = -below if p.output_multiplier_2 < 0 else below
    return np.clip(np.where(v >= 0, above, below) + p.output_offset, -128, 127).astype(np.int8)


def real_prelu(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, alpha = args
    return np.where(x >= 0, x, x * alpha)


def real_leaky_relu(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x = args[0]
    return np.where(x >= 0, x, x * node.attrs["alpha"])
