"""TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM -> the IR's lstm, as TFLite Micro runs it.

TFLM runs the standard LSTM only (kernels/lstm_eval.cc, LstmTensors::ValidateTensorStatus, and
lstm_eval_common.cc, ValidateTensorSize): all eight gate weight tensors of one type, the four biases, the hidden
and cell state as variable tensors, and no peephole, projection or layer norm tensors; a coupled input gate (CIFG,
no input-gate weights) fails the same check. Its cell gate and hidden state use tanh (the only activation the
schema can name that its kernel implements). tinyaot refuses what TFLM refuses, naming that rule.

int8 models: the weights int8 with one scale per tensor, int32 biases, an int16 cell state (TFLM's integer LSTM:
every gate in Q3.12, whatever the converter's `intermediates` say; TFLM reads none of them). The gates are stacked
in the IR's order i, f, g, o; the hidden state's qparams are the output's (TFLM copies the hidden state to the
output row). 16x8 models (int16 input, hidden state and output): the same with int64 biases, which TFLM's 16x8
LSTM reads whatever type the file gives them (so an int32 bias, read as int64, is refused). Float models: the same
node with float32 weights (dynamic-range int8 weights dequantized), which tinyaot's calibration quantizes as it
does PyTorch's nn.LSTM (quantize/recurrent.py). Where the two differ is IntegerLstm's and FloatLstm's, one converter
per policy's table (converters.py).

State: TFLM keeps the hidden and cell state in the operator's variable tensors from one Invoke to the next, until
the interpreter's Reset (which AllocateTensors also calls): ResetVariableTensors writes an int8 tensor's zero point
(real 0) and zeros into any other, whatever bytes the file's buffer holds. So the lstm node is `stateful`: its
kernel starts from its slot of the state region and leaves its final state there (the slot holds c and h less its
zero point, int16, so a reset's zero bytes are TFLM's reset state), and `<name>_reset()` is TFLM's Reset. A float
model's LSTM is stateful too: TFLM runs it so, and its quantized model then behaves as the converter's int8 one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.policy import dequantized_weights, refuse_float16
from tinyaot.frontend.tflite.reader import OpInfo, TensorInfo
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.ir.ops import OPS

# Operand slots (tensorflow/lite/micro/kernels/lstm_shared.h): per gate i, f, g (TFLite's "cell"), o.
INPUT_WEIGHTS = (1, 2, 3, 4)
RECURRENT_WEIGHTS = (5, 6, 7, 8)
BIASES = (12, 13, 14, 15)
HIDDEN_STATE, CELL_STATE = 18, 19
VARIANTS = {"peephole (cell-to-gate weights)": (9, 10, 11), "projection": (16, 17),
            "layer norm": (20, 21, 22, 23)}
TANH = 4  # ActivationFunctionType.TANH
_ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
RULE = "LstmTensors::ValidateTensorStatus"  # TFLM's Prepare check of the operands
STANDARD = "build it from a standard LSTM layer (a Keras LSTM converts to one)"


@dataclass(frozen=True)
class _Layer:
    """What the operator's operands say, read and checked: the gates stacked i, f, g, o."""

    steps: int
    features: int
    hidden: int
    time_major: bool
    w_ih: np.ndarray  # [4H, F]
    w_hh: np.ndarray  # [4H, H]
    bias: np.ndarray  # [4H]
    w_qp: QParams | None  # int8: one scale per gate, repeated per row
    r_qp: QParams | None
    cell_scale: float | None  # int8: the int16 cell state's scale
    cell_clip: float


