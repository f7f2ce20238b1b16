"""Float evaluation of a float Graph in NumPy (NHWC), for calibration and per-layer error reports.

`real_<op>` is the real-valued definition of each IR op, which the int8 kernels in `ref/` approximate: here, or
beside its integer kernel in its reference module (ref/<ref>.py, for ops added since, so an op's numerics live in
one file); the table the evaluator runs is built from the op registry, so an op without its definition fails at
import.
"""
from __future__ import annotations

from importlib import import_module
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import AFTER_LOWERING, FLOAT_ONLY, OPS
from tinyaot.ir.resize import nearest_source
from tinyaot.ref.activations import real_function


def _clamp(node: Node, y: np.ndarray) -> np.ndarray:
    clamp = node.attrs.get("clamp")
    if clamp is None:
        return y
    return np.clip(y, clamp[0], clamp[1])


def real_fully_connected(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, w, b = args
    return _clamp(node, x @ w.T + b)


def _pad_nhwc(x: np.ndarray, padding, value: float = 0.0) -> np.ndarray:
    t, b, left, r = padding
    return np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)), constant_values=value)


def _windows(x: np.ndarray, kh: int, kw: int, stride, dilation, padding, value: float = 0.0) -> np.ndarray:
    """(N, OH, OW, C, KH, KW) view of every receptive field."""
    xp = _pad_nhwc(x, padding, value)
    dh, dw = dilation
    win = sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(1, 2))
    win = win[:, :: stride[0], :: stride[1], :, ::dh, ::dw]
    return win


def real_conv2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, w, b = args  # w: [out, kh, kw, in / groups]
    a = node.attrs
    win = _windows(x, w.shape[1], w.shape[2], a["stride"], a.get("dilation", (1, 1)), a["padding"])
    groups = x.shape[-1] // w.shape[3]
    if groups == 1:
        y = np.einsum("nhwcij,oijc->nhwo", win, w, optimize=True) + b
    else:  # output channels of group k read input channels of group k
        win = win.reshape(win.shape[:3] + (groups, w.shape[3]) + win.shape[4:])
        wg = w.reshape((groups, w.shape[0] // groups) + w.shape[1:])
        y = np.einsum("nhwgcij,goijc->nhwgo", win, wg, optimize=True).reshape(win.shape[:3] + (-1,)) + b
    return _clamp(node, y)


def real_transpose_conv2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """Every input pixel scatters its kernel-sized patch at stride steps; padding crops the full result."""
    x, w, b = args  # w: [out, kh, kw, in]
    n, ih, iw, _ = x.shape
    _, oh, ow, oc = g.tensor(node.outputs[0]).shape
    sh, sw = node.attrs["stride"]
    top, _bottom, left, _right = node.attrs.get("padding", (0, 0, 0, 0))
    _, kh, kw, _ = w.shape
    full = np.zeros((n, max((ih - 1) * sh + kh, top + oh), max((iw - 1) * sw + kw, left + ow), oc))
    for ky in range(kh):
        for kx in range(kw):
            full[:, ky : ky + (ih - 1) * sh + 1 : sh, kx : kx + (iw - 1) * sw + 1 : sw] += x @ w[:, ky, kx, :].T
    return _clamp(node, full[:, top : top + oh, left : left + ow] + b)


def real_depthwise_conv2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, w, b = args  # w: [1, kh, kw, in * m]
    a = node.attrs
    m = a.get("depth_multiplier", 1)
    win = _windows(x, w.shape[1], w.shape[2], a["stride"], a.get("dilation", (1, 1)), a["padding"])
    win = np.repeat(win, m, axis=3)  # output channel c*m + j reads input channel c
    y = np.einsum("nhwcij,ijc->nhwc", win, w[0], optimize=True) + b
    return _clamp(node, y)


def _pool_padding(node: Node, x: np.ndarray, g: Graph) -> tuple[int, int, int, int]:
    """The padding with a ceil_mode pool's overhang added at the bottom / right: the windows the output has."""
    a = node.attrs
    (kh, kw), (top, bottom, left, right) = a["kernel"], a.get("padding") or (0, 0, 0, 0)
    sh, sw = a.get("stride") or (kh, kw)
    oh, ow = g.tensor(node.outputs[0]).shape[1:3]
    over_h = max(0, (oh - 1) * sh + kh - (x.shape[1] + top + bottom))
    over_w = max(0, (ow - 1) * sw + kw - (x.shape[2] + left + right))
    return top, bottom + over_h, left, right + over_w


def real_max_pool2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    a = node.attrs
    kh, kw = a["kernel"]
    pad = _pool_padding(node, args[0], g)
    win = _windows(args[0], kh, kw, a.get("stride") or (kh, kw), (1, 1), pad, value=-np.inf)
    return _clamp(node, win.max(axis=(4, 5)))


def real_avg_pool2d(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """PyTorch's divisor: with count_include_pad the taps inside the padded input (a ceil_mode window's overhang
    past it counts nowhere), else the taps inside the input."""
    a = node.attrs
    kh, kw = a["kernel"]
    stride = a.get("stride") or (kh, kw)
    x = args[0]
    top, bottom, left, right = pad = _pool_padding(node, x, g)
    total = _windows(x, kh, kw, stride, (1, 1), pad).sum(axis=(4, 5))
    if a.get("count_include_pad", True):
        declared = a.get("padding") or (0, 0, 0, 0)
        inside = np.ones((1, x.shape[1] + declared[0] + declared[1], x.shape[2] + declared[2] + declared[3], 1))
        over = (0, bottom - declared[1], 0, right - declared[3])
        count = _windows(inside, kh, kw, stride, (1, 1), over).sum(axis=(4, 5))
    else:
        count = _windows(np.ones(x.shape[:3] + (1,)), kh, kw, stride, (1, 1), pad).sum(axis=(4, 5))
    return _clamp(node, total / count)


def real_mean(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return args[0].mean(axis=tuple(node.attrs["axes"]), keepdims=node.attrs.get("keepdims", False))


def real_sum(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0].sum(axis=tuple(node.attrs["axes"]), keepdims=node.attrs.get("keepdims", False)))


def real_add(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0] + args[1])


def real_mul(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0] * args[1])


def real_sub(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0] - args[1])


