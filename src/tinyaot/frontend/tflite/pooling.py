"""AVERAGE_POOL_2D, MAX_POOL_2D and MEAN: windows and reductions."""
from __future__ import annotations

import tinyaot.frontend.tflite.tflm_checks as tflm
from tinyaot.frontend.tflite.conv import spatial
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.reader import OpInfo


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
