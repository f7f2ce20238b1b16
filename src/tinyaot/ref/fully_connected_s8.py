"""fully_connected_s8: int8 x int8 -> int32 accumulate -> per-channel requantize -> int8.

Semantics of TFLite Micro's reference FullyConnected (per-channel variant): the input offset is
added to every input value, the weight zero point is 0 (symmetric weights), the accumulator is
rescaled by MultiplyByQuantizedMultiplier, the output zero point added, the fused activation clamps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier, wrap_i32
from tinyaot.ir import Graph, Node
from tinyaot.ref.per_channel import per_channel_multipliers


@dataclass(frozen=True)
class FullyConnectedParams:
    weights: np.ndarray  # int8 [out_features, in_features]
    bias: np.ndarray  # int32 [out_features], scale = input_scale * weight_scale[c]
    input_offset: int  # -input zero point
    output_offset: int  # output zero point
    multiplier: np.ndarray  # int32 [out_features], Q31
    shift: np.ndarray  # int32 [out_features], power of two (>0: left)
    act_min: int
    act_max: int
    batches: int
    in_features: int
    out_features: int

    @property
    def folded_bias(self) -> np.ndarray:
        """bias + input_offset * sum_k w[c, k]: lets the C inner loop skip the offset add."""
        kernel_sum = self.weights.astype(np.int64).sum(axis=1)
        return (self.bias.astype(np.int64) + self.input_offset * kernel_sum).astype(np.int64)


def prepare(node: Node, g: Graph) -> FullyConnectedParams:
    x, w, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    in_scale, out_scale = x.qparams.scale[0], y.qparams.scale[0]
    out_features, in_features = w.shape
    # Per-tensor weights (one scale, as in TFLite FC models) give every channel the same multiplier. The scales
    # multiply in double, as the TFLM reference does: a float32 product (an older TFLM's per-tensor path)
    # gives different multipliers on MLPerf's AD model and differs from TFLM on about 0.5% of inputs there.
    multiplier, shift = per_channel_multipliers(in_scale, w.qparams.scale, out_scale, out_features)
    act_min, act_max = activation_range(node.attrs.get("clamp"), out_scale, y.qparams.zero_point[0])
    params = FullyConnectedParams(
        weights=w.data,
        bias=b.data.astype(np.int32),
        input_offset=-x.qparams.zero_point[0],
        output_offset=y.qparams.zero_point[0],
        multiplier=multiplier,
        shift=shift,
        act_min=act_min,
        act_max=act_max,
        batches=x.size // in_features,
        in_features=in_features,
        out_features=out_features,
    )
    fb = params.folded_bias
    if fb.min() < -(2**31) or fb.max() > 2**31 - 1:
        raise ModelError(f"layer '{node.name}': folded int32 bias overflows; the bias is too large for int8")
    return params


def fully_connected_s8(x: np.ndarray, p: FullyConnectedParams) -> np.ndarray:
    x = x.reshape(p.batches, p.in_features).astype(np.int64)
    acc = (x + p.input_offset) @ p.weights.astype(np.int64).T + p.bias.astype(np.int64)
    acc = wrap_i32(acc)
    acc = multiply_by_quantized_multiplier(acc, p.multiplier[None, :], p.shift[None, :])
    acc = acc + p.output_offset
    return np.clip(acc, p.act_min, p.act_max).astype(np.int8)
