"""The op vocabulary of the IR: every op's name, inputs and attributes, in one place.

Conventions shared by all front ends (PyTorch, TFLite, PT2E) and all backends:
- Activations are NHWC (4-D) or [batch, features] (2-D). A PyTorch NCHW model is converted to NHWC
  at import time; the graph's `layout` says what layout the model's input is fed in.
- Quantized graphs: activations int8 with per-tensor QParams; weights int8 symmetric per output
  channel (QParams.axis = the output-channel axis); bias int32 with scale in_scale * w_scale[c].
- Scales are float32 values (stored as Python floats), as in a .tflite file; multipliers are
  computed from them in double precision, as TFLite Micro does.
- A fused activation is the attribute `clamp`: None or (lo, hi) in real units, hi may be inf.
  relu -> (0, inf), relu6 -> (0, 6), hardtanh(a, b) / clamp(a, b) -> (a, b). Kernels clamp to
  [max(-128, zp + round(lo / scale)), min(127, zp + round(hi / scale))] (TFLite's rule).
- Padding is explicit: (top, bottom, left, right) in pixels. Strides and dilations are (h, w).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpSpec:
    inputs: tuple[str, ...]
    attrs: tuple[str, ...]
    doc: str


OPS: dict[str, OpSpec] = {
    "fully_connected": OpSpec(("x", "weight[out, in]", "bias[out]"), ("clamp",),
                              "y = x @ weight.T + bias over the last axis"),
    "conv2d": OpSpec(("x NHWC", "weight[out, kh, kw, in]", "bias[out]"),
                     ("stride", "padding", "dilation", "clamp"), "2-D convolution, groups = 1"),
    "depthwise_conv2d": OpSpec(("x NHWC", "weight[1, kh, kw, in * multiplier]", "bias[in * multiplier]"),
                               ("stride", "padding", "dilation", "depth_multiplier", "clamp"),
                               "depthwise convolution (groups = in_channels)"),
    "max_pool2d": OpSpec(("x NHWC",), ("kernel", "stride", "padding", "clamp"),
                         "max pooling; padding never wins; output keeps the input's qparams"),
    "avg_pool2d": OpSpec(("x NHWC",), ("kernel", "stride", "padding", "count_include_pad", "clamp"),
                         "average pooling"),
    "mean": OpSpec(("x",), ("axes", "keepdims", "clamp"),
                   "mean over a run of consecutive axes ((1, 2) of NHWC: global average pooling); clamp optional"),
    "add": OpSpec(("a", "b"), ("clamp",), "elementwise add with rescaling (broadcast not needed)"),
    "conv2d_add": OpSpec(("x NHWC", "weight[out, kh, kw, in]", "bias[out]", "skip (the output's shape)"),
                         ("stride", "padding", "dilation", "conv", "conv_qparams", "conv_clamp", "clamp",
                          "skip_input"),
                         "add(skip, conv2d(x)) fused (passes/fuse_residual.py): the conv rounds to conv_qparams "
                         "and conv_clamp, then int8 add with clamp; skip_input 1|2 is the skip's operand slot"),
    "mul": OpSpec(("a", "b"), ("clamp",),
                  "elementwise multiply with rescaling; NumPy broadcasting up to 4-D; one operand may be constant"),
    "concat": OpSpec(("x0", "x1", "..."), ("axis",),
                     "concatenation along any axis; inputs with other qparams are requantized"),
    "pad": OpSpec(("x NHWC",), ("padding",),
                  "zero padding (pads with the zero point), padding (top, bottom, left, right) >= 0"),
    "softmax": OpSpec(("x",), ("beta",), "softmax over the last axis; int8 output scale 1/256, zp -128"),
    "lut": OpSpec(("x",), ("function", "clamp"),
                  "elementwise function via a 256-entry int8 table; function: sigmoid, tanh, hardswish, "
                  "hardsigmoid, silu, gelu (erf form), gelu_tanh (the real function, rounded), or tflm_logistic, "
                  "tflm_tanh, tflm_hard_swish (TFLite Micro's integer kernels, bit-exact); clamp optional"),
    "relu": OpSpec(("x",), ("clamp",),
                   "standalone clamp when it cannot fuse into a producer; clamp required; rescales if qparams differ"),
    "reshape": OpSpec(("x",), (), "a view: same bytes, new shape"),
    "transpose": OpSpec(("x",), ("perm",), "moves bytes (2-D to 4-D); only where a view cannot do"),
    "quantize": OpSpec(("x",), (), "requantize int8 -> int8 with other qparams"),
}

RELU = (0.0, float("inf"))
RELU6 = (0.0, 6.0)
