"""ATen -> IR converters for pooling (max, average, ceil_mode, adaptive) and reductions (mean, sum)."""
from __future__ import annotations

from typing import Any, Callable

from tinyaot.frontend.pytorch_builder import Builder, Value, ir_axis, pair, torch_to_ir_shape, val_shape
from tinyaot.ir.pooling import pooled_size
from tinyaot.ir.resize import nearest_source


def _pool_args(b: Builder, n, one_d: bool, is_avg: bool):
    args = list(n.args) + [None] * (7 - len(n.args))
    kernel = args[1]
    stride = args[2] if args[2] else kernel
    padding = args[3] if args[3] is not None else 0
    k = (1,) + pair(kernel, 1) if one_d else pair(kernel)
    s = (1,) + pair(stride, 1) if one_d else pair(stride)
    p = pair(padding, 1 if one_d else 2)
    pad = (0, 0, p[0], p[0]) if one_d else (p[0], p[0], p[1], p[1])
    if not is_avg and args[4] not in (None, 1, [1], [1, 1], (1, 1)):
        raise b.error("dilated max pooling is not supported")
    return k, s, pad, args


def _ceil_mode(b: Builder, x: Value, n, kernel, stride, pad) -> dict:
    """{"ceil_mode": True} when the output torch recorded is ceil_mode's and larger than the windows that fit (the
    last window hangs over the padded input's end); {} when ceil_mode changes nothing here."""
    _, h, w, _ = b.shape(x)
    out = torch_to_ir_shape(val_shape(n))[1:3]
    floor = (pooled_size(h, kernel[0], stride[0], pad[0], pad[1], False),
             pooled_size(w, kernel[1], stride[1], pad[2], pad[3], False))
    if tuple(out) == floor:
        return {}
    ceil = (pooled_size(h, kernel[0], stride[0], pad[0], pad[1], True),
            pooled_size(w, kernel[1], stride[1], pad[2], pad[3], True))
    if tuple(out) != ceil:
        raise b.error(f"pooling {h}x{w} gives {out[0]}x{out[1]} in torch, neither the {floor[0]}x{floor[1]} windows "
                      f"that fit nor ceil_mode's {ceil[0]}x{ceil[1]} (a tinyaot bug; please report it)")
    return {"ceil_mode": True}


def _max_pool(b: Builder, n, one_d: bool) -> None:
    k, s, pad, _ = _pool_args(b, n, one_d, is_avg=False)
    x = b.to_channels_last(b.arg(n.args[0]))
    attrs = {"kernel": k, "stride": s, "padding": pad, **_ceil_mode(b, x, n, k, s, pad)}
    b.bind(n, b.emit("max_pool2d", [x.name], torch_to_ir_shape(val_shape(n)), attrs), True, x.torch_rank)


def _avg_pool(b: Builder, n, one_d: bool) -> None:
    k, s, pad, args = _pool_args(b, n, one_d, is_avg=True)
    count_include_pad = True if args[5] is None else bool(args[5])
    if args[6] is not None:
        raise b.error("avg_pool with divisor_override is not supported")
    x = b.to_channels_last(b.arg(n.args[0]))
    attrs = {"kernel": k, "stride": s, "padding": pad, "count_include_pad": count_include_pad,
             **_ceil_mode(b, x, n, k, s, pad)}
    b.bind(n, b.emit("avg_pool2d", [x.name], torch_to_ir_shape(val_shape(n)), attrs), True, x.torch_rank)


MAX_ADAPTIVE_POOLS = 16  # pooling kernels one adaptive pooling of uneven windows may compile to


def _adaptive_pool(kind: str):
    """aten.adaptive_{avg,max}_pool{1,2}d: output size 1 of an average is global average pooling (mean); other
    sizes pool PyTorch's adaptive windows (start floor(i * in / out), end ceil((i + 1) * in / out)) where along
    each axis they are uniform (one kernel and stride: always when the input is a multiple of the output) or each
    one pixel (an output larger than the input: nearest-neighbour copies, a resize after the pooling). Windows that
    differ in size or spacing (10 -> 4: sizes 3, starts 0, 2, 5, 7) are runs of equal, equally spaced windows: one
    pooling kernel per pair of runs (rows, columns) on a slice of the input, the pieces concatenated in order, up
    to MAX_ADAPTIVE_POOLS kernels."""
    def convert(b: Builder, n) -> None:
        x = b.to_channels_last(b.arg(n.args[0]))
        value = n.meta["val"][0] if kind == "max" else n.meta["val"]  # max pooling also returns the indices
        out_shape = torch_to_ir_shape(tuple(int(d) for d in value.shape))
        _, h, w, c = b.shape(x)
        if kind == "avg" and out_shape[1:3] == (1, 1):
            b.bind(n, b.emit("mean", [x.name], out_shape, {"axes": (1, 2), "keepdims": True}), True, x.torch_rank)
            return
        rows, cols = _adaptive_windows(h, out_shape[1]), _adaptive_windows(w, out_shape[2])
        if rows is None or cols is None:
            out = _uneven_adaptive_pool(b, kind, x.name, out_shape)
        else:
            (kh, sh, ph), (kw, sw, pw) = rows, cols
            out = x.name
            if (kh, sh, kw, sw) != (1, 1, 1, 1):
                attrs = {"kernel": (kh, kw), "stride": (sh, sw), "padding": (0, 0, 0, 0)}
                if kind == "avg":
                    attrs["count_include_pad"] = False
                out = b.emit(f"{kind}_pool2d", [x.name], (out_shape[0], ph, pw, c), attrs)
            if (ph, pw) != out_shape[1:3]:
                out = b.emit("resize_nearest", [out], out_shape, {}, suffix="_copies")
        if kind == "max":
            b.items[f"{n.name}#0"] = Value(out, True, x.torch_rank)  # read through getitem; item 1, the indices,
        else:  # has no integer kernel
            b.bind(n, out, True, x.torch_rank)
    return convert


