"""Float evaluation of a float Graph in NumPy (NHWC), for calibration and per-layer error reports.

`real_<op>` is the real-valued definition of each IR op, which the int8 kernels in `ref/` approximate; the
table the evaluator runs is built from the op registry, so an op without its definition fails at import.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import AFTER_LOWERING, FLOAT_ONLY, OPS


def _clamp(node: Node, y: np.ndarray) -> np.ndarray:
    clamp = node.attrs.get("clamp")
    if clamp is None:
        return y
    return np.clip(y, clamp[0], clamp[1])


def real_fully_connected(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
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


def real_conv2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, w, b = args  # w: [out, kh, kw, in]
    a = node.attrs
    win = _windows(x, w.shape[1], w.shape[2], a["stride"], a.get("dilation", (1, 1)), a["padding"])
    y = np.einsum("nhwcij,oijc->nhwo", win, w, optimize=True) + b
    return _clamp(node, y)


def real_depthwise_conv2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, w, b = args  # w: [1, kh, kw, in * m]
    a = node.attrs
    m = a.get("depth_multiplier", 1)
    win = _windows(x, w.shape[1], w.shape[2], a["stride"], a.get("dilation", (1, 1)), a["padding"])
    win = np.repeat(win, m, axis=3)  # output channel c*m + j reads input channel c
    y = np.einsum("nhwcij,ijc->nhwc", win, w[0], optimize=True) + b
    return _clamp(node, y)


def real_max_pool2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    a = node.attrs
    kh, kw = a["kernel"]
    win = _windows(args[0], kh, kw, a["stride"], (1, 1), a["padding"], value=-np.inf)
    return _clamp(node, win.max(axis=(4, 5)))


def real_avg_pool2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
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


def real_mean(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return args[0].mean(axis=tuple(node.attrs["axes"]), keepdims=node.attrs.get("keepdims", False))


def real_add(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0] + args[1])


def real_mul(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0] * args[1])


def real_concat(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return np.concatenate(args, axis=node.attrs["axis"])


def real_pad(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _pad_nhwc(args[0], node.attrs["padding"])


def real_softmax(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
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


def real_lut(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    a = node.attrs
    if a["function"] == "affine":
        y = args[0] * a["scale_by"] + a["offset"]
    else:
        y = LUT_FUNCTIONS[a["function"]](args[0])
    return _clamp(node, y)


def real_relu(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0])


def real_transpose(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return np.transpose(args[0], node.attrs["perm"])  # perm[0] == 0: the batch stays first


def real_quantize(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """quantize (int8 -> int8 with other qparams) changes no real value."""
    return args[0]


def real_reshape(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x = args[0]
    out_shape = g.tensor(node.outputs[0]).shape
    return x.reshape((x.shape[0],) + tuple(out_shape[1:]))


def _real_definitions() -> dict[str, Callable[[Node, list[np.ndarray], Graph], np.ndarray]]:
    """real_<op> for every op a float model can hold (the registry's lowered ops), found by name."""
    table = {}
    for s in OPS.values():
        if s.qparams in (AFTER_LOWERING, FLOAT_ONLY):
            continue
        if f"real_{s.name}" not in globals():
            raise RuntimeError(f"quantize/float_eval.py has no real_{s.name}: every lowered op needs its real "
                             "definition (calibration runs it)")
        table[s.name] = globals()[f"real_{s.name}"]
    return table


FLOAT_OPS = _real_definitions()


def evaluate(g: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    """Run the float graph on a batch (dim 0 is the batch); return every tensor's value."""
    values: dict[str, np.ndarray] = {g.inputs[0]: np.asarray(x, dtype=np.float64)}
    for t in g.constants():
        values[t.name] = t.data.astype(np.float64)
    for node in g.nodes:
        values[node.outputs[0]] = FLOAT_OPS[node.op](node, [values[i] for i in node.inputs], g)
    return values
