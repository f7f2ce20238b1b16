"""TFLite's SVDF -> the IR's svdf, as TFLite Micro runs it.

TFLM's integer SVDF (PrepareSvdf, EvalIntegerSvdfReference): an int8 2-D input [batches, inputs], int8
weights_feature [filters, inputs], weights_time [filters, memory] and the activation state [batches, filters *
memory] both int16 or both int8, an int32 bias [filters / rank], an int8 output [batches, filters / rank]; the state
is a variable tensor that keeps its values from one Invoke to the next (tinyaot: the node's slot of the state
region, reset by <name>_reset() as TFLM's Reset resets it). What TFLM's Prepare refuses is refused here with its
rule; the fused activation is kept for the float reference only, since TFLM's integer kernel does not apply it.

A float model's SVDF (TFLM's EvalFloatSvdfReference: float32 throughout, a float32 variable state, the fused
activation applied) becomes a float svdf node with float32 weights (dynamic-range int8 ones dequantized), which
tinyaot's calibration and PTQ quantize as TFLite's converter does (quantize/svdf.py): its second output, the
feature activations, is what the state keeps, and their calibrated range gives the int16 state its scale. A
stateful model's calibration samples are consecutive frames of one stream (quantize/float_eval.py, `stream`).
"""
from __future__ import annotations

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.importer import CLAMPS, Importer
from tinyaot.frontend.tflite.policy import dequantized_weights
from tinyaot.frontend.tflite.reader import OpInfo, TensorInfo
from tinyaot.frontend.tflite.tflm_checks import check_multipliers, scale_names
from tinyaot.ir import Node, QParams, Tensor

STATE_TYPES = ("int16", "int8")  # the weights_time's and the state's: TFLM reads the state as weights_time's type
BIAS_SCALE_TOLERANCE = 1e-5  # TFLM: |bias scale - state scale * weights_time scale| < 1e-5 (absolute)


