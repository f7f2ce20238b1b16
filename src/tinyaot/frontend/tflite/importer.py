"""TFLite front end: a .tflite flatbuffer -> an IR graph (NHWC).

Two kinds of file come in. An int8 model (`from_tflite`) becomes an int8 graph that keeps the file's own scales
and zero points, so no calibration is needed; a float model's boundary QUANTIZE / DEQUANTIZE ops are folded away
so the compiled model has int8 input and output with the qparams those ops publish. A float32 model
(`from_tflite_float`, chosen by `is_float_tflite`) becomes a float graph that tinyaot's own calibration and PTQ
quantize, exactly like a PyTorch model: float32 activations without qparams, float32 weights in the IR layouts
(dynamic-range "hybrid" int8 weights are dequantized, scale * (q - zero_point), which is what they stand for).
Both go through the same converter per op; only the tensor rules differ (int8 + qparams, or float32).

The file is parsed with the `tflite` package (the flatbuffer schema). Every read is bounds-checked and
any failure of the parser becomes a ModelError, so a truncated or corrupted file never crashes or
hangs the compiler. Padding is made explicit exactly as TFLite Micro computes it (ComputePaddingHeightWidth)
and fused activations become the IR `clamp`.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tinyaot.errors import ModelError, TinyAOTError, UnsupportedOpError
from tinyaot.frontend.tflite.recurrent import unidirectional_sequence_lstm
from tinyaot.frontend.tflite.svdf import svdf
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.ir.ops import WIDE_CONVERSIONS, kernel_ref

SCHEMA_VERSION = 3
FILE_IDENTIFIER = b"TFL3"
MAX_TENSOR_BYTES = 64 * 2**20  # an activation beyond this is a corrupt shape, not a microcontroller model

# Bounds on an imported scale. TFLite itself asks only for scale > 0; these refuse what no trained model holds
# (the MLPerf Tiny int8 models' scales lie in 1.4e-5..1) and what breaks the integer arithmetic downstream:
# - MIN_SCALE: TFLite's FULLY_CONNECTED multiplies input and weight scales in float32 and that product is the bias
#   scale, which must stay a normal float32 (> 1.2e-38); fused-activation bounds are float32 quotients (6 / scale).
# - MAX_SCALE: an int8 tensor then spans at most 2.6e12, so the dequantized reference model (products of two such
#   values summed over a million terms) stays finite in float32.
# int32 biases carry the product of an input and a weight scale, so their bounds are the squares.
MIN_SCALE, MAX_SCALE = 1e-18, 1e10
# TFLite's QuantizeMultiplier stores a requantization multiplier M as Q31 * 2^shift with shift in [-31, 30]:
# M >= 2^30 does not fit (the single-rounding build saturates it, the double-rounding one shifts an int32 left
# by more than 30 bits), and M < 2^-32 is flushed to zero (the output is its zero point whatever the input).
MAX_SHIFT, MIN_SHIFT = 30, -31
# The int32 bias is read at input_scale * weight_scale whatever scale the file gives it (TFLite Micro does the
# same), so a bias stored at another scale is silently a different bias. Converters store the float32 product
# (the MLPerf models agree within 6e-8); 1 % leaves room for any tool's rounding.
BIAS_SCALE_TOLERANCE = 0.01
_ZERO_POINT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (0, 0), "int32": (0, 0), "int64": (0, 0)}
_ZERO_POINT_RULES = {"int16": "int16 tensors are symmetric in TFLite (zero point 0; -32768 only for the int16 output "
                              "of TFLite Micro's int8 -> int16 SOFTMAX)",
                     "int32": "an int32 bias is symmetric in TFLite", "int64": "an int64 bias is symmetric in TFLite"}
# The one asymmetric int16 zero point TFLite writes: an int8 SOFTMAX's int16 output (scale 1/65536), which the ops
# reading it (a QUANTIZE, or the model output) take; any other op's 16x8 kernel refuses it (zero point 0).
INT16_SOFTMAX_ZERO_POINT = -32768

# TensorType codes of the schema -> numpy dtypes tinyaot can hold.
_DTYPES = {0: "float32", 2: "int32", 3: "uint8", 4: "int64", 7: "int16", 9: "int8"}
_TYPE_NAMES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool", 7: "int16",
               8: "complex64", 9: "int8", 10: "float64", 17: "int4", 18: "bfloat16"}

# ActivationFunctionType -> IR clamp (real units).
_CLAMPS = {0: None, 1: (0.0, math.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
_ACTIVATION_NAMES = {4: "TANH", 5: "SIGN_BIT"}


# What a custom operator in a .tflite usually means, by custom_code (a prefix for the Flex family).
CUSTOM_OP_HINTS = {
    "ethos-u": "this .tflite was compiled by Vela for an Ethos-U NPU; give tinyaot the .tflite from before Vela "
               "(the operator holds the NPU's command stream, not the layers)",
    "Flex": "the converter kept a TensorFlow op (SELECT_TF_OPS), which neither TFLite Micro nor tinyaot runs; "
            "re-convert with TFLite builtin ops only",
    "TFLite_Detection_PostProcess": "SSD box decoding and non-max suppression, in float; compile the network up to "
                                    "the op (its box and class tensors as the outputs) and run it on the host",
}


def custom_op_hint(custom: str | None) -> str:
    """': why, and what to do.' for a custom operator (known ones by name), '' for a builtin one."""
    if not custom:
        return ""
    hint = CUSTOM_OP_HINTS.get(custom) or (CUSTOM_OP_HINTS["Flex"] if custom.startswith("Flex") else None)
    return f": {hint or 'a custom operator, and tinyaot compiles TFLite builtin operators'}."


def _builtin_names() -> dict[int, str]:
    import tflite

    return {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}


@dataclass
class _TensorInfo:
    index: int
    name: str
    shape: tuple[int, ...]
    type_code: int
    data: np.ndarray | None  # raw bytes of a constant, or None
    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int
    variable: bool = False  # a variable tensor: state an operator keeps across invokes (SVDF, LSTM)

    @property
    def dtype(self) -> str | None:
        return _DTYPES.get(self.type_code)

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES.get(self.type_code, f"type {self.type_code}")

    @property
    def quantized(self) -> bool:
        return len(self.scale) > 0


@dataclass
class _OpInfo:
    index: int
    code: int
    name: str  # e.g. CONV_2D
    inputs: list[int]  # -1 marks an absent optional input
    outputs: list[int]
    options: object | None  # the flatbuffer table of builtin options, or None
    options_type: int  # BuiltinOptions union tag
    custom: str | None = None  # a custom operator's custom_code


@dataclass
class _ModelInfo:
    tensors: list[_TensorInfo]
    ops: list[_OpInfo]
    inputs: list[int]
    outputs: list[int]


# ---- parsing: flatbuffer -> plain Python, every access checked ---------------------------------


class _Reader:
    """Bounds checks around the generated flatbuffer accessors."""

    def __init__(self, buf: bytes):
        self.buf = buf

    def count(self, n: int, what: str, elem_bytes: int = 1) -> int:
        if n < 0 or n * elem_bytes > len(self.buf):
            raise ModelError(f"malformed .tflite file: {what} claims {n} entries, more than the file can hold "
                             "(the file is truncated or corrupt)")
        return n

    def ints(self, obj, field: str, what: str) -> list[int]:
        n = self.count(getattr(obj, f"{field}Length")(), what, 4)
        get = getattr(obj, field)
        return [int(get(j)) for j in range(n)]


def _read_bytes(model) -> tuple[bytes, str]:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), "model.tflite"
    path = Path(model)
    if not path.is_file():
        raise ModelError(f"TFLite model file {str(path)!r} does not exist")
    return path.read_bytes(), path.name


def _parse(buf: bytes) -> _ModelInfo:
    import tflite

    if len(buf) < 8 or buf[4:8] != FILE_IDENTIFIER:
        raise ModelError(
            "not a TFLite model: the file does not carry the 'TFL3' flatbuffer identifier (is it truncated, or "
            "another format such as a SavedModel or ONNX file?)"
        )
    r = _Reader(buf)
    model = tflite.Model.GetRootAsModel(buf, 0)
    version = model.Version()
    if version != SCHEMA_VERSION:
        raise ModelError(f"unsupported TFLite schema version {version}; tinyaot reads version {SCHEMA_VERSION} "
                         "(re-convert the model with a current TensorFlow / LiteRT converter)")
    n_sub = r.count(model.SubgraphsLength(), "subgraph list", 4)
    if n_sub != 1:
        raise UnsupportedOpError(f"the model has {n_sub} subgraphs; tinyaot compiles single-subgraph models "
                                 "(no control flow such as WHILE / IF / CALL_ONCE)")
    names = _builtin_names()
    opcodes = []
    for j in range(r.count(model.OperatorCodesLength(), "operator code list", 4)):
        oc = model.OperatorCodes(j)
        code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
        custom = oc.CustomCode()
        opcodes.append((code, custom.decode(errors="replace") if custom else None))
    n_buffers = r.count(model.BuffersLength(), "buffer list", 4)
    sg = model.Subgraphs(0)
    n_tensors = r.count(sg.TensorsLength(), "tensor list", 4)
    scratch = _intermediates(r, sg, n_tensors)
    tensors = [_parse_tensor(r, model, sg.Tensors(i), i, n_buffers, i in scratch) for i in range(n_tensors)]
    ops = []
    for i in range(r.count(sg.OperatorsLength(), "operator list", 4)):
        op = sg.Operators(i)
        idx = int(op.OpcodeIndex())
        if not 0 <= idx < len(opcodes):
            raise ModelError(f"malformed .tflite file: operator {i} uses operator code {idx}, but the model has "
                             f"{len(opcodes)}")
        code, custom = opcodes[idx]
        name = f"CUSTOM '{custom}'" if custom else names.get(code, f"builtin op {code}")
        ins = r.ints(op, "Inputs", f"operator {i} inputs")
        outs = r.ints(op, "Outputs", f"operator {i} outputs")
        for t in ins + outs:
            if not (0 <= t < n_tensors or (t == -1 and t in ins)):
                raise ModelError(f"malformed .tflite file: operator {i} ({name}) refers to tensor {t}, but the "
                                 f"subgraph has {n_tensors} tensors (indices 0..{n_tensors - 1})")
        ops.append(_OpInfo(i, code, name, ins, outs, op.BuiltinOptions(), int(op.BuiltinOptionsType()), custom))
    inputs = r.ints(sg, "Inputs", "subgraph inputs")
    outputs = r.ints(sg, "Outputs", "subgraph outputs")
    for what, lst in (("input", inputs), ("output", outputs)):
        for t in lst:
            if not 0 <= t < n_tensors:
                raise ModelError(f"malformed .tflite file: model {what} is tensor {t}, but the subgraph has "
                                 f"{n_tensors} tensors")
    return _ModelInfo(tensors, ops, inputs, outputs)


def _intermediates(r: _Reader, sg, n_tensors: int) -> set[int]:
    """Tensors that are only some operator's `intermediates`: the converter's empty tensors that carry an LSTM's
    gate scales for TFLite's (not Micro's) kernel. TFLite Micro reads none of them; it asks only that each hold
    no bytes (AllocationInfoBuilder::ValidateSubgraph)."""
    listed, used = set(), set(r.ints(sg, "Inputs", "subgraph inputs") + r.ints(sg, "Outputs", "subgraph outputs"))
    for i in range(r.count(sg.OperatorsLength(), "operator list", 4)):
        op = sg.Operators(i)
        listed.update(r.ints(op, "Intermediates", f"operator {i} intermediates"))
        used.update(r.ints(op, "Inputs", f"operator {i} inputs") + r.ints(op, "Outputs", f"operator {i} outputs"))
    for t in listed:
        if not 0 <= t < n_tensors:
            raise ModelError(f"malformed .tflite file: an operator's intermediate is tensor {t}, but the subgraph "
                             f"has {n_tensors} tensors")
    return listed - used


def _parse_tensor(r: _Reader, model, t, index: int, n_buffers: int, intermediate: bool = False) -> _TensorInfo:
    raw_name = t.Name()
    name = raw_name.decode(errors="replace") if raw_name else f"tensor{index}"
    shape = tuple(r.ints(t, "Shape", f"tensor {index} shape"))
    if intermediate:  # never read: only TFLite Micro's rule applies
        if math.prod(shape) != 0:
            raise ModelError(f"tensor {index} ('{name}') is an operator's intermediate of shape {list(shape)}; "
                             "TFLite Micro supports only empty intermediates (shape [0]), which carry no data; "
                             "re-convert the model")
        return _TensorInfo(index, name, shape, int(t.Type()), None, (), (), 0)
    if any(d < 1 for d in shape):
        raise ModelError(f"tensor {index} ('{name}') has shape {list(shape)}; tinyaot needs static shapes with "
                         "every dimension >= 1 (batch size 1)")
    type_code = int(t.Type())
    b = int(t.Buffer())
    if not 0 <= b < n_buffers:
        raise ModelError(f"malformed .tflite file: tensor {index} ('{name}') uses buffer {b}, but the model has "
                         f"{n_buffers} buffers")
    data = None
    if b > 0:
        buffer = model.Buffers(b)
        offset, size = int(buffer.Offset()), int(buffer.Size())
        if offset > 1:  # large models keep data after the flatbuffer
            if offset + size > len(r.buf):
                raise ModelError(f"malformed .tflite file: tensor {index} data lies past the end of the file")
            data = np.frombuffer(r.buf, dtype=np.uint8, count=size, offset=offset)
        elif r.count(buffer.DataLength(), f"tensor {index} data") > 0:
            data = buffer.DataAsNumpy()
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    axis = 0
    q = t.Quantization()
    if q is not None and q.ScaleLength() > 0:
        n = r.count(q.ScaleLength(), f"tensor {index} scales", 4)
        scale = tuple(float(np.float32(q.Scale(j))) for j in range(n))
        nz = r.count(q.ZeroPointLength(), f"tensor {index} zero points", 8)
        zero_point = tuple(int(q.ZeroPoint(j)) for j in range(nz)) or (0,) * n
        axis = int(q.QuantizedDimension())
        if len(shape) == 1 and len(scale) == shape[0] > 1:
            # A 1-D per-channel tensor (a bias) has its channels on its only axis: converters write the conv's
            # channel dimension (3) there, and TFLite Micro ignores it.
            axis = 0
        if len(zero_point) != len(scale):
            raise ModelError(f"malformed .tflite file: tensor {index} ('{name}') has {len(scale)} scales but "
                             f"{len(zero_point)} zero points")
    info = _TensorInfo(index, name, shape, type_code, data, scale, zero_point, axis, bool(t.IsVariable()))
    if info.quantized and info.type_code != 0:  # TFLite ignores quantization on a float32 tensor
        _check_qparams(info)
    return info


_REPAIR = "the file is corrupt or its converter is broken: re-convert the model with a current TFLite converter"


def _check_qparams(ti: _TensorInfo) -> None:
    """TFLite's rules for one quantized tensor: positive finite scales in a sane range, zero points inside the
    tensor's integer type (symmetric int16 / int32), and one scale per channel of the quantized dimension."""
    what = f"tensor {ti.index} ('{ti.name}', {ti.type_name})"
    lo, hi = (MIN_SCALE**2, MAX_SCALE**2) if ti.dtype in ("int32", "int64") else (MIN_SCALE, MAX_SCALE)
    for c, s in enumerate(ti.scale):
        where = f" (channel {c})" if len(ti.scale) > 1 else ""
        if not (math.isfinite(s) and s > 0):
            raise ModelError(f"{what} has scale {s}{where}; a scale must be positive and finite ({_REPAIR})")
        if not lo <= s <= hi:
            raise ModelError(f"{what} has scale {s:.3g}{where}, outside the range tinyaot accepts ({lo:.0e} to "
                             f"{hi:.0e}; trained models use about 1e-6 to 10). Such a scale makes the integer "
                             f"arithmetic overflow or vanish; {_REPAIR}")
    zp_range = _ZERO_POINT_RANGES.get(ti.dtype)
    if zp_range is not None:
        bad = [z for z in ti.zero_point if not zp_range[0] <= z <= zp_range[1]
               and not (ti.dtype == "int16" and z == INT16_SOFTMAX_ZERO_POINT)]
        if bad:
            rule = _ZERO_POINT_RULES.get(ti.dtype, f"the zero point of {ti.dtype} values is one of them, in "
                                                   f"[{zp_range[0]}, {zp_range[1]}]")
            raise ModelError(f"{what} has zero point {bad[0]}; {rule} ({_REPAIR})")
    if len(ti.scale) > 1 and not (0 <= ti.axis < len(ti.shape) and ti.shape[ti.axis] == len(ti.scale)):
        raise ModelError(f"{what} has {len(ti.scale)} per-channel scales along dimension {ti.axis}, but its shape "
                         f"is {list(ti.shape)}: one scale per channel of that dimension is needed ({_REPAIR})")


