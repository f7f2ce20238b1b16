"""LOGISTIC, TANH, HARD_SWISH, the RELU family, SOFTMAX and L2_NORMALIZATION.

An int8 model's LOGISTIC / TANH / HARD_SWISH is a 256-entry table filled at compile time by TFLM's own integer
kernels (ref/tflm_activations.py): bit-exact with TFLite Micro, at the cost of one table lookup per element. A float
model's is the real function, whose table tinyaot's PTQ fills.
"""
from __future__ import annotations

import math

import numpy as np

import tinyaot.frontend.tflite.tflm_checks as tflm
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.reader import REPAIR, OpInfo


def tflm_table(function: str):
    """An int8 (or int16) model's activation as TFLM's integer kernel computes it (its Prepare rules: codegen)."""
    def convert(imp: Importer, op: OpInfo) -> None:
        (xi,) = imp.args(op, 1, 1)
        tflm.int16_table(imp, op, xi, function)
        imp.node(op, "lut", [imp.ir_input(xi, op)], {"function": function})

    return convert


def real_table(real_function: str):
    """A float model's activation: the real function, quantized by tinyaot's PTQ."""
    def convert(imp: Importer, op: OpInfo) -> None:
        (xi,) = imp.args(op, 1, 1)
        imp.node(op, "lut", [imp.ir_input(xi, op)], {"function": real_function})

    return convert


def relu(clamp, rescales: bool):
    """TFLM's int8 RELU rescales to the output's qparams; its RELU6 / RELU_N1_TO_1 clamp in the input's and
    ignore the output's, so tinyaot takes those only when both agree (as converters write them)."""
    def convert(imp: Importer, op: OpInfo) -> None:
        (xi,) = imp.args(op, 1, 1)
        imp.prepare(tflm.int16_relu, op, xi)
        if not rescales:
            imp.prepare(tflm.same_qparams, op, xi)
        imp.node(op, "relu", [imp.ir_input(xi, op)], {"clamp": clamp})
        imp.prepare(tflm.rescale, op, [xi], op.outputs[0])

    return convert


def softmax(imp: Importer, op: OpInfo) -> None:
    (xi,) = imp.args(op, 1, 1)
    o = imp.options(op, "SoftmaxOptions") if op.options_type else None
    x = imp.ir_input(xi, op)
    imp.check_shape(op, imp.g.tensor(x).shape)
    imp.prepare(tflm.softmax_output, op, xi)
    beta = float(np.float32(o.Beta())) if o is not None else 1.0
    if not (math.isfinite(beta) and beta > 0):
        raise ModelError(f"operator {op.index} (SOFTMAX) has beta {beta}; softmax(beta * x) needs a positive, finite "
                         f"beta (converters write 1.0); {REPAIR}")
    imp.node(op, "softmax", [x], {"beta": beta})


L2_NORM_EPSILON = 1e-6  # TFLM's float L2_NORMALIZATION floors the norm here (its integer kernel has no epsilon)


def l2_normalization(imp: Importer, op: OpInfo) -> None:
    """x / ||x|| over the last axis. TFLM's Prepare takes up to 4 dims, int8 or float32, and no fused activation;
    it no longer checks an int8 output's qparams: its kernel writes at scale 1/128 and zero point 0 whatever they
    say, as tinyaot's does (converters write exactly those)."""
    (xi,) = imp.args(op, 1, 1)
    if len(imp.t(xi).shape) > 4:
        raise UnsupportedOpError(f"operator {op.index} (L2_NORMALIZATION) has a {len(imp.t(xi).shape)}-D input; "
                                 "TFLite Micro's Prepare takes up to 4 dims")
    o = imp.options(op, "L2NormOptions") if op.options_type else None
    if o is not None and o.FusedActivationFunction() != 0:
        raise UnsupportedOpError(f"operator {op.index} (L2_NORMALIZATION) has a fused activation; TFLite Micro's "
                                 "Prepare requires NONE")
    x = imp.ir_input(xi, op)
    imp.check_shape(op, imp.g.tensor(x).shape)
    imp.node(op, "l2_normalize", [x], {"eps": L2_NORM_EPSILON})
