"""Slicing and splitting from PyTorch: every spelling becomes the IR's one `slice` op (x[begin:end:step] per axis).

- aten.slice.Tensor (x[:, :k], x[..., a:b], x[:, a:b:s]) and aten.narrow: one slice.
- aten.select.int (x[:, i]): a slice of one, then the axis dropped (a view wherever the bytes allow).
- torch.split / Tensor.split (an int or a list of sizes), torch.chunk, torch.tensor_split: one slice per piece,
  made when a piece is read (getitem), so a piece nothing reads costs nothing. The pieces' sizes are the ones
  torch.export recorded.
- A value in the IR's channels-last layout is sliced along the IR axis that holds the torch dim: ShuffleNet's
  `x.chunk(2, dim=1)` is a slice of the last (channel) axis of NHWC, with no layout change.
- A slice keeps its input's scale and zero point (the op inherits them): no requantization.
- A slice of a slice that nothing else reads folds into one (x[:, :, 1:3, 2:4] moves its bytes once).

getitem of a recurrent layer's result tuple and the selects recurrent layers read are theirs
(frontend/pytorch_recurrent.py); these converters hand them over.
"""
from __future__ import annotations

import operator
from dataclasses import replace

from tinyaot.frontend.fx_util import layer_name
from tinyaot.frontend.pytorch_builder import torch_to_ir_shape
from tinyaot.frontend.pytorch_recurrent import recurrent_getitem, recurrent_select

SPLITS = ("aten.split.Tensor", "aten.split.sizes", "aten.split_with_sizes.default", "aten.unsafe_split.Tensor",
          "aten.unsafe_split_with_sizes.default", "aten.chunk.default", "aten.unsafe_chunk.default",
          "aten.tensor_split.sections", "aten.tensor_split.indices")
PIECES = "slicing_pieces"  # Builder attribute: split fx node -> (input Value, dim, [(start, stop)], "split"|"chunk")


def _dim(n, position: int = 2, default: int = 0) -> int:
    return int(n.args[position] if len(n.args) > position else n.kwargs.get("dim", default))