def real_minimum(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, np.minimum(args[0], args[1]))


def real_maximum(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, np.maximum(args[0], args[1]))


def real_concat(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """A constant input (its own batch of 1) is the same for every sample of the batch."""
    batch = max(a.shape[0] for a, i in zip(args, node.inputs) if not g.tensor(i).is_const)
    args = [np.broadcast_to(a, (batch, *a.shape[1:])) if g.tensor(i).is_const else a for a, i in zip(args, node.inputs)]
    return np.concatenate(args, axis=node.attrs["axis"])


NUMPY_PAD_MODES = {"constant": "constant", "reflect": "reflect", "symmetric": "symmetric", "replicate": "edge"}


def real_slice(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """Axis 0 is the batch here (a batch of samples, of one in the IR): every sample is sliced alike."""
    a = node.attrs
    steps = a.get("strides") or (1,) * len(a["begin"])
    return args[0][(slice(None),) + tuple(slice(b, e, s) for b, e, s in zip(a["begin"][1:], a["end"][1:], steps[1:]))]


def real_pad(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    mode = node.attrs.get("mode", "constant")
    if mode == "constant":
        return _pad_nhwc(args[0], node.attrs["padding"])
    t, b, left, r = node.attrs["padding"]
    return np.pad(args[0], ((0, 0), (t, b), (left, r), (0, 0)), mode=NUMPY_PAD_MODES[mode])


def real_resize_nearest(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, (_, out_h, out_w, _) = args[0], g.tensor(node.outputs[0]).shape
    flags = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    return x[:, nearest_source(x.shape[1], out_h, *flags)][:, :, nearest_source(x.shape[2], out_w, *flags)]


def _linear_source(in_size: int, out_size: int, corners: bool, half: bool):
    """(lower, upper, fraction) of the real source coordinate (PyTorch's and TFLite's float bilinear)."""
    scale = (in_size - 1) / (out_size - 1) if corners and out_size > 1 else in_size / out_size
    pos = np.arange(out_size) * scale
    pos = np.maximum((np.arange(out_size) + 0.5) * scale - 0.5, 0.0) if half else pos
    lower = np.minimum(np.floor(pos).astype(np.int64), in_size - 1)
    return lower, np.minimum(lower + 1, in_size - 1), pos - lower


def real_resize_bilinear(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, (_, out_h, out_w, _) = args[0], g.tensor(node.outputs[0]).shape
    flags = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    y0, y1, fy = _linear_source(x.shape[1], out_h, *flags)
    x0, x1, fx = _linear_source(x.shape[2], out_w, *flags)
    rows = x[:, y0] * (1 - fy)[None, :, None, None] + x[:, y1] * fy[None, :, None, None]
    return rows[:, :, x0] * (1 - fx)[None, None, :, None] + rows[:, :, x1] * fx[None, None, :, None]


def real_softmax(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    z = args[0] * node.attrs.get("beta", 1.0)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def real_l2_normalize(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """x / max(||x||, eps) over the last axis (PyTorch's F.normalize; TFLite's float L2_NORMALIZATION); a zero row
    without eps stays zero, as the int8 kernel's does."""
    x = args[0]
    norm = np.maximum(np.sqrt(np.sum(x * x, axis=-1, keepdims=True)), float(node.attrs.get("eps") or 0.0))
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)



def real_lut(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    a = node.attrs
    if a["function"] == "affine":
        y = args[0] * a["scale_by"] + a["offset"]
    else:
        y = real_function(a["function"])(args[0])
    return _clamp(node, y)


def real_relu(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return _clamp(node, args[0])


def real_transpose(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    return np.transpose(args[0], node.attrs["perm"])  # perm[0] == 0: the batch stays first


def real_quantize(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """quantize (int8 -> int8 with other qparams) changes no real value."""
    return args[0]


def real_layer_norm(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, gamma, beta = args
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + node.attrs.get("eps", 1e-5)) * gamma + beta


def real_group_norm(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    x, gamma, beta = args
    groups = node.attrs["groups"]
    blocks = x.reshape(x.shape[0], -1, groups, x.shape[-1] // groups)
    mean = blocks.mean(axis=(1, 3), keepdims=True)
    var = ((blocks - mean) ** 2).mean(axis=(1, 3), keepdims=True)
    normed = ((blocks - mean) / np.sqrt(var + node.attrs.get("eps", 1e-5))).reshape(x.shape)
    return normed * gamma + beta


def real_batch_matmul(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    a, b = (np.transpose(v, node.attrs[p]) if node.attrs.get(p) else v for v, p in zip(args, ("lhs_perm", "rhs_perm")))
    a = np.swapaxes(a, -1, -2) if node.attrs.get("adj_x") else a
    b = np.swapaxes(b, -1, -2) if node.attrs.get("adj_y") else b
    return np.matmul(a, b)


def real_reshape(node: Node, args: list[np.ndarray], g: Graph) -> np.ndarray:
    """Batched, (N, ...) for (1, ...); one sample at a time (a graph that folds its batch dim), the shape itself."""
    return args[0].reshape((-1,) + tuple(g.tensor(node.outputs[0]).shape[1:]))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def real_lstm(node: Node, args: list[np.ndarray], g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's LSTM (gates i, f, g, o; one bias) from zero state: (output, the cell state at every step). The
    second is the node's second output, whose calibrated range gives the int16 cell state its scale."""
    x, w_ih, w_hh, b = args
    hidden = node.attrs["hidden"]
    clip = node.attrs.get("cell_clip") or 0.0
    h = np.zeros((x.shape[0], hidden))
    c = np.zeros_like(h)
    hs, cs = [], []
    for t in range(x.shape[1]):
        i, f, gc, o = np.split(x[:, t] @ w_ih.T + h @ w_hh.T + b, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gc)
        c = np.clip(c, -clip, clip) if clip > 0 else c
        h = _sigmoid(o) * np.tanh(c)
        hs.append(h)
        cs.append(c)
    y = hs[-1] if node.attrs.get("last_only") else np.stack(hs, axis=1)
    return y, np.stack(cs, axis=1)


def real_gru(node: Node, args: list[np.ndarray], g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's GRU (gates r, z, n) from zero state: (output, the hidden state at every step)."""
    x, w_ih, w_hh, b_ih, b_hh = args
    h = np.zeros((x.shape[0], node.attrs["hidden"]))
    hs = []
    for t in range(x.shape[1]):
        xr, xz, xn = np.split(x[:, t] @ w_ih.T + b_ih, 3, axis=-1)
        hr, hz, hn = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        h = (1.0 - z) * np.tanh(xn + r * hn) + z * h
        hs.append(h)
    seq = np.stack(hs, axis=1)
    return (hs[-1] if node.attrs.get("last_only") else seq), seq


def real_svdf(node: Node, args: list[np.ndarray], g: Graph):
    """TFLite's float SVDF for one invoke from a zeroed state (each sample the first invoke after a reset, as the
    per-layer reports run a stateful layer): the state holds only the new feature activations, at its last slot.
    A float graph's node (two outputs) also gives those feature activations, its observed output."""
    x, w_feature, w_time, bias = args
    activations = x @ w_feature.T  # [samples, filters]
    y = _svdf_output(node, activations * w_time[:, -1], bias)
    return (y, activations) if len(node.outputs) > 1 else y


def stream_svdf(node: Node, args: list[np.ndarray], g: Graph, state: dict):
    """TFLite's float SVDF over consecutive invokes (evaluate(stream=...)): the rows of the input are frames in
    order, and the state (the last `memory` feature activations per filter, zeros after a reset) is kept in
    `state[node.name]` from one call to the next. One frame holds the node's `batches` rows."""
    x, w_feature, w_time, bias = args
    batches, features = g.tensor(node.inputs[0]).shape
    filters, memory = w_time.shape
    activations = x.reshape(-1, batches, features) @ w_feature.T  # [frames, batches, filters]
    past = state.get(node.name, np.zeros((memory - 1, batches, filters)))
    history = np.concatenate([past, activations])  # the frame each output reads last is history[t + memory - 1]
    frames = len(activations)
    per_filter = sum(history[j : j + frames] * w_time[:, j] for j in range(memory))
    state[node.name] = history[frames:]
    y = _svdf_output(node, per_filter.reshape(-1, filters), bias)
    return (y, activations.reshape(-1, filters)) if len(node.outputs) > 1 else y


def _svdf_output(node: Node, per_filter: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Each unit's rank filters summed, the bias added, the fused activation applied (TFLite's float kernel)."""
    y = per_filter.reshape(len(per_filter), -1, node.attrs["rank"]).sum(axis=-1) + bias
    clamp = node.attrs.get("float_clamp")
    return y if clamp is None else np.clip(y, clamp[0], clamp[1])


# Ops whose state carries over from one invoke to the next, run as a stream by evaluate(stream=...): their
# definition over consecutive frames. An lstm / gru runs a whole sequence per invoke and stays real_<op>.
STREAM_DEFINITIONS = {"svdf": stream_svdf}


def streamed(g: Graph) -> bool:
    """The graph keeps state from one invoke to the next (an SVDF): its calibration samples are one stream."""
    return any(n.op in STREAM_DEFINITIONS for n in g.nodes)


def real_definition(op: str) -> Callable[[Node, list[np.ndarray], Graph], np.ndarray] | None:
    """real_<op>: here, or beside the op's integer kernel in its reference module (ref/<ref>.py), where an op
    added since keeps all of its numerics."""
    if f"real_{op}" in globals():
        return globals()[f"real_{op}"]
    ref = OPS[op].ref
    return getattr(import_module(f"tinyaot.ref.{ref}"), f"real_{op}", None) if ref else None


def _real_definitions() -> dict[str, Callable[[Node, list[np.ndarray], Graph], np.ndarray]]:
    """real_<op> for every op a float model can hold (the registry's lowered ops), found by name."""
    table = {}
    for s in OPS.values():
        if s.qparams in (AFTER_LOWERING, FLOAT_ONLY):
            continue
        real = real_definition(s.name)
        if real is None:
            raise RuntimeError(f"{s.name} has no real_{s.name} in quantize/float_eval.py or ref/{s.ref}.py: every "
                               "lowered op needs its real definition (calibration runs it)")
        table[s.name] = real
    return table


FLOAT_OPS = _real_definitions()


def folds_batch(g: Graph) -> bool:
    """A reshape moves values across dim 0 (x.view(-1, H, W) of a (1, C, H, W) map): dim 0 of some tensor is
    not the sample, so samples stacked on it would mix."""
    return any(n.op == "reshape" and g.tensor(n.inputs[0]).shape[:1] != g.tensor(n.outputs[0]).shape[:1]
               for n in g.nodes)


def evaluate(g: Graph, x, stream: dict | None = None) -> dict[str, np.ndarray]:
    """Run the float graph on a batch (dim 0 is the batch); return every tensor's value, each with the samples on
    its first axis: (N, ...) for a tensor shaped (1, ...), and (N, *shape) for one whose dim 0 holds something
    else (a graph that folds its batch dim runs one sample at a time). A model with several inputs takes a list
    with one batch per input, in the graph's input order.

    Each sample runs from a reset, unless `stream` is given: then the samples are consecutive invokes of one stream,
    and a stateful op (STREAM_DEFINITIONS: an SVDF) carries its state from one sample to the next, kept in the dict
    across calls (pass {} to start from a reset, the same dict again to go on)."""
    inputs = [np.asarray(v, dtype=np.float64) for v in g.per_input(x)]
    if not folds_batch(g):
        return _run(g, inputs, stream)
    runs = [_run(g, [v[s : s + 1] for v in inputs], stream) for s in range(len(inputs[0]))]
    values = {t.name: t.data.astype(np.float64) for t in g.constants()}
    for k in runs[0] if runs else ():
        if k not in values:
            each = [r[k] for r in runs]
            values[k] = np.concatenate(each) if each[0].shape[:1] == (1,) else np.stack(each)
    return values


def _run(g: Graph, inputs: list[np.ndarray], stream: dict | None = None) -> dict[str, np.ndarray]:
    values: dict[str, np.ndarray] = dict(zip(g.inputs, inputs))
    for t in g.constants():
        values[t.name] = t.data.astype(np.float64)
    for node in g.nodes:
        args = [values[i] for i in node.inputs]
        if stream is not None and node.op in STREAM_DEFINITIONS:
            y = STREAM_DEFINITIONS[node.op](node, args, g, stream)
        else:
            y = FLOAT_OPS[node.op](node, args, g)
        values.update(zip(node.outputs, y) if len(node.outputs) > 1 else ((node.outputs[0], y),))  # lstm: 2
    return values
