"""One pass over a parsed .tflite's operators, building the IR graph (NHWC) through a converter per operator.

The policy (policy.py) says what each tensor becomes (int8 with the file's qparams, or float32) and what is refused;
its converter table says what each operator becomes. The helpers here are what every converter uses: reading
constants, weights and biases, the fused activation as the IR `clamp`, the operator's options, and the output
tensor of the node it adds.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.policy import FloatPolicy, Int8Policy
from tinyaot.frontend.tflite.reader import MAX_TENSOR_BYTES, ModelInfo, OpInfo, TensorInfo, read_options
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.ir.ops import kernel_ref

# ActivationFunctionType -> IR clamp (real units).
CLAMPS = {0: None, 1: (0.0, math.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
ACTIVATION_NAMES = {4: "TANH", 5: "SIGN_BIT"}


# What a custom operator in a .tflite usually means, by custom_code (a prefix for the Flex family).
CUSTOM_OP_HINTS = {
    "ethos-u": "this .tflite was compiled by Vela for an Ethos-U NPU; give tinyaot the .tflite from before Vela "
               "(the operator holds the NPU's command stream, not the layers)",
    "Flex": "the converter kept a TensorFlow op (SELECT_TF_OPS), which neither TFLite Micro nor tinyaot runs; "
            "re-convert with TFLite builtin ops only",
    "TFLite_Detection_PostProcess": "SSD box decoding and non-max suppression, in float; compile the network up to "
                                    "the op (its box and class tensors as the outputs) and run it on the host",
}


# Why a builtin TFLite Micro runs is not imported, and what to do, for the ones models commonly hold.
_ARG = ("its output is an int32 index, and tinyaot's models write int8 / int16 values: compile the model up to the "
        "scores and take their argmax{} on the host (TFLM's picks the first of equal values, as numpy.arg{} does)")
_DILATED = ("the form older converters give a dilated convolution (SPACE_TO_BATCH_ND, CONV_2D, BATCH_TO_SPACE_ND); "
            "re-convert with a current TensorFlow, which writes one CONV_2D with its dilation")
BUILTIN_HINTS = {
    "ARG_MAX": _ARG.format("", "max"), "ARG_MIN": _ARG.format(" (argmin)", "min"),
    "SPACE_TO_BATCH_ND": _DILATED, "BATCH_TO_SPACE_ND": _DILATED,
    "REVERSE_V2": "a reversed axis, and tinyaot's slice walks forward: reverse the data before the model, or fold "
                  "the reversal into the next layer's weights",
}


def many_outputs(convert: Callable) -> Callable:
    """Marks a converter of an operator with several outputs (SPLIT, SPLIT_V, UNPACK): it names each itself."""
    convert.many_outputs = True
    return convert


def _hint(builtin: str) -> str:
    return f": {BUILTIN_HINTS[builtin]}." if builtin in BUILTIN_HINTS else ";"


def custom_op_hint(custom: str | None) -> str:
    """': why, and what to do.' for a custom operator (known ones by name), '' for a builtin one."""
    if not custom:
        return ""
    hint = CUSTOM_OP_HINTS.get(custom) or (CUSTOM_OP_HINTS["Flex"] if custom.startswith("Flex") else None)
    return f": {hint or 'a custom operator, and tinyaot compiles TFLite builtin operators'}."


class Importer:
    """One pass over the operators: the policy's tensor rules, its converter per operator."""

    def __init__(self, info: ModelInfo, source: str, policy: Int8Policy | FloatPolicy):
        self.info = info
        self.source = source
        self.policy = policy
        self.g = Graph(tensors={}, nodes=[], inputs=[], outputs=[], layout="NHWC")
        self.names: dict[int, str] = {}  # tflite tensor index -> IR tensor name
        self.skip: set[int] = set()  # boundary QUANTIZE / DEQUANTIZE operators
        self.output_indices: list[int] = []

    # -- tensors --
    def t(self, index: int) -> TensorInfo:
        return self.info.tensors[index]

    def activation(self, index: int, name: str, op: OpInfo | None) -> str:
        ti = self.t(index)
        where = f"operator {op.index} ({op.name})" if op else "the model input"
        self.policy.check_activation(self.info, ti, where, op)
        if int(np.prod(ti.shape, dtype=np.float64)) > MAX_TENSOR_BYTES:
            raise ModelError(f"{where}: tensor '{ti.name}' of shape {list(ti.shape)} is larger than "
                             f"{MAX_TENSOR_BYTES // 2**20} MiB; no microcontroller arena holds it")
        self.names[index] = name
        self.g.add_tensor(self.policy.activation_tensor(name, ti))
        return name

    def constant(self, index: int, name: str, op: OpInfo, dtype: str, what: str) -> str:
        data, qp = self.read_constant(index, op, dtype, what)
        self.g.add_tensor(Tensor(name, data.shape, dtype, data=data, qparams=self.policy.constant_qparams(qp)))
        return name

    def read_constant(self, index: int, op: OpInfo, dtype: str, what: str) -> tuple[np.ndarray, QParams | None]:
        """A constant's values as `dtype`, with its qparams (as the file gives them) if it has any."""
        ti = self.t(index)
        if ti.data is None:
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the {what} '{ti.name}' must be a constant "
                                     "stored in the model")
        if ti.dtype != dtype:
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the {what} is {ti.type_name}, tinyaot "
                                     f"needs {dtype} ({self.policy.constant_hint})")
        n = int(np.prod(ti.shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if ti.data.size != n:
            raise ModelError(f"malformed .tflite file: the {what} of operator {op.index} has {ti.data.size} bytes "
                             f"of data, its shape {list(ti.shape)} needs {n}")
        data = np.frombuffer(ti.data.tobytes(), dtype=dtype).reshape(ti.shape).copy()
        qp = None
        if ti.quantized:
            if any(not (s > 0 and math.isfinite(s)) for s in ti.scale):
                raise ModelError(f"operator {op.index} ({op.name}): the {what} has a non-positive scale")
            axis = ti.axis if len(ti.scale) > 1 else None
            if axis is not None and not (0 <= axis < len(ti.shape) and ti.shape[axis] == len(ti.scale)):
                raise ModelError(f"malformed .tflite file: the {what} of operator {op.index} has {len(ti.scale)} "
                                 f"scales along axis {ti.axis} of shape {list(ti.shape)}")
            qp = QParams(ti.scale, ti.zero_point, axis)
        return data, qp

    def weights(self, index: int, name: str, op: OpInfo) -> str:
        """A weight tensor as the policy reads it: int8 with its qparams, or float32 (dynamic-range "hybrid" int8
        weights in a float model dequantized to the float32 values they stand for)."""
        w, qp = self.policy.weight_values(self, index, op, "weights")
        self.g.add_tensor(Tensor(name, w.shape, str(w.dtype), data=w, qparams=qp))
        return name

    def ir_input(self, index: int, op: OpInfo) -> str:
        if index not in self.names:
            ti = self.t(index)
            raise ModelError(f"operator {op.index} ({op.name}) reads tensor {index} ('{ti.name}') before any "
                             "operator writes it (the operators are not in execution order, or the tensor is "
                             "a constant where an activation was expected)")
        return self.names[index]

    # -- boundaries --
    def boundaries(self) -> None:
        """Every model input and output (several are published in order); the policy says which tensor each is
        (an int8 model's float32 interface is folded away: the compiled model is int8)."""
        info = self.info
        if not info.inputs or not info.outputs:
            raise ModelError(f"the model has {len(info.inputs)} inputs and {len(info.outputs)} outputs; it needs at "
                             "least one of each")
        self.g.inputs = []
        for k, x in enumerate(info.inputs):
            x = self.policy.model_input(self, x)
            self._check_batch(self.t(x))
            name = "input" if k == 0 else f"input_{k}"
            self.activation(x, name, None)
            self.g.inputs.append(self.names[x])
            if k:  # the first input's layout is the graph's (NHWC); the others say their own
                self.g.io_layouts[name] = ("NHWC" if len(self.t(x).shape) == 4 else "plain", 0)
        self.output_indices = [self.policy.model_output(self, y) for y in info.outputs]

    def _check_batch(self, ti: TensorInfo) -> None:
        """Dimension 0 of the input is the batch, and a microcontroller runs one inference at a time."""
        if len(ti.shape) < 2 or ti.shape[0] != 1:
            got = "no batch dimension" if len(ti.shape) < 2 else f"batch size {ti.shape[0]}"
            raise ModelError(
                f"the model input '{ti.name}' has shape {list(ti.shape)} ({got}); tinyaot compiles models with "
                "batch size 1, one inference at a time as the microcontroller runs it (dimension 0 is the batch). "
                "Re-convert the model with input shape [1, ...] (e.g. a Keras Input(batch_size=1) or a "
                "tf.function with input_signature [tf.TensorSpec([1, ...])]) and pass batches to run() instead")

    def supported(self) -> list[str]:
        return sorted(self.policy.converters)

    def run(self) -> Graph:
        self.policy.check_model(self.info)
        self.boundaries()
        for op in self.info.ops:
            if op.index in self.skip:
                continue
            self.policy.refuse(self, op)
            convert = self.policy.converters.get(op.name)
            if convert is None:
                raise UnsupportedOpError(
                    f"operator {op.index} ({op.name}) is not supported{custom_op_hint(op.custom) or _hint(op.name)} "
                    f"tinyaot imports {', '.join(self.supported())}{self.policy.unsupported_tail}"
                )
            if len(op.outputs) != 1 and not (op.outputs and getattr(convert, "many_outputs", False)):
                raise ModelError(f"operator {op.index} ({op.name}) has {len(op.outputs)} outputs, expected 1")
            convert(self, op)
        for y in self.output_indices:
            if y not in self.names or self.names[y] in self.g.inputs:
                raise ModelError(f"no operator writes the model output tensor {y}")
        self.g.outputs = [self.names[y] for y in self.output_indices]
        if len(set(self.g.outputs)) != len(self.g.outputs):
            raise ModelError("the model lists the same output tensor twice")
        self._check_16x8()
        return self.g

    def _check_16x8(self) -> None:
        """int16 activations reach only ops with a 16x8 kernel: refused here, naming the operator, not at
        compile time."""
        for node in self.g.nodes:
            try:
                kernel_ref(node, self.g)
            except ModelError as exc:
                raise UnsupportedOpError(f"operator {node.source.rsplit(':', 1)[-1]} ({node.op}): {exc}") from None

    # -- helpers for converters --
    def node(self, op: OpInfo, ir_op: str, inputs: list[str], attrs: dict) -> Node:
        name = f"{ir_op}_{op.index}"
        out = self.activation(op.outputs[0], f"{name}_out", op)
        node = Node(ir_op, name, inputs, [out], attrs, source=f"{self.source}:{op.index}")
        self.g.nodes.append(node)
        return node

    def options(self, op: OpInfo, cls_name: str):
        return read_options(op, cls_name)

    def clamp(self, op: OpInfo, code: int):
        if code not in CLAMPS:
            raise UnsupportedOpError(f"operator {op.index} ({op.name}) has fused activation "
                                     f"{ACTIVATION_NAMES.get(code, code)}; supported: NONE, RELU, RELU6, "
                                     "RELU_N1_TO_1")
        return CLAMPS[code]

    def args(self, op: OpInfo, n_min: int, n_max: int) -> list[int]:
        if not n_min <= len(op.inputs) <= n_max:
            raise ModelError(f"operator {op.index} ({op.name}) has {len(op.inputs)} inputs, expected "
                             f"{n_min}" + (f" to {n_max}" if n_max != n_min else ""))
        return op.inputs + [-1] * (n_max - len(op.inputs))

    def bias(self, op: OpInfo, index: int, name: str, channels: int) -> str:
        dtype = self.policy.bias_dtype(self, op, index)
        if index == -1:
            self.g.add_tensor(Tensor(name, (channels,), dtype, data=np.zeros(channels, dtype)))
            return name
        name = self.constant(index, name, op, dtype, "bias")
        if self.g.tensor(name).shape != (channels,):
            raise ModelError(f"operator {op.index} ({op.name}): bias shape {list(self.g.tensor(name).shape)}, "
                             f"expected [{channels}]")
        return name

    def const_ints(self, op: OpInfo, index: int, what: str) -> np.ndarray:
        """An integer constant operand (axes, paddings, a size, a permutation) as int64."""
        ti = self.t(index) if index >= 0 else None
        if ti is None or ti.data is None or ti.dtype not in ("int32", "int64"):
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the {what} must be a constant int32 tensor "
                                     "stored in the model")
        data = np.frombuffer(ti.data.tobytes(), dtype=ti.dtype)
        if data.size != int(np.prod(ti.shape, dtype=np.int64)):
            raise ModelError(f"malformed .tflite file: the {what} of operator {op.index} has the wrong data size")
        return data.reshape(ti.shape).astype(np.int64)

    def check_shape(self, op: OpInfo, want: tuple[int, ...]) -> None:
        got = self.t(op.outputs[0]).shape
        if tuple(got) != tuple(want):
            raise ModelError(f"operator {op.index} ({op.name}): output shape {list(got)} does not match the "
                             f"{list(want)} its input and options give")

    def prepare(self, check: Callable, *args) -> None:
        """One of TFLM's Prepare checks (tflm_checks.py) of the file's quantization, where the policy's graph keeps
        it: `check(self, *args)`."""
        self.policy.prepare(check, self, *args)
