"""The .tflite flatbuffer -> plain Python: the model's tensors (shape, type, constant bytes, quantization) and
operators, every read bounds-checked.

The file is parsed with the `tflite` package (the flatbuffer schema). Any failure of the parser becomes a
ModelError (the importer catches what the generated accessors raise), so a truncated or corrupted file never
crashes or hangs the compiler. TFLite's own rules for one quantized tensor (scales, zero points, per-channel axis)
are checked as the tensor is read: they hold whatever the importer makes of the tensor.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tflite

from tinyaot.errors import ModelError, UnsupportedOpError

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
_ZERO_POINT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (0, 0), "int32": (0, 0), "int64": (0, 0)}
_ZERO_POINT_RULES = {"int16": "int16 tensors are symmetric in TFLite (zero point 0; -32768 only for the int16 output "
                              "of TFLite Micro's int8 -> int16 SOFTMAX)",
                     "int32": "an int32 bias is symmetric in TFLite", "int64": "an int64 bias is symmetric in TFLite"}
# The one asymmetric int16 zero point TFLite writes: an int8 SOFTMAX's int16 output (scale 1/65536), which the ops
# reading it (a QUANTIZE, or the model output) take; any other op's 16x8 kernel refuses it (zero point 0).
INT16_SOFTMAX_ZERO_POINT = -32768

# TensorType codes of the schema -> numpy dtypes tinyaot can hold.
DTYPES = {0: "float32", 2: "int32", 3: "uint8", 4: "int64", 7: "int16", 9: "int8"}
_TYPE_NAMES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool", 7: "int16",
               8: "complex64", 9: "int8", 10: "float64", 17: "int4", 18: "bfloat16"}

REPAIR = "the file is corrupt or its converter is broken: re-convert the model with a current TFLite converter"


def _builtin_names() -> dict[int, str]:
    return {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}


@dataclass(frozen=True)
class TensorInfo:
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
        return DTYPES.get(self.type_code)

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES.get(self.type_code, f"type {self.type_code}")

    @property
    def quantized(self) -> bool:
        return len(self.scale) > 0


@dataclass(frozen=True)
class OpInfo:
    index: int
    code: int
    name: str  # e.g. CONV_2D
    inputs: list[int]  # -1 marks an absent optional input
    outputs: list[int]
    options: object | None  # the flatbuffer table of builtin options, or None
    options_type: int  # BuiltinOptions union tag
    custom: str | None = None  # a custom operator's custom_code


@dataclass(frozen=True)
class ModelInfo:
    tensors: list[TensorInfo]
    ops: list[OpInfo]
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


def read_bytes(model) -> tuple[bytes, str]:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), "model.tflite"
    path = Path(model)
    if not path.is_file():
        raise ModelError(f"TFLite model file {str(path)!r} does not exist")
    return path.read_bytes(), path.name


def parse(buf: bytes) -> ModelInfo:
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
        ops.append(OpInfo(i, code, name, ins, outs, op.BuiltinOptions(), int(op.BuiltinOptionsType()), custom))
    inputs = r.ints(sg, "Inputs", "subgraph inputs")
    outputs = r.ints(sg, "Outputs", "subgraph outputs")
    for what, lst in (("input", inputs), ("output", outputs)):
        for t in lst:
            if not 0 <= t < n_tensors:
                raise ModelError(f"malformed .tflite file: model {what} is tensor {t}, but the subgraph has "
                                 f"{n_tensors} tensors")
    return ModelInfo(tensors, ops, inputs, outputs)


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


def _parse_tensor(r: _Reader, model, t, index: int, n_buffers: int, intermediate: bool = False) -> TensorInfo:
    raw_name = t.Name()
    name = raw_name.decode(errors="replace") if raw_name else f"tensor{index}"
    shape = tuple(r.ints(t, "Shape", f"tensor {index} shape"))
    if intermediate:  # never read: only TFLite Micro's rule applies
        if math.prod(shape) != 0:
            raise ModelError(f"tensor {index} ('{name}') is an operator's intermediate of shape {list(shape)}; "
                             "TFLite Micro supports only empty intermediates (shape [0]), which carry no data; "
                             "re-convert the model")
        return TensorInfo(index, name, shape, int(t.Type()), None, (), (), 0)
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
    info = TensorInfo(index, name, shape, type_code, data, scale, zero_point, axis, bool(t.IsVariable()))
    if info.quantized and info.type_code != 0:  # TFLite ignores quantization on a float32 tensor
        _check_qparams(info)
    return info



def _check_qparams(ti: TensorInfo) -> None:
    """TFLite's rules for one quantized tensor: positive finite scales in a sane range, zero points inside the
    tensor's integer type (symmetric int16 / int32), and one scale per channel of the quantized dimension."""
    what = f"tensor {ti.index} ('{ti.name}', {ti.type_name})"
    lo, hi = (MIN_SCALE**2, MAX_SCALE**2) if ti.dtype in ("int32", "int64") else (MIN_SCALE, MAX_SCALE)
    for c, s in enumerate(ti.scale):
        where = f" (channel {c})" if len(ti.scale) > 1 else ""
        if not (math.isfinite(s) and s > 0):
            raise ModelError(f"{what} has scale {s}{where}; a scale must be positive and finite ({REPAIR})")
        if not lo <= s <= hi:
            raise ModelError(f"{what} has scale {s:.3g}{where}, outside the range tinyaot accepts ({lo:.0e} to "
                             f"{hi:.0e}; trained models use about 1e-6 to 10). Such a scale makes the integer "
                             f"arithmetic overflow or vanish; {REPAIR}")
    zp_range = _ZERO_POINT_RANGES.get(ti.dtype)
    if zp_range is not None:
        bad = [z for z in ti.zero_point if not zp_range[0] <= z <= zp_range[1]
               and not (ti.dtype == "int16" and z == INT16_SOFTMAX_ZERO_POINT)]
        if bad:
            rule = _ZERO_POINT_RULES.get(ti.dtype, f"the zero point of {ti.dtype} values is one of them, in "
                                                   f"[{zp_range[0]}, {zp_range[1]}]")
            raise ModelError(f"{what} has zero point {bad[0]}; {rule} ({REPAIR})")
    if len(ti.scale) > 1 and not (0 <= ti.axis < len(ti.shape) and ti.shape[ti.axis] == len(ti.scale)):
        raise ModelError(f"{what} has {len(ti.scale)} per-channel scales along dimension {ti.axis}, but its shape "
                         f"is {list(ti.shape)}: one scale per channel of that dimension is needed ({REPAIR})")




def read_options(op: OpInfo, cls_name: str):
    """The operator's builtin options table as the schema class `cls_name` (e.g. Conv2DOptions)."""
    table = op.options
    if table is None or op.options_type != getattr(tflite.BuiltinOptions, cls_name):
        raise ModelError(f"malformed .tflite file: operator {op.index} ({op.name}) lacks its {cls_name}")
    opts = getattr(tflite, cls_name)()
    opts.Init(table.Bytes, table.Pos)
    return opts


def input_is_quantized(info: ModelInfo, x: int | None = None) -> bool:
    """A float32 input whose only reader is a QUANTIZE to int8 (int16 in a 16x8 model): an integer model with a
    float interface."""
    x = info.inputs[0] if x is None else x
    readers = [op for op in info.ops if x in op.inputs]
    return (len(readers) == 1 and readers[0].name == "QUANTIZE" and readers[0].outputs
            and info.tensors[readers[0].outputs[0]].dtype in ("int8", "int16"))


def is_float_model(info: ModelInfo) -> bool:
    """A float32 model (from_tflite_float's), not an integer one with a float interface."""
    return bool(info.inputs) and info.tensors[info.inputs[0]].type_code == 0 and not input_is_quantized(info)