@dataclass(frozen=True)
class IntegerLstm:
    """TFLM's integer LSTM (int8, and 16x8): int8 weights with one scale per gate, integer biases, an int16 cell
    state with the file's scale."""

    def check_options(self, opts, where: str) -> None:
        """A time-major integer LSTM runs as the batch-major one between two reshapes."""

    def block(self, imp: Importer, op: OpInfo, k: int, what: str) -> tuple[np.ndarray, QParams | None]:
        data, qp = imp.read_constant(k, op, "int8", what)
        if qp is None or not qp.is_per_tensor or qp.zero_point[0] != 0:
            raise UnsupportedOpError(f"operator {op.index} (UNIDIRECTIONAL_SEQUENCE_LSTM): the {what} need one "
                                     "scale per tensor and zero point 0 (TFLite Micro's integer LSTM)")
        return data, qp

    def bias_type(self, imp: Importer, op: OpInfo, ins: list[int], where: str) -> str:
        """int32 for the int8 LSTM; int64 for the 16x8 one, whose biases TFLM reads as int64 whatever the file says
        (EvalLstm<int16_t, int8_t, int16_t, int64_t>, no Prepare check): an int32 bias would be read as other
        numbers, half of them past its data."""
        if imp.t(ins[0]).dtype != "int16":
            return "int32"
        got = imp.t(ins[BIASES[0]]).type_name
        if got != "int64":
            raise UnsupportedOpError(f"{where}: the gate biases of this 16x8 LSTM are {got}; TFLite Micro's 16x8 LSTM "
                                     "reads them as int64 whatever their type (EvalLstm<int16_t, int8_t, int16_t, "
                                     "int64_t>), so these would be read as other numbers: re-convert the model with "
                                     "int64 biases, as TFLite's 16x8 quantization writes them")
        return "int64"

    def check_states(self, imp: Importer, ins: list[int], y_info: TensorInfo, where: str) -> float:
        """The cell state's scale (int16); the hidden state's qparams equal to the output's."""
        h_info, c_info = imp.t(ins[HIDDEN_STATE]), imp.t(ins[CELL_STATE])
        if not (h_info.quantized and y_info.quantized) or (h_info.scale[0], h_info.zero_point[0]) != (
                y_info.scale[0], y_info.zero_point[0]):
            raise UnsupportedOpError(f"{where}: the hidden state's qparams differ from the output's; TFLite Micro "
                                     "copies the hidden state into the output, so tinyaot needs them equal")
        if c_info.dtype != "int16" or not c_info.quantized:
            raise UnsupportedOpError(f"{where}: the cell state is {c_info.type_name}; TFLite Micro's integer LSTM "
                                     "needs an int16 cell state with a scale")
        if y_info.dtype != h_info.dtype:
            raise ModelError(f"{where}: the output is {y_info.type_name} but the input is {h_info.type_name}; TFLite "
                             f"Micro needs one type ({RULE})")
        return c_info.scale[0]

    def state(self, g: Graph, name: str, layer: _Layer) -> str:
        """The kernel's int16 cell state rows, at the file's cell scale."""
        return g.add_tensor(Tensor(f"{name}_state", (OPS["lstm"].work_rows, layer.hidden), "int16",
                                   qparams=QParams.per_tensor(layer.cell_scale, 0))).name


@dataclass(frozen=True)
class FloatLstm:
    """A float model's LSTM: float32 weights (dynamic-range int8 ones dequantized), which tinyaot's calibration
    quantizes as it does PyTorch's nn.LSTM."""

    def check_options(self, opts, where: str) -> None:
        if opts.TimeMajor():
            raise UnsupportedOpError(f"{where}: a time-major float LSTM ([T, 1, F]) is not supported: tinyaot's "
                                     "calibration runs the float graph with the batch on dimension 0; convert the "
                                     "model with time_major=False (the Keras LSTM's default), or convert it to int8")

    def block(self, imp: Importer, op: OpInfo, k: int, what: str) -> tuple[np.ndarray, None]:
        return dequantized_weights(imp, k, op, what), None

    def bias_type(self, imp: Importer, op: OpInfo, ins: list[int], where: str) -> str:
        refuse_float16(imp.t(ins[BIASES[0]]), op, "bias")  # the four biases share one type (_check_operands)
        return "float32"

    def check_states(self, imp: Importer, ins: list[int], y_info: TensorInfo, where: str) -> None:
        """TFLM's float kernel keeps a float32 cell state."""
        c_info = imp.t(ins[CELL_STATE])
        if c_info.dtype != "float32":
            raise UnsupportedOpError(f"{where}: the cell state of this float LSTM is {c_info.type_name}; TFLite "
                                     "Micro's float LSTM keeps a float32 one")

    def state(self, g: Graph, name: str, layer: _Layer) -> str:
        """The cell state at every step: its calibrated range gives the int16 state its scale."""
        return g.add_tensor(Tensor(f"{name}_state", (1, layer.steps, layer.hidden), "float32")).name


def unidirectional_sequence_lstm(rules: IntegerLstm | FloatLstm):
    """The converter of UNIDIRECTIONAL_SEQUENCE_LSTM under one kind of model's rules."""
    def convert(imp: Importer, op: OpInfo) -> None:
        where = f"operator {op.index} (UNIDIRECTIONAL_SEQUENCE_LSTM)"
        ins = imp.args(op, 24, 24)
        _check_operands(imp, ins, where)
        opts = imp.options(op, "UnidirectionalSequenceLSTMOptions")
        _check_options(rules, ins, opts, where)
        _emit(imp, op, ins, rules, _read_layer(imp, op, ins, rules, opts, where))

    return convert