# ---- conversion: plain model -> IR graph -------------------------------------------------------


def _input_is_quantized(info: _ModelInfo, x: int | None = None) -> bool:
    """A float32 input whose only reader is a QUANTIZE to int8 (int16 in a 16x8 model): an integer model with a
    float interface."""
    x = info.inputs[0] if x is None else x
    readers = [op for op in info.ops if x in op.inputs]
    return (len(readers) == 1 and readers[0].name == "QUANTIZE" and readers[0].outputs
            and info.tensors[readers[0].outputs[0]].dtype in ("int8", "int16"))


def _is_float(info: _ModelInfo) -> bool:
    return bool(info.inputs) and info.tensors[info.inputs[0]].type_code == 0 and not _input_is_quantized(info)


_FLOAT_HOW = ("compile it with tinyaot.compile(model, calibration=samples), which quantizes it with tinyaot's "
              "own calibration (from_tflite_float imports it as a float graph)")
_MIXED_HOW = ("tinyaot imports a float32 .tflite (all activations float32; it quantizes them itself) or an int8 one "
              "(all activations int8); re-convert the model without quantization, or with full-integer "
              "quantization (a representative dataset)")


class _Importer:
    """One pass over the operators. `float_mode` chooses the tensor rules: int8 activations with the file's qparams
    and int8 / int32 constants (from_tflite), or float32 activations and constants (from_tflite_float)."""

    def __init__(self, info: _ModelInfo, source: str, float_mode: bool = False):
        self.info = info
        self.source = source
        self.float_mode = float_mode
        self.g = Graph(tensors={}, nodes=[], inputs=[], outputs=[], layout="NHWC")
        self.names: dict[int, str] = {}  # tflite tensor index -> IR tensor name
        self.skip: set[int] = set()  # boundary QUANTIZE / DEQUANTIZE operators

    # -- tensors --
    def t(self, index: int) -> _TensorInfo:
        return self.info.tensors[index]

    def activation(self, index: int, name: str, op: _OpInfo | None) -> str:
        ti = self.t(index)
        where = f"operator {op.index} ({op.name})" if op else "the model input"
        if self.float_mode:
            self._check_float_activation(ti, where, op)
        else:
            self._check_int8_activation(ti, where, op)
        if int(np.prod(ti.shape, dtype=np.float64)) > MAX_TENSOR_BYTES:
            raise ModelError(f"{where}: tensor '{ti.name}' of shape {list(ti.shape)} is larger than "
                             f"{MAX_TENSOR_BYTES // 2**20} MiB; no microcontroller arena holds it")
        self.names[index] = name
        if self.float_mode:
            self.g.add_tensor(Tensor(name, ti.shape, "float32"))
        else:
            self.g.add_tensor(Tensor(name, ti.shape, ti.dtype,  # int8, or int16 (16x8 models)
                                     qparams=QParams.per_tensor(ti.scale[0], ti.zero_point[0])))
        return name

    def _check_int8_activation(self, ti: _TensorInfo, where: str, op: _OpInfo | None = None) -> None:
        if ti.type_code == 0:
            if _is_float(self.info):
                raise ModelError(f"{where} works on float32 tensor '{ti.name}': this is a float model, and "
                                 f"from_tflite imports int8 models; {_FLOAT_HOW}, or convert it with full-integer "
                                 "quantization (a representative dataset)")
            raise ModelError(f"{where} works on float32 tensor '{ti.name}' inside an int8 model (a partially "
                             f"quantized model); {_MIXED_HOW}")
        if ti.dtype == "uint8" and not self._uint8_at_quantize(ti.index):
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

    def _uint8_at_quantize(self, index: int) -> bool:
        """A uint8 tensor only QUANTIZE operators write and read (a model input or output may be one end): TFLM's
        QUANTIZE converts uint8 to and from int8; no other integer kernel of TFLM's takes uint8."""
        return all(op.name == "QUANTIZE" for op in self.info.ops if index in op.inputs or index in op.outputs)

    def _check_float_activation(self, ti: _TensorInfo, where: str, op: _OpInfo | None) -> None:
        if ti.type_code == 0:
            return
        if op is None:
            if ti.dtype == "int8":
                raise ModelError(f"the model input '{ti.name}' is int8: this is an int8 model, already quantized; "
                                 "compile it with tinyaot.compile(model) (from_tflite imports it as is)")
            raise UnsupportedOpError(f"the model input '{ti.name}' is {ti.type_name}; tinyaot imports float32 "
                                     "and int8 .tflite models")
        raise ModelError(f"{where} writes {ti.type_name} tensor '{ti.name}' inside a float model (a partially "
                         f"quantized model); {_MIXED_HOW}")

    def constant(self, index: int, name: str, op: _OpInfo, dtype: str, what: str) -> str:
        data, qp = self._read_constant(index, op, dtype, what)
        if self.float_mode:
            qp = None  # a float graph's constants are plain float32
        self.g.add_tensor(Tensor(name, data.shape, dtype, data=data, qparams=qp))
        return name

    def _read_constant(self, index: int, op: _OpInfo, dtype: str, what: str) -> tuple[np.ndarray, QParams | None]:
        ti = self.t(index)
        if ti.data is None:
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the {what} '{ti.name}' must be a constant "
                                     "stored in the model")
        if ti.dtype != dtype:
            hint = ("tinyaot imports float models whose constants are float32" if self.float_mode
                    else "a float model? convert with full-integer quantization")
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the {what} is {ti.type_name}, tinyaot "
                                     f"needs {dtype} ({hint})")
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

    def weights(self, index: int, name: str, op: _OpInfo) -> str:
        """int8 weights with their qparams, or (float mode) float32 weights; dynamic-range ("hybrid") int8
        weights in a float model are dequantized to the float32 values they stand for."""
        if not self.float_mode:
            return self.constant(index, name, op, "int8", "weights")
        ti = self.t(index)
        self._refuse_float16(ti, op, "weights")
        if ti.dtype != "int8" or ti.data is None:
            return self.constant(index, name, op, "float32", "weights")
        q, qp = self._read_constant(index, op, "int8", "weights")
        if qp is None:
            raise ModelError(f"operator {op.index} ({op.name}): the int8 weights '{ti.name}' of this float model "
                             "carry no scale, so the float values they stand for are unknown")
        w = qp.dequantize(q).astype(np.float32)  # scale * (q - zero_point): exact in float64, rounded once
        self.g.add_tensor(Tensor(name, w.shape, "float32", data=w))
        return name

    def _refuse_float16(self, ti: _TensorInfo, op: _OpInfo, what: str) -> None:
        if ti.type_code == 1:
            raise UnsupportedOpError(
                f"operator {op.index} ({op.name}): {what} '{ti.name}' is a float16 tensor: this model was "
                "converted with float16 quantization. tinyaot reads float32 weights and quantizes them to int8 itself; "
                "re-convert without float16 (no target_spec.supported_types = [tf.float16]), or with full-integer "
                "quantization")

    def ir_input(self, index: int, op: _OpInfo) -> str:
        if index not in self.names:
            ti = self.t(index)
            raise ModelError(f"operator {op.index} ({op.name}) reads tensor {index} ('{ti.name}') before any "
                             "operator writes it (the operators are not in execution order, or the tensor is "
                             "a constant where an activation was expected)")
        return self.names[index]

    # -- boundaries --
    def boundaries(self) -> None:
        """Every model input and output (several are published in order); a float32 interface around an int8
        model (QUANTIZE after an input, DEQUANTIZE before an output) is dropped: the compiled model is int8."""
        info = self.info
        if not info.inputs or not info.outputs:
            raise ModelError(f"the model has {len(info.inputs)} inputs and {len(info.outputs)} outputs; it needs at "
                             "least one of each")
        self.g.inputs = []
        for k, x in enumerate(info.inputs):
            if not self.float_mode and self.t(x).type_code == 0 and _input_is_quantized(info, x):
                reader = next(op for op in info.ops if x in op.inputs)
                self.skip.add(reader.index)
                x = reader.outputs[0]
            self._check_batch(self.t(x))
            name = "input" if k == 0 else f"input_{k}"
            self.activation(x, name, None)
            self.g.inputs.append(self.names[x])
            if k:  # the first input's layout is the graph's (NHWC); the others say their own
                self.g.io_layouts[name] = ("NHWC" if len(self.t(x).shape) == 4 else "plain", 0)
        self.output_indices = []
        for y in info.outputs:
            if not self.float_mode and self.t(y).type_code == 0:
                writer = [op for op in info.ops if y in op.outputs]
                if (len(writer) == 1 and writer[0].name == "DEQUANTIZE"
                        and self.t(writer[0].inputs[0]).dtype in ("int8", "int16")):
                    self.skip.add(writer[0].index)
                    y = writer[0].inputs[0]
            self.output_indices.append(y)

    def _check_batch(self, ti: _TensorInfo) -> None:
        """Dimension 0 of the input is the batch, and a microcontroller runs one inference at a time."""
        if len(ti.shape) < 2 or ti.shape[0] != 1:
            got = "no batch dimension" if len(ti.shape) < 2 else f"batch size {ti.shape[0]}"
            raise ModelError(
                f"the model input '{ti.name}' has shape {list(ti.shape)} ({got}); tinyaot compiles models with "
                "batch size 1, one inference at a time as the microcontroller runs it (dimension 0 is the batch). "
                "Re-convert the model with input shape [1, ...] (e.g. a Keras Input(batch_size=1) or a "
                "tf.function with input_signature [tf.TensorSpec([1, ...])]) and pass batches to run() instead")

    def supported(self) -> list[str]:
        return sorted(set(CONVERTERS) - {"QUANTIZE"}) if self.float_mode else sorted(CONVERTERS)

    def run(self) -> Graph:
        if self.float_mode and self.info.inputs and _input_is_quantized(self.info):
            raise ModelError("the model's float32 input goes straight into a QUANTIZE to int8: this is an int8 model "
                             "with a float interface, already quantized; compile it with tinyaot.compile(model) "
                             "(from_tflite imports it as is)")
        self.boundaries()
        for op in self.info.ops:
            if op.index in self.skip:
                continue
            if self.float_mode and op.name in ("QUANTIZE", "DEQUANTIZE"):
                self._refuse_conversion_op(op)
            convert = CONVERTERS.get(op.name)
            if convert is None:
                tail = "" if self.float_mode else ", and DEQUANTIZE at the model output"
                raise UnsupportedOpError(
                    f"operator {op.index} ({op.name}) is not supported{custom_op_hint(op.custom) or ';'} tinyaot "
                    f"imports {', '.join(self.supported())}{tail}"
                )
            if len(op.outputs) != 1:
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

    def _refuse_conversion_op(self, op: _OpInfo) -> None:
        """QUANTIZE / DEQUANTIZE inside a float model: float16 weights, or a partially quantized model."""
        src = self.t(op.inputs[0]) if op.inputs and op.inputs[0] >= 0 else None
        if op.name == "DEQUANTIZE" and src is not None:
            self._refuse_float16(src, op, "constants")
            if src.data is not None:
                raise UnsupportedOpError(
                    f"operator {op.index} (DEQUANTIZE) turns the {src.type_name} constant '{src.name}' into float32 "
                    "at run time; tinyaot imports float models whose constants are stored as float32 (or as int8 "
                    "weights of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED): re-convert without weight "
                    "quantization, or with full-integer quantization")
        raise UnsupportedOpError(
            f"operator {op.index} ({op.name}) converts between float32 and int8 inside a float model (a partially "
            f"quantized model); {_MIXED_HOW}")

    # -- helpers for converters --
    def node(self, op: _OpInfo, ir_op: str, inputs: list[str], attrs: dict) -> Node:
        name = f"{ir_op}_{op.index}"
        out = self.activation(op.outputs[0], f"{name}_out", op)
        node = Node(ir_op, name, inputs, [out], attrs, source=f"{self.source}:{op.index}")
        self.g.nodes.append(node)
        return node

    def options(self, op: _OpInfo, cls_name: str):
        import tflite

        table = op.options
        if table is None or op.options_type != getattr(tflite.BuiltinOptions, cls_name):
            raise ModelError(f"malformed .tflite file: operator {op.index} ({op.name}) lacks its {cls_name}")
        opts = getattr(tflite, cls_name)()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def clamp(self, op: _OpInfo, code: int):
        if code not in _CLAMPS:
            raise UnsupportedOpError(f"operator {op.index} ({op.name}) has fused activation "
                                     f"{_ACTIVATION_NAMES.get(code, code)}; supported: NONE, RELU, RELU6, "
                                     "RELU_N1_TO_1")
        return _CLAMPS[code]

    def args(self, op: _OpInfo, n_min: int, n_max: int) -> list[int]:
        if not n_min <= len(op.inputs) <= n_max:
            raise ModelError(f"operator {op.index} ({op.name}) has {len(op.inputs)} inputs, expected "
                             f"{n_min}" + (f" to {n_max}" if n_max != n_min else ""))
        return op.inputs + [-1] * (n_max - len(op.inputs))

    def bias(self, op: _OpInfo, index: int, name: str, channels: int) -> str:
        dtype = "float32" if self.float_mode else "int32"
        if (not self.float_mode and index != -1 and self.t(op.inputs[0]).dtype == "int16"
                and self.t(index).dtype == "int64"):
            dtype = "int64"  # a 16x8 layer's bias (TFLite's; TFLM also takes int32)
        if index == -1:
            self.g.add_tensor(Tensor(name, (channels,), dtype, data=np.zeros(channels, dtype)))
            return name
        if self.float_mode:
            self._refuse_float16(self.t(index), op, "bias")
        name = self.constant(index, name, op, dtype, "bias")
        if self.g.tensor(name).shape != (channels,):
            raise ModelError(f"operator {op.index} ({op.name}): bias shape {list(self.g.tensor(name).shape)}, "
                             f"expected [{channels}]")
        return name

    def check_shape(self, op: _OpInfo, want: tuple[int, ...]) -> None:
        got = self.t(op.outputs[0]).shape
        if tuple(got) != tuple(want):
            raise ModelError(f"operator {op.index} ({op.name}): output shape {list(got)} does not match the "
                             f"{list(want)} its input and options give")


