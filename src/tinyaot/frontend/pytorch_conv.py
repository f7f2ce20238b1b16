"""ATen -> IR converters for linear, convolutions (1-D, 2-D, transposed) and BatchNorm."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinyaot.frontend.fx_util import layer_name
from tinyaot.frontend.pytorch_builder import Builder, pair, torch_to_ir_shape, val_shape


def _linear(b: Builder, n) -> None:
    x = b.arg(n.args[0])
    if x.nhwc:
        raise b.error("Linear applied to a channels-first conv feature map's last axis is not supported; "
                      "flatten it first")
    w = b.const_data(n.args[1])
    bias = b.const_data(n.args[2]) if len(n.args) > 2 and n.args[2] is not None else np.zeros(w.shape[0])
    inputs = [x.name, b.const(f"{layer_name(n)}.weight", w), b.const(f"{layer_name(n)}.bias", bias)]
    b.bind(n, b.emit("fully_connected", inputs, b.plain_shape(val_shape(n), x)), False)


def _explicit_padding(padding, kernel, dilation, stride=(1, 1)) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from torch's padding argument (ints or 'same'/'valid')."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return (total[0] // 2, total[0] - total[0] // 2, total[1] // 2, total[1] - total[1] // 2)
    ph, pw = padding
    return (ph, ph, pw, pw)


def _conv(b: Builder, n, one_d: bool) -> None:
    args = list(n.args) + [None] * (7 - len(n.args))
    x_arg, w_arg, bias_arg, stride, padding, dilation, groups = args[:7]
    x = b.to_channels_last(b.arg(x_arg))
    w = b.const_data(w_arg)  # [out, in/groups, kh, kw] or [out, in/groups, k]
    if one_d:
        w = w[:, :, None, :]
        stride = (1,) + pair(stride if stride is not None else 1, 1)
        dilation = (1,) + pair(dilation if dilation is not None else 1, 1)
        if isinstance(padding, str):
            pad = _explicit_padding(padding, w.shape[2:], dilation)
        else:
            p = pair(padding if padding is not None else 0, 1)[0]
            pad = (0, 0, p, p)
    else:
        stride = pair(stride if stride is not None else 1)
        dilation = pair(dilation if dilation is not None else 1)
        pad = _explicit_padding(padding if isinstance(padding, str) else pair(padding or 0), w.shape[2:], dilation)
    groups = int(groups or 1)
    out_c, in_per_group, kh, kw = w.shape
    in_c = b.shape(x)[3]
    bias = b.const_data(bias_arg) if bias_arg is not None else np.zeros(out_c)
    torch_out = val_shape(n)
    out_shape = torch_to_ir_shape(torch_out)
    layer = layer_name(n)
    attrs = {"stride": stride, "padding": pad, "dilation": dilation}
    if groups > 1 and groups == in_c and in_per_group == 1:
        attrs["depth_multiplier"] = out_c // in_c
        wt = b.const(f"{layer}.weight", w.transpose(1, 2, 3, 0))  # [1, kh, kw, in * m]
        out = b.emit("depthwise_conv2d", [x.name, wt, b.const(f"{layer}.bias", bias)], out_shape, attrs)
    else:  # groups = 1, or grouped: [out, in/groups, kh, kw] -> OHWI, TFLite's grouped CONV_2D filter
        wt = b.const(f"{layer}.weight", w.transpose(0, 2, 3, 1))
        out = b.emit("conv2d", [x.name, wt, b.const(f"{layer}.bias", bias)], out_shape, attrs)
    b.bind(n, out, True, len(torch_out))


def _conv_transpose(b: Builder, n) -> None:
    """ConvTranspose2d / ConvTranspose1d (a 1-D signal is H = 1): weights [in, out, kh, kw] -> [out, kh, kw, in]."""
    args = list(n.args) + [None] * (8 - len(n.args))
    x_arg, w_arg, bias_arg, stride, padding, output_padding, groups, dilation = args[:8]
    one_d = len(val_shape(n)) == 3
    dims = 1 if one_d else 2
    stride, padding, extra, dilation = (pair(v if v is not None else d, dims)
                                        for v, d in ((stride, 1), (padding, 0), (output_padding, 0), (dilation, 1)))
    if int(groups or 1) != 1 or any(d != 1 for d in dilation):
        raise b.error(f"transposed convolution with groups={int(groups or 1)} and dilation={tuple(dilation)} is not "
                      "supported; supported: groups=1, dilation=1 (any stride, padding and output_padding)")
    x = b.to_channels_last(b.arg(x_arg))
    w = b.const_data(w_arg)  # [in, out, kh, kw] or [in, out, k]
    if one_d:
        w = w[:, :, None, :]
        stride, padding, extra = (1, *stride), (0, *padding), (0, *extra)
    bias = b.const_data(bias_arg) if bias_arg is not None else np.zeros(w.shape[1])
    torch_out = val_shape(n)
    layer = layer_name(n)
    attrs = {"stride": stride, "padding": (padding[0], padding[0], padding[1], padding[1]), "output_padding": extra}
    wt = b.const(f"{layer}.weight", w.transpose(1, 2, 3, 0))
    out = b.emit("transpose_conv2d", [x.name, wt, b.const(f"{layer}.bias", bias)], torch_to_ir_shape(torch_out), attrs)
    b.bind(n, out, True, len(torch_out))


def _conv2d(b: Builder, n) -> None:
    _conv(b, n, one_d=False)


def _conv1d(b: Builder, n) -> None:
    _conv(b, n, one_d=True)


def _batch_norm(b: Builder, n) -> None:
    x_arg, w_arg, bias_arg, mean_arg, var_arg = n.args[:5]
    eps = float(n.args[7]) if len(n.args) > 7 else 1e-5
    mean, var = b.const_data(mean_arg), b.const_data(var_arg)
    gamma = b.const_data(w_arg) if w_arg is not None else np.ones_like(mean)
    beta = b.const_data(bias_arg) if bias_arg is not None else np.zeros_like(mean)
    scale = gamma / np.sqrt(var.astype(np.float64) + eps)
    shift = beta - mean * scale
    x = b.unlead(b.arg(x_arg))  # BatchNorm1d on (B * C, L): torch's first axis is its batch
    layer = layer_name(n)
    if len(b.shape(x)) == 2:  # BatchNorm1d on features: folded into the Linear before it (see passes)
        inputs = [x.name, b.const(f"{layer}.scale", scale), b.const(f"{layer}.shift", shift)]
        b.bind(n, b.emit("batch_norm", inputs, val_shape(n)), False)
        return
    x = b.to_channels_last(x)
    inputs = [x.name, b.const(f"{layer}.scale", scale), b.const(f"{layer}.shift", shift)]
    b.bind(n, b.emit("batch_norm", inputs, b.shape(x)), True, x.torch_rank)


CONVERTERS: dict[str, Callable[[Builder, Any], None]] = {
    "aten.linear.default": _linear,
    "aten.conv2d.default": _conv2d,
    "aten.conv2d.padding": _conv2d,
    "aten.conv1d.default": _conv1d,
    "aten.conv1d.padding": _conv1d,
    "aten.conv_transpose2d.input": _conv_transpose,
    "aten.conv_transpose1d.default": _conv_transpose,
    "aten.batch_norm.default": _batch_norm,
}
