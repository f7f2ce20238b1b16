"""The two kinds of .tflite tinyaot imports, as two policies of one importer.

Int8Policy (from_tflite): the graph keeps the file's own quantization. Activations are int8 (int16 in a 16x8
model) with the file's scale and zero point, constants int8 / int32 with theirs, and TFLite Micro's Prepare checks
(tflm_checks.py) refuse what TFLM would; a float32 interface around the model (a QUANTIZE after an input, a
DEQUANTIZE before an output) is folded away, so the compiled model is int8 at both ends.

FloatPolicy (from_tflite_float): a float32 model becomes the float graph tinyaot's calibration and PTQ quantize,
as they do a PyTorch model: float32 activations and constants without qparams ("hybrid" int8 weights dequantized to
the values they stand for), nothing for TFLM's quantization checks to check, and any int8 left inside the model
refused (it is partially quantized).

Each policy says what a tensor becomes and what is refused; the per-operator differences are its converter table
(converters.py): e.g. a float LOGISTIC is the real sigmoid for tinyaot's PTQ, an int8 one TFLM's integer kernel.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.reader import ModelInfo, OpInfo, TensorInfo, input_is_quantized, is_float_model
from tinyaot.ir import QParams, Tensor

FLOAT_HOW = ("compile it with tinyaot.compile(model, calibration=samples), which quantizes it with tinyaot's "
             "own calibration (from_tflite_float imports it as a float graph)")
MIXED_HOW = ("tinyaot imports a float32 .tflite (all activations float32; it quantizes them itself) or an int8 one "
             "(all activations int8); re-convert the model without quantization, or with full-integer "
             "quantization (a representative dataset)")
FLOAT16 = 1  # TensorType FLOAT16


def refuse_float16(ti: TensorInfo, op: OpInfo, what: str) -> None:
    """A float model's float16 constant: the converter's float16 quantization, which tinyaot does not read."""
    if ti.type_code == FLOAT16:
        raise UnsupportedOpError(
            f"operator {op.index} ({op.name}): {what} '{ti.name}' is a float16 tensor: this model was "
            "converted with float16 quantization. tinyaot reads float32 weights and quantizes them to int8 itself; "
            "re-convert without float16 (no target_spec.supported_types = [tf.float16]), or with full-integer "
            "quantization")


def dequantized_weights(imp, index: int, op: OpInfo, what: str) -> np.ndarray:
    """float32 weights of a float model; dynamic-range int8 ones as the float32 values they stand for,
    scale * (q - zero_point) (exact in float64, rounded once)."""
    ti = imp.t(index)
    refuse_float16(ti, op, what)
    if ti.dtype != "int8" or ti.data is None:
        return imp.read_constant(index, op, "float32", what)[0]
    q, qp = imp.read_constant(index, op, "int8", what)
    if qp is None:
        raise ModelError(f"operator {op.index} ({op.name}): the int8 {what} '{ti.name}' of this float model carry "
                         "no scale, so the float values they stand for are unknown")
    return qp.dequantize(q).astype(np.float32)


@dataclass(frozen=True)
class Int8Policy:
    """from_tflite: int8 / 16x8 activations and constants with the file's qparams, checked as TFLM checks them."""

    converters: Mapping[str, Callable]
    unsupported_tail: str = ", and DEQUANTIZE at the model output"
    constant_hint: str = "a float model? convert with full-integer quantization"

    def check_model(self, info: ModelInfo) -> None:
        """Any model: what is not int8 is refused tensor by tensor, naming the operator."""

    def model_input(self, imp, x: int) -> int:
        """The tensor the graph's input is: past a QUANTIZE that takes a float32 input to int8 (or int16)."""
        if imp.t(x).type_code == 0 and input_is_quantized(imp.info, x):
            reader = next(op for op in imp.info.ops if x in op.inputs)
            imp.skip.add(reader.index)
            return reader.outputs[0]
        return x

    def model_output(self, imp, y: int) -> int:
        """The tensor the graph's output is: before a DEQUANTIZE that writes a float32 output from int8 (or int16)."""
        if imp.t(y).type_code == 0:
            writer = [op for op in imp.info.ops if y in op.outputs]
            if (len(writer) == 1 and writer[0].name == "DEQUANTIZE"
                    and imp.t(writer[0].inputs[0]).dtype in ("int8", "int16")):
                imp.skip.add(writer[0].index)
                return writer[0].inputs[0]
        return y

    def refuse(self, imp, op: OpInfo) -> None:
        """Nothing beyond the converter table: QUANTIZE is an operator like the others."""

    def check_activation(self, info: ModelInfo, ti: TensorInfo, where: str, op: OpInfo | None) -> None:
        if ti.type_code == 0:
            if is_float_model(info):
                raise ModelError(f"{where} works on float32 tensor '{ti.name}': this is a float model, and "
                                 f"from_tflite imports int8 models; {FLOAT_HOW}, or convert it with full-integer "
                                 "quantization (a representative dataset)")
            raise ModelError(f"{where} works on float32 tensor '{ti.name}' inside an int8 model (a partially "
                             f"quantized model); {MIXED_HOW}")
        if ti.dtype == "uint8" and not _uint8_at_quantize(info, ti.index):
            raise UnsupportedOpError(f"{where} uses a uint8 tensor '{ti.name}' outside a QUANTIZE; tinyaot takes "
                                     "uint8 where TFLite Micro does: a legacy uint8 model input or output converted "
                                     "to or from int8 by QUANTIZE (its other integer kernels take int8 / int16)")
        written_by_quantize = op is not None and op.name == "QUANTIZE"
        if ti.dtype not in ("int8", "int16", "uint8") and not (ti.dtype == "int32" and written_by_quantize):
            raise UnsupportedOpError(f"{where} uses a {ti.type_name} tensor '{ti.name}'; tinyaot supports int8 "
                                     "activations, int16 ones (16x8) for the ops with a 16x8 kernel, and int32 ones "
                                     "written by QUANTIZE")
        if not ti.quantized or len(ti.scale) != 1:
            raise ModelError(f"{where}: {ti.dtype} tensor '{ti.name}' needs one scale and zero point (per-tensor "
                             "quantization)")
        if not (ti.scale[0] > 0 and math.isfinite(ti.scale[0])):
            raise ModelError(f"{where}: tensor '{ti.name}' has scale {ti.scale[0]}; scales must be positive")

    def activation_tensor(self, name: str, ti: TensorInfo) -> Tensor:
        """int8, or int16 (16x8 models), at the file's scale and zero point."""
        return Tensor(name, ti.shape, ti.dtype, qparams=QParams.per_tensor(ti.scale[0], ti.zero_point[0]))

    def constant_qparams(self, qp: QParams | None) -> QParams | None:
        return qp

    def weight_values(self, imp, index: int, op: OpInfo, what: str) -> tuple[np.ndarray, QParams | None]:
        """int8 weights with their qparams."""
        return imp.read_constant(index, op, "int8", what)

    def bias_dtype(self, imp, op: OpInfo, index: int) -> str:
        """int32; int64 for a 16x8 layer's int64 bias (TFLite's; TFLM also takes int32)."""
        if index != -1 and imp.t(op.inputs[0]).dtype == "int16" and imp.t(index).dtype == "int64":
            return "int64"
        return "int32"

    def operand_dtype(self, ti: TensorInfo, op: OpInfo) -> str:
        """A constant operand: int8, or int16 with its own scale in a 16x8 operator (whose types
        tflm_checks.same_activation_types checks)."""
        return "int16" if ti.dtype == "int16" else "int8"

    def real_zero(self, ti: TensorInfo) -> tuple[int, str]:
        """The stored value that stands for real 0 in the tensor, and how a message says it."""
        return ti.zero_point[0], f"{ti.zero_point[0]}, the zero point"

    def prepare(self, check: Callable, *args) -> None:
        """Run one of TFLM's Prepare checks (tflm_checks.py) on the file's quantization."""
        check(*args)


