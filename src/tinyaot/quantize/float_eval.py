"""Float evaluation of a float Graph in NumPy (NHWC), for calibration and per-layer error reports.

These are the real-valued definitions of the IR ops; the int8 kernels in `ref/` approximate them.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tinyaot.ir import Graph, Node


def _clamp(node: Node, y: np.ndarray) -> np.ndarray:
    clamp = node.attrs.get("clamp")
    if clamp is None:
        return y
    return np.clip(y, clamp[0], clamp[1])


def _fully_connected(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, w, b = args
    return _clamp(node, x @ w.T + b)


def _pad_nhwc(x: np.ndarray, padding, value: float = 0.0) -> np.ndarray:
    t, b, left, r = padding
    return np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)), constant_values=value)


def _windows(x: np.ndarray, kh: int, kw: int, stride, dilation, padding, value: float = 0.0) -> np.ndarray:
    """(N, OH, OW, C, KH, KW) view of every receptive field."""
    xp = _pad_nhwc(x, padding, value)
    dh, dw = dilation
    win = sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(1, 2))
    win = win[:, :: stride[0], :: stride[1], :, ::dh, ::dw]
    return win


def _conv2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, w, b = args  # w: [out, kh, kw, in]
    a = node.attrs
    win = _windows(x, w.shape[1], w.shape[2], a["stride"], a.get("dilation", (1, 1)), a["padding"])
    y = np.einsum("nhwcij,oijc->nhwo", win, w, optimize=True) + b
    return _clamp(node, y)


def _depthwise_conv2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, w, b = args  # w: [1, kh, kw, in * m]
    a = node.attrs
    m = a.get("depth_multiplier", 1)
    win = _windows(x, w.shape[1], w.shape[2], a["stride"], a.get("dilation", (1, 1)), a["padding"])
    win = np.repeat(win, m, axis=3)  # output channel c*m + j reads input channel c
    y = np.einsum("nhwcij,ijc->nhwc", win, w[0], optimize=True) + b
    return _clamp(node, y)


def _max_pool2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    a = node.attrs
    kh, kw = a["kernel"]
    win = _windows(args[0], kh, kw, a["stride"], (1, 1), a["padding"], value=-np.inf)
    return _clamp(node, win.max(axis=(4, 5)))


def _avg_pool2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    a = node.attrs
    kh, kw = a["kernel"]
    x = args[0]
    total = _windows(x, kh, kw, a["stride"], (1, 1), a["padding"]).sum(axis=(4, 5))
    if a.get("count_include_pad", True):
        count = kh * kw
    else:
        ones = np.ones(x.shape[:3] + (1,))
        count = _windows(ones, kh, kw, a["stride"], (1, 1), a["padding"]).sum(axis=(4, 5))
    return _clamp(node, total / count)


def _mean(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return args[0].mean(axis=tuple(node.attrs["axes"]), keepdims=node.attrs.get("keepdims", False))


def _add(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0] + args[1])


def _mul(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0] * args[1])


def _concat(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return np.concatenate(args, axis=node.attrs["axis"])


def _pad(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _pad_nhwc(args[0], node.attrs["padding"])


def _softmax(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    z = args[0] * node.attrs.get("beta", 1.0)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


LUT_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "hardswish": lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
    "hardsigmoid": lambda x: np.clip(x + 3.0, 0.0, 6.0) / 6.0,
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
}


# TFLite Micro's integer activations approximate these real functions.
LUT_FUNCTIONS.update({"tflm_logistic": LUT_FUNCTIONS["sigmoid"], "tflm_tanh": np.tanh,
                      "tflm_hard_swish": LUT_FUNCTIONS["hardswish"]})


def _lut(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    a = node.attrs
    if a["function"] == "affine":
        y = args[0] * a["scale_by"] + a["offset"]
    else:
        y = LUT_FUNCTIONS[a["function"]](args[0])
    return _clamp(node, y)


def _relu(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0])


def _transpose(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return np.transpose(args[0], node.attrs["perm"])  # perm[0] == 0: the batch stays first


def _identity(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """quantize (int8 -> int8 with other qparams) changes no real value."""
    return args[0]


def _reshape(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x = args[0]
    out_shape = g.tensor(node.outputs[0]).shape
    return x.reshape((x.shape[0],) + tuple(out_shape[1:]))


FLOAT_OPS: dict[str, Callable[[Node, list[np.ndarray], Graph], np.ndarray]] = {
    "fully_connected": _fully_connected,
    "conv2d": _conv2d,
    "depthwise_conv2d": _depthwise_conv2d,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "mean": _mean,
    "add": _add,
    "mul": _mul,
    "concat": _concat,
    "pad": _pad,
    "softmax": _softmax,
    "lut": _lut,
    "relu": _relu,
    "transpose": _transpose,
    "reshape": _reshape,
    "quantize": _identity,
}


def evaluate(g: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    """Run the float graph on a batch (dim 0 is the batch); return every tensor's value."""
    values: dict[str, np.ndarray] = {g.inputs[0]: np.asarray(x, dtype=np.float64)}
    for t in g.constants():
        values[t.name] = t.data.astype(np.float64)
    for node in g.nodes:
        values[node.outputs[0]] = FLOAT_OPS[node.op](node, [values[i] for i in node.inputs], g)
    return values
