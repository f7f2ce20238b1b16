"""ADD, SUB, MUL, MINIMUM and MAXIMUM: binary element-wise operators, an operand of which may be a constant.

An int8 model keeps a constant operand as an int8 (or 16x8 int16) tensor with its qparams, as TFLM reads it. A float
model's one-number constant becomes a table instead, x * scale_by + offset (the IR's lut 'affine', as the PyTorch
front end writes `x * 0.5` or `x + 1`): `float_binary`.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tinyaot.frontend.tflite.tflm_checks as tflm
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.policy import refuse_float16
from tinyaot.frontend.tflite.reader import OpInfo


def operand(imp: Importer, op: OpInfo, index: int, name: str) -> str:
    """An activation, or a constant operand kept in flash in the policy's type (a float model's gets per-tensor
    qparams from its values in quantize/lower.py)."""
    if index in imp.names:
        return imp.names[index]
    if imp.t(index).data is not None:
        dtype = imp.policy.operand_dtype(imp.t(index), op)
        return imp.constant(index, name, op, dtype, "constant operand")
    return imp.ir_input(index, op)


def _broadcast_shape(imp: Importer, op: OpInfo, a: str, b: str) -> None:
    """The output shape of a binary element-wise operator: its operands' NumPy broadcast, up to 4-D."""
    sa, sb = imp.g.tensor(a).shape, imp.g.tensor(b).shape
    if max(len(sa), len(sb)) > 4:
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) of shapes {list(sa)} and {list(sb)}: tinyaot "
                                 "broadcasts element-wise operators up to 4-D")
    try:
        want = np.broadcast_shapes(tuple(sa), tuple(sb))
    except ValueError:
        raise ModelError(f"operator {op.index} ({op.name}): shapes {list(sa)} and {list(sb)} do not "
                         "broadcast") from None
    imp.check_shape(op, want)


def _add_or_sub(imp: Importer, op: OpInfo, kind: str, ai: int, bi: int, clamp) -> None:
    """ADD and SUB: TFLM's int8 kernels share their arithmetic (SUB subtracts the second scaled input)."""
    a, b = operand(imp, op, ai, f"{kind}_{op.index}_a"), operand(imp, op, bi, f"{kind}_{op.index}_b")
    _broadcast_shape(imp, op, a, b)
    imp.prepare(tflm.same_activation_types, op, [ai, bi, op.outputs[0]])
    imp.node(op, kind, [a, b], {"clamp": clamp})
    imp.prepare(tflm.add_qparams, op, ai, bi)


def _mul(imp: Importer, op: OpInfo, kind: str, ai: int, bi: int, clamp) -> None:
    name = f"mul_{op.index}"
    a, b = operand(imp, op, ai, f"{name}_a"), operand(imp, op, bi, f"{name}_b")
    imp.prepare(tflm.same_activation_types, op, [ai, bi, op.outputs[0]])
    imp.node(op, "mul", [a, b], {"clamp": clamp})
    imp.prepare(tflm.rescale, op, [ai, bi], op.outputs[0])


# builtin -> (IR op, options table, how the node is built)
_BINARY: dict[str, tuple[str, str, Callable]] = {"ADD": ("add", "AddOptions", _add_or_sub),
                                                 "SUB": ("sub", "SubOptions", _add_or_sub),
                                                 "MUL": ("mul", "MulOptions", _mul)}


def _clamp(imp: Importer, op: OpInfo, options: str):
    o = imp.options(op, options) if op.options_type else None
    return imp.clamp(op, o.FusedActivationFunction()) if o is not None else None


def binary(builtin: str):
    """ADD / SUB / MUL of two tensors (activations or constants)."""
    kind, options, build = _BINARY[builtin]

    def convert(imp: Importer, op: OpInfo) -> None:
        ai, bi = imp.args(op, 2, 2)
        build(imp, op, kind, ai, bi, _clamp(imp, op, options))

    return convert


def float_binary(builtin: str):
    """A float model's ADD / SUB / MUL: with a one-number constant operand, one affine table; else `binary`'s."""
    kind, options, build = _BINARY[builtin]

    def convert(imp: Importer, op: OpInfo) -> None:
        ai, bi = imp.args(op, 2, 2)
        clamp = _clamp(imp, op, options)
        if not _scalar_affine(imp, op, ai, bi, kind, clamp):
            build(imp, op, kind, ai, bi, clamp)

    return convert


def _scalar_affine(imp: Importer, op: OpInfo, ai: int, bi: int, kind: str, clamp) -> bool:
    """Float ADD / SUB / MUL of an activation and a one-number constant: one table, x * scale_by + offset, not a
    second tensor. False when neither operand is such a constant."""
    for xi, ci in ((ai, bi), (bi, ai)):
        c = imp.t(ci)
        if xi in imp.names and ci not in imp.names and c.data is not None and int(np.prod(c.shape)) == 1:
            refuse_float16(c, op, "constant operand")
            data, _ = imp.read_constant(ci, op, "float32", "constant operand")
            value = float(data.reshape(-1)[0])
            x = imp.names[xi]
            imp.check_shape(op, imp.g.tensor(x).shape)
            scale_by, offset = {"add": (1.0, value), "mul": (value, 0.0),
                                "sub": (1.0, -value) if xi == ai else (-1.0, value)}[kind]
            imp.node(op, "lut", [x], {"function": "affine", "scale_by": scale_by, "offset": offset, "clamp": clamp})
            return True
    return False


def minmax(ir_op: str):
    """MINIMUM / MAXIMUM: TFLM compares the int8 bytes and reads no qparams, which means something only when both
    inputs share the output's scale and zero point (as TFLite's converter writes them)."""
    def convert(imp: Importer, op: OpInfo) -> None:
        ai, bi = imp.args(op, 2, 2)
        a, b = operand(imp, op, ai, f"{ir_op}_{op.index}_a"), operand(imp, op, bi, f"{ir_op}_{op.index}_b")
        _broadcast_shape(imp, op, a, b)
        for i in (ai, bi):
            imp.prepare(tflm.same_qparams, op, i)
        imp.node(op, ir_op, [a, b], {})

    return convert