def compute_padding(padding: int, in_size: int, k: int, stride: int, dilation: int) -> tuple[int, int, int]:
    """(out_size, pad_before, pad_after) as TFLM's ComputeOutSize / ComputePaddingWithOffset."""
    eff = (k - 1) * dilation + 1
    if padding == 0:  # SAME
        out = (in_size + stride - 1) // stride
    elif padding == 1:  # VALID
        out = (in_size + stride - eff) // stride
    else:
        raise ModelError(f"unknown padding type {padding} (expected SAME or VALID)")
    total = max(0, (out - 1) * stride + eff - in_size)
    return out, total // 2, total - total // 2


def _spatial(imp: _Importer, op: _OpInfo, x_shape, kh: int, kw: int, padding: int, stride, dilation):
    if len(x_shape) != 4:
        raise ModelError(f"operator {op.index} ({op.name}) needs a 4-D NHWC input, got {list(x_shape)}")
    if min(kh, kw, *stride, *dilation) < 1:
        raise ModelError(f"operator {op.index} ({op.name}): kernel, stride and dilation must be >= 1")
    oh, top, bottom = compute_padding(padding, x_shape[1], kh, stride[0], dilation[0])
    ow, left, right = compute_padding(padding, x_shape[2], kw, stride[1], dilation[1])
    if oh < 1 or ow < 1:
        raise ModelError(f"operator {op.index} ({op.name}): the kernel {kh}x{kw} does not fit the input "
                         f"{x_shape[1]}x{x_shape[2]}")
    padded = (x_shape[1] + top + bottom) * (x_shape[2] + left + right) * x_shape[0] * x_shape[3]
    if padded > MAX_TENSOR_BYTES:  # SAME padding of a huge (dilated) kernel: a corrupt option, not a model
        raise ModelError(f"operator {op.index} ({op.name}): a {kh}x{kw} kernel with stride {tuple(stride)} and "
                         f"dilation {tuple(dilation)} pads the {x_shape[1]}x{x_shape[2]} input by "
                         f"{(top, bottom, left, right)}, more than any arena holds; check the op's options "
                         f"({_REPAIR})")
    return oh, ow, (top, bottom, left, right)


