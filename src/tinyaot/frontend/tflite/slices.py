"""STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK, PACK, SQUEEZE, EXPAND_DIMS, DEPTH_TO_SPACE and SPACE_TO_DEPTH:
operators that move values without changing them, as the IR's slice, concat, reshape and transpose.

TFLM's kernels copy the stored values (int8, int16, float32) and the output reads them at its own qparams. The IR's
ops keep the input's, so an int8 model's input and output must share scale and zero point, as the converter writes
them (these are "same scale" ops in TFLite's quantizer); a model that would have TFLM reinterpret the values is
refused. The IR's slice takes axis 0 whole (the batch): a tensor whose axis 0 is cut (a [T, F] sequence) is sliced
through a view with a leading axis of 1, and a PACK along axis 0 concatenates such views.

What TFLM's Prepare refuses is refused naming its rule; what its Eval alone would get wrong (a shape the options do
not give, an index past the tensor, which its release build reads regardless) is a malformed model here.
"""
from __future__ import annotations

import math

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.importer import Importer, many_outputs
from tinyaot.frontend.tflite.reader import REPAIR, OpInfo
from tinyaot.ir import Node, Tensor

STRIDED_SLICE_MAX_DIMS = 4  # TFLM's StridedSlicePrepare: "input dim should not exceed 4"
SLICE_MAX_DIMS = 5  # TFLM's SLICE (kMaxDim)
SQUEEZE_MAX_DIMS = 8  # TFLM's SqueezePrepare


# ---- shared --------------------------------------------------------------------------------------------------


def _unscaled(imp: Importer, op: OpInfo, xi: int, yi: int) -> None:
    """TFLM copies the stored values and the output reads them at its own qparams; tinyaot's slice, concat of equal
    qparams and views keep the input's, so the two must agree (types too: TFLM copies the output's type)."""
    a, b = imp.t(xi), imp.t(yi)
    if a.type_code != b.type_code:
        raise ModelError(f"operator {op.index} ({op.name}) reads {a.type_name} '{a.name}' and writes {b.type_name} "
                         f"'{b.name}'; TFLite Micro copies values of one type")
    if (a.scale, a.zero_point) != (b.scale, b.zero_point):
        raise UnsupportedOpError(
            f"operator {op.index} ({op.name}): '{a.name}' has scale / zero point {a.scale} / {a.zero_point} and "
            f"'{b.name}' {b.scale} / {b.zero_point}; TFLite Micro copies the stored values without rescaling, which "
            "would read them as other numbers, so tinyaot needs them equal (TFLite's quantizer writes them equal)")


def _view(imp: Importer, op: OpInfo, src: str, shape: tuple[int, ...], name: str) -> str:
    """A reshape of `src` (no kernel: the same bytes) into an intermediate tensor."""
    t = imp.g.tensor(src)
    imp.g.add_tensor(Tensor(name, tuple(shape), t.dtype, qparams=t.qparams))
    imp.g.nodes.append(Node("reshape", name, [src], [name], {}, source=f"{imp.source}:{op.index}"))
    return name


def _written(imp: Importer, yi: int) -> bool:
    """A tensor some later operator reads, or a model output (a split output nothing reads gets no node)."""
    return yi in imp.output_indices or any(yi in op.inputs for op in imp.info.ops)


