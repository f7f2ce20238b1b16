"""LOGISTIC, TANH, HARD_SWISH, the RELU family, PRELU, LEAKY_RELU, SOFTMAX and L2_NORMALIZATION, with this
family's rows of the converter tables (CONVERTERS, and FLOAT_CONVERTERS where a float model's differs;
converters.py merges them all).

An int8 model's LOGISTIC / TANH / HARD_SWISH is a 256-entry table filled at compile time by TFLM's own integer
kernels (ref/tflm_activations.py): bit-exact with TFLite Micro, at the cost of one table lookup per element. A float
model's is the real function, whose table tinyaot's PTQ fills.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import tinyaot.frontend.tflite.tflm_checks as tflm
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.elementwise import operand
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


def prelu(imp: Importer, op: OpInfo) -> None:
    """TFLM's PRELU (PreluPrepare's two multipliers, TFLM's rule checks): a constant alpha, int8 with its own
    qparams in an int8 model, float32 in a float one (tinyaot's PTQ quantizes it)."""
    xi, ai = imp.args(op, 2, 2)
    if ai in imp.names:
        raise UnsupportedOpError(f"operator {op.index} (PRELU): alpha '{imp.t(ai).name}' is computed by the model; "
                                 "tinyaot takes a constant alpha (as TFLite's converter writes it)")
    x = imp.ir_input(xi, op)
    imp.check_shape(op, imp.g.tensor(x).shape)  # alpha broadcasts to x (ref/prelu_s8.py checks it)
    alpha = operand(imp, op, ai, f"prelu_{op.index}_alpha")
    imp.prepare(tflm.rescale, op, [xi], op.outputs[0])
    imp.prepare(tflm.rescale, op, [xi, ai], op.outputs[0])
    imp.node(op, "prelu", [x, alpha], {})


def leaky_relu(imp: Importer, op: OpInfo) -> None:
    """TFLM's LEAKY_RELU: alpha from its options (0 without them, TFLM's default); the multiplier of alpha is
    checked by ref/prelu_s8.py's prepare, the identity one here."""
    (xi,) = imp.args(op, 1, 1)
    o = imp.options(op, "LeakyReluOptions") if op.options_type else None
    alpha = float(np.float32(o.Alpha())) if o is not None else 0.0
    if not math.isfinite(alpha):
        raise ModelError(f"operator {op.index} (LEAKY_RELU) has alpha {alpha}; it must be finite; {REPAIR}")
    imp.prepare(tflm.rescale, op, [xi], op.outputs[0])
    imp.node(op, "leaky_relu", [imp.ir_input(xi, op)], {"alpha": alpha})


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


CONVERTERS: dict[str, Callable[[Importer, OpInfo], None]] = {
    "HARD_SWISH": tflm_table("tflm_hard_swish"),
    "L2_NORMALIZATION": l2_normalization,
    "LEAKY_RELU": leaky_relu,
    "LOGISTIC": tflm_table("tflm_logistic"),
    "PRELU": prelu,
    "RELU": relu((0.0, math.inf), rescales=True),
    "RELU6": relu((0.0, 6.0), rescales=False),
    "RELU_N1_TO_1": relu((-1.0, 1.0), rescales=False),
    "SOFTMAX": softmax,
    "TANH": tflm_table("tflm_tanh"),
}

FLOAT_CONVERTERS: dict[str, Callable[[Importer, OpInfo], None]] = {
    "HARD_SWISH": real_table("hardswish"),
    "LOGISTIC": real_table("sigmoid"),
    "TANH": real_table("tanh"),
}
