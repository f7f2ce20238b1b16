"""Write small .tflite flatbuffers for tests: single-op models (int8 or float32) to cross-check against TFLite
Micro, deliberately broken files, and rewrites of real files (`load` reads a .tflite back into a Model).
Uses the `tflite` package's generated builder and reader functions, nothing else."""
from __future__ import annotations

from dataclasses import dataclass, field

import flatbuffers
import numpy as np
import tflite

TYPE_CODES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "int8": 9, "int16": 7}
TYPE_NAMES = {v: k for k, v in TYPE_CODES.items()}


@dataclass
class T:
    """A tensor: shape and dtype, optional constant data and quantization (scale may be per channel)."""

    shape: tuple[int, ...]
    dtype: str = "int8"
    data: np.ndarray | None = None
    scale: float | list[float] | None = None
    zero_point: int | list[int] = 0
    axis: int = 0
    name: str = ""
    variable: bool = False  # a variable tensor (state an operator updates, e.g. an LSTM's)


@dataclass
class Op:
    """An operator by builtin name; options: (options table name, {Field: value}) or None."""

    code: str
    inputs: list[int]
    outputs: list[int]
    options: tuple[str, dict] | None = None
    version: int = 1
    intermediates: list[int] = field(default_factory=list)  # e.g. a converter's LSTM gate-scale tensors
    custom: str | None = None  # a custom operator's custom_code (code "CUSTOM")


@dataclass
class Model:
    tensors: list[T]
    ops: list[Op]
    inputs: list[int]
    outputs: list[int]
    version: int = 3
    extra: dict = field(default_factory=dict)


def _int_vector(b: flatbuffers.Builder, values, start) -> int:
    start(b, len(values))
    for v in reversed(list(values)):
        b.PrependInt32(int(v))
    return b.EndVector()


