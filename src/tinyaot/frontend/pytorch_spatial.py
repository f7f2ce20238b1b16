"""ATen -> IR converters for padding (constant, reflect, replicate) and resizing (nearest, bilinear)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinyaot.frontend.pytorch_builder import Builder, torch_to_ir_shape, val_shape
from tinyaot.ir.resize import nearest_source

TORCH_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "replicate"}  # torch -> IR pad mode


def _pad(b: Builder, n) -> None:
    pads = list(n.args[1])
    mode = n.args[2] if len(n.args) > 2 else n.kwargs.get("mode", "constant")
    value = n.args[3] if len(n.args) > 3 else n.kwargs.get("value", None)
    if mode not in TORCH_PAD_MODES or (mode == "constant" and value not in (None, 0, 0.0)):
        what = f"constant padding with value {value}" if mode == "constant" else f"padding mode {mode!r}"
        raise b.error(f"{what} is not supported; supported: zero padding, mode='reflect' and mode='replicate' "
                      "(also as Conv padding_mode)")
    _spatial_pad(b, n, pads, TORCH_PAD_MODES[mode])


def _mode_pad(mode: str):
    """aten.reflection_pad2d / replication_pad2d (and 1d): F.pad's modes by their own names."""
    def convert(b: Builder, n) -> None:
        _spatial_pad(b, n, list(n.args[1]), mode)
    return convert


def _spatial_pad(b: Builder, n, pads: list, mode: str) -> None:
    """F.pad of the spatial dims of a feature map (or of the last one or two dims of a 3-D or 4-D tensor, read as
    one): one pad node on the channels-last tensor. Other dims: _pad_axes."""
    if min(pads, default=0) < 0:
        raise b.error(f"negative padding {tuple(pads)} (cropping) is not supported; slice the tensor instead")
    x = b.arg(n.args[0])
    rank = len(n.args[0].meta["val"].shape)
    if len(pads) > 4 or rank not in (3, 4) or (rank == 3 and any(pads[2:4])):
        _pad_axes(b, n, x, pads, mode)
        return
    x = b.to_channels_last(x)
    pads += [0] * (4 - len(pads))
    left, right, top, bottom = pads[:4]
    if x.torch_rank == 3:
        top = bottom = 0
    attrs = {"padding": (top, bottom, left, right), "mode": None if mode == "constant" else mode}
    out = b.emit("pad", [x.name], torch_to_ir_shape(val_shape(n)), attrs)
    b.bind(n, out, True, x.torch_rank)