def _conv_2d(imp: _Importer, op: _OpInfo) -> None:
    xi, wi, bi = imp.args(op, 2, 3)
    o = imp.options(op, "Conv2DOptions")
    x = imp.ir_input(xi, op)
    name = f"conv2d_{op.index}"
    w = imp.weights(wi, f"{name}_weight", op)
    wt = imp.g.tensor(w)
    if len(wt.shape) != 4:
        raise ModelError(f"operator {op.index} (CONV_2D): weights must be 4-D [out, kh, kw, in], got {wt.shape}")
    _check_weights(imp, op, wt, axis=0)
    x_shape = imp.g.tensor(x).shape
    if len(x_shape) == 4 and (x_shape[3] % wt.shape[3] or wt.shape[0] % (x_shape[3] // wt.shape[3])):
        # TFLM's grouped conv: groups = input depth / filter depth, which must split both channel counts
        raise ModelError(f"operator {op.index} (CONV_2D): weights take {wt.shape[3]} input channels, which does not "
                         f"split the input's {x_shape[3]} channels and the {wt.shape[0]} output channels into "
                         "equal groups")
    stride, dilation = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    oh, ow, pad = _spatial(imp, op, x_shape, wt.shape[1], wt.shape[2], o.Padding(), stride, dilation)
    imp.check_shape(op, (x_shape[0], oh, ow, wt.shape[0]))
    b = _conv_bias16(imp, op, bi, f"{name}_bias", wt.shape[0], o.QuantizedBiasType())
    imp.node(op, "conv2d", [x, w, b], {"stride": stride, "padding": pad, "dilation": dilation,
                                       "clamp": imp.clamp(op, o.FusedActivationFunction())})
    _check_weighted_qparams(imp, op, xi, wi, bi)


def _depthwise_conv_2d(imp: _Importer, op: _OpInfo) -> None:
    xi, wi, bi = imp.args(op, 2, 3)
    o = imp.options(op, "DepthwiseConv2DOptions")
    x = imp.ir_input(xi, op)
    name = f"depthwise_conv2d_{op.index}"
    w = imp.weights(wi, f"{name}_weight", op)
    wt = imp.g.tensor(w)
    x_shape = imp.g.tensor(x).shape
    if len(wt.shape) != 4 or wt.shape[0] != 1:
        raise ModelError(f"operator {op.index} (DEPTHWISE_CONV_2D): weights must be [1, kh, kw, out], got {wt.shape}")
    _check_weights(imp, op, wt, axis=3)
    out_c = wt.shape[3]
    if len(x_shape) != 4 or out_c % x_shape[3]:
        raise ModelError(f"operator {op.index} (DEPTHWISE_CONV_2D): {out_c} output channels are not a multiple of "
                         f"the input's channels (input {list(x_shape)})")
    # TFLM derives the multiplier from the channel counts, not from the option.
    mult = out_c // x_shape[3]
    stride, dilation = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    oh, ow, pad = _spatial(imp, op, x_shape, wt.shape[1], wt.shape[2], o.Padding(), stride, dilation)
    imp.check_shape(op, (x_shape[0], oh, ow, out_c))
    b = _conv_bias16(imp, op, bi, f"{name}_bias", out_c, None)
    imp.node(op, "depthwise_conv2d", [x, w, b], {"stride": stride, "padding": pad, "dilation": dilation,
                                                 "depth_multiplier": mult,
                                                 "clamp": imp.clamp(op, o.FusedActivationFunction())})
    _check_weighted_qparams(imp, op, xi, wi, bi)


def _conv_bias16(imp: _Importer, op: _OpInfo, bi: int, name: str, channels: int, bias_type: int | None) -> str:
    """The bias of a CONV_2D / DEPTHWISE_CONV_2D (and FULLY_CONNECTED); for a 16x8 layer (int16 input) the type
    TFLM gives it. Its conv takes int64 (int64 sums) or int32 (int32 sums), and without a bias its options'
    quantized_bias_type decides (`bias_type`); its depthwise conv (`bias_type` None) reads the bias as int64
    whatever the file says, so an int32 one is refused."""
    if imp.float_mode or imp.t(op.inputs[0]).dtype != "int16":
        return imp.bias(op, bi, name, channels)
    if bi != -1:
        if bias_type is None and imp.t(bi).dtype != "int64":
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the 16x8 bias '{imp.t(bi).name}' is "
                                     f"{imp.t(bi).dtype}, but TFLite Micro's 16x8 DEPTHWISE_CONV_2D reads its bias "
                                     "as int64; re-convert with an int64 bias")
        if imp.t(bi).dtype not in ("int32", "int64"):
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the 16x8 bias '{imp.t(bi).name}' is "
                                     f"{imp.t(bi).dtype}; TFLite Micro takes an int64 or int32 bias")
        return imp.bias(op, bi, name, channels)
    dtype = "int32" if _DTYPES.get(bias_type) == "int32" else "int64"
    imp.g.add_tensor(Tensor(name, (channels,), dtype, data=np.zeros(channels, dtype)))
    return name