def _table_vector(b: flatbuffers.Builder, offsets, start) -> int:
    start(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _options(b: flatbuffers.Builder, name: str, fields: dict) -> int:
    """An options table; a list value is an int vector field (SqueezeOptions' SqueezeDims), written first."""
    vectors = {k: _int_vector(b, v, getattr(tflite, f"{name}Start{k}Vector")) for k, v in fields.items()
               if isinstance(v, (list, tuple))}
    getattr(tflite, f"{name}Start")(b)
    for key, value in fields.items():
        getattr(tflite, f"{name}Add{key}")(b, vectors.get(key, value))
    return getattr(tflite, f"{name}End")(b)


def build(m: Model) -> bytes:
    b = flatbuffers.Builder(1024)
    # Buffers: 0 is the empty sentinel, then one per constant tensor.
    buffer_of: dict[int, int] = {}
    buffer_offsets = []
    tflite.BufferStart(b)
    buffer_offsets.append(tflite.BufferEnd(b))
    for i, t in enumerate(m.tensors):
        if t.data is None:
            continue
        raw = np.ascontiguousarray(t.data.astype(t.dtype)).view(np.uint8).reshape(-1)
        b.StartVector(1, raw.size, 16)
        for v in reversed(raw.tolist()):
            b.PrependUint8(v)
        data = b.EndVector()
        tflite.BufferStart(b)
        tflite.BufferAddData(b, data)
        buffer_of[i] = len(buffer_offsets)
        buffer_offsets.append(tflite.BufferEnd(b))
    tensor_offsets = []
    for i, t in enumerate(m.tensors):
        name = b.CreateString(t.name or f"t{i}")
        shape = _int_vector(b, t.shape, tflite.TensorStartShapeVector)
        quant = None
        if t.scale is not None:
            scales = np.atleast_1d(np.asarray(t.scale, dtype=np.float32))
            zps = np.atleast_1d(np.asarray(t.zero_point, dtype=np.int64))
            if zps.size == 1 and scales.size > 1:
                zps = np.repeat(zps, scales.size)
            sv = b.CreateNumpyVector(scales)
            zv = b.CreateNumpyVector(zps)
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, sv)
            tflite.QuantizationParametersAddZeroPoint(b, zv)
            tflite.QuantizationParametersAddQuantizedDimension(b, t.axis)
            quant = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, TYPE_CODES[t.dtype])
        tflite.TensorAddBuffer(b, buffer_of.get(i, 0))
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        if t.variable:
            tflite.TensorAddIsVariable(b, True)
        tensor_offsets.append(tflite.TensorEnd(b))
    codes = sorted({(op.code, op.version, op.custom or "") for op in m.ops})
    code_index = {c: j for j, c in enumerate(codes)}
    code_offsets = []
    for name, version, custom in codes:
        value = getattr(tflite.BuiltinOperator, name)
        custom_code = b.CreateString(custom) if custom else None
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(value, 127))
        tflite.OperatorCodeAddBuiltinCode(b, value)
        tflite.OperatorCodeAddVersion(b, version)
        if custom_code is not None:
            tflite.OperatorCodeAddCustomCode(b, custom_code)
        code_offsets.append(tflite.OperatorCodeEnd(b))
    op_offsets = []
    for op in m.ops:
        ins = _int_vector(b, op.inputs, tflite.OperatorStartInputsVector)
        outs = _int_vector(b, op.outputs, tflite.OperatorStartOutputsVector)
        opts = _options(b, op.options[0], op.options[1]) if op.options else None
        scratch = _int_vector(b, op.intermediates, tflite.OperatorStartIntermediatesVector) \
            if op.intermediates else None
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, code_index[(op.code, op.version, op.custom or "")])
        tflite.OperatorAddInputs(b, ins)
        tflite.OperatorAddOutputs(b, outs)
        if opts is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, op.options[0]))
            tflite.OperatorAddBuiltinOptions(b, opts)
        if scratch is not None:
            tflite.OperatorAddIntermediates(b, scratch)
        op_offsets.append(tflite.OperatorEnd(b))
    tensors = _table_vector(b, tensor_offsets, tflite.SubGraphStartTensorsVector)
    inputs = _int_vector(b, m.inputs, tflite.SubGraphStartInputsVector)
    outputs = _int_vector(b, m.outputs, tflite.SubGraphStartOutputsVector)
    operators = _table_vector(b, op_offsets, tflite.SubGraphStartOperatorsVector)
    sg_name = b.CreateString("main")
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors)
    tflite.SubGraphAddInputs(b, inputs)
    tflite.SubGraphAddOutputs(b, outputs)
    tflite.SubGraphAddOperators(b, operators)
    tflite.SubGraphAddName(b, sg_name)
    subgraph = tflite.SubGraphEnd(b)
    subgraphs = _table_vector(b, [subgraph], tflite.ModelStartSubgraphsVector)
    opcodes = _table_vector(b, code_offsets, tflite.ModelStartOperatorCodesVector)
    buffers = _table_vector(b, buffer_offsets, tflite.ModelStartBuffersVector)
    desc = b.CreateString("tinyaot test model")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, m.version)
    tflite.ModelAddOperatorCodes(b, opcodes)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, buffers)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def load(buf: bytes) -> Model:
    """Read a single-subgraph .tflite back into a Model (tensors with their data and quantization, operators with
    their scalar options), so a test can rewrite a real file and build() it again."""
    fb = tflite.Model.GetRootAsModel(buf, 0)
    sg = fb.Subgraphs(0)
    tensors = []
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        dtype = TYPE_NAMES[t.Type()]
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        buffer = fb.Buffers(t.Buffer())
        data = None
        if buffer.DataLength():
            data = np.frombuffer(buffer.DataAsNumpy().tobytes(), dtype=dtype).reshape(shape)
        q = t.Quantization()
        scale, zp, axis = None, 0, 0
        if q is not None and q.ScaleLength():
            scale = [float(v) for v in q.ScaleAsNumpy()]
            zp = [int(v) for v in q.ZeroPointAsNumpy()] if q.ZeroPointLength() else 0
            scale, zp = (scale[0], zp[0] if isinstance(zp, list) else zp) if len(scale) == 1 else (scale, zp)
            axis = int(q.QuantizedDimension())
        tensors.append(T(shape, dtype, data, scale, zp, axis, t.Name().decode() if t.Name() else f"t{i}",
                         bool(t.IsVariable())))
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    option_names = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
    ops = []
    for j in range(sg.OperatorsLength()):
        op = sg.Operators(j)
        code = fb.OperatorCodes(op.OpcodeIndex())
        options = None
        if op.BuiltinOptionsType():
            cls = option_names[op.BuiltinOptionsType()]
            table = getattr(tflite, cls)()
            table.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
            prefix = f"{cls}Add"
            fields = [k[len(prefix):] for k in dir(tflite) if k.startswith(prefix)]
            scalars = [f for f in fields if not hasattr(tflite, f"{cls}Start{f}Vector")]
            options = (cls, {f: getattr(table, f)() for f in scalars})
        ops.append(Op(names[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())],
                      _ints(op, "Inputs"), _ints(op, "Outputs"), options, code.Version(),
                      _ints(op, "Intermediates"), code.CustomCode().decode() if code.CustomCode() else None))
    return Model(tensors, ops, _ints(sg, "Inputs"), _ints(sg, "Outputs"), fb.Version())


def _ints(table, field: str) -> list[int]:
    return [int(getattr(table, field)(j)) for j in range(getattr(table, f"{field}Length")())]


def run_tflm(model: bytes, inputs: np.ndarray) -> np.ndarray:
    """Outputs of TFLite Micro's reference kernels for each input (one invoke per sample)."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=max(64 * 1024, 8 * len(model)))
    shape = tuple(interp.get_input_details(0)["shape"])
    outs = []
    for x in inputs:
        interp.set_input(np.asarray(x).reshape(shape), 0)
        interp.invoke()
        outs.append(interp.get_output(0).copy())
    return np.stack(outs)


def run_tflm_outputs(model: bytes, inputs: np.ndarray) -> list[np.ndarray]:
    """Every output of TFLite Micro's reference kernels, one invoke per input (a row per input)."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=max(64 * 1024, 8 * len(model)))
    n_out = len(load(model).outputs)
    outs: list[list[np.ndarray]] = [[] for _ in range(n_out)]
    for x in inputs:
        interp.set_input(x, 0)
        interp.invoke()
        for k in range(n_out):
            outs[k].append(interp.get_output(k).copy())
    return [np.stack(o) for o in outs]


def tflm_refuses(model: bytes) -> bool:
    """TFLite Micro refuses the model when allocating (its Prepare functions) or at its first invoke."""
    from tflite_micro.python.tflite_micro import runtime

    try:
        runtime.Interpreter.from_bytes(model, arena_size=max(64 * 1024, 8 * len(model))).invoke()
    except RuntimeError:
        return True
    return False
