"""ATen -> IR converters for activations: ReLU / ReLU6 / hardtanh / clamp (the relu op), PReLU and leaky ReLU,
softmax, and the functions tinyaot computes as 256-entry tables (sigmoid, tanh, hardswish, hardsigmoid, SiLU, GELU).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tinyaot.frontend.pytorch_builder import (
    NHWC_AXES,
    Builder,
    Value,
    ir_axis,
)
from tinyaot.ir.ops import RELU


def _clamp_node(b: Builder, n, lo: float, hi: float) -> None:
    x = b.arg(n.args[0])
    b.bind(n, b.emit("relu", [x.name], b.shape(x), {"clamp": (float(lo), float(hi))}), x.nhwc, x.torch_rank)


def _relu(b: Builder, n) -> None:
    _clamp_node(b, n, *RELU)


def _relu6(b: Builder, n) -> None:
    _clamp_node(b, n, 0.0, 6.0)


def _hardtanh(b: Builder, n) -> None:
    lo = n.args[1] if len(n.args) > 1 else -1.0
    hi = n.args[2] if len(n.args) > 2 else 1.0
    _clamp_node(b, n, lo, hi)


def _clamp(b: Builder, n) -> None:
    lo = n.args[1] if len(n.args) > 1 and n.args[1] is not None else n.kwargs.get("min")
    hi = n.args[2] if len(n.args) > 2 and n.args[2] is not None else n.kwargs.get("max")
    if (lo is not None and not isinstance(lo, (int, float))) or (hi is not None and not isinstance(hi, (int, float))):
        raise b.error("clamp bounds must be Python numbers")
    _clamp_node(b, n, -math.inf if lo is None else lo, math.inf if hi is None else hi)


def _leaky_relu(b: Builder, n) -> None:
    x = b.arg(n.args[0])
    alpha = n.args[1] if len(n.args) > 1 else n.kwargs.get("negative_slope", 0.01)
    b.bind(n, b.emit("leaky_relu", [x.name], b.shape(x), {"alpha": float(alpha)}), x.nhwc, x.torch_rank)


def _alpha_like(b: Builder, x: Value, alpha: np.ndarray) -> np.ndarray:
    """PReLU's weight (torch order, broadcasting against x's torch shape) laid out like x in the IR."""
    rank = x.torch_rank
    if alpha.ndim > rank:
        raise b.error(f"the PReLU weight {list(alpha.shape)} has more dims than its input")
    a = alpha.reshape((1,) * (rank - alpha.ndim) + alpha.shape)
    if x.nhwc and rank == 3:
        a = a.transpose(0, 2, 1)[:, None]
    elif x.nhwc:
        a = a.transpose([t for t, _ in sorted(NHWC_AXES[rank].items(), key=lambda kv: kv[1])])
    elif x.lead:
        a = a[None]
    try:
        fits = np.broadcast_shapes(a.shape, b.shape(x)) == b.shape(x)
    except ValueError:
        fits = False
    if not fits:
        raise b.error(f"the PReLU weight {list(alpha.shape)} does not broadcast to its input")
    return a


def _prelu(b: Builder, n) -> None:
    """nn.PReLU (aten.prelu: one weight, or one per channel, torch dim 1) and its decomposition
    aten._prelu_kernel (the weight already shaped to broadcast). One weight is a leaky_relu: its exact slope, where
    prelu would quantize it as an int8 constant; the same kernel runs either."""
    x = b.arg(n.args[0])
    w = np.asarray(b.const_data(n.args[1]), dtype=np.float64)
    if w.size == 1:
        b.bind(n, b.emit("leaky_relu", [x.name], b.shape(x), {"alpha": float(w.reshape(-1)[0])}), x.nhwc,
               x.torch_rank)
        return
    if str(n.target) == "aten.prelu.default":  # one weight per channel, torch dim 1
        if x.torch_rank < 2 or w.ndim != 1:
            raise b.error(f"a PReLU weight of {w.size} values needs an input with a channel dim (dim 1)")
        w = w.reshape((1, w.size) + (1,) * (x.torch_rank - 2))
    alpha = b.const(f"{n.name}.alpha", _alpha_like(b, x, w))
    b.bind(n, b.emit("prelu", [x.name, alpha], b.shape(x)), x.nhwc, x.torch_rank)


def _softmax(b: Builder, n) -> None:
    """Softmax over the last IR axis; over another (MobileViTv2's softmax over the patches of [1, 1, P, N], W in
    the IR) through a view when the axes after it are all 1, else a transpose there and back."""
    x = b.arg(n.args[0])
    dim = n.args[1] % x.torch_rank
    axis, shape = ir_axis(dim, x), b.shape(x)
    if axis == 0:
        raise b.error("softmax over the batch dimension is not supported")
    last = len(shape) - 1
    if axis == last:
        b.bind(n, b.emit("softmax", [x.name], shape, {"beta": 1.0}), x.nhwc, x.torch_rank)
        return
    if all(d == 1 for d in shape[axis + 1 :]):
        flat = b.emit("reshape", [x.name], shape[: axis + 1], suffix="_view")
        probs = b.emit("softmax", [flat], shape[: axis + 1], {"beta": 1.0})
        b.bind(n, b.emit("reshape", [probs], shape, suffix="_view"), x.nhwc, x.torch_rank)
        return
    perm = (*range(axis), *range(axis + 1, last + 1), axis)
    moved_shape = tuple(shape[a] for a in perm)
    moved = b.emit("transpose", [x.name], moved_shape, {"perm": perm}, suffix="_to_last")
    probs = b.emit("softmax", [moved], moved_shape, {"beta": 1.0})
    back = tuple(int(a) for a in np.argsort(perm))
    b.bind(n, b.emit("transpose", [probs], shape, {"perm": back}, suffix="_back"), x.nhwc, x.torch_rank)


def _lut(function: str):
    def convert(b: Builder, n) -> None:
        x = b.arg(n.args[0])
        fn = function
        if function == "gelu":
            approx = n.kwargs.get("approximate", n.args[1] if len(n.args) > 1 else "none")
            fn = "gelu_tanh" if approx == "tanh" else "gelu"
        b.bind(n, b.emit("lut", [x.name], b.shape(x), {"function": fn}), x.nhwc, x.torch_rank)
    return convert


CONVERTERS: dict[str, Callable[[Builder, Any], None]] = {
    "aten.relu.default": _relu,
    "aten.relu_.default": _relu,
    "aten.relu6.default": _relu6,
    "aten.hardtanh.default": _hardtanh,
    "aten.hardtanh_.default": _hardtanh,
    "aten.clamp.default": _clamp,
    "aten.clamp_.default": _clamp,
    "aten.softmax.int": _softmax,
    "aten._softmax.default": _softmax,
    "aten.sigmoid.default": _lut("sigmoid"),
    "aten.tanh.default": _lut("tanh"),
    "aten.hardswish.default": _lut("hardswish"),
    "aten.hardsigmoid.default": _lut("hardsigmoid"),
    "aten.silu.default": _lut("silu"),
    "aten.gelu.default": _lut("gelu"),
    "aten.prelu.default": _prelu,
    "aten._prelu_kernel.default": _prelu,
    "aten.leaky_relu.default": _leaky_relu,
    # The in-place spellings (nn.Hardswish(inplace=True), as torchvision's MobileNetV3 and EfficientNet write them):
    # torch.export already points every later use of the tensor at the in-place op's result, so the value is all.
    "aten.sigmoid_.default": _lut("sigmoid"),
    "aten.tanh_.default": _lut("tanh"),
    "aten.hardswish_.default": _lut("hardswish"),
    "aten.hardsigmoid_.default": _lut("hardsigmoid"),
    "aten.silu_.default": _lut("silu"),
    "aten.gelu_.default": _lut("gelu"),
    "aten.leaky_relu_.default": _leaky_relu,
}