def _transpose_conv(imp: _Importer, op: _OpInfo) -> None:
    """TRANSPOSE_CONV (output_shape, weights [out, kh, kw, in], input, optional bias): TFLM pads as a conv from the
    output's size to the input's would (ComputePaddingHeightWidth, dilation 1) and crops the full result."""
    si, wi, xi, bi = imp.args(op, 3, 4)
    o = imp.options(op, "TransposeConvOptions")
    x = imp.ir_input(xi, op)
    name = f"transpose_conv2d_{op.index}"
    w = imp.weights(wi, f"{name}_weight", op)
    wt = imp.g.tensor(w)
    x_shape, y_shape = imp.g.tensor(x).shape, tuple(imp.t(op.outputs[0]).shape)
    if len(wt.shape) != 4 or len(x_shape) != 4 or len(y_shape) != 4 or wt.shape[3] != x_shape[3] \
            or wt.shape[0] != y_shape[3]:
        raise ModelError(f"operator {op.index} (TRANSPOSE_CONV): weights {list(wt.shape)} must be [out, kh, kw, in] "
                         f"for the input {list(x_shape)} and output {list(y_shape)}")
    _check_weights(imp, op, wt, axis=0)
    shape = imp.t(si).data
    if shape is not None and tuple(int(v) for v in np.frombuffer(shape.tobytes(), np.int32)) != y_shape:
        raise ModelError(f"operator {op.index} (TRANSPOSE_CONV): its output_shape input "
                         f"{np.frombuffer(shape.tobytes(), np.int32).tolist()} differs from its output tensor's "
                         f"shape {list(y_shape)}")
    stride = (o.StrideH(), o.StrideW())
    if min(stride) < 1:
        raise ModelError(f"operator {op.index} (TRANSPOSE_CONV): stride {stride} must be >= 1")
    pad, extra = [], []
    for size, out, k, st in ((x_shape[1], y_shape[1], wt.shape[1], stride[0]), (x_shape[2], y_shape[2], wt.shape[2],
                                                                                  stride[1])):
        before = compute_padding(o.Padding(), out, k, st, 1)[1]
        after = (size - 1) * st + k - before - out  # negative: rows the full result does not reach
        pad += [before, max(after, 0)]
        extra.append(max(-after, 0))
    b = imp.bias(op, bi, f"{name}_bias", wt.shape[0])
    imp.node(op, "transpose_conv2d", [x, w, b], {"stride": stride, "padding": tuple(pad), "output_padding": extra,
                                                 "clamp": imp.clamp(op, o.FusedActivationFunction())})
    _check_weighted_qparams(imp, op, xi, wi, bi)


def _check_weights(imp: _Importer, op: _OpInfo, wt: Tensor, axis: int) -> None:
    """int8 weights: symmetric, per tensor or per output channel (float weights have nothing to check)."""
    if imp.float_mode:
        return
    qp = wt.qparams
    if qp is None:
        raise ModelError(f"operator {op.index} ({op.name}): the weights carry no quantization parameters")
    if any(z != 0 for z in qp.zero_point):
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): weights must be symmetric (zero point 0), "
                                 f"got zero points {sorted(set(qp.zero_point))[:4]}")
    if not qp.is_per_tensor and qp.axis != axis:
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): per-channel weights quantized along axis "
                                 f"{qp.axis}; expected the output-channel axis {axis}")


# ---- requantization: the multipliers TFLite derives from the scales must be representable -------------------


def _multiplier_shift(real: float) -> int:
    """The power-of-two shift TFLite's QuantizeMultiplier gives a positive multiplier, before it saturates or
    flushes (the mantissa rounds half away from zero; one that rounds up to 2^31 bumps the shift)."""
    q, shift = math.frexp(real)
    return shift + 1 if math.floor(q * 2**31 + 0.5) == 2**31 else shift


def _scales(imp: _Importer, indices: list[int]) -> str:
    return " * ".join(f"'{imp.t(i).name}' {imp.t(i).scale[0]:.6g}" for i in indices)


def _check_multipliers(imp: _Importer, op: _OpInfo, reals: list[float], formula: str, scales: str,
                       per_channel: bool = False) -> None:
    """Refuse multipliers that QuantizeMultiplier cannot hold (shift > 30), and a layer whose every multiplier
    flushes to zero (its output would be its zero point whatever the input). One flushed channel among others
    is left alone: its accumulator times such a multiplier is below half a step, so flushing is exact."""
    shifts = [_multiplier_shift(r) for r in reals]
    for c, (real, shift) in enumerate(zip(reals, shifts)):
        if shift > MAX_SHIFT:
            chan = f" of output channel {c}" if per_channel else ""
            raise ModelError(
                f"operator {op.index} ({op.name}): the requantization multiplier{chan} {formula} = {scales} = "
                f"{real:.3g} is 2^30 or more, which TFLite's QuantizeMultiplier cannot represent (shift {shift} > "
                f"{MAX_SHIFT}): the output scale is far too small for its inputs' scales; {_REPAIR}")
    if all(shift < MIN_SHIFT for shift in shifts):
        which = "every output channel's multiplier" if per_channel and len(reals) > 1 else "the multiplier"
        raise ModelError(
            f"operator {op.index} ({op.name}): {which} {formula} = {scales} is at most {max(reals):.3g}, below "
            "2^-32, so TFLite's QuantizeMultiplier flushes it to zero and the output is its zero point whatever the "
            f"input: the output scale is far too large for its inputs' scales; {_REPAIR}")


def _check_rescale(imp: _Importer, op: _OpInfo, inputs: list[int], out: int) -> None:
    """An op that rescales product(input scales) / output scale (QUANTIZE, RELU, MEAN, CONCATENATION, MUL)."""
    if imp.float_mode or not all(imp.t(i).quantized for i in [*inputs, out]):
        return  # a tensor without qparams is refused with its own message
    real = math.prod(float(imp.t(i).scale[0]) for i in inputs) / float(imp.t(out).scale[0])
    formula = " * ".join("input_scale" for _ in inputs) + " / output_scale"
    _check_multipliers(imp, op, [real], formula, f"{_scales(imp, inputs)} / {_scales(imp, [out])}")


def _check_add_qparams(imp: _Importer, op: _OpInfo, ai: int, bi: int) -> None:
    """TFLM's int8 ADD (and SUB) scales both inputs by s / (2 max(s_a, s_b)) and the sum by 2 max(s_a, s_b) /
    (2^20 s_out), each through QuantizeMultiplierSmallerThanOneExp, which needs a multiplier below 1 that does not
    flush; its int16 ADD / SUB (16x8) the same with 2^15."""
    if imp.float_mode:
        return
    sa, sb, so = (float(imp.t(i).scale[0]) for i in (ai, bi, op.outputs[0]))
    twice_max = 2.0 * max(sa, sb)
    scales = f"{_scales(imp, [ai])}, {_scales(imp, [bi])} -> {_scales(imp, [op.outputs[0]])}"
    left = 15 if imp.t(op.outputs[0]).dtype == "int16" else 20
    real = twice_max / (2**left * so)
    if real >= 1.0:
        raise ModelError(
            f"operator {op.index} ({op.name}): the output multiplier 2 * max(input scales) / (2^{left} * output_scale) "
            f"= {real:.3g} must be below 1 for TFLite's {op.name} (scales {scales}): the output scale is far too "
            f"small; {_REPAIR}")
    for what, real in (("output", real), ("first input", sa / twice_max), ("second input", sb / twice_max)):
        if _multiplier_shift(real) < MIN_SHIFT:
            raise ModelError(
                f"operator {op.index} ({op.name}): the {what} multiplier {real:.3g} is below 2^-32 and flushes to zero "
                f"in TFLite's QuantizeMultiplier, so that operand is ignored (scales {scales}); {_REPAIR}")


def _check_weighted_qparams(imp: _Importer, op: _OpInfo, xi: int, wi: int, bi: int) -> None:
    """CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED: per output channel, the multiplier input_scale *
    weight_scale / output_scale (in double, as TFLM) must be representable, and the bias scale must be
    input_scale * weight_scale, the scale TFLite reads the int32 bias at."""
    if imp.float_mode:
        return
    x, w, y = imp.t(xi), imp.t(wi), imp.t(op.outputs[0])
    in_s, out_s = float(x.scale[0]), float(y.scale[0])
    w_scales = [float(s) for s in w.scale]
    names = f"'{x.name}' {in_s:.6g} * '{w.name}' {{}} / '{y.name}' {out_s:.6g}"
    reals = [in_s * s / out_s for s in w_scales]
    span = f"{min(w_scales):.6g}..{max(w_scales):.6g}" if len(w_scales) > 1 else f"{w_scales[0]:.6g}"
    _check_multipliers(imp, op, reals, "input_scale * weight_scale / output_scale", names.format(span),
                       per_channel=len(w_scales) > 1)
    b = imp.t(bi) if bi >= 0 else None
    if b is None or not b.quantized:
        return  # TFLite reads the bias at input_scale * weight_scale whatever the file says
    channels = imp.g.tensor(imp.names[op.outputs[0]]).shape[-1]
    if len(b.scale) not in (1, channels):
        raise ModelError(f"operator {op.index} ({op.name}): the bias '{b.name}' has {len(b.scale)} scales for "
                         f"{channels} output channels; {_REPAIR}")
    for c in range(channels):
        want = in_s * (w_scales[c] if len(w_scales) > 1 else w_scales[0])
        got = float(b.scale[c] if len(b.scale) > 1 else b.scale[0])
        if abs(got - want) > BIAS_SCALE_TOLERANCE * want:
            chan = f" (output channel {c})" if len(b.scale) > 1 or len(w_scales) > 1 else ""
            raise ModelError(
                f"operator {op.index} ({op.name}): the bias '{b.name}' has scale {got:.6g}{chan}, but input_scale * "
                f"weight_scale is {want:.6g} ('{x.name}' {in_s:.6g} * '{w.name}' {want / in_s:.6g}); TFLite reads "
                "the int32 bias at input_scale * weight_scale, so its values would stand for another bias. "
                "Re-convert the model, or store the bias quantized at input_scale * weight_scale")