def _check_options(rules: IntegerLstm | FloatLstm, ins: list[int], opts, where: str) -> None:
    act = opts.FusedActivationFunction()
    if act != TANH:
        raise UnsupportedOpError(f"{where}: cell activation {_ACTIVATIONS.get(act, act)}; TFLite Micro's LSTM "
                                 "implements TANH only (the schema cannot name its other one, sigmoid; for any "
                                 "other its gate kernel has no case, and a release build leaves the cell gate "
                                 "unactivated): convert a model whose LSTM keeps the default tanh")
    rules.check_options(opts, where)


def _read_layer(imp: Importer, op: OpInfo, ins: list[int], rules: IntegerLstm | FloatLstm, opts,
                where: str) -> _Layer:
    x_shape, time_major = imp.t(ins[0]).shape, bool(opts.TimeMajor())
    if len(x_shape) != 3 or x_shape[1 if time_major else 0] != 1:
        raise UnsupportedOpError(f"{where}: input shape {list(x_shape)}; tinyaot runs one sequence (batch 1)")
    w_ih, w_qp = _stacked(op, [rules.block(imp, op, ins[k], "input weights") for k in INPUT_WEIGHTS])
    w_hh, r_qp = _stacked(op, [rules.block(imp, op, ins[k], "recurrent weights") for k in RECURRENT_WEIGHTS])
    hidden = w_ih.shape[0] // 4
    _check_sizes(imp, op, ins, w_ih, w_hh, where)
    bias_type = rules.bias_type(imp, op, ins, where)
    bias = np.concatenate([_bias(imp, op, ins[k], bias_type, hidden, where) for k in BIASES])
    cell_scale = rules.check_states(imp, ins, imp.t(op.outputs[0]), where)
    return _Layer(x_shape[0 if time_major else 1], x_shape[2], hidden, time_major, w_ih, w_hh, bias, w_qp, r_qp,
                  cell_scale, float(opts.CellClip()))


def _emit(imp: Importer, op: OpInfo, ins: list[int], rules: IntegerLstm | FloatLstm, layer: _Layer) -> None:
    """The lstm node over a [1, T, F] view of the input (time-major: a reshape either side)."""
    g, name, source = imp.g, f"lstm_{op.index}", f"{imp.source}:{op.index}"
    x = imp.ir_input(ins[0], op)
    if layer.time_major:
        x = _view(imp, x, (1, layer.steps, layer.features), f"{name}_in_view", op)
    w_type = str(layer.w_ih.dtype)  # int8, or float32 in a float model
    g.add_tensor(Tensor(f"{name}_w_ih", layer.w_ih.shape, w_type, data=layer.w_ih, qparams=layer.w_qp))
    g.add_tensor(Tensor(f"{name}_w_hh", layer.w_hh.shape, w_type, data=layer.w_hh, qparams=layer.r_qp))
    g.add_tensor(Tensor(f"{name}_bias", layer.bias.shape, str(layer.bias.dtype), data=layer.bias,
                        qparams=_bias_qparams(imp, ins, layer.w_qp)))
    y = imp.activation(op.outputs[0], f"{name}_out", op)
    seq = y
    if layer.time_major:
        seq = f"{name}_seq"
        g.add_tensor(Tensor(seq, (1, layer.steps, layer.hidden), g.tensor(y).dtype, qparams=g.tensor(y).qparams))
    state = rules.state(g, name, layer)
    attrs = {"hidden": layer.hidden, "cell_clip": layer.cell_clip if layer.cell_clip > 0 else None,
             "stateful": True}  # TFLM's variable tensors: the state carries over from one invoke to the next
    g.nodes.append(Node("lstm", name, [x, f"{name}_w_ih", f"{name}_w_hh", f"{name}_bias"], [seq, state], attrs,
                        source=source))
    if layer.time_major:
        g.nodes.append(Node("reshape", f"{name}_out_view", [seq], [y], {}, source=source))


