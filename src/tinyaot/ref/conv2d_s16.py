"""conv2d_s16: 16x8 NHWC convolution (int16 activations, int8 per-channel weights), TFLite Micro's int16
ConvPerChannel.

TFLM's 16x8 scheme: activations symmetric (zero point 0, so no input or output offset), int8 weights symmetric
per output channel, multipliers as for int8 (double in_scale * w_scale[c] / out_scale). The bias type picks the
arithmetic: an int64 bias (TFLite's default for 16x8) accumulates in int64 and requantizes with the 64-bit
MultiplyByQuantizedMultiplier (multiplier rounded to 15 bits, one rounding shift); an int32 bias accumulates in
int32 (wrapping) and requantizes with the int32 one (double rounding), as the int8 kernels. A conv without bias
follows its options' quantized_bias_type the same way (the importer gives it a zero bias of that type). Taps
outside the image are skipped; grouped convolution as in conv2d_s8 (groups = in_c / the weights' input depth).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import (
    activation_range,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_64,
    wrap_i32,
)
from tinyaot.ir import Graph, Node
from tinyaot.ir.conv import conv_groups
from tinyaot.ref import _checks
from tinyaot.ref.per_channel import per_channel_multipliers

INT16_MIN, INT16_MAX = -32768, 32767
MAX_SHIFT_64 = 7  # TFLite's 64-bit MultiplyByQuantizedMultiplier takes shifts -31..7 (multipliers below 2^7)
BIAS_BITS = {"int32": 32, "int64": 64}


@dataclass(frozen=True)
class Conv16Params:
    """A 16x8 conv, computed once at compile time (no offsets: int16 zero points are 0)."""

    weights: np.ndarray  # int8 [out_c, kh, kw, in_c / groups]
    bias: np.ndarray  # int64 [out_c] (an int32 bias widened), scale = input_scale * weight_scale[c]
    multiplier: np.ndarray  # int32 [out_c], Q31
    shift: np.ndarray  # int32 [out_c], power of two (>0: left)
    act_min: int  # fused activation, int16 units
    act_max: int
    accumulator_bits: int  # 64: int64 sum, 64-bit requantization; 32: int32 (wrapping) sum, int32 requantization
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
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int
    groups: int  # channel groups (TFLM: in_c / the weights' input depth)
    # The weights widened to int16 for the Cortex-M33's SMLAD (two int16 MACs per instruction, no SXTB16 / PKH):
    # speed mode's table, twice the flash of `weights`; NULL in the size and memory modes (the kernel widens).
    weights16: np.ndarray = field(default=None, compare=False, repr=False)


def prepare_conv16(node: Node, g: Graph, depthwise: bool, params_type: type):
    """The checks and constants both 16x8 convolutions share, as a `params_type` (its fields of them);
    `depthwise` picks the weight layout."""
    if len(node.inputs) != 3:
        raise ModelError(f"{node.op} '{node.name}' needs input, weights and bias, got {len(node.inputs)} inputs")
    x, w, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    _checks.int16_per_tensor(node, x)
    _checks.int16_per_tensor(node, y)
    if w.dtype != "int8" or w.qparams is None or w.data is None:
        raise UnsupportedOpError(f"{node.op} '{node.name}': weights '{w.name}' are {w.dtype}; the 16x8 kernels take "
                                 "constant int8 weights with (per-channel) scales")
    if len(x.shape) != 4 or len(y.shape) != 4 or len(w.shape) != 4:
        raise ModelError(f"{node.op} '{node.name}' needs 4-D NHWC input, output and weights, got "
                         f"{x.shape}, {y.shape}, {w.shape}")
    batches, in_h, in_w, in_c = x.shape
    _, out_h, out_w, out_c = y.shape
    if depthwise:
        _, kh, kw, w_out = w.shape
        mult, groups = out_c // max(in_c, 1), 1
        if w_out != out_c or in_c * mult != out_c:
            raise ModelError(f"{node.op} '{node.name}': depthwise weights {w.shape} do not fit input channels "
                             f"{in_c} x depth multiplier {mult} = output channels {out_c}")
    else:
        w_out, kh, kw, w_in = w.shape
        mult = 1
        if w_out != out_c:
            raise ModelError(f"{node.op} '{node.name}': weights {w.shape} give {w_out} output channels, output has "
                             f"{out_c}")
        groups = conv_groups(in_c, w_in, out_c, f"layer '{node.name}'")
    bits = _bias_bits(node, b, depthwise)
    bias = b.data.astype(np.int64) if b.data is not None else np.zeros(out_c, np.int64)
    if bias.shape != (out_c,):
        raise ModelError(f"{node.op} '{node.name}': bias has shape {bias.shape}, expected ({out_c},)")
    multiplier, shift = per_channel_multipliers(x.qparams.scale[0], w.qparams.scale, y.qparams.scale[0], out_c)
    if bits == 64 and int(shift.max()) > MAX_SHIFT_64:
        raise ModelError(f"{node.op} '{node.name}': input_scale * weight_scale / output_scale reaches "
                         f"2^{int(shift.max())}; TFLite's 16x8 requantization takes multipliers below 2^"
                         f"{MAX_SHIFT_64} (give the output a larger scale)")
    sh, sw = node.attrs.get("stride", (1, 1))
    dh, dw = node.attrs.get("dilation", (1, 1))
    top, _bottom, left, _right = node.attrs.get("padding", (0, 0, 0, 0))
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, INT16_MIN, INT16_MAX)
    values = dict(
        weights=np.ascontiguousarray(w.data.astype(np.int8)), bias=bias, multiplier=multiplier, shift=shift,
        act_min=act_min, act_max=act_max, accumulator_bits=bits, batches=batches, in_h=in_h, in_w=in_w,
        in_c=in_c, out_h=out_h, out_w=out_w, out_c=out_c, kernel_h=kh, kernel_w=kw, stride_h=int(sh),
        stride_w=int(sw), dilation_h=int(dh), dilation_w=int(dw), pad_top=int(top), pad_left=int(left),
        depth_multiplier=mult, groups=groups, weights16=np.ascontiguousarray(w.data.astype(np.int16)))
    return params_type(**{f.name: values[f.name] for f in fields(params_type)})


def _bias_bits(node: Node, b, depthwise: bool) -> int:
    """TFLM's conv takes an int32 or int64 bias; its depthwise conv reads the bias as int64 only."""
    if b.dtype not in BIAS_BITS:
        raise UnsupportedOpError(f"{node.op} '{node.name}': bias '{b.name}' is {b.dtype}; the 16x8 kernel takes an "
                                 f"int64{'' if depthwise else ' or int32'} bias")
    if depthwise and b.dtype != "int64":
        raise UnsupportedOpError(f"{node.op} '{node.name}': bias '{b.name}' is {b.dtype}, but TFLite Micro's 16x8 "
                                 "DEPTHWISE_CONV_2D reads its bias as int64; store the bias as int64")
    return BIAS_BITS[b.dtype]