def _same_activation_types(imp: _Importer, op: _OpInfo, indices: list[int]) -> None:
    """FULLY_CONNECTED, ADD, SUB, MUL: TFLM computes in one integer type, int8 or int16 (16x8) throughout."""
    types = {imp.t(i).dtype for i in indices} & {"int8", "int16"}
    if not imp.float_mode and len(types) > 1:
        listing = ", ".join(f"'{imp.t(i).name}' {imp.t(i).dtype}" for i in indices)
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) mixes int8 and int16 tensors ({listing}); TFLite "
                                 "Micro's kernel takes one type throughout: put a QUANTIZE between int8 and int16")


def _fully_connected(imp: _Importer, op: _OpInfo) -> None:
    xi, wi, bi = imp.args(op, 2, 3)
    o = imp.options(op, "FullyConnectedOptions") if op.options_type else None
    if o is not None and o.WeightsFormat() != 0:
        raise UnsupportedOpError(f"operator {op.index} (FULLY_CONNECTED): shuffled weights format is not supported")
    x = imp.ir_input(xi, op)
    name = f"fully_connected_{op.index}"
    w = imp.weights(wi, f"{name}_weight", op)
    wt = imp.g.tensor(w)
    if len(wt.shape) != 2:
        raise ModelError(f"operator {op.index} (FULLY_CONNECTED): weights must be 2-D [out, in], got {wt.shape}")
    _check_weights(imp, op, wt, axis=0)
    out_f, in_f = wt.shape
    xt = imp.g.tensor(x)
    if xt.size % in_f:
        raise ModelError(f"operator {op.index} (FULLY_CONNECTED): input {list(xt.shape)} is not a whole number of "
                         f"rows of {in_f} features")
    out_shape = imp.t(op.outputs[0]).shape
    if int(np.prod(out_shape)) != xt.size // in_f * out_f or out_shape[-1] != out_f:
        raise ModelError(f"operator {op.index} (FULLY_CONNECTED): output shape {list(out_shape)} does not fit "
                         f"{xt.size // in_f} rows of {out_f} features")
    # a 16x8 layer's int64 or int32 bias; without one, TFLM sums in int64 unless quantized_bias_type says int32
    _same_activation_types(imp, op, [xi, op.outputs[0]])
    b = _conv_bias16(imp, op, bi, f"{name}_bias", out_f, o.QuantizedBiasType() if o is not None else 0)
    clamp = imp.clamp(op, o.FusedActivationFunction()) if o is not None else None
    imp.node(op, "fully_connected", [x, w, b], {"clamp": clamp})
    _check_weighted_qparams(imp, op, xi, wi, bi)


def _pool_2d(imp: _Importer, op: _OpInfo, ir_op: str, extra: dict) -> None:
    """AVERAGE_POOL_2D and MAX_POOL_2D: the same geometry and qparams rules, a different IR op."""
    (xi,) = imp.args(op, 1, 1)
    o = imp.options(op, "Pool2DOptions")
    x = imp.ir_input(xi, op)
    x_shape = imp.g.tensor(x).shape
    kernel, stride = (o.FilterHeight(), o.FilterWidth()), (o.StrideH(), o.StrideW())
    oh, ow, pad = _spatial(imp, op, x_shape, kernel[0], kernel[1], o.Padding(), stride, (1, 1))
    imp.check_shape(op, (x_shape[0], oh, ow, x_shape[3]))
    _same_qparams(imp, op, xi)
    imp.node(op, ir_op, [x], {"kernel": kernel, "stride": stride, "padding": pad, **extra,
                              "clamp": imp.clamp(op, o.FusedActivationFunction())})


def _average_pool_2d(imp: _Importer, op: _OpInfo) -> None:
    _pool_2d(imp, op, "avg_pool2d", {"count_include_pad": False})  # TFLite divides by the taps inside


def _same_qparams(imp: _Importer, op: _OpInfo, xi: int) -> None:
    if imp.float_mode:
        return
    a, b = imp.t(xi), imp.t(op.outputs[0])
    if (a.scale, a.zero_point) != (b.scale, b.zero_point):
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) changes scale/zero point ({a.scale}, "
                                 f"{a.zero_point}) -> ({b.scale}, {b.zero_point}); tinyaot needs them equal here")


def _broadcast_shape(imp: _Importer, op: _OpInfo, a: str, b: str) -> None:
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


def _add_or_sub(ir_op: str, options: str):
    """ADD and SUB: TFLM's int8 kernels share their arithmetic (SUB subtracts the second scaled input)."""
    def convert(imp: _Importer, op: _OpInfo) -> None:
        ai, bi = imp.args(op, 2, 2)
        o = imp.options(op, options) if op.options_type else None
        clamp = imp.clamp(op, o.FusedActivationFunction()) if o is not None else None
        if _scalar_affine(imp, op, ai, bi, ir_op, clamp):
            return
        a, b = _operand(imp, op, ai, f"{ir_op}_{op.index}_a"), _operand(imp, op, bi, f"{ir_op}_{op.index}_b")
        _broadcast_shape(imp, op, a, b)
        _same_activation_types(imp, op, [ai, bi, op.outputs[0]])
        imp.node(op, ir_op, [a, b], {"clamp": clamp})
        _check_add_qparams(imp, op, ai, bi)

    return convert


def _minmax(ir_op: str):
    """MINIMUM / MAXIMUM: TFLM compares the int8 bytes and reads no qparams, which means something only when both
    inputs share the output's scale and zero point (as TFLite's converter writes them)."""
    def convert(imp: _Importer, op: _OpInfo) -> None:
        ai, bi = imp.args(op, 2, 2)
        a, b = _operand(imp, op, ai, f"{ir_op}_{op.index}_a"), _operand(imp, op, bi, f"{ir_op}_{op.index}_b")
        _broadcast_shape(imp, op, a, b)
        if not imp.float_mode:
            for i in (ai, bi):
                _same_qparams(imp, op, i)
        imp.node(op, ir_op, [a, b], {})

    return convert


def _reshape(imp: _Importer, op: _OpInfo) -> None:
    xi = op.inputs[0] if op.inputs else -1
    if xi < 0:
        raise ModelError(f"operator {op.index} (RESHAPE) has no input")
    x = imp.ir_input(xi, op)
    out_shape = imp.t(op.outputs[0]).shape
    if int(np.prod(out_shape)) != imp.g.tensor(x).size:
        raise ModelError(f"operator {op.index} (RESHAPE): {list(imp.g.tensor(x).shape)} cannot become "
                         f"{list(out_shape)}")
    _same_qparams(imp, op, xi)
    imp.node(op, "reshape", [x], {})


def _softmax(imp: _Importer, op: _OpInfo) -> None:
    (xi,) = imp.args(op, 1, 1)
    o = imp.options(op, "SoftmaxOptions") if op.options_type else None
    x = imp.ir_input(xi, op)
    imp.check_shape(op, imp.g.tensor(x).shape)
    y = imp.t(op.outputs[0])
    if not imp.float_mode and "int16" in (y.dtype, imp.t(xi).dtype):
        _softmax16_qparams(op, imp.t(xi), y)
    elif not imp.float_mode and (y.scale != (1.0 / 256.0,) or y.zero_point != (-128,)):
        raise UnsupportedOpError(f"operator {op.index} (SOFTMAX): int8 output must have scale 1/256 and zero point "
                                 f"-128 (TFLite's rule), got {y.scale} / {y.zero_point}")
    beta = float(np.float32(o.Beta())) if o is not None else 1.0
    if not (math.isfinite(beta) and beta > 0):
        raise ModelError(f"operator {op.index} (SOFTMAX) has beta {beta}; softmax(beta * x) needs a positive, finite "
                         f"beta (converters write 1.0); {_REPAIR}")
    imp.node(op, "softmax", [x], {"beta": beta})


def _softmax16_qparams(op: _OpInfo, x, y) -> None:
    """TFLM's SOFTMAX with an int16 end (SoftmaxPrepare): int16 in and out, output scale 1/32768 within 0.1 % and
    zero point 0; or int8 in, int16 out, output scale 1/65536 within 0.1 % and zero point -32768."""
    if x.dtype == "int8":
        if y.zero_point != (INT16_SOFTMAX_ZERO_POINT,) or abs(
                np.float32(y.scale[0]) - np.float32(1.0 / 65536.0)) > np.float32(0.001) * np.float32(1.0 / 65536.0):
            raise UnsupportedOpError(f"operator {op.index} (SOFTMAX): an int8 input's int16 output must have scale "
                                     f"1/65536 and zero point -32768 (TFLite Micro's rule), got {y.scale} / "
                                     f"{y.zero_point}")
        return
    if y.dtype != "int16":
        raise UnsupportedOpError(f"operator {op.index} (SOFTMAX): {x.dtype} input with an {y.dtype} output; TFLite "
                                 "Micro's SOFTMAX writes an int16 input's result as int16")
    if y.zero_point != (0,) or abs(float(y.scale[0]) - 1.0 / 32768.0) > 0.001 / 32768.0:
        raise UnsupportedOpError(f"operator {op.index} (SOFTMAX): int16 output must have scale 1/32768 and zero "
                                 f"point 0 (TFLite's rule), got {y.scale} / {y.zero_point}")


def _max_pool_2d(imp: _Importer, op: _OpInfo) -> None:
    _pool_2d(imp, op, "max_pool2d", {})


def _const_ints(imp: _Importer, op: _OpInfo, index: int, what: str) -> np.ndarray:
    ti = imp.t(index) if index >= 0 else None
    if ti is None or ti.data is None or ti.dtype not in ("int32", "int64"):
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): the {what} must be a constant int32 tensor "
                                 "stored in the model")
    data = np.frombuffer(ti.data.tobytes(), dtype=ti.dtype)
    if data.size != int(np.prod(ti.shape, dtype=np.int64)):
        raise ModelError(f"malformed .tflite file: the {what} of operator {op.index} has the wrong data size")
    return data.reshape(ti.shape).astype(np.int64)