def _slice_into(imp: Importer, op: OpInfo, x: str, begin, end, strides, yi: int, name: str) -> None:
    """x[begin:end:strides] (every axis resolved inside the tensor, strides >= 1) into the model's tensor `yi`, whose
    shape may drop axes of 1 (a shrunk axis, an unpacked one): a slice, then a view where the shapes differ."""
    shape = tuple(imp.g.tensor(x).shape)
    begin, end, strides = (tuple(int(v) for v in vs) for vs in (begin, end, strides))
    counts = tuple(-(-(e - b) // s) for b, e, s in zip(begin, end, strides))
    y_shape = tuple(imp.t(yi).shape)
    if math.prod(counts) != math.prod(y_shape):
        raise ModelError(f"operator {op.index} ({op.name}): output '{imp.t(yi).name}' has shape {list(y_shape)}, but "
                         f"the slice of {list(shape)} its operands give is {list(counts)}; {REPAIR}")
    if counts == shape:  # the whole tensor: no copy
        out = imp.activation(yi, f"{name}_out", op)
        imp.g.nodes.append(Node("reshape", name, [x], [out], {}, source=f"{imp.source}:{op.index}"))
        return
    if (begin[0], end[0], strides[0]) != (0, shape[0], 1):  # cuts axis 0, which the IR's slice takes whole
        x = _view(imp, op, x, (1, *shape), f"{name}_in")
        begin, end, strides, counts = (0, *begin), (1, *end), (1, *strides), (1, *counts)
    attrs = {"begin": begin, "end": end, "strides": None if set(strides) == {1} else strides}
    if counts == y_shape:
        out = imp.activation(yi, f"{name}_out", op)
        imp.g.nodes.append(Node("slice", name, [x], [out], attrs, source=f"{imp.source}:{op.index}"))
        return
    t = imp.g.tensor(x)
    imp.g.add_tensor(Tensor(f"{name}_taken", counts, t.dtype, qparams=t.qparams))
    imp.g.nodes.append(Node("slice", name, [x], [f"{name}_taken"], attrs, source=f"{imp.source}:{op.index}"))
    out = imp.activation(yi, f"{name}_out", op)
    imp.g.nodes.append(Node("reshape", f"{name}_view", [f"{name}_taken"], [out], {}, source=f"{imp.source}:{op.index}"))


def _reshape_into(imp: Importer, op: OpInfo, xi: int, want: tuple[int, ...], rule: str) -> None:
    """SQUEEZE / EXPAND_DIMS: a view, its output shape the one TFLM's Prepare derives."""
    got = tuple(imp.t(op.outputs[0]).shape)
    if got != tuple(want):
        raise ModelError(f"operator {op.index} ({op.name}): output shape {list(got)}, but its input "
                         f"{list(imp.t(xi).shape)} and options give {list(want)} ({rule}); {REPAIR}")
    x = imp.ir_input(xi, op)
    imp.prepare(_unscaled, op, xi, op.outputs[0])
    imp.node(op, "reshape", [x], {})


def _axis(op: OpInfo, value: int, rank: int, what: str = "axis") -> int:
    if not -rank <= value < rank:
        raise ModelError(f"operator {op.index} ({op.name}): {what} {value} is outside the {rank}-D tensor; {REPAIR}")
    return value % rank


def _scalar_axis(imp: Importer, op: OpInfo, index: int) -> int:
    """SPLIT / SPLIT_V's axis: a constant (TFLM's Prepare: "Non-constant >axis< tensor is not supported"), read as
    its first int32 (an int64 one's low word: the same value)."""
    if imp.t(index).data is None or index in imp.names:
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): the axis must be a constant tensor stored in the "
                                 "model (TFLite Micro's rule: Non-constant >axis< tensor is not supported)")
    values = imp.const_ints(op, index, "axis").reshape(-1)
    if values.size < 1:
        raise ModelError(f"operator {op.index} ({op.name}): the axis tensor is empty; {REPAIR}")
    return int(values[0])


# ---- STRIDED_SLICE and SLICE ---------------------------------------------------------------------------------


def _int32_operand(imp: Importer, op: OpInfo, index: int, what: str, rank: int) -> np.ndarray:
    """A STRIDED_SLICE operand: constant (TFLM's Prepare refuses another) and int32 (TFLM reads it as int32 whatever
    its type, so int64 values would be read as other numbers), one value per axis."""
    ti = imp.t(index) if index >= 0 else None
    if ti is None or ti.data is None or index in imp.names:
        raise UnsupportedOpError(f"operator {op.index} (STRIDED_SLICE): the {what} must be a constant tensor stored "
                                 f"in the model (TFLite Micro's rule: Non-constant >{what}< tensor is not supported)")
    if ti.dtype != "int32":
        raise UnsupportedOpError(f"operator {op.index} (STRIDED_SLICE): the {what} is {ti.type_name}; TFLite Micro "
                                 "reads it as int32 whatever its type, so these would be other numbers: re-convert "
                                 "the model with int32 indices")
    values = imp.const_ints(op, index, what).reshape(-1)
    if values.size < rank:
        raise ModelError(f"operator {op.index} (STRIDED_SLICE): {values.size} {what} values for a {rank}-D input; "
                         f"TFLite Micro reads one per axis; {REPAIR}")
    return values[:rank]