def _pad_axes(b: Builder, n, x, pads: list, mode: str) -> None:
    """F.pad of any dims but the batch, in the tensor's own layout (CoaT pads the tokens of [B, heads, N, C]; a
    feature map's channels): the pad kernel pads H and W of a 4-D view, so each padded axis a is padded as the W of
    the view [1, (axes before a), a, (axes after a)] (axes 1 and 2 together as H and W), then viewed back. The pads
    are separable in every mode (constant, reflect, replicate), so one axis after another gives torch's result."""
    rank = len(n.args[0].meta["val"].shape)
    widths = {rank - 1 - k: (int(pads[2 * k]), int(pads[2 * k + 1])) for k in range(len(pads) // 2)}
    t = b.graph.tensor(x.name)
    if t.is_const:  # a parameter: padded now
        data = t.data.reshape(val_shape(n.args[0]))
        full = [widths.get(d, (0, 0)) for d in range(rank)]
        numpy_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}[mode]
        b.bind(n, b.const(f"{x.name}_padded", np.pad(data, full, mode=numpy_mode)), False, rank)
        return
    by_axis = {b.axis(x, d): w for d, w in widths.items() if any(w)}
    if 0 in by_axis:
        raise b.error("padding the batch dimension is not supported (tinyaot compiles one sample per invoke)")
    shape = list(b.shape(x))
    name = x.name
    attrs = {"mode": None if mode == "constant" else mode}
    for a in sorted(by_axis):
        if a == 2 and 1 in by_axis:
            continue  # padded with axis 1, as the view's W
        (before, after), hw = by_axis[a], a == 1 and 2 in by_axis
        if hw:  # axes 1 and 2 as the view's H and W
            view = (1, shape[1], shape[2], int(np.prod(shape[3:], dtype=np.int64)))
            padding = (before, after, *by_axis[2])
        else:
            view = (1, int(np.prod(shape[1:a], dtype=np.int64)), shape[a], int(np.prod(shape[a + 1:], dtype=np.int64)))
            padding = (0, 0, before, after)
        shape[a] += before + after
        if hw:
            shape[2] += sum(by_axis[2])
        src = name if tuple(b.graph.tensor(name).shape) == view else b.emit("reshape", [name], view, suffix="_view")
        padded = b.emit("pad", [src], (1, view[1] + padding[0] + padding[1], view[2] + padding[2] + padding[3],
                                       view[3]), {**attrs, "padding": padding}, suffix=f"_axis{a}")
        name = padded if tuple(b.graph.tensor(padded).shape) == tuple(shape) else \
            b.emit("reshape", [padded], tuple(shape), suffix="_view")
    b.bind(n, name, x.nhwc, x.torch_rank if x.nhwc else rank)


def _resize(kind: str):
    """aten.upsample_* (F.interpolate, nn.Upsample) as TFLite's resize ops. nearest: PyTorch's 'nearest' is
    TFLite's plain nearest (floor(dst * in / out)), 'nearest-exact' its half_pixel_centers; bilinear:
    align_corners=False is TFLite's half_pixel_centers, True its align_corners."""
    def convert(b: Builder, n) -> None:
        x = b.to_channels_last(b.arg(n.args[0]))
        out_shape = torch_to_ir_shape(val_shape(n))
        if kind == "bilinear":
            corners = bool(n.args[2] if len(n.args) > 2 else n.kwargs.get("align_corners", False))
            scales = n.args[3] if len(n.args) > 3 else n.kwargs.get("scale_factors")
            _check_linear_scales(b, b.shape(x), out_shape, scales, corners)
            attrs = {"align_corners": corners, "half_pixel_centers": not corners}
        else:
            attrs = {"align_corners": False, "half_pixel_centers": kind == "nearest-exact"}
            _check_nearest_sources(b, n, b.shape(x), out_shape, attrs["half_pixel_centers"])
        op = "resize_bilinear" if kind == "bilinear" else "resize_nearest"
        b.bind(n, b.emit(op, [x.name], out_shape, attrs), True, x.torch_rank)
    return convert


def _check_nearest_sources(b: Builder, n, in_shape, out_shape, half_pixel_centers: bool) -> None:
    """The pixels PyTorch copies (its op run on a tensor of pixel numbers) must be the ones TFLite's formula picks:
    they differ for some scale_factors (PyTorch then uses 1 / scale_factor, not in / out)."""
    import torch

    _, in_h, in_w, _ = in_shape
    one_d = len(n.args[0].meta["val"].shape) == 3
    probe = torch.arange(in_h * in_w, dtype=torch.float32).reshape((1, 1, in_w) if one_d else (1, 1, in_h, in_w))
    got = n.target(probe, *n.args[1:], **n.kwargs).reshape(out_shape[1], out_shape[2]).to(torch.int64).numpy()
    rows = nearest_source(in_h, out_shape[1], False, half_pixel_centers)
    cols = nearest_source(in_w, out_shape[2], False, half_pixel_centers)
    if not np.array_equal(got, rows[:, None] * in_w + cols[None, :]):
        raise b.error(f"nearest resize {in_h}x{in_w} -> {out_shape[1]}x{out_shape[2]} with this scale_factor picks "
                      "other pixels than TFLite's nearest resize can (PyTorch uses 1 / scale_factor, not in / out); "
                      "give size= instead, or a scale_factor that multiplies the size to a whole number")


def _check_linear_scales(b: Builder, in_shape, out_shape, scales, corners: bool) -> None:
    """TFLite's bilinear samples at in / out; PyTorch at 1 / scale_factor when one is given: they must agree."""
    if scales is None or corners:
        return
    for size, out, s in zip(in_shape[1:3][-len(scales):], out_shape[1:3][-len(scales):], scales):
        if size * float(s) != out:
            raise b.error(f"bilinear resize of {size} pixels by scale_factor {s} to {out}: PyTorch samples at "
                          f"1 / {s}, TFLite's bilinear resize at {size} / {out}; give size= instead, or a "
                          "scale_factor that multiplies the size to a whole number")


def _refused_resize(what: str):
    def convert(b: Builder, n) -> None:
        raise b.error(f"{what} interpolation has no integer kernel in tinyaot; supported: mode='nearest', "
                      "'nearest-exact' and 'bilinear' (F.interpolate, nn.Upsample)")
    return convert


CONVERTERS: dict[str, Callable[[Builder, Any], None]] = {
    "aten.pad.default": _pad,
    "aten.constant_pad_nd.default": _pad,
    "aten.reflection_pad1d.default": _mode_pad("reflect"),
    "aten.reflection_pad2d.default": _mode_pad("reflect"),
    "aten.replication_pad1d.default": _mode_pad("replicate"),
    "aten.replication_pad2d.default": _mode_pad("replicate"),
    "aten.upsample_nearest1d.vec": _resize("nearest"),
    "aten.upsample_nearest2d.vec": _resize("nearest"),
    "aten._upsample_nearest_exact1d.vec": _resize("nearest-exact"),
    "aten._upsample_nearest_exact2d.vec": _resize("nearest-exact"),
    "aten.upsample_linear1d.vec": _resize("bilinear"),
    "aten.upsample_bilinear2d.vec": _resize("bilinear"),
    "aten.upsample_bicubic2d.vec": _refused_resize("bicubic"),
}