def _mean(imp: _Importer, op: _OpInfo) -> None:
    xi, ai = imp.args(op, 2, 2)
    o = imp.options(op, "ReducerOptions") if op.options_type else None
    x = imp.ir_input(xi, op)
    rank = len(imp.g.tensor(x).shape)
    axes = sorted({int(a) % rank for a in _const_ints(imp, op, ai, "axes").reshape(-1)})
    imp.node(op, "mean", [x], {"axes": tuple(axes), "keepdims": bool(o.KeepDims()) if o is not None else False})
    _check_rescale(imp, op, [xi], op.outputs[0])


def _concatenation(imp: _Importer, op: _OpInfo) -> None:
    if not op.inputs:
        raise ModelError(f"operator {op.index} (CONCATENATION) has no inputs")
    o = imp.options(op, "ConcatenationOptions")
    if o.FusedActivationFunction() != 0:
        raise UnsupportedOpError(f"operator {op.index} (CONCATENATION): a fused activation on a concatenation is "
                                 "not supported")
    xs = [imp.ir_input(i, op) for i in op.inputs]
    _same_activation_types(imp, op, [*op.inputs, op.outputs[0]])
    if not imp.float_mode and imp.t(op.outputs[0]).dtype == "int16":
        _same_int16_scales(imp, op)
    rank = len(imp.t(op.outputs[0]).shape)
    imp.node(op, "concat", xs, {"axis": int(o.Axis()) % rank})
    for i in op.inputs:
        _check_rescale(imp, op, [i], op.outputs[0])


def _same_int16_scales(imp: _Importer, op: _OpInfo) -> None:
    """TFLM's int16 CONCATENATION copies its inputs as they are (it checks only their zero points), so an input
    at another scale than the output's would be read at the output's: refused, not reinterpreted."""
    out = imp.t(op.outputs[0])
    for i in op.inputs:
        if imp.t(i).scale != out.scale:
            raise UnsupportedOpError(
                f"operator {op.index} (CONCATENATION): int16 input '{imp.t(i).name}' has scale {imp.t(i).scale[0]:.6g}"
                f" and the output {out.scale[0]:.6g}; TFLite Micro's int16 concatenation copies values without "
                "rescaling, so every int16 input must have the output's scale (put a QUANTIZE before it)")


def _pad(imp: _Importer, op: _OpInfo) -> None:
    """PAD, and PADV2 whose constant is the zero point (int8, and 0 in int16: real 0, as PAD pads)."""
    xi, pi, ci = (imp.args(op, 2, 3 if op.name == "PADV2" else 2) + [-1])[:3]  # ci: PADV2's constant_values
    x = imp.ir_input(xi, op)
    pads = _const_ints(imp, op, pi, "paddings")
    if pads.shape != (4, 2) or pads[0].any() or pads[3].any() or (pads < 0).any():
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): tinyaot pads the H and W axes of NHWC tensors "
                                 f"by >= 0; got paddings {pads.tolist()}")
    _same_qparams(imp, op, xi)
    if ci != -1:
        _pad_value_is_zero_point(imp, op, xi, ci)
    imp.node(op, "pad", [x], {"padding": (int(pads[1, 0]), int(pads[1, 1]), int(pads[2, 0]), int(pads[2, 1]))})


def _pad_value_is_zero_point(imp: _Importer, op: _OpInfo, xi: int, ci: int) -> None:
    """PADV2's constant_values: a scalar of the input's type (and for int8 its qparams: TFLM's rules; TFLM reads an
    int16 one's raw value) that tinyaot's pad op holds, the zero point (the pad op pads with real 0)."""
    c, x = imp.t(ci), imp.t(xi)
    if ci in imp.names or c.data is None or int(np.prod(c.shape, dtype=np.int64)) != 1:
        raise UnsupportedOpError(f"operator {op.index} (PADV2): constant_values must be a constant scalar stored "
                                 "in the model")
    if c.dtype != x.dtype or (c.dtype == "int8" and (c.scale, c.zero_point) != (x.scale, x.zero_point)):
        raise UnsupportedOpError(f"operator {op.index} (PADV2): constant_values '{c.name}' must have the input's "
                                 f"type{' and qparams' if x.dtype == 'int8' else ''} ({x.type_name}; TFLite Micro's "
                                 "rule)")
    value = np.frombuffer(c.data.tobytes(), dtype=c.dtype).reshape(-1)
    want = 0.0 if imp.float_mode else x.zero_point[0]
    if value.size != 1 or value[0] != want:
        real0 = "0.0" if imp.float_mode else f"{want}, the zero point"
        raise UnsupportedOpError(f"operator {op.index} (PADV2) pads with {value.tolist()}; tinyaot pads with real 0 "
                                 f"({real0}): other pad values are not supported")


MIRROR_PAD_MODES = {0: "reflect", 1: "symmetric"}  # tflite.MirrorPadMode -> IR pad mode


def _mirror_pad(imp: _Importer, op: _OpInfo) -> None:
    xi, pi = imp.args(op, 2, 2)
    if not imp.float_mode and imp.t(xi).dtype == "int16":
        raise UnsupportedOpError(f"operator {op.index} (MIRROR_PAD) on int16: TFLite Micro's MIRROR_PAD takes "
                                 "float32 and int8 only; keep it int8 (a QUANTIZE on each side)")
    x = imp.ir_input(xi, op)
    pads = _const_ints(imp, op, pi, "paddings")
    o = imp.options(op, "MirrorPadOptions")
    if o.Mode() not in MIRROR_PAD_MODES:
        raise ModelError(f"operator {op.index} (MIRROR_PAD) has unknown mode {o.Mode()} (expected REFLECT or "
                         "SYMMETRIC)")
    if pads.shape != (4, 2) or pads[0].any() or pads[3].any() or (pads < 0).any():
        raise UnsupportedOpError(f"operator {op.index} (MIRROR_PAD): tinyaot pads the H and W axes of NHWC tensors "
                                 f"by >= 0; got paddings {pads.tolist()}")
    _same_qparams(imp, op, xi)
    imp.node(op, "pad", [x], {"padding": (int(pads[1, 0]), int(pads[1, 1]), int(pads[2, 0]), int(pads[2, 1])),
                              "mode": MIRROR_PAD_MODES[o.Mode()]})


def _resize(ir_op: str, options: str):
    """RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR: a constant output size, TFLite's flags, the input's qparams
    (TFLM's int8 kernels compute in the input's and ignore the output's)."""
    def convert(imp: _Importer, op: _OpInfo) -> None:
        xi, si = imp.args(op, 2, 2)
        x = imp.ir_input(xi, op)
        x_shape = imp.g.tensor(x).shape
        size = _const_ints(imp, op, si, "size").reshape(-1)
        if len(x_shape) != 4 or size.shape != (2,) or (size < 1).any():
            raise UnsupportedOpError(f"operator {op.index} ({op.name}) needs a 4-D NHWC input and a size of two "
                                     f"positive ints; got input {list(x_shape)}, size {size.tolist()}")
        imp.check_shape(op, (x_shape[0], int(size[0]), int(size[1]), x_shape[3]))
        o = imp.options(op, options) if op.options_type else None
        corners, half = (bool(o.AlignCorners()), bool(o.HalfPixelCenters())) if o is not None else (False, False)
        if ir_op == "resize_bilinear" and corners and half:
            raise ModelError(f"operator {op.index} ({op.name}) sets both align_corners and half_pixel_centers; "
                             "TFLite allows one of them")
        _same_qparams(imp, op, xi)
        imp.node(op, ir_op, [x], {"align_corners": corners, "half_pixel_centers": half})

    return convert


def _operand(imp: _Importer, op: _OpInfo, index: int, name: str) -> str:
    """An activation, or a constant operand kept in flash: int8 with its qparams in an int8 model, float32 in a float
    model (quantize/lower.py gives it per-tensor qparams from its values; a one-number constant becomes a table
    instead: _scalar_affine)."""
    if index in imp.names:
        return imp.names[index]
    if imp.t(index).data is not None:
        if imp.float_mode:
            imp._refuse_float16(imp.t(index), op, "constant operand")
            return imp.constant(index, name, op, "float32", "constant operand")
        # int8, or int16 with its own scale in a 16x8 operator (whose types _same_activation_types checks)
        dtype = "int16" if imp.t(index).dtype == "int16" else "int8"
        return imp.constant(index, name, op, dtype, "constant operand")
    return imp.ir_input(index, op)


def _scalar_affine(imp: _Importer, op: _OpInfo, ai: int, bi: int, kind: str, clamp) -> bool:
    """Float ADD / MUL of an activation and a one-number constant: one table, x * scale_by + offset (the IR's
    lut 'affine', as the PyTorch front end writes `x * 0.5` or `x + 1`), not a second tensor."""
    if not imp.float_mode:
        return False
    for xi, ci in ((ai, bi), (bi, ai)):
        c = imp.t(ci)
        if xi in imp.names and ci not in imp.names and c.data is not None and int(np.prod(c.shape)) == 1:
            imp._refuse_float16(c, op, "constant operand")
            data, _ = imp._read_constant(ci, op, "float32", "constant operand")
            value = float(data.reshape(-1)[0])
            x = imp.names[xi]
            imp.check_shape(op, imp.g.tensor(x).shape)
            scale_by, offset = {"add": (1.0, value), "mul": (value, 0.0),
                                "sub": (1.0, -value) if xi == ai else (-1.0, value)}[kind]
            imp.node(op, "lut", [x], {"function": "affine", "scale_by": scale_by, "offset": offset, "clamp": clamp})
            return True
    return False


