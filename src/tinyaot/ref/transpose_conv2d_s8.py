"""transpose_conv2d_s8: int8 NHWC transposed convolution, TFLite Micro's TRANSPOSE_CONV (int8, per channel).

TFLM scatters: input pixel (iy, ix) adds (x + input_offset) * weights[oc][ky][kx][ic] into the int32 sum of output
pixel (iy * stride_h - pad_top + ky, ix * stride_w - pad_left + kx) when that lies inside the output; then each
output gets its bias, per-channel MultiplyByQuantizedMultiplier, the output zero point and the fused activation's
clamp (the multipliers from double in_scale * w_scale[c] / out_scale, as its PopulateConvolutionQuantizationParams).
Integer sums do not depend on their order, so the C kernel gathers the same terms per output pixel instead and
needs no int32 scratch the size of the output.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import activation_range
from tinyaot.ir import Graph, Node
from tinyaot.ref.conv2d_s8 import requantize
from tinyaot.ref.per_channel import per_channel_multipliers


@dataclass(frozen=True)
class TransposeConvParams:
    """What a transposed convolution needs at run time, computed once at compile time."""

    weights: np.ndarray  # int8 [out_c, kh, kw, in_c], symmetric
    bias: np.ndarray  # int32 [out_c], scale = input_scale * weight_scale[c]
    multiplier: np.ndarray  # int32 [out_c], Q31
    shift: np.ndarray  # int32 [out_c], power of two (>0: left)
    input_offset: int  # -input zero point
    output_offset: int  # output zero point
    act_min: int
    act_max: int
    batches: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    pad_top: int  # rows of the full (in_h - 1) * stride_h + kernel_h result cropped above the output
    pad_left: int


def output_size(in_size: int, k: int, stride: int, before: int, after: int, extra: int) -> int:
    """PyTorch's ConvTranspose output size: (in - 1) * stride + k, cropped by the padding, plus output_padding."""
    return (in_size - 1) * stride + k - before - after + extra


def prepare(node: Node, g: Graph) -> TransposeConvParams:
    x, w = g.tensor(node.inputs[0]), g.tensor(node.inputs[1])
    b = g.tensor(node.inputs[2]) if len(node.inputs) > 2 else None
    y = g.tensor(node.outputs[0])
    if len(x.shape) != 4 or len(y.shape) != 4 or len(w.shape) != 4:
        raise ModelError(f"layer '{node.name}': transpose_conv2d needs 4-D NHWC input, output and weights "
                         f"[out, kh, kw, in], got {x.shape}, {y.shape}, {w.shape}")
    batches, in_h, in_w, in_c = x.shape
    _, out_h, out_w, out_c = y.shape
    w_out, kh, kw, w_in = w.shape
    if (w_out, w_in) != (out_c, in_c):
        raise ModelError(f"layer '{node.name}': weights {w.shape} do not map the input's {in_c} channels to the "
                         f"output's {out_c}")
    if x.qparams is None or y.qparams is None or w.qparams is None:
        raise ModelError(f"layer '{node.name}': input, output and weights must be quantized (int8 with qparams)")
    sh, sw = node.attrs.get("stride", (1, 1))
    top, bottom, left, right = node.attrs.get("padding", (0, 0, 0, 0))
    extra_h, extra_w = node.attrs.get("output_padding", (0, 0))
    want = (output_size(in_h, kh, sh, top, bottom, extra_h), output_size(in_w, kw, sw, left, right, extra_w))
    if want != (out_h, out_w):
        raise ModelError(f"layer '{node.name}': a {in_h}x{in_w} input, {kh}x{kw} kernel, stride {(sh, sw)}, padding "
                         f"{(top, bottom, left, right)} and output_padding {(extra_h, extra_w)} give a "
                         f"{want[0]}x{want[1]} output, not {out_h}x{out_w}")
    multiplier, shift = per_channel_multipliers(x.qparams.scale[0], w.qparams.scale, y.qparams.scale[0], out_c)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], y.qparams.zero_point[0])
    bias = b.data.astype(np.int32) if b is not None and b.data is not None else np.zeros(out_c, np.int32)
    if bias.shape != (out_c,):
        raise ModelError(f"layer '{node.name}': bias has shape {bias.shape}, expected ({out_c},)")
    return TransposeConvParams(
        weights=np.ascontiguousarray(w.data.astype(np.int8)), bias=bias, multiplier=multiplier, shift=shift,
        input_offset=-int(x.qparams.zero_point[0]), output_offset=int(y.qparams.zero_point[0]),
        act_min=act_min, act_max=act_max, batches=batches, in_h=in_h, in_w=in_w, in_c=in_c, out_h=out_h,
        out_w=out_w, out_c=out_c, kernel_h=kh, kernel_w=kw, stride_h=int(sh), stride_w=int(sw), pad_top=int(top),
        pad_left=int(left),
    )


def transpose_conv2d_s8(x: np.ndarray, p: TransposeConvParams) -> np.ndarray:
    """TFLM's scatter, one kernel tap at a time over the whole input (exact int64 sums)."""
    xo = x.reshape(p.batches, p.in_h, p.in_w, p.in_c).astype(np.int64) + p.input_offset
    full_h = max((p.in_h - 1) * p.stride_h + p.kernel_h, p.pad_top + p.out_h)
    full_w = max((p.in_w - 1) * p.stride_w + p.kernel_w, p.pad_left + p.out_w)
    acc = np.zeros((p.batches, full_h, full_w, p.out_c), dtype=np.int64)
    w = p.weights.astype(np.int64)
    for ky in range(p.kernel_h):
        for kx in range(p.kernel_w):
            rows = slice(ky, ky + (p.in_h - 1) * p.stride_h + 1, p.stride_h)
            cols = slice(kx, kx + (p.in_w - 1) * p.stride_w + 1, p.stride_w)
            acc[:, rows, cols, :] += xo @ w[:, ky, kx, :].T
    acc = acc[:, p.pad_top : p.pad_top + p.out_h, p.pad_left : p.pad_left + p.out_w, :]
    return requantize(acc.reshape(-1, p.out_c), p).reshape(p.batches, p.out_h, p.out_w, p.out_c)
