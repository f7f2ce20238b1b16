"""requantize_s8: the IR's `quantize` op between 8-bit tensors, TFLM's Requantize: int8 -> int8 with other qparams,
and a legacy model's uint8 boundary (uint8 -> int8 at an input, int8 -> uint8 at an output: TFLite Micro's QUANTIZE
converts uint8 only to or from int8).

out = clamp(MultiplyByQuantizedMultiplier(x - input_zp, input_scale / output_scale) + output_zp) to the output
type's range, the multiplier of the double quotient of the scales, as TFLM's quantize op prepares it: a scale
change and a zero-point shift alike (the usual uint8 boundary, same scale and zero points 128 apart, is the
multiplier 1 that moves each value by exactly 128). Runs in place.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks

_RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


@dataclass(frozen=True)
class RequantizeParams:
    size: int
    multiplier: int  # Q31 of input_scale / output_scale
    shift: int
    input_zero_point: int
    output_zero_point: int
    input_uint8: int  # 1: the input is uint8 (a legacy model input), else int8
    output_uint8: int  # 1: the output is uint8 (a legacy model output), else int8


def prepare(node: Node, g: Graph) -> RequantizeParams:
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        raise ModelError(f"quantize '{node.name}' needs one input and one output, got {len(node.inputs)} inputs")
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if (x.dtype, y.dtype) == ("uint8", "uint8"):
        raise UnsupportedOpError(f"quantize '{node.name}': uint8 -> uint8; a uint8 tensor meets the int8 kernels "
                                 "through one conversion to or from int8 (TFLite Micro's QUANTIZE rule)")
    for t in (x, y):
        if t.dtype == "uint8":
            _uint8_per_tensor(node, t)
        else:
            _checks.int8_per_tensor(node, t)
    if x.size != y.size:
        raise ModelError(
            f"quantize '{node.name}': output {list(y.shape)} must have as many elements as {list(x.shape)}"
        )
    m, s = _checks.rescale(node, x.qparams.scale[0], y.qparams.scale[0])
    return RequantizeParams(x.size, m, s, x.qparams.zero_point[0], y.qparams.zero_point[0],
                            int(x.dtype == "uint8"), int(y.dtype == "uint8"))


def _uint8_per_tensor(node: Node, t) -> None:
    if t.qparams is None or not t.qparams.is_per_tensor or not 0 <= t.qparams.zero_point[0] <= 255:
        raise UnsupportedOpError(f"quantize '{node.name}': uint8 tensor '{t.name}' needs one scale and a zero point "
                                 "in [0, 255]")


def requantize_s8(x: np.ndarray, p: RequantizeParams) -> np.ndarray:
    acc = multiply_by_quantized_multiplier(x.astype(np.int64) - p.input_zero_point, p.multiplier, p.shift)
    lo, hi = _RANGES["uint8" if p.output_uint8 else "int8"]
    return np.clip(acc + p.output_zero_point, lo, hi).astype(np.uint8 if p.output_uint8 else np.int8)