def _mul(imp: _Importer, op: _OpInfo) -> None:
    ai, bi = imp.args(op, 2, 2)
    o = imp.options(op, "MulOptions") if op.options_type else None
    name = f"mul_{op.index}"
    clamp = imp.clamp(op, o.FusedActivationFunction()) if o is not None else None
    if _scalar_affine(imp, op, ai, bi, "mul", clamp):
        return
    a, b = _operand(imp, op, ai, f"{name}_a"), _operand(imp, op, bi, f"{name}_b")
    _same_activation_types(imp, op, [ai, bi, op.outputs[0]])
    imp.node(op, "mul", [a, b], {"clamp": clamp})
    _check_rescale(imp, op, [ai, bi], op.outputs[0])


_TFLM_INT16_LUT = ("tflm_logistic", "tflm_tanh")  # the lut functions TFLM also has for int16 (ref/lut_s16.py)


def _lut(function: str, real_function: str):
    """LOGISTIC / TANH / HARD_SWISH as a 256-entry table filled at compile time by TFLM's own integer kernels
    (ref/tflm_activations.py): bit-exact with TFLite Micro, at the cost of one table lookup per element.
    In a float model, the real function (tinyaot's PTQ fills its table from it)."""
    def convert(imp: _Importer, op: _OpInfo) -> None:
        (xi,) = imp.args(op, 1, 1)
        if imp.float_mode:
            imp.node(op, "lut", [imp.ir_input(xi, op)], {"function": real_function})
            return
        if imp.t(xi).dtype == "int16" and function not in _TFLM_INT16_LUT:
            raise UnsupportedOpError(f"operator {op.index} ({op.name}) on int16: TFLite Micro has no int16 "
                                     f"{op.name} kernel (its int16 LOGISTIC and TANH are imported); keep it int8")
        imp.node(op, "lut", [imp.ir_input(xi, op)], {"function": function})  # TFLM's Prepare rules: codegen

    return convert


def _relu(clamp, rescales: bool):
    """TFLM's int8 RELU rescales to the output's qparams; its RELU6 / RELU_N1_TO_1 clamp in the input's and
    ignore the output's, so tinyaot takes those only when both agree (as converters write them)."""
    def convert(imp: _Importer, op: _OpInfo) -> None:
        (xi,) = imp.args(op, 1, 1)
        if not imp.float_mode and imp.t(xi).dtype == "int16" and op.name not in ("RELU", "RELU6"):
            raise UnsupportedOpError(f"operator {op.index} ({op.name}) on int16: TFLite Micro's int16 activations "
                                     "are RELU and RELU6; keep it int8")
        if not rescales:
            _same_qparams(imp, op, xi)
        imp.node(op, "relu", [imp.ir_input(xi, op)], {"clamp": clamp})
        _check_rescale(imp, op, [xi], op.outputs[0])

    return convert


def _transpose(imp: _Importer, op: _OpInfo) -> None:
    xi, pi = imp.args(op, 2, 2)
    x = imp.ir_input(xi, op)
    perm = tuple(int(v) for v in _const_ints(imp, op, pi, "permutation").reshape(-1))
    _same_qparams(imp, op, xi)  # TFLM copies the values (int8 or int16) and reads them at the output's qparams
    imp.node(op, "transpose", [x], {"perm": perm})


def _batch_matmul(imp: _Importer, op: _OpInfo) -> None:
    """BATCH_MATMUL of two activations (TFLM's int8 kernel); a constant operand is a FULLY_CONNECTED's weights."""
    ai, bi = imp.args(op, 2, 2)
    o = imp.options(op, "BatchMatMulOptions") if op.options_type else None
    for i in (ai, bi):
        if i not in imp.names and imp.t(i).data is not None:
            raise UnsupportedOpError(f"operator {op.index} (BATCH_MATMUL): operand '{imp.t(i).name}' is a constant; "
                                     "tinyaot multiplies two activations here (constant weights: FULLY_CONNECTED)")
    attrs = {"adj_x": bool(o.AdjX()), "adj_y": bool(o.AdjY())} if o is not None else {}
    imp.node(op, "batch_matmul", [imp.ir_input(ai, op), imp.ir_input(bi, op)], attrs)
    _check_rescale(imp, op, [ai, bi], op.outputs[0])


_UINT8_QUANTIZE = {("uint8", "int8"), ("int8", "uint8")}  # TFLM's QUANTIZE: uint8 only to or from int8


def _quantize(imp: _Importer, op: _OpInfo) -> None:
    """QUANTIZE between integer types (TFLM's Requantize): int8, int16 and int32 ends as TFLM pairs them
    (ir.ops.WIDE_CONVERSIONS), and a legacy uint8 input or output to or from int8; a float32 one is folded at the
    model input only."""
    (xi,) = imp.args(op, 1, 1)
    pair = (imp.t(xi).dtype, imp.t(op.outputs[0]).dtype)
    if "uint8" in pair and pair not in _UINT8_QUANTIZE:
        raise UnsupportedOpError(f"operator {op.index} (QUANTIZE) converts {pair[0]} to {pair[1]}; TFLite Micro's "
                                 "QUANTIZE converts uint8 only to int8 and to uint8 only from int8 "
                                 "(EvalQuantizeReference refuses the rest)")
    if pair[0] not in ("int8", "int16", "int32", "uint8"):
        raise UnsupportedOpError(f"operator {op.index} (QUANTIZE) converts a {imp.t(xi).type_name} tensor inside "
                                 "the model; tinyaot folds QUANTIZE only at the model input, and requantizes "
                                 "between int8, int16 and int32 (and a legacy uint8 input or output to or from int8) "
                                 "elsewhere")
    if pair != ("int8", "int8") and pair not in WIDE_CONVERSIONS and pair not in _UINT8_QUANTIZE:
        raise UnsupportedOpError(f"operator {op.index} (QUANTIZE) converts {pair[0]} to {pair[1]}; TFLite Micro's "
                                 "QUANTIZE converts int8 -> int8, uint8 <-> int8 and "
                                 f"{', '.join(f'{a} -> {b}' for a, b in sorted(WIDE_CONVERSIONS))}")
    imp.node(op, "quantize", [imp.ir_input(xi, op)], {})
    _check_rescale(imp, op, [xi], op.outputs[0])


CONVERTERS: dict[str, Callable[[_Importer, _OpInfo], None]] = {
    "ADD": _add_or_sub("add", "AddOptions"),
    "AVERAGE_POOL_2D": _average_pool_2d,
    "BATCH_MATMUL": _batch_matmul,
    "CONCATENATION": _concatenation,
    "CONV_2D": _conv_2d,
    "DEPTHWISE_CONV_2D": _depthwise_conv_2d,
    "TRANSPOSE_CONV": _transpose_conv,
    "FULLY_CONNECTED": _fully_connected,
    "HARD_SWISH": _lut("tflm_hard_swish", "hardswish"),
    "LOGISTIC": _lut("tflm_logistic", "sigmoid"),
    "MAX_POOL_2D": _max_pool_2d,
    "MAXIMUM": _minmax("maximum"),
    "MEAN": _mean,
    "MIRROR_PAD": _mirror_pad,
    "MINIMUM": _minmax("minimum"),
    "MUL": _mul,
    "PAD": _pad,
    "PADV2": _pad,
    "QUANTIZE": _quantize,
    "RELU": _relu((0.0, math.inf), rescales=True),
    "RELU6": _relu((0.0, 6.0), rescales=False),
    "RELU_N1_TO_1": _relu((-1.0, 1.0), rescales=False),
    "RESHAPE": _reshape,
    "RESIZE_BILINEAR": _resize("resize_bilinear", "ResizeBilinearOptions"),
    "RESIZE_NEAREST_NEIGHBOR": _resize("resize_nearest", "ResizeNearestNeighborOptions"),
    "SOFTMAX": _softmax,
    "SUB": _add_or_sub("sub", "SubOptions"),
    "SVDF": svdf,
    "TANH": _lut("tflm_tanh", "tanh"),
    "TRANSPOSE": _transpose,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_sequence_lstm,
}


def is_float_tflite(model) -> bool:
    """True for a float32 .tflite (a path, or the file's bytes): its input is float32 and is not just quantized by
    a first QUANTIZE (that is an int8 model with a float interface, which from_tflite takes). Never raises: a file
    that cannot be read is not a float model, and from_tflite says what is wrong with it."""
    try:
        buf, _ = _read_bytes(model)
        return _is_float(_parse(buf))
    except Exception:  # noqa: BLE001 -- malformed or missing: from_tflite reports it
        return False


def from_tflite(model) -> Graph:
    """Import an int8 .tflite model (a path, or the file's bytes) as an int8 IR graph."""
    return _import(model, float_mode=False)


def from_tflite_float(model) -> Graph:
    """Import a float32 .tflite model (a path, or the file's bytes) as a float IR graph for tinyaot's calibration
    and PTQ: float32 activations without qparams, float32 weights and biases in the IR layouts, fused activations
    as `clamp`, NHWC, and calibration samples in the model's own layout (torch_input_rank 0)."""
    g = _import(model, float_mode=True)
    for t in g.constants():
        bad = ~np.isfinite(t.data) if t.dtype == "float32" else np.zeros(t.data.shape, bool)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ModelError(f"constant '{t.name}' holds {int(bad.sum())} non-finite value(s) (first at index "
                             f"{idx}: {t.data[idx]}); int8 quantization needs finite weights (fix the model)")
    return g


def _import(model, float_mode: bool) -> Graph:
    buf, source = _read_bytes(model)
    try:
        g = _Importer(_parse(buf), source, float_mode).run()
    except TinyAOTError:
        raise
    except Exception as exc:  # noqa: BLE001 -- the generated parser raises struct.error, IndexError, ...
        raise ModelError(f"malformed .tflite file ({source}): the flatbuffer cannot be read "
                         f"({type(exc).__name__}: {exc}); is the file truncated or corrupt?") from None
    g.prune()
    return g