def _adaptive_windows(size: int, out: int) -> tuple[int, int, int] | None:
    """(kernel, stride, pooled size) of PyTorch's adaptive windows along one axis: uniform windows, or windows of
    one pixel each (kernel 1, stride 1, then a nearest resize from `size` to `out` copies them, checked to pick
    the same pixels); None when they are neither."""
    starts = [i * size // out for i in range(out)]
    ends = [-(-(i + 1) * size // out) for i in range(out)]
    kernel, stride = ends[0] - starts[0], (starts[1] - starts[0]) if out > 1 else size
    if all(e - s == kernel and s == i * stride for i, (s, e) in enumerate(zip(starts, ends))) and stride > 0:
        return kernel, stride, out
    if all(e - s == 1 for s, e in zip(starts, ends)) and list(nearest_source(size, out, False, False)) == starts:
        return 1, 1, size
    return None


def adaptive_runs(size: int, out: int) -> list[tuple[int, int, int, int]]:
    """PyTorch's adaptive windows along one axis as runs of equal windows at one spacing, in order: (first start,
    kernel, stride, windows). A window starting where the one before it does (an output larger than the input)
    begins a run of its own."""
    runs: list[tuple[int, int, int, int]] = []
    for i in range(out):
        start, end = i * size // out, -(-(i + 1) * size // out)
        if runs:
            first, kernel, stride, count = runs[-1]
            last = first + (count - 1) * stride
            if end - start == kernel and start > last and (count == 1 or start - last == stride):
                runs[-1] = (first, kernel, start - last, count + 1)
                continue
        runs.append((start, end - start, 1, 1))
    return runs


def _uneven_adaptive_pool(b: Builder, kind: str, x: str, out_shape) -> str:
    """Adaptive pooling whose windows differ in size or spacing: for each run of rows and each run of columns
    (adaptive_runs), the slice of the input they cover pooled with the run's kernel and stride; the pieces
    concatenated along W, then H."""
    n, h, w, c = b.graph.tensor(x).shape
    rows, cols = adaptive_runs(h, out_shape[1]), adaptive_runs(w, out_shape[2])
    if len(rows) * len(cols) > MAX_ADAPTIVE_POOLS:
        raise b.error(f"adaptive pooling of {h}x{w} to {out_shape[1]}x{out_shape[2]}: PyTorch's windows here differ "
                      f"in size or spacing and need {len(rows) * len(cols)} pooling kernels ({len(rows)} runs of "
                      f"equal windows along H, {len(cols)} along W); tinyaot compiles up to {MAX_ADAPTIVE_POOLS}. "
                      "Pool to a size that divides the input (or choose an input size whose feature map here is a "
                      "multiple of the output size)")
    blocks = []
    for i, (r0, kh, sh, nh) in enumerate(rows):
        pieces = []
        for j, (c0, kw, sw, nw) in enumerate(cols):
            r1, c1 = r0 + (nh - 1) * sh + kh, c0 + (nw - 1) * sw + kw
            src = x
            if (r0, r1, c0, c1) != (0, h, 0, w):
                src = b.emit("slice", [x], (n, r1 - r0, c1 - c0, c), {"begin": (0, r0, c0, 0), "end": (n, r1, c1, c),
                                                                      "strides": None}, suffix=f"_window{i}_{j}")
            attrs = {"kernel": (kh, kw), "stride": (sh, sw), "padding": (0, 0, 0, 0)}
            if kind == "avg":
                attrs["count_include_pad"] = False
            pieces.append(b.emit(f"{kind}_pool2d", [src], (n, nh, nw, c), attrs, suffix=f"_{i}_{j}"))
        blocks.append(pieces[0] if len(pieces) == 1 else
                      b.emit("concat", pieces, (n, nh, out_shape[2], c), {"axis": 2}, suffix=f"_row{i}"))
    return blocks[0] if len(blocks) == 1 else b.emit("concat", blocks, out_shape, {"axis": 1}, suffix="_rows")


def _mean(b: Builder, n) -> None:
    """Global average pooling (the spatial dims of a feature map); a mean over other dims of a feature map (e.g.
    x.mean(-1), or mean(2) over frequency) where they are neighbours in the channels-last layout, else in torch
    order; the mean over consecutive dims after the batch of any other tensor."""
    x = b.arg(n.args[0])
    dims = n.args[1] if len(n.args) > 1 else None
    keepdim = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    rank = x.torch_rank
    dims = tuple(sorted(d % rank for d in (dims if dims is not None else range(rank))))
    if x.nhwc and rank in (3, 4) and dims == ((2, 3) if rank == 4 else (2,)):
        out_shape = torch_to_ir_shape(val_shape(n)) if keepdim else val_shape(n)
        out = b.emit("mean", [x.name], out_shape, {"axes": (1, 2), "keepdims": keepdim})
        b.bind(n, out, keepdim, rank if keepdim else None)
        return
    if x.nhwc and 0 not in dims:
        axes = sorted(b.axis(x, d) for d in dims)
        if axes == list(range(axes[0], axes[-1] + 1)):
            keep = tuple(1 if a in axes else d for a, d in enumerate(b.shape(x)))
            v = Value(b.emit("mean", [x.name], keep, {"axes": tuple(axes), "keepdims": True}), True, rank)
            v = v if keepdim else b.squeezed(v, dims, val_shape(n))
            b.bind(n, v.name, v.nhwc, v.torch_rank)
            return
        x = b.to_torch_order(x)  # the dims are neighbours in torch order only
    if not x.nhwc and rank >= 2 and dims[0] > 0 and dims == tuple(range(dims[0], dims[-1] + 1)):
        axes = tuple(d + x.lead for d in dims)
        out_shape = (1, *val_shape(n)) if x.lead else val_shape(n)
        b.bind(n, b.emit("mean", [x.name], out_shape, {"axes": axes, "keepdims": keepdim}), False)
        return
    raise b.error(f"mean over dims {dims} is not supported; supported: dims of a feature map after the batch "
                  "(global average pooling, or one spatial dim), or consecutive dims after the batch (e.g. the "
                  "tokens of [1, T, D])")


def _sum(b: Builder, n) -> None:
    """sum over dims that are a run of consecutive IR axes after the batch (MobileViTv2's sum over the patches,
    keepdim=True, of a channels-last feature map; timm's split attention summing its paths, x.sum(dim=1) of
    channel groups [N, paths, C, H, W], a feature map again): the sum op, the mean's kernel without 1 / count."""
    x = b.arg(n.args[0])
    rank = x.torch_rank
    dims = n.args[1] if len(n.args) > 1 and n.args[1] is not None else list(range(rank))
    keepdim = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    if n.kwargs.get("dtype") is not None:
        raise b.error("sum with a dtype is not supported")
    dims = sorted({int(d) % rank for d in dims})
    axes = sorted(ir_axis(d, x) for d in dims)
    if axes[0] == 0 or axes != list(range(axes[0], axes[-1] + 1)):
        raise b.error(f"sum over dims {tuple(dims)} is not supported; supported: dims after the batch that are "
                      "consecutive in tinyaot's channels-last layout (e.g. the spatial dims, or the last dim)")
    spatial = [2, 3] if rank == 4 else [2]
    groups = x.nhwc and rank == 5 and len(dims) == 1 and dims[0] in (1, 2)  # one axis of channel groups
    if x.nhwc and not keepdim and dims != spatial and not groups:
        raise b.error(f"sum over dims {tuple(dims)} of a feature map with keepdim=False is not supported; pass "
                      "keepdim=True (or sum over all spatial dims)")
    shape = b.shape(x)
    out = tuple(1 if a in axes else d for a, d in enumerate(shape)) if keepdim else \
        tuple(d for a, d in enumerate(shape) if a not in axes)
    y = b.emit("sum", [x.name], out, {"axes": tuple(axes), "keepdims": keepdim})
    b.bind(n, y, x.nhwc and (keepdim or groups), rank if keepdim else len(val_shape(n)))


CONVERTERS: dict[str, Callable[[Builder, Any], None]] = {
    "aten.max_pool2d.default": lambda b, n: _max_pool(b, n, one_d=False),
    "aten.max_pool1d.default": lambda b, n: _max_pool(b, n, one_d=True),
    "aten.avg_pool2d.default": lambda b, n: _avg_pool(b, n, one_d=False),
    "aten.avg_pool1d.default": lambda b, n: _avg_pool(b, n, one_d=True),
    "aten.adaptive_avg_pool2d.default": _adaptive_pool("avg"),
    "aten.adaptive_avg_pool1d.default": _adaptive_pool("avg"),
    "aten.adaptive_max_pool2d.default": _adaptive_pool("max"),
    "aten.adaptive_max_pool1d.default": _adaptive_pool("max"),
    "aten.mean.dim": _mean,
    "aten.sum.dim_IntList": _sum,
}
