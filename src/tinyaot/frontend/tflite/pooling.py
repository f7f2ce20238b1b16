"""AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SUM and REDUCE_MAX: windows and reductions.

SUM is the IR's sum (TFLM's QuantizedMeanOrSum without 1 / count), REDUCE_MAX a max pool over a view that puts the
reduced axes in one window: [1, before, reduced, after], a window of (1, reduced). Both reduce a run of consecutive
axes (what the kernels walk); TFLM's reducers take any set, and another is refused saying so.
"""
from __future__ import annotations

import math

import tinyaot.frontend.tflite.tflm_checks as tflm
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.conv import spatial
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.reader import REPAIR, OpInfo
from tinyaot.ir import Node, Tensor


def _pool_2d(imp: Importer, op: OpInfo, ir_op: str, extra: dict) -> None:
    """AVERAGE_POOL_2D and MAX_POOL_2D: the same geometry and qparams rules, a different IR op."""
    (xi,) = imp.args(op, 1, 1)
    o = imp.options(op, "Pool2DOptions")
    x = imp.ir_input(xi, op)
    x_shape = imp.g.tensor(x).shape
    kernel, stride = (o.FilterHeight(), o.FilterWidth()), (o.StrideH(), o.StrideW())
    oh, ow, pad = spatial(imp, op, x_shape, kernel[0], kernel[1], o.Padding(), stride, (1, 1))
    imp.check_shape(op, (x_shape[0], oh, ow, x_shape[3]))
    imp.prepare(tflm.same_qparams, op, xi)
    imp.node(op, ir_op, [x], {"kernel": kernel, "stride": stride, "padding": pad, **extra,
                              "clamp": imp.clamp(op, o.FusedActivationFunction())})


def average_pool_2d(imp: Importer, op: OpInfo) -> None:
    _pool_2d(imp, op, "avg_pool2d", {"count_include_pad": False})  # TFLite divides by the taps inside


def max_pool_2d(imp: Importer, op: OpInfo) -> None:
    _pool_2d(imp, op, "max_pool2d", {})


def mean(imp: Importer, op: OpInfo) -> None:
    xi, ai = imp.args(op, 2, 2)
    o = imp.options(op, "ReducerOptions") if op.options_type else None
    x = imp.ir_input(xi, op)
    rank = len(imp.g.tensor(x).shape)
    axes = sorted({int(a) % rank for a in imp.const_ints(op, ai, "axes").reshape(-1)})
    imp.node(op, "mean", [x], {"axes": tuple(axes), "keepdims": bool(o.KeepDims()) if o is not None else False})
    imp.prepare(tflm.rescale, op, [xi], op.outputs[0])


def _reduced_axes(imp: Importer, op: OpInfo, xi: int, ai: int) -> tuple[list[int], bool]:
    """SUM / REDUCE_MAX: the axes (TFLM's PrepareSimple: an int32 tensor; ResolveAxis: negatives from the end,
    repeats once), a run of consecutive ones, and keep_dims; the output shape checked."""
    if imp.t(ai).dtype != "int32":
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): the axes are {imp.t(ai).type_name}; TFLite "
                                 "Micro's reducers take int32 axes (PrepareSimple)")
    shape = tuple(imp.t(xi).shape)
    values = imp.const_ints(op, ai, "axes").reshape(-1).tolist()
    if any(not -len(shape) <= a < len(shape) for a in values):
        raise ModelError(f"operator {op.index} ({op.name}): axes {values} of a {len(shape)}-D input; {REPAIR}")
    axes = sorted({a % len(shape) for a in values})
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) reduces axes {axes} of {list(shape)}: tinyaot "
                                 "reduces a run of consecutive axes (e.g. (1, 2) of NHWC); transpose them together "
                                 "first")
    o = imp.options(op, "ReducerOptions") if op.options_type else None
    keep = bool(o.KeepDims()) if o is not None else False
    want = tuple(1 if a in axes else d for a, d in enumerate(shape)) if keep else tuple(
        d for a, d in enumerate(shape) if a not in axes)
    imp.check_shape(op, want)
    return axes, keep


def sum_(imp: Importer, op: OpInfo) -> None:
    """TFLM's SUM (int8, int16): QuantizedMeanOrSum's compute_sum, the IR's sum."""
    xi, ai = imp.args(op, 2, 2)
    axes, keep = _reduced_axes(imp, op, xi, ai)
    imp.node(op, "sum", [imp.ir_input(xi, op)], {"axes": tuple(axes), "keepdims": keep})
    imp.prepare(tflm.rescale, op, [xi], op.outputs[0])


def reduce_max(imp: Importer, op: OpInfo) -> None:
    """TFLM's REDUCE_MAX (int8 at the output's scale and zero point, which its Eval checks; float32): the largest
    stored value of each window, a max pool of the view [1, before, reduced, after] with a window of (1, reduced)."""
    xi, ai = imp.args(op, 2, 2)
    if imp.t(xi).dtype not in ("int8", "float32"):
        raise UnsupportedOpError(f"operator {op.index} (REDUCE_MAX) on {imp.t(xi).type_name}: TFLite Micro's "
                                 "REDUCE_MAX takes int8 and float32 only; keep it int8")
    axes, _ = _reduced_axes(imp, op, xi, ai)
    imp.prepare(tflm.same_qparams, op, xi)  # TFLM's EvalMinMaxHelper: TF_LITE_ENSURE_EQ of the scales, zero points
    x = imp.ir_input(xi, op)
    shape = tuple(imp.g.tensor(x).shape)
    before, count = math.prod(shape[: axes[0]]), math.prod(shape[axes[0]: axes[-1] + 1])
    after = math.prod(shape[axes[-1] + 1:])
    t, name, source = imp.g.tensor(x), f"max_pool2d_{op.index}", f"{imp.source}:{op.index}"
    for tensor, dims in ((f"{name}_in", (1, before, count, after)), (f"{name}_max", (1, before, 1, after))):
        imp.g.add_tensor(Tensor(tensor, dims, t.dtype, qparams=t.qparams))
    imp.g.nodes.append(Node("reshape", f"{name}_in", [x], [f"{name}_in"], {}, source=source))
    imp.g.nodes.append(Node("max_pool2d", name, [f"{name}_in"], [f"{name}_max"],
                            {"kernel": (1, count), "stride": (1, 1), "padding": (0, 0, 0, 0)}, source=source))
    out = imp.activation(op.outputs[0], f"{name}_out", op)
    imp.g.nodes.append(Node("reshape", f"{name}_view", [f"{name}_max"], [out], {}, source=source))