def _check_operands(imp: Importer, ins: list[int], where: str) -> None:
    """TFLM's ValidateTensorStatus: the operands a standard LSTM has, and none of a variant's."""
    for variant, slots in VARIANTS.items():
        if any(ins[k] != -1 for k in slots):
            raise UnsupportedOpError(f"{where}: an LSTM with {variant} is not supported: TFLite Micro runs the "
                                     f"standard LSTM only and refuses this one too ({RULE}); {STANDARD}")
    if ins[1] == -1 or ins[5] == -1:
        raise UnsupportedOpError(f"{where}: a coupled input gate (CIFG: no input-gate weights) is not supported: "
                                 f"TFLite Micro needs all eight gate weight tensors and refuses this one too "
                                 f"({RULE}); {STANDARD}")
    missing = [k for k in (0, *INPUT_WEIGHTS, *RECURRENT_WEIGHTS, *BIASES, HIDDEN_STATE, CELL_STATE) if ins[k] == -1]
    if missing:
        raise ModelError(f"{where}: operands {missing} are absent; TFLite Micro needs them ({RULE}): "
                         "re-convert the model")
    for k, what in ((HIDDEN_STATE, "hidden state"), (CELL_STATE, "cell state")):
        ti = imp.t(ins[k])
        if not ti.variable:
            raise ModelError(f"{where}: the {what} '{ti.name}' is not a variable tensor; TFLite Micro keeps the "
                             f"LSTM's state in variable tensors and refuses any other ({RULE}): re-convert the "
                             "model")
    x_type = imp.t(ins[0]).type_code
    if imp.t(ins[HIDDEN_STATE]).type_code != x_type:
        raise ModelError(f"{where}: the hidden state is {imp.t(ins[HIDDEN_STATE]).type_name} but the input is "
                         f"{imp.t(ins[0]).type_name}; TFLite Micro needs one type ({RULE})")
    for group, what in ((INPUT_WEIGHTS + RECURRENT_WEIGHTS, "gate weights"), (BIASES, "biases")):
        types = {imp.t(ins[k]).type_name for k in group}
        if len(types) > 1:
            raise ModelError(f"{where}: the {what} mix types {sorted(types)}; TFLite Micro needs one ({RULE})")


def _check_sizes(imp: Importer, op: OpInfo, ins: list[int], w_ih: np.ndarray, w_hh: np.ndarray, where: str) -> None:
    """TFLM's ValidateTensorSize: [H, F] and [H, H] weights, H elements of each state, output [.., .., H]."""
    hidden, x_shape = w_ih.shape[0] // 4, imp.t(ins[0]).shape
    y_shape = imp.t(op.outputs[0]).shape
    states = [int(np.prod(imp.t(ins[k]).shape)) for k in (HIDDEN_STATE, CELL_STATE)]
    if (w_ih.shape[1] != x_shape[2] or w_hh.shape[1] != hidden or states != [hidden, hidden]
            or len(y_shape) != 3 or tuple(y_shape) != (*x_shape[:2], hidden)):
        raise ModelError(f"{where}: weights {list(w_ih.shape)} / {list(w_hh.shape)} (four gates stacked), states "
                         f"of {states} values and output {list(y_shape)} do not fit input {list(x_shape)} "
                         "(TFLite Micro's ValidateTensorSize)")


def _bias_qparams(imp: Importer, ins: list[int], w_qp: QParams | None) -> QParams | None:
    """input scale x the gate's weight scale per row: what TFLM's gate FC reads an int32 bias at, whatever scale the
    file gives it (the dequantized float model, cm.layer_errors, reads these)."""
    if w_qp is None:
        return None
    x_scale = imp.t(ins[0]).scale[0]
    scales = tuple(float(x_scale) * float(s) for s in w_qp.scale)
    return QParams(scales, (0,) * len(scales), axis=0)


def _stacked(op: OpInfo, blocks: list[tuple[np.ndarray, QParams | None]]) -> tuple[np.ndarray, QParams | None]:
    """The four gates' weights stacked [4H, ...]; int8 rows keep their gate's one scale."""
    for data, _ in blocks:
        if data.ndim != 2 or data.shape[0] != blocks[0][0].shape[0]:
            raise ModelError(f"operator {op.index} (UNIDIRECTIONAL_SEQUENCE_LSTM): gate weights of shapes "
                             f"{[list(d.shape) for d, _ in blocks]}; each must be 2-D [H, ...] with the same H")
    w = np.concatenate([d for d, _ in blocks])
    if blocks[0][1] is None:
        return w, None
    scales = [qp.scale[0] for d, qp in blocks for _ in range(d.shape[0])]
    return w, QParams(tuple(scales), (0,) * len(scales), axis=0)


def _bias(imp: Importer, op: OpInfo, k: int, dtype: str, hidden: int, where: str) -> np.ndarray:
    data = imp.read_constant(k, op, dtype, "bias")[0]
    if data.shape != (hidden,):
        raise ModelError(f"{where}: a gate bias of shape {list(imp.t(k).shape)}, expected [{hidden}] "
                         "(TFLite Micro's ValidateTensorSize)")
    return data


def _view(imp: Importer, src: str, shape, name: str, op: OpInfo) -> str:
    t = imp.g.tensor(src)
    imp.g.add_tensor(Tensor(name, tuple(shape), t.dtype, qparams=t.qparams))
    imp.g.nodes.append(Node("reshape", name, [src], [name], {}, source=f"{imp.source}:{op.index}"))
    return name