def slice_value(b, x, dim: int, start, stop, step: int = 1, fx_input=None, suffix: str = ""):
    """The Value of x[..., start:stop:step, ...] along torch dim `dim` (Python's rules for None and negative
    bounds); x itself when the slice takes the whole axis. fx_input: x's fx node, to fold a slice of a slice that
    nothing else reads; suffix: the node name's ending (a split's piece number)."""
    shape = b.shape(x)
    axis = b.axis(x, dim)
    size = shape[axis]
    step = 1 if step is None else int(step)
    if step < 1:
        raise b.error(f"slicing with step {step}: only positive steps are supported (as in PyTorch)")
    start, stop, _ = slice(start, stop, step).indices(size)
    if start >= stop:
        raise b.error(f"an empty slice ([{start}:{stop}] of an axis of {size}) has no bytes to compile; "
                      "remove it from the model")
    if (start, stop, step) == (0, size, 1):
        return x
    if axis == 0 and not b.graph.tensor(x.name).is_const:
        raise b.error(f"slicing dim {dim}, the batch ([{start}:{stop}:{step}] of {size}): tinyaot compiles one sample "
                      "per invoke, so the batch dim is taken whole; slice another dim")
    t = b.graph.tensor(x.name)
    if t.is_const:  # a slice of a parameter (a position embedding's tokens): folded now
        index = [slice(None)] * len(shape)
        index[axis] = slice(start, stop, step)
        return replace(x, name=b.const(f"{x.name}_slice", t.data[tuple(index)]))
    begin, end, strides = [0] * len(shape), list(shape), [1] * len(shape)
    begin[axis], end[axis], strides[axis] = start, stop, step
    source = x.name
    prev = b.graph.producer(x.name)
    if fx_input is not None and prev is not None and prev.op == "slice" and len(fx_input.users) == 1 \
            and sum(v.name == x.name for v in b.values.values()) == 1:  # no other fx value names its output
        begin, end, strides = _composed(prev.attrs, begin, end, strides)
        b.graph.nodes.remove(prev)  # its output was read by this slice only
        source = prev.inputs[0]
    out_shape = tuple(-(-(e - s) // t) for s, e, t in zip(begin, end, strides))
    attrs = {"begin": tuple(begin), "end": tuple(end), "strides": None if set(strides) == {1} else tuple(strides)}
    return replace(x, name=b.emit("slice", [source], out_shape, attrs, suffix=suffix))


def _composed(first, begin, end, strides):
    """(begin, end, strides) of slice (begin, end, strides) applied to the output of slice `first`."""
    steps0 = first.get("strides") or (1,) * len(first["begin"])
    b2, e2, s2 = [], [], []
    for b0, t0, b1, e1, t1 in zip(first["begin"], steps0, begin, end, strides):
        count = -(-(e1 - b1) // t1)
        b2.append(b0 + b1 * t0)
        s2.append(t0 * t1)
        e2.append(b2[-1] + (count - 1) * s2[-1] + 1)
    return b2, e2, s2


def _check_shape(b, n, v) -> None:
    """The sliced value has the shape torch.export recorded (a front-end bug otherwise, caught here)."""
    want = tuple(int(d) for d in n.meta["val"].shape)
    if v.nhwc:
        want = torch_to_ir_shape(want)
    elif v.lead:  # the batch's 1 ahead of a torch tensor that folded it into its first axis
        want = (1, *want)
    if b.shape(v) != want:
        raise b.error(f"the slice gives shape {list(b.shape(v))}, torch.export recorded {list(want)} (a tinyaot "
                      "bug; please report it)")


# ---- converters ------------------------------------------------------------------------------------------------
def _slice(b, n) -> None:
    """aten.slice.Tensor(x, dim=0, start=None, end=None, step=1)."""
    args = list(n.args) + [None] * (5 - len(n.args))
    x_arg, dim, start, stop, step = args[:5]
    dim = 0 if dim is None else dim
    start = n.kwargs.get("start", start)
    stop = n.kwargs.get("end", stop)
    step = n.kwargs.get("step", step)
    v = slice_value(b, b.arg(x_arg), int(dim), start, stop, step, fx_input=x_arg)
    _check_shape(b, n, v)
    b.values[n.name] = v


def _narrow(b, n) -> None:
    """aten.narrow(x, dim, start, length)."""
    x_arg, dim, start, length = n.args[:4]
    x = b.arg(x_arg)
    size = b.shape(x)[b.axis(x, int(dim))]
    start = int(start) + (size if int(start) < 0 else 0)
    v = slice_value(b, x, int(dim), start, start + int(length), 1, fx_input=x_arg)
    _check_shape(b, n, v)
    b.values[n.name] = v


def _select(b, n) -> None:
    """aten.select.int(x, dim, index): x[:, index] is a slice of one with the axis dropped. The recurrent layers'
    own selects (their last step, a cell loop's frames) are theirs."""
    if recurrent_select(b, n):
        return
    x_arg, dim, index = n.args[:3]
    x = b.arg(x_arg)
    dim = int(dim) % (x.torch_rank or len(b.shape(x)))
    size = b.shape(x)[b.axis(x, dim)]
    index = int(index) + (size if int(index) < 0 else 0)
    if not 0 <= index < size:
        raise b.error(f"index {n.args[2]} is out of range for dim {dim} of size {size}")
    t = b.graph.tensor(x.name)
    if t.is_const:  # a row of a parameter: folded now
        b.values[n.name] = replace(x, name=b.const(f"{x.name}_select", t.data.take(index, axis=b.axis(x, dim))))
        return
    one = slice_value(b, x, dim, index, index + 1, 1)
    v = b.squeezed(one, (dim,), tuple(int(d) for d in n.meta["val"].shape))
    b.bind(n, v.name, v.nhwc, v.torch_rank)


def _split(b, n) -> None:
    """split / chunk / tensor_split: the pieces' bounds, recorded for getitem (each piece a slice when read)."""
    x = b.arg(n.args[0])
    dim = _dim(n) % (x.torch_rank or len(b.shape(x)))
    sizes = [int(v.shape[dim]) for v in n.meta["val"]]
    total = b.shape(x)[b.axis(x, dim)]
    if sum(sizes) != total:
        raise b.error(f"the pieces {sizes} do not add up to the {total} along dim {dim} (a tinyaot bug; please "
                      "report it)")
    bounds, start = [], 0
    for size in sizes:
        bounds.append((start, start + size))
        start += size
    kind = "chunk" if "chunk" in str(n.target) else "split"
    _pieces(b)[n.name] = (x, dim, bounds, kind)


def _unbind(b, n) -> None:
    """aten.unbind.int(x, dim): one select per item (timm's attention: q, k, v = qkv.unbind(0)), made when read."""
    x = b.arg(n.args[0])
    dim = _dim(n, 1) % (x.torch_rank or len(b.shape(x)))
    size = b.shape(x)[b.axis(x, dim)]
    _pieces(b)[n.name] = (x, dim, [(i, i + 1) for i in range(size)], "unbind")


def _pieces(b) -> dict:
    if not hasattr(b, PIECES):
        setattr(b, PIECES, {})
    return getattr(b, PIECES)


def _getitem(b, n) -> None:
    """An item an op's converter made, one piece of a split (a slice, made now that something reads it), or an item
    of a recurrent layer's result."""
    key = f"{getattr(n.args[0], 'name', None)}#{n.args[1]}"
    if key in b.items:  # an item an op's converter made (the values of adaptive max pooling)
        v = b.items[key]
        b.bind(n, v.name, v.nhwc, v.torch_rank)
        return
    found = _pieces(b).get(getattr(n.args[0], "name", None))
    if found is None:
        recurrent_getitem(b, n)
        return
    x, dim, bounds, kind = found
    start, stop = bounds[n.args[1]]
    if not n.users:
        return
    split, b.current = n.args[0], n.args[0]  # the piece is the split's: its layer, its line
    named = layer_name(split) != split.name  # in a module: '<layer>_chunk1'; at the top: 'chunk_1'
    v = slice_value(b, x, dim, start, stop, 1, suffix=f"_{kind}{n.args[1]}" if named else f"_{n.args[1]}")
    b.current = n
    if kind == "unbind":  # the item drops the axis, as select does
        v = b.squeezed(v, (dim,), tuple(int(d) for d in n.meta["val"].shape))
        b.bind(n, v.name, v.nhwc, v.torch_rank)
        return
    _check_shape(b, n, v)
    b.values[n.name] = v


CONVERTERS = {
    "aten.slice.Tensor": _slice,
    "aten.narrow.default": _narrow,
    "aten.select.int": _select,
    str(operator.getitem): _getitem,
    **{name: _split for name in SPLITS},
    "aten.unbind.int": _unbind,
}