def float_svdf(imp: Importer, op: OpInfo) -> None:
    """A float model's SVDF: float32 weights, state and output (TFLM's float kernel), for tinyaot's PTQ."""
    where = f"operator {op.index} (SVDF)"
    xi, fi, ti, bi, si = _operands(imp, op, where)
    s_info = imp.t(si)
    if s_info.dtype != "float32":
        raise UnsupportedOpError(f"{where}: the activation state of this float SVDF is {s_info.type_name}; TFLite "
                                 "Micro's float SVDF keeps a float32 one")
    opts = imp.options(op, "SVDFOptions")
    rank = int(opts.Rank())
    clamp = imp.clamp(op, int(opts.FusedActivationFunction()))  # TFLM's float kernel applies it
    name = f"svdf_{op.index}"
    for index, what in ((fi, "weights_feature"), (ti, "weights_time")):
        w = dequantized_weights(imp, index, op, what)
        imp.g.add_tensor(Tensor(f"{name}_{what}", w.shape, "float32", data=w))
    batches, inputs = imp.t(xi).shape
    filters, memory = _geometry(imp, op, f"{name}_weights_feature", f"{name}_weights_time", rank, inputs)
    _check_shapes(imp, op, s_info, batches, filters, memory, rank)
    b = imp.bias(op, bi, f"{name}_bias", filters // rank)
    x = imp.ir_input(xi, op)
    y = imp.activation(op.outputs[0], f"{name}_out", op)
    features = imp.g.add_tensor(Tensor(f"{name}_features", (batches, filters), "float32")).name
    imp.g.nodes.append(Node("svdf", name, [x, f"{name}_weights_feature", f"{name}_weights_time", b], [y, features],
                            {"rank": rank, "float_clamp": clamp}, source=f"{imp.source}:{op.index}"))


def _operands(imp: Importer, op: OpInfo, where: str) -> list[int]:
    """The five operands, a 2-D input, and the state a variable tensor only this operator reads and writes (TFLM's
    rules for the float and integer kernels alike)."""
    if len(op.inputs) != 5:
        raise ModelError(f"{where} has {len(op.inputs)} inputs; TFLite Micro's SVDF takes 5 (input, "
                         "weights_feature, weights_time, bias, activation state)")
    xi, fi, ti, bi, si = op.inputs
    x_info, s_info = imp.t(xi), imp.t(si)
    if len(x_info.shape) != 2:
        raise UnsupportedOpError(f"{where}: input shape {list(x_info.shape)}; TFLite Micro's SVDF takes a 2-D input "
                                 "[batches, inputs]")
    if not s_info.variable or s_info.data is not None or si in imp.names:
        raise UnsupportedOpError(f"{where}: the activation state '{s_info.name}' must be a variable tensor that only "
                                 "this operator reads and writes (TFLite Micro's rule: is_variable)")
    return [xi, fi, ti, bi, si]


def _check_shapes(imp: Importer, op: OpInfo, s_info: TensorInfo, batches: int, filters: int, memory: int,
                  rank: int) -> None:
    where = f"operator {op.index} (SVDF)"
    if s_info.shape != (batches, filters * memory):
        raise ModelError(f"{where}: the activation state has shape {list(s_info.shape)}; TFLite Micro's SVDF needs "
                         f"[batches, memory * filters] = {[batches, filters * memory]}")
    units = filters // rank
    if imp.t(op.outputs[0]).shape != (batches, units):
        raise ModelError(f"{where}: output shape {list(imp.t(op.outputs[0]).shape)}; TFLite Micro's SVDF writes "
                         f"[batches, filters / rank] = {[batches, units]}")


def svdf(imp: Importer, op: OpInfo) -> None:
    where = f"operator {op.index} (SVDF)"
    xi, fi, ti, bi, si = _operands(imp, op, where)
    x_info, f_info, t_info, s_info, y_info = (imp.t(i) for i in (xi, fi, ti, si, op.outputs[0]))
    if x_info.dtype != "int8" or y_info.dtype != "int8":
        raise UnsupportedOpError(f"{where}: input {x_info.type_name}, output {y_info.type_name}; TFLite Micro's "
                                 "integer SVDF takes an int8 input and writes int8")
    if t_info.dtype not in STATE_TYPES or s_info.dtype != t_info.dtype:
        raise UnsupportedOpError(f"{where}: weights_time is {t_info.type_name} and the activation state "
                                 f"{s_info.type_name}; TFLite Micro's integer SVDF takes both int16 or both int8 (it "
                                 "reads the state as the weights_time's type)")
    if not (s_info.quantized and f_info.quantized and t_info.quantized):
        raise ModelError(f"{where}: the weights and the activation state need scales (an int8 SVDF)")
    opts = imp.options(op, "SVDFOptions")
    rank = int(opts.Rank())
    batches, inputs = x_info.shape
    name = f"svdf_{op.index}"
    wf = imp.constant(fi, f"{name}_weights_feature", op, "int8", "weights_feature")
    wt = imp.constant(ti, f"{name}_weights_time", op, t_info.dtype, "weights_time")
    filters, memory = _geometry(imp, op, wf, wt, rank, inputs)
    _check_shapes(imp, op, s_info, batches, filters, memory, rank)
    b = imp.bias(op, bi, f"{name}_bias", filters // rank)
    state_scale = float(s_info.scale[0])
    if bi != -1 and imp.t(bi).quantized:
        want = float(np.float32(state_scale) * np.float32(t_info.scale[0]))
        if not abs(float(imp.t(bi).scale[0]) - want) < BIAS_SCALE_TOLERANCE:
            raise ModelError(f"{where}: the bias scale {imp.t(bi).scale[0]:.6g} differs from state scale * "
                             f"weights_time scale = {want:.6g} by 1e-5 or more, which TFLite Micro refuses")
    for indices, formula in (([xi, fi, si], "input_scale * weights_feature_scale / state_scale"),
                             ([si, ti, op.outputs[0]], "state_scale * weights_time_scale / output_scale")):
        a, w, out = (float(imp.t(i).scale[0]) for i in indices)
        scales = f"{scale_names(imp, indices[:2])} / {scale_names(imp, indices[2:])}"
        check_multipliers(imp, op, [a * w / out], formula, scales)
    x = imp.ir_input(xi, op)
    y = imp.activation(op.outputs[0], f"{name}_out", op)
    clamp = CLAMPS.get(int(opts.FusedActivationFunction()))
    attrs = {"rank": rank, "state_qparams": QParams.per_tensor(state_scale, int(s_info.zero_point[0])),
             "float_clamp": clamp}
    imp.g.nodes.append(Node("svdf", name, [x, wf, wt, b], [y], attrs, source=f"{imp.source}:{op.index}"))


def _geometry(imp: Importer, op: OpInfo, wf: str, wt: str, rank: int, inputs: int) -> tuple[int, int]:
    """(filters, memory) after TFLM's shape rules."""
    where = f"operator {op.index} (SVDF)"
    f_shape, t_shape = imp.g.tensor(wf).shape, imp.g.tensor(wt).shape
    if rank < 1:
        raise ModelError(f"{where} has rank {rank}; an SVDF's rank is at least 1")
    if len(f_shape) != 2 or f_shape[1] != inputs or len(t_shape) != 2 or t_shape[0] != f_shape[0]:
        raise ModelError(f"{where}: weights_feature {list(f_shape)} and weights_time {list(t_shape)} must be "
                         f"[filters, {inputs}] and [filters, memory] (TFLite Micro's rule)")
    if f_shape[0] % rank:
        raise ModelError(f"{where}: {f_shape[0]} filters are not a multiple of the rank {rank} (TFLite Micro's rule: "
                         "num_filters = rank * num_units)")
    return int(f_shape[0]), int(t_shape[1])