@dataclass(frozen=True)
class FloatPolicy:
    """from_tflite_float: float32 activations and constants without qparams, for tinyaot's calibration and PTQ."""

    converters: Mapping[str, Callable]
    unsupported_tail: str = ""
    constant_hint: str = "tinyaot imports float models whose constants are float32"

    def check_model(self, info: ModelInfo) -> None:
        if info.inputs and input_is_quantized(info):
            raise ModelError("the model's float32 input goes straight into a QUANTIZE to int8: this is an int8 model "
                             "with a float interface, already quantized; compile it with tinyaot.compile(model) "
                             "(from_tflite imports it as is)")

    def model_input(self, imp, x: int) -> int:
        return x

    def model_output(self, imp, y: int) -> int:
        return y

    def refuse(self, imp, op: OpInfo) -> None:
        """QUANTIZE / DEQUANTIZE inside a float model: float16 weights, or a partially quantized model."""
        if op.name not in ("QUANTIZE", "DEQUANTIZE"):
            return
        src = imp.t(op.inputs[0]) if op.inputs and op.inputs[0] >= 0 else None
        if op.name == "DEQUANTIZE" and src is not None:
            refuse_float16(src, op, "constants")
            if src.data is not None:
                raise UnsupportedOpError(
                    f"operator {op.index} (DEQUANTIZE) turns the {src.type_name} constant '{src.name}' into float32 "
                    "at run time; tinyaot imports float models whose constants are stored as float32 (or as int8 "
                    "weights of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED): re-convert without weight "
                    "quantization, or with full-integer quantization")
        raise UnsupportedOpError(
            f"operator {op.index} ({op.name}) converts between float32 and int8 inside a float model (a partially "
            f"quantized model); {MIXED_HOW}")

    def check_activation(self, info: ModelInfo, ti: TensorInfo, where: str, op: OpInfo | None) -> None:
        if ti.type_code == 0:
            return
        if op is None:
            if ti.dtype == "int8":
                raise ModelError(f"the model input '{ti.name}' is int8: this is an int8 model, already quantized; "
                                 "compile it with tinyaot.compile(model) (from_tflite imports it as is)")
            raise UnsupportedOpError(f"the model input '{ti.name}' is {ti.type_name}; tinyaot imports float32 "
                                     "and int8 .tflite models")
        raise ModelError(f"{where} writes {ti.type_name} tensor '{ti.name}' inside a float model (a partially "
                         f"quantized model); {MIXED_HOW}")

    def activation_tensor(self, name: str, ti: TensorInfo) -> Tensor:
        return Tensor(name, ti.shape, "float32")

    def constant_qparams(self, qp: QParams | None) -> QParams | None:
        return None  # a float graph's constants are plain float32

    def weight_values(self, imp, index: int, op: OpInfo, what: str) -> tuple[np.ndarray, QParams | None]:
        return dequantized_weights(imp, index, op, what), None

    def bias_dtype(self, imp, op: OpInfo, index: int) -> str:
        if index != -1:
            refuse_float16(imp.t(index), op, "bias")
        return "float32"

    def operand_dtype(self, ti: TensorInfo, op: OpInfo) -> str:
        """A constant operand in float32 (quantize/lower.py gives it per-tensor qparams from its values)."""
        refuse_float16(ti, op, "constant operand")
        return "float32"

    def real_zero(self, ti: TensorInfo) -> tuple[float, str]:
        return 0.0, "0.0"

    def prepare(self, check: Callable, *args) -> None:
        """Nothing to check: a float graph has no qparams until tinyaot's PTQ chooses them (and checks its own)."""


def _uint8_at_quantize(info: ModelInfo, index: int) -> bool:
    """A uint8 tensor only QUANTIZE operators write and read (a model input or output may be one end): TFLM's
    QUANTIZE converts uint8 to and from int8; no other integer kernel of TFLM's takes uint8."""
    return all(op.name == "QUANTIZE" for op in info.ops if index in op.inputs or index in op.outputs)