def prepare(node: Node, g: Graph) -> Conv16Params:
    return prepare_conv16(node, g, False, Conv16Params)


def windows(x: np.ndarray, p) -> np.ndarray:
    """The input gathered per output pixel as float64: [b, out_h, out_w, kh, kw, in_c], 0 outside the image
    (what skipping an outside tap adds); `p` is either op's params."""
    xs = x.reshape(p.batches, p.in_h, p.in_w, p.in_c).astype(np.float64)
    iy = np.arange(p.out_h)[:, None] * p.stride_h - p.pad_top + np.arange(p.kernel_h)[None, :] * p.dilation_h
    ix = np.arange(p.out_w)[:, None] * p.stride_w - p.pad_left + np.arange(p.kernel_w)[None, :] * p.dilation_w
    lo_y, lo_x = min(0, int(iy.min())), min(0, int(ix.min()))
    hi_y, hi_x = max(p.in_h, int(iy.max()) + 1), max(p.in_w, int(ix.max()) + 1)
    padded = np.zeros((p.batches, hi_y - lo_y, hi_x - lo_x, p.in_c))
    padded[:, -lo_y : -lo_y + p.in_h, -lo_x : -lo_x + p.in_w, :] = xs
    return padded[:, (iy - lo_y)[:, None, :, None], (ix - lo_x)[None, :, None, :], :]


def requantize16(acc: np.ndarray, p, bits: int) -> np.ndarray:
    """bias, TFLM's requantization of the accumulator type (`bits` 64 or 32), clamp to the activation range (no
    output offset); `p` is either op's params."""
    acc = acc.astype(np.int64) + p.bias
    if bits == 64:
        out = multiply_by_quantized_multiplier_64(acc, p.multiplier, p.shift)
    else:
        out = multiply_by_quantized_multiplier(wrap_i32(acc), p.multiplier, p.shift)
    return np.clip(out, p.act_min, p.act_max).astype(np.int16)


def conv2d_s16(x: np.ndarray, p: Conv16Params) -> np.ndarray:
    # Products are below 2^22 in magnitude; summed in float64 they are exact while the window holds fewer than
    # 2^31 taps, so rint recovers the integer sum.
    pixels = p.batches * p.out_h * p.out_w
    taps = p.kernel_h * p.kernel_w
    cols = windows(x, p).reshape(pixels, taps, p.groups, p.in_c // p.groups).transpose(0, 2, 1, 3)
    w = p.weights.astype(np.float64).reshape(p.groups, p.out_c // p.groups, -1)
    acc = np.einsum("pgk,gok->pgo", cols.reshape(pixels, p.groups, -1), w).reshape(pixels, p.out_c)
    return requantize16(np.rint(acc), p, p.accumulator_bits).reshape(p.batches, p.out_h, p.out_w, p.out_c)
