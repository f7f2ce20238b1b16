"""RESHAPE, TRANSPOSE, CONCATENATION, PAD / PADV2 / MIRROR_PAD and the RESIZE ops: operators that move values.

TFLM moves the stored integers and reads them at the output's qparams, so (but for CONCATENATION, which tinyaot
rescales per input) an int8 model's input and output must share their scale and zero point.
"""
from __future__ import annotations

import numpy as np

import tinyaot.frontend.tflite.tflm_checks as tflm
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.reader import OpInfo

MIRROR_PAD_MODES = {0: "reflect", 1: "symmetric"}  # tflite.MirrorPadMode -> IR pad mode


def reshape(imp: Importer, op: OpInfo) -> None:
    xi = op.inputs[0] if op.inputs else -1
    if xi < 0:
        raise ModelError(f"operator {op.index} (RESHAPE) has no input")
    x = imp.ir_input(xi, op)
    out_shape = imp.t(op.outputs[0]).shape
    if int(np.prod(out_shape)) != imp.g.tensor(x).size:
        raise ModelError(f"operator {op.index} (RESHAPE): {list(imp.g.tensor(x).shape)} cannot become "
                         f"{list(out_shape)}")
    imp.prepare(tflm.same_qparams, op, xi)
    imp.node(op, "reshape", [x], {})


def transpose(imp: Importer, op: OpInfo) -> None:
    xi, pi = imp.args(op, 2, 2)
    x = imp.ir_input(xi, op)
    perm = tuple(int(v) for v in imp.const_ints(op, pi, "permutation").reshape(-1))
    imp.prepare(tflm.same_qparams, op, xi)  # TFLM copies the values (int8 or int16) and reads them at the output's
    imp.node(op, "transpose", [x], {"perm": perm})


def concatenation(imp: Importer, op: OpInfo) -> None:
    if not op.inputs:
        raise ModelError(f"operator {op.index} (CONCATENATION) has no inputs")
    o = imp.options(op, "ConcatenationOptions")
    if o.FusedActivationFunction() != 0:
        raise UnsupportedOpError(f"operator {op.index} (CONCATENATION): a fused activation on a concatenation is "
                                 "not supported")
    xs = [imp.ir_input(i, op) for i in op.inputs]
    imp.prepare(tflm.same_activation_types, op, [*op.inputs, op.outputs[0]])
    imp.prepare(tflm.same_int16_scales, op)
    rank = len(imp.t(op.outputs[0]).shape)
    imp.node(op, "concat", xs, {"axis": int(o.Axis()) % rank})
    for i in op.inputs:
        imp.prepare(tflm.rescale, op, [i], op.outputs[0])


def _hw_padding(imp: Importer, op: OpInfo, pads: np.ndarray) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of NHWC paddings [[0, 0], [t, b], [l, r], [0, 0]]."""
    if pads.shape != (4, 2) or pads[0].any() or pads[3].any() or (pads < 0).any():
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): tinyaot pads the H and W axes of NHWC tensors "
                                 f"by >= 0; got paddings {pads.tolist()}")
    return int(pads[1, 0]), int(pads[1, 1]), int(pads[2, 0]), int(pads[2, 1])


def pad(imp: Importer, op: OpInfo) -> None:
    """PAD, and PADV2 whose constant is the zero point (int8, and 0 in int16: real 0, as PAD pads)."""
    xi, pi, ci = (imp.args(op, 2, 3 if op.name == "PADV2" else 2) + [-1])[:3]  # ci: PADV2's constant_values
    x = imp.ir_input(xi, op)
    padding = _hw_padding(imp, op, imp.const_ints(op, pi, "paddings"))
    imp.prepare(tflm.same_qparams, op, xi)
    if ci != -1:
        _pad_value_is_real_zero(imp, op, xi, ci)
    imp.node(op, "pad", [x], {"padding": padding})


def _pad_value_is_real_zero(imp: Importer, op: OpInfo, xi: int, ci: int) -> None:
    """PADV2's constant_values: a scalar of the input's type (and for int8 its qparams: TFLM's PadPrepare; TFLM
    reads an int16 one's raw value) that tinyaot's pad op holds, the one standing for real 0 (the pad op pads with
    real 0): the zero point, or 0.0 in a float model."""
    c, x = imp.t(ci), imp.t(xi)
    if ci in imp.names or c.data is None or int(np.prod(c.shape, dtype=np.int64)) != 1:
        raise UnsupportedOpError(f"operator {op.index} (PADV2): constant_values must be a constant scalar stored "
                                 "in the model")
    if c.dtype != x.dtype or (c.dtype == "int8" and (c.scale, c.zero_point) != (x.scale, x.zero_point)):
        raise UnsupportedOpError(f"operator {op.index} (PADV2): constant_values '{c.name}' must have the input's "
                                 f"type{' and qparams' if x.dtype == 'int8' else ''} ({x.type_name}; TFLite Micro's "
                                 "rule)")
    value = np.frombuffer(c.data.tobytes(), dtype=c.dtype).reshape(-1)
    want, real0 = imp.policy.real_zero(x)
    if value.size != 1 or value[0] != want:
        raise UnsupportedOpError(f"operator {op.index} (PADV2) pads with {value.tolist()}; tinyaot pads with real 0 "
                                 f"({real0}): other pad values are not supported")


def mirror_pad(imp: Importer, op: OpInfo) -> None:
    xi, pi = imp.args(op, 2, 2)
    imp.prepare(tflm.int16_mirror_pad, op, xi)
    x = imp.ir_input(xi, op)
    pads = imp.const_ints(op, pi, "paddings")
    o = imp.options(op, "MirrorPadOptions")
    if o.Mode() not in MIRROR_PAD_MODES:
        raise ModelError(f"operator {op.index} (MIRROR_PAD) has unknown mode {o.Mode()} (expected REFLECT or "
                         "SYMMETRIC)")
    padding = _hw_padding(imp, op, pads)
    imp.prepare(tflm.same_qparams, op, xi)
    imp.node(op, "pad", [x], {"padding": padding, "mode": MIRROR_PAD_MODES[o.Mode()]})


def resize(ir_op: str, options: str):
    """RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR: a constant output size, TFLite's flags, the input's qparams
    (TFLM's int8 kernels compute in the input's and ignore the output's)."""
    def convert(imp: Importer, op: OpInfo) -> None:
        xi, si = imp.args(op, 2, 2)
        x = imp.ir_input(xi, op)
        x_shape = imp.g.tensor(x).shape
        size = imp.const_ints(op, si, "size").reshape(-1)
        if len(x_shape) != 4 or size.shape != (2,) or (size < 1).any():
            raise UnsupportedOpError(f"operator {op.index} ({op.name}) needs a 4-D NHWC input and a size of two "
                                     f"positive ints; got input {list(x_shape)}, size {size.tolist()}")
        imp.check_shape(op, (x_shape[0], int(size[0]), int(size[1]), x_shape[3]))
        o = imp.options(op, options) if op.options_type else None
        corners, half = (bool(o.AlignCorners()), bool(o.HalfPixelCenters())) if o is not None else (False, False)
        if ir_op == "resize_bilinear" and corners and half:
            raise ModelError(f"operator {op.index} ({op.name}) sets both align_corners and half_pixel_centers; "
                             "TFLite allows one of them")
        imp.prepare(tflm.same_qparams, op, xi)
        imp.node(op, ir_op, [x], {"align_corners": corners, "half_pixel_centers": half})

    return convert