def _eval_range(size: int, begin: int, end: int, stride: int, begin_mask: bool, end_mask: bool,
                shrink: bool) -> tuple[int, int]:
    """(start, stop) of one axis as TFLM's Eval resolves them (StridedSliceStartForAxis / EndForAxis), stride > 0."""
    start = begin + size if begin < 0 else begin
    start = 0 if begin_mask else min(max(start, 0), size)
    if shrink:
        return start, (start if start >= size else start + 1)
    stop = end + size if end < 0 else end
    return start, (size if end_mask else min(max(stop, 0), size))


def _prepare_count(size: int, begin: int, end: int, stride: int, begin_mask: bool, end_mask: bool,
                   shrink: bool) -> int:
    """The axis's length as TFLM's Prepare checks the output shape (CheckOutputSize, with StartForAxis /
    StopForAxis: a shrunk axis is always one long there)."""
    start = begin + size if begin < 0 and not begin_mask else (0 if begin_mask else begin)
    start = min(max(start, 0), size)
    if shrink:
        return 1
    stop = size if end_mask else (end + size if end < 0 else end)
    stop = min(max(stop, 0), size)
    return max(-(-(stop - start) // stride), 0)


def strided_slice(imp: Importer, op: OpInfo) -> None:
    """TFLM's STRIDED_SLICE: begin / end / strides per axis with begin_mask, end_mask and shrink_axis_mask; TFLM
    sets the ellipsis and new-axis masks to 0 (and reads no `offset`), and so does tinyaot."""
    where = f"operator {op.index} (STRIDED_SLICE)"
    xi, bi, ei, si = imp.args(op, 4, 4)
    x = imp.ir_input(xi, op)
    shape = tuple(imp.g.tensor(x).shape)
    rank = len(shape)
    if rank > STRIDED_SLICE_MAX_DIMS:
        raise UnsupportedOpError(f"{where}: a {rank}-D input; TFLite Micro's STRIDED_SLICE takes at most "
                                 f"{STRIDED_SLICE_MAX_DIMS} dimensions (its Prepare: input dim should not exceed 4)")
    begin, end, strides = (_int32_operand(imp, op, k, what, rank)
                           for k, what in ((bi, "begin"), (ei, "end"), (si, "strides")))
    o = imp.options(op, "StridedSliceOptions") if op.options_type else None
    begin_mask, end_mask, shrink_mask = ((o.BeginMask(), o.EndMask(), o.ShrinkAxisMask()) if o is not None
                                         else (0, 0, 0))
    if (strides == 0).any():
        raise ModelError(f"{where}: a stride of 0 (TFLite Micro's Prepare: stride value has to be non-zero)")
    if (strides < 0).any():
        raise UnsupportedOpError(f"{where}: negative strides {strides.tolist()} (a reversed axis) are not supported: "
                                 "tinyaot's slice walks forward; reverse the axis before the model, or slice forward")
    starts, stops, counts, kept = [], [], [], []
    for k in range(rank):
        flags = (bool(begin_mask >> k & 1), bool(end_mask >> k & 1), bool(shrink_mask >> k & 1))
        args = (shape[k], int(begin[k]), int(end[k]), int(strides[k]), *flags)
        start, stop = _eval_range(*args)
        count = max(-(-(stop - start) // int(strides[k])), 0)
        if count != _prepare_count(*args):
            raise ModelError(f"{where}: axis {k} of {list(shape)} is {_prepare_count(*args)} long by TFLite Micro's "
                             f"Prepare but {count} by its Eval (a shrunk axis whose begin is past the end); {REPAIR}")
        if count == 0:
            raise ModelError(f"{where} takes nothing along axis {k}; {REPAIR}")
        starts.append(start)
        stops.append(stop)
        counts.append(count)
        if not flags[2]:
            kept.append(count)
    if tuple(imp.t(op.outputs[0]).shape) != tuple(kept):
        raise ModelError(f"{where}: output shape {list(imp.t(op.outputs[0]).shape)}, but begin, end, strides and the "
                         f"masks give {kept} (TFLite Micro's Prepare, CheckOutputSize, refuses it); {REPAIR}")
    imp.prepare(_unscaled, op, xi, op.outputs[0])
    _slice_into(imp, op, x, starts, stops, strides.tolist(), op.outputs[0], f"slice_{op.index}")


def slice_(imp: Importer, op: OpInfo) -> None:
    """TFLM's SLICE: begin and size (int32 or int64, one per axis; size -1 to the end of the axis)."""
    where = f"operator {op.index} (SLICE)"
    xi, bi, si = imp.args(op, 3, 3)
    x = imp.ir_input(xi, op)
    shape = tuple(imp.g.tensor(x).shape)
    if len(shape) > SLICE_MAX_DIMS:
        raise UnsupportedOpError(f"{where}: a {len(shape)}-D input; TFLite Micro's SLICE takes at most "
                                 f"{SLICE_MAX_DIMS} dimensions")
    if imp.t(bi).dtype != imp.t(si).dtype:
        raise ModelError(f"{where}: begin is {imp.t(bi).type_name} and size {imp.t(si).type_name}; TFLite Micro "
                         "needs one type (int32 or int64)")
    begin, size = imp.const_ints(op, bi, "begin").reshape(-1), imp.const_ints(op, si, "size").reshape(-1)
    if begin.size != len(shape) or size.size != len(shape):
        raise ModelError(f"{where}: {begin.size} begin and {size.size} size values for a {len(shape)}-D input; "
                         f"{REPAIR}")
    end = [d if s == -1 else b + s for b, s, d in zip(begin.tolist(), size.tolist(), shape)]
    if any(b < 0 or e > d or e <= b for b, e, d in zip(begin.tolist(), end, shape)):
        raise ModelError(f"{where}: begin {begin.tolist()} and size {size.tolist()} reach outside the input "
                         f"{list(shape)} (TFLite Micro's Eval would read past it); {REPAIR}")
    imp.prepare(_unscaled, op, xi, op.outputs[0])
    _slice_into(imp, op, x, begin.tolist(), end, [1] * len(shape), op.outputs[0], f"slice_{op.index}")


# ---- SPLIT, SPLIT_V, UNPACK: one operator, several outputs ---------------------------------------------------


def _split_along(imp: Importer, op: OpInfo, xi: int, axis: int, sizes: list[int]) -> None:
    """Output k takes `sizes[k]` entries of `axis`, in order (TFLM's SplitImpl, whose outputs' shapes give the
    sizes)."""
    x = imp.ir_input(xi, op)
    shape = tuple(imp.g.tensor(x).shape)
    if sum(sizes) != shape[axis]:
        raise ModelError(f"operator {op.index} ({op.name}): the outputs take {sum(sizes)} entries of axis {axis}, "
                         f"the input {list(shape)} has {shape[axis]}; {REPAIR}")
    at = 0
    for k, (yi, n) in enumerate(zip(op.outputs, sizes)):
        imp.prepare(_unscaled, op, xi, yi)
        if _written(imp, yi):
            begin = tuple(at if a == axis else 0 for a in range(len(shape)))
            end = tuple(at + n if a == axis else d for a, d in enumerate(shape))
            _slice_into(imp, op, x, begin, end, (1,) * len(shape), yi, f"slice_{op.index}_{k}")
        at += n


def _same_rank_outputs(imp: Importer, op: OpInfo, xi: int, axis: int) -> list[int]:
    """Each output's length along `axis`, its other dimensions the input's."""
    shape = tuple(imp.t(xi).shape)
    sizes = []
    for yi in op.outputs:
        y = tuple(imp.t(yi).shape)
        if len(y) != len(shape) or y[:axis] != shape[:axis] or y[axis + 1:] != shape[axis + 1:]:
            raise ModelError(f"operator {op.index} ({op.name}): output '{imp.t(yi).name}' {list(y)} does not fit "
                             f"input {list(shape)} split along axis {axis}; {REPAIR}")
        sizes.append(y[axis])
    return sizes


@many_outputs
def split(imp: Importer, op: OpInfo) -> None:
    """TFLM's SPLIT: inputs (axis, input), equal parts, one per output."""
    ai, xi = imp.args(op, 2, 2)
    axis = _axis(op, _scalar_axis(imp, op, ai), len(imp.t(xi).shape))
    sizes = _same_rank_outputs(imp, op, xi, axis)
    if len(set(sizes)) != 1:
        raise ModelError(f"operator {op.index} (SPLIT): outputs of {sizes} along axis {axis}; SPLIT's are equal "
                         f"(TFLite Micro sizes every one as the first); {REPAIR}")
    _split_along(imp, op, xi, axis, sizes)


@many_outputs
def split_v(imp: Importer, op: OpInfo) -> None:
    """TFLM's SPLIT_V: inputs (input, size_splits, axis); TFLM takes each part's size from its output's shape (it
    never reads size_splits), and so does tinyaot."""
    xi, _, ai = imp.args(op, 3, 3)
    axis = _axis(op, _scalar_axis(imp, op, ai), len(imp.t(xi).shape))
    _split_along(imp, op, xi, axis, _same_rank_outputs(imp, op, xi, axis))


@many_outputs
def unpack(imp: Importer, op: OpInfo) -> None:
    """TFLM's UNPACK: `num` outputs, each one entry of `axis` with that axis dropped."""
    (xi,) = imp.args(op, 1, 1)
    o = imp.options(op, "UnpackOptions")
    shape = tuple(imp.t(xi).shape)
    axis = _axis(op, int(o.Axis()), len(shape))
    if int(o.Num()) != len(op.outputs) or shape[axis] != len(op.outputs):
        raise ModelError(f"operator {op.index} (UNPACK): num {o.Num()} and {len(op.outputs)} outputs for axis "
                         f"{axis} of {list(shape)}; TFLite Micro writes `num` outputs, one per entry; {REPAIR}")
    want = shape[:axis] + shape[axis + 1:]
    for yi in op.outputs:
        if tuple(imp.t(yi).shape) != want:
            raise ModelError(f"operator {op.index} (UNPACK): output '{imp.t(yi).name}' {list(imp.t(yi).shape)}, "
                             f"expected {list(want)}; {REPAIR}")
    _split_along(imp, op, xi, axis, [1] * shape[axis])


# ---- PACK, SQUEEZE, EXPAND_DIMS ------------------------------------------------------------------------------


def pack(imp: Importer, op: OpInfo) -> None:
    """TFLM's PACK: `values_count` inputs of one shape stacked along a new `axis`: each input viewed with that axis
    of 1, then a concat (of equal qparams: a copy); along axis 0, both under a leading axis of 1."""
    o = imp.options(op, "PackOptions")
    if int(o.ValuesCount()) != len(op.inputs) or not op.inputs:
        raise ModelError(f"operator {op.index} (PACK): values_count {o.ValuesCount()} with {len(op.inputs)} inputs; "
                         f"TFLite Micro reads values_count inputs; {REPAIR}")
    shape = tuple(imp.t(op.inputs[0]).shape)
    axis = _axis(op, int(o.Axis()), len(shape) + 1)
    y_shape = tuple(imp.t(op.outputs[0]).shape)
    want = shape[:axis] + (len(op.inputs),) + shape[axis:]
    if any(tuple(imp.t(i).shape) != shape for i in op.inputs) or y_shape != want:
        raise ModelError(f"operator {op.index} (PACK): inputs {[list(imp.t(i).shape) for i in op.inputs]} and output "
                         f"{list(y_shape)}; PACK stacks inputs of one shape into {list(want)}; {REPAIR}")
    for i in op.inputs:
        imp.prepare(_unscaled, op, i, op.outputs[0])
    lead = (1,) if axis == 0 else ()  # the IR's concat keeps axis 0 for the batch
    one = lead + shape[:axis] + (1,) + shape[axis:]
    parts = [_view(imp, op, imp.ir_input(i, op), one, f"pack_{op.index}_in{k}") for k, i in enumerate(op.inputs)]
    name = f"pack_{op.index}"
    if not lead:
        imp.node(op, "concat", parts, {"axis": axis})
        return
    t = imp.g.tensor(parts[0])
    imp.g.add_tensor(Tensor(f"{name}_stacked", (1, *want), t.dtype, qparams=t.qparams))
    imp.g.nodes.append(Node("concat", name, parts, [f"{name}_stacked"], {"axis": 1},
                            source=f"{imp.source}:{op.index}"))
    out = imp.activation(op.outputs[0], f"{name}_out", op)
    imp.g.nodes.append(Node("reshape", f"{name}_view", [f"{name}_stacked"], [out], {},
                            source=f"{imp.source}:{op.index}"))


def squeeze(imp: Importer, op: OpInfo) -> None:
    """TFLM's SQUEEZE: the listed axes of 1 dropped (every axis of 1 when none is listed)."""
    (xi,) = imp.args(op, 1, 1)
    shape = tuple(imp.t(xi).shape)
    if len(shape) > SQUEEZE_MAX_DIMS:
        raise UnsupportedOpError(f"operator {op.index} (SQUEEZE): a {len(shape)}-D input; TFLite Micro's SQUEEZE takes "
                                 f"at most {SQUEEZE_MAX_DIMS} dimensions")
    o = imp.options(op, "SqueezeOptions") if op.options_type else None
    listed = [int(v) for v in o.SqueezeDimsAsNumpy()] if o is not None and o.SqueezeDimsLength() else []
    dropped = {a for a, d in enumerate(shape) if d == 1} if not listed else set()
    for a in listed:
        a = _axis(op, a, len(shape), "squeeze dimension")
        if shape[a] != 1:
            raise ModelError(f"operator {op.index} (SQUEEZE): dimension {a} of {list(shape)} is {shape[a]}, not 1 "
                             f"(TFLite Micro's Prepare refuses it); {REPAIR}")
        dropped.add(a)
    want = tuple(d for a, d in enumerate(shape) if a not in dropped)
    _reshape_into(imp, op, xi, want, "TFLite Micro's SqueezePrepare")


def expand_dims(imp: Importer, op: OpInfo) -> None:
    """TFLM's EXPAND_DIMS: a constant int32 axis (of the output: negative counts from rank + 1)."""
    xi, ai = imp.args(op, 2, 2)
    a = imp.t(ai)
    if a.data is None or ai in imp.names:
        raise UnsupportedOpError(f"operator {op.index} (EXPAND_DIMS): the axis must be a constant tensor stored in the "
                                 "model (TFLite Micro's rule: Non-constant >axis< tensor is not supported)")
    if a.dtype != "int32" or len(a.shape) > 1:
        raise UnsupportedOpError(f"operator {op.index} (EXPAND_DIMS): the axis is {a.type_name} of shape "
                                 f"{list(a.shape)}; TFLite Micro takes one int32 value")
    shape = tuple(imp.t(xi).shape)
    axis = int(imp.const_ints(op, ai, "axis").reshape(-1)[0])
    axis = axis + len(shape) + 1 if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise ModelError(f"operator {op.index} (EXPAND_DIMS): axis {axis} of a {len(shape)}-D input (TFLite Micro's "
                         f"Prepare refuses it); {REPAIR}")
    _reshape_into(imp, op, xi, shape[:axis] + (1,) + shape[axis:], "TFLite Micro's ExpandDimsPrepare")


# ---- DEPTH_TO_SPACE, SPACE_TO_DEPTH --------------------------------------------------------------------------


def _block_transpose(imp: Importer, op: OpInfo, before: tuple[int, ...], after: tuple[int, ...]) -> None:
    """View the NHWC input as `before` (5-D), swap its axes 2 and 3, view the result as the output: DEPTH_TO_SPACE
    and SPACE_TO_DEPTH are that one transpose between two views (TensorFlow's NHWC, DCR order)."""
    xi = op.inputs[0]
    x = imp.ir_input(xi, op)
    imp.prepare(_unscaled, op, xi, op.outputs[0])
    name = f"transpose_{op.index}"
    src = _view(imp, op, x, before, f"{name}_in")
    t = imp.g.tensor(src)
    moved = (before[0], before[1], before[3], before[2], before[4])
    imp.g.add_tensor(Tensor(f"{name}_moved", moved, t.dtype, qparams=t.qparams))
    imp.g.nodes.append(Node("transpose", name, [src], [f"{name}_moved"], {"perm": (0, 1, 3, 2, 4)},
                            source=f"{imp.source}:{op.index}"))
    out = imp.activation(op.outputs[0], f"{name}_out", op)  # of shape `after` (the caller checked)
    imp.g.nodes.append(Node("reshape", f"{name}_view", [f"{name}_moved"], [out], {},
                            source=f"{imp.source}:{op.index}"))


def _block_geometry(imp: Importer, op: OpInfo, options: str) -> tuple[tuple[int, ...], int]:
    """The 4-D input's shape and the block size, after TFLM's Prepare rules (4-D, int8 or float32, block > 0)."""
    (xi,) = imp.args(op, 1, 1)
    x = imp.t(xi)
    if len(x.shape) != 4:
        raise ModelError(f"operator {op.index} ({op.name}): a {len(x.shape)}-D input; TFLite Micro takes 4-D (NHWC)")
    if x.dtype not in ("int8", "float32"):
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) on {x.type_name}: TFLite Micro's {op.name} takes "
                                 "int8 and float32 only; keep it int8")
    block = int(imp.options(op, options).BlockSize())
    if block < 1:
        raise ModelError(f"operator {op.index} ({op.name}): block size {block}; it must be at least 1; {REPAIR}")
    return tuple(x.shape), block


def depth_to_space(imp: Importer, op: OpInfo) -> None:
    """[N, H, W, b * b * C] -> [N, H * b, W * b, C]: out[n, h * b + i, w * b + j, c] = in[n, h, w, (i * b + j) * C
    + c]."""
    (n, h, w, depth), b = _block_geometry(imp, op, "DepthToSpaceOptions")
    want = (n, h * b, w * b, depth // (b * b))
    if depth % (b * b) or tuple(imp.t(op.outputs[0]).shape) != want:
        raise ModelError(f"operator {op.index} (DEPTH_TO_SPACE): input {[n, h, w, depth]}, block {b}, output "
                         f"{list(imp.t(op.outputs[0]).shape)} (TFLite Micro's Prepare: the depth is a multiple of "
                         f"block^2, the output {list(want)}); {REPAIR}")
    _block_transpose(imp, op, (n, h, w, b, b * want[3]), want)


def space_to_depth(imp: Importer, op: OpInfo) -> None:
    """[N, H * b, W * b, C] -> [N, H, W, b * b * C]: DEPTH_TO_SPACE's inverse."""
    (n, h, w, depth), b = _block_geometry(imp, op, "SpaceToDepthOptions")
    want = (n, h // b, w // b, depth * b * b)
    if h % b or w % b or tuple(imp.t(op.outputs[0]).shape) != want:
        raise ModelError(f"operator {op.index} (SPACE_TO_DEPTH): input {[n, h, w, depth]}, block {b}, output "
                         f"{list(imp.t(op.outputs[0]).shape)} (TFLite Micro's Prepare: height and width multiples of "
                         f"the block, the output {list(want)}); {REPAIR}")
    _block_transpose(imp, op, (n, want[1], b, want[2], b * depth), want)
