"""TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM (int8) -> the IR's lstm, as TFLite Micro runs it.

TFLM's integer LSTM takes the standard LSTM only: the four gates' input and recurrent weights (int8, one scale
per tensor), int32 biases, int8 hidden state and int16 cell state as variable tensors, and no peephole,
projection, layer norm or coupled input gate (it rejects those at Prepare). The gates are stacked in the IR's
order i, f, g, o; the hidden state's qparams are the output's (TFLM copies the hidden state to the output row).
"""
from __future__ import annotations

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Node, QParams, Tensor
from tinyaot.ir.ops import OPS

# Operand slots (tensorflow/lite/micro/kernels/lstm_shared.h): per gate i, f, g (TFLite's "cell"), o.
INPUT_WEIGHTS = (1, 2, 3, 4)
RECURRENT_WEIGHTS = (5, 6, 7, 8)
BIASES = (12, 13, 14, 15)
HIDDEN_STATE, CELL_STATE = 18, 19
VARIANTS = {"peephole": (9, 10, 11), "projection": (16, 17), "layer norm": (20, 21, 22, 23)}
TANH = 4  # ActivationFunctionType.TANH


def unidirectional_sequence_lstm(imp, op) -> None:
    where = f"operator {op.index} (UNIDIRECTIONAL_SEQUENCE_LSTM)"
    if imp.float_mode:
        raise UnsupportedOpError(f"{where}: tinyaot imports this op from int8 models (TFLite Micro's integer "
                                 "LSTM); convert the model with full-integer quantization")
    ins = imp.args(op, 24, 24)
    for variant, slots in VARIANTS.items():
        if any(ins[k] != -1 for k in slots):
            raise UnsupportedOpError(f"{where}: an LSTM with {variant} is not supported (TFLite Micro's integer "
                                     "LSTM takes the standard LSTM only)")
    if ins[1] == -1 or ins[5] == -1:
        raise UnsupportedOpError(f"{where}: a coupled input gate (CIFG, no input-gate weights) is not supported")
    opts = imp.options(op, "UnidirectionalSequenceLSTMOptions")
    if opts.FusedActivationFunction() != TANH:
        raise UnsupportedOpError(f"{where}: cell activation {opts.FusedActivationFunction()}; TFLite Micro's "
                                 "integer LSTM supports TANH")
    x_info, y_info = imp.t(ins[0]), imp.t(op.outputs[0])
    time_major = bool(opts.TimeMajor())
    if len(x_info.shape) != 3 or x_info.shape[1 if time_major else 0] != 1:
        raise UnsupportedOpError(f"{where}: input shape {list(x_info.shape)}; tinyaot runs one sequence (batch 1)")
    steps, features = x_info.shape[0 if time_major else 1], x_info.shape[2]
    w_ih, w_qp = _stacked(imp, op, [ins[k] for k in INPUT_WEIGHTS], "input weights")
    w_hh, r_qp = _stacked(imp, op, [ins[k] for k in RECURRENT_WEIGHTS], "recurrent weights")
    hidden = w_ih.shape[0] // 4
    if w_ih.shape[1] != features or w_hh.shape[1] != hidden:
        raise ModelError(f"{where}: weights {list(w_ih.shape)} / {list(w_hh.shape)} do not fit input "
                         f"{list(x_info.shape)}")
    bias = np.concatenate([imp._read_constant(ins[k], op, "int32", "bias")[0].reshape(-1) for k in BIASES])
    h_info, c_info = imp.t(ins[HIDDEN_STATE]), imp.t(ins[CELL_STATE])
    if not (h_info.quantized and y_info.quantized) or (h_info.scale[0], h_info.zero_point[0]) != (
            y_info.scale[0], y_info.zero_point[0]):
        raise UnsupportedOpError(f"{where}: the hidden state's qparams differ from the output's; TFLite Micro "
                                 "copies the hidden state into the output, so tinyaot needs them equal")
    if c_info.dtype != "int16" or not c_info.quantized:
        raise UnsupportedOpError(f"{where}: the cell state is {c_info.type_name}; TFLite Micro's integer LSTM "
                                 "needs an int16 cell state with a scale")
    name = f"lstm_{op.index}"
    x = imp.ir_input(ins[0], op)
    if time_major:
        x = _view(imp, x, (1, steps, features), f"{name}_in_view", op)
    g = imp.g
    g.add_tensor(Tensor(f"{name}_w_ih", w_ih.shape, "int8", data=w_ih, qparams=w_qp))
    g.add_tensor(Tensor(f"{name}_w_hh", w_hh.shape, "int8", data=w_hh, qparams=r_qp))
    g.add_tensor(Tensor(f"{name}_bias", bias.shape, "int32", data=bias.astype(np.int32)))
    y = imp.activation(op.outputs[0], f"{name}_out", op)
    seq = y
    if time_major:
        seq = f"{name}_seq"
        g.add_tensor(Tensor(seq, (1, steps, hidden), "int8", qparams=g.tensor(y).qparams))
    state = g.add_tensor(Tensor(f"{name}_state", (OPS["lstm"].work_rows, hidden), "int16",
                                qparams=QParams.per_tensor(c_info.scale[0], 0))).name
    cell_clip = float(opts.CellClip())
    attrs = {"hidden": hidden, "cell_clip": cell_clip if cell_clip > 0 else None}
    g.nodes.append(Node("lstm", name, [x, f"{name}_w_ih", f"{name}_w_hh", f"{name}_bias"], [seq, state], attrs,
                        source=f"{imp.source}:{op.index}"))
    if time_major:
        g.nodes.append(Node("reshape", f"{name}_out_view", [seq], [y], {}, source=f"{imp.source}:{op.index}"))


def _stacked(imp, op, indices: list[int], what: str) -> tuple[np.ndarray, QParams]:
    """The four gates' weights stacked [4H, ...], each row keeping its gate's one scale."""
    blocks, scales = [], []
    for k in indices:
        data, qp = imp._read_constant(k, op, "int8", what)
        if qp is None or not qp.is_per_tensor or qp.zero_point[0] != 0:
            raise UnsupportedOpError(f"operator {op.index} (UNIDIRECTIONAL_SEQUENCE_LSTM): the {what} need one "
                                     "scale per tensor and zero point 0 (TFLite Micro's integer LSTM)")
        blocks.append(data.reshape(data.shape[0], -1))
        scales += [qp.scale[0]] * data.shape[0]
    w = np.concatenate(blocks)
    return w, QParams(tuple(scales), (0,) * len(scales), axis=0)


def _view(imp, src: str, shape, name: str, op) -> str:
    t = imp.g.tensor(src)
    imp.g.add_tensor(Tensor(name, tuple(shape), t.dtype, qparams=t.qparams))
    imp.g.nodes.append(Node("reshape", name, [src], [name], {}, source=f"{imp.source}:{op.index}"))
    return name
