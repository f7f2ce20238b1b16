"""In-place and partial overlap: which outputs may share bytes with an input that dies at their node.

An op opts in by registering a function in OVERLAP_OPS that returns OverlapRules for a node. A rule
(input, output, distance, units) says: at this node the output's bytes may intersect the input's
bytes provided

    offset(output) <= offset(input) - distance

i.e. the output starts at least `distance` bytes below the input (a negative distance lets it start
that many bytes above). The kernel streams forward through memory: it writes output unit u only
after it has read every input byte that units < u need, so moving the output further down is always
safe too. Typical distances, for a kernel that walks its output in order:

- elementwise (add, mul, relu, lut, requantize, same shapes): 0 -- fully in place;
- a streaming op whose output unit u needs input units >= u only: n_out - n_in + one input unit,
  the "safe distance" of vMCU (e.g. 1x1 conv: max(in, out) + one input pixel in total);
- windowed ops (conv2d, depthwise_conv2d, pools) whose C kernel walks output pixels row-major:
  `window_rules` computes the distance from the windows (3x3 depthwise, pad 1: one row + two pixels);
- a transposed convolution's gather kernel likewise, from the input rows and columns each output pixel
  reaches back to (`transposed_rules`): an upsampling output may end over most of its input.

`streaming_distance` computes the streaming number from the unit sizes. A rule is a promise about the
C kernel's loop order: change the loop order (e.g. two pixels at a time) and the rule must change too. The
planners honour the rule only when the input's last reader is this node and the input is not a graph output
(nor kept by the caller's contract); the verifier re-checks both and the distance for every pair of buffers
that share a byte. The reference interpreter writes such an output unit by unit, recomputing each unit from
the arena as it is at that moment, so a rule that is wrong for the kernel at unit granularity gives a wrong answer.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS


@dataclass(frozen=True)
class OverlapRule:
    input: str  # tensor name read by the node
    output: str  # tensor name written by the node
    distance: int  # offset(output) <= offset(input) - distance when the two share bytes
    units: int  # the output is written in this many equal, consecutive chunks (C write order)


def streaming_distance(n_in: int, n_out: int, units: int) -> int:
    """Smallest safe distance for a kernel that writes output unit u (of `units`) after reading input unit u.

    Writing unit u must not touch input units >= u: out + (u + 1) * n_out / units <= in + u * n_in / units
    for every u; the worst case is the last unit.
    """
    if units < 1 or n_in % units or n_out % units:
        raise ValueError(f"{n_in} and {n_out} bytes do not split into {units} units")
    return n_out - n_in + n_in // units


def elementwise_rules(node: Node, g: Graph) -> list[OverlapRule]:
    """Same-shape, same-dtype elementwise inputs may be overwritten in place (distance 0), row by row."""
    y = g.tensor(node.outputs[0])
    rules = []
    for name in dict.fromkeys(node.inputs):
        x = g.tensor(name)
        if x.is_const or x.shape != y.shape or x.itemsize != y.itemsize or y.nbytes == 0:
            continue
        rules.append(OverlapRule(name, y.name, 0, _rows(y.shape)))
    return rules


def _rows(shape: tuple[int, ...]) -> int:
    """Units for emulation: one per row (every axis but the last), at least 2 when the tensor allows."""
    rows = 1
    for d in shape[:-1]:
        rows *= d
    if rows == 1 and shape:
        rows = shape[-1]  # a [1, F] vector: element by element
    return max(rows, 1)


def _pair(v, default) -> tuple[int, int]:
    if v is None:
        return default
    if isinstance(v, int):
        return (v, v)
    return (int(v[0]), int(v[-1]))


def _first_valid(origin: np.ndarray, dilation: int, kernel: int, size: int) -> np.ndarray:
    """Index of the first input row/column a window starting at `origin` reads; `size` when it reads none."""
    k0 = np.where(origin < 0, (-origin + dilation - 1) // dilation, 0)  # taps that fall in the padding
    first = origin + k0 * dilation
    return np.where((k0 < kernel) & (first < size), first, size)


def window_rules(node: Node, g: Graph, pairs: bool = False) -> list[OverlapRule]:
    """conv2d / depthwise_conv2d / pools whose C kernel walks output pixels in row-major order, channels
    innermost, reading each pixel's window (tinyaot's kernels do): output pixel q may be written once it
    lies below the first input byte that any pixel >= q still reads. Exact for that loop order at pixel
    granularity (conservative within a pixel); emulated row by row.

    pairs: the pairs kernel (plan/kernels.py) reads both windows of a pixel pair before writing either pixel,
    so pixel q only has to clear what the pixels after its pair read (after its row, when the pair spans two
    rows: that keeps the row-by-row emulation exact)."""
    found = window_need(node, g)
    if found is None:
        return []
    need, oc = found
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    ends = (np.arange(need.size) + 1) * oc  # output bytes written up to and including pixel q
    if pairs:
        need = np.append(need, x.nbytes)[pair_ends(y.shape)]
    return [OverlapRule(x.name, y.name, int(np.max(ends - need)), y.shape[0] * y.shape[1])]


def pair_ends(shape) -> np.ndarray:
    """For each output pixel of an NHWC tensor, the first pixel after both its pair (pairs within each image;
    an odd last pixel is a pair by itself) and its row, whichever comes first."""
    n, h, w = shape[0], shape[1], shape[2]
    q = np.arange(h * w)
    ends = np.minimum(np.minimum(q - q % 2 + 2, h * w), (q // w + 1) * w)
    return (np.arange(n)[:, None] * h * w + ends[None, :]).reshape(-1)


def window_need(node: Node, g: Graph) -> tuple[np.ndarray, int] | None:
    """(need, out_c) for a windowed op over int8 NHWC: need[q] is the first input byte that output pixels >= q
    (row-major) still read; None when the op is not a 4-D int8 window op."""
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if len(x.shape) != 4 or len(y.shape) != 4 or x.itemsize != 1 or y.itemsize != 1 or y.nbytes == 0:
        return None
    n, ih, iw, ic = x.shape
    _, oh, ow, oc = y.shape
    if "kernel" not in OPS[node.op].attrs._names():  # a conv: the window is the weight's [.., kh, kw, ..]
        kh, kw = g.tensor(node.inputs[1]).shape[1:3]
        sh, sw = _pair(node.attrs.get("stride"), (1, 1))
    else:
        kh, kw = _pair(node.attrs.get("kernel"), (1, 1))
        sh, sw = _pair(node.attrs.get("stride"), (kh, kw))
    dh, dw = _pair(node.attrs.get("dilation"), (1, 1))
    pad = node.attrs.get("padding") or (0, 0, 0, 0)
    top, left = (pad, pad) if isinstance(pad, int) else (pad[0], pad[-2] if len(pad) == 4 else pad[-1])
    fy = _first_valid(np.arange(oh) * sh - top, dh, kh, ih)
    fx = _first_valid(np.arange(ow) * sw - left, dw, kw, iw)
    none = (fy[None, :, None] >= ih) | (fx[None, None, :] >= iw)
    start = ((np.arange(n)[:, None, None] * ih + fy[None, :, None]) * iw + fx[None, None, :]) * ic
    start = np.where(none, x.nbytes, start).reshape(-1)
    return np.minimum.accumulate(start[::-1])[::-1], oc


def residual_rules(node: Node, g: Graph, pairs: bool = False) -> list[OverlapRule]:
    """conv2d_add: the conv's input streams as for conv2d; the skip's bytes of a pixel are read right before
    the sum is written over them, so the output may sit exactly over the skip (distance 0). Emulated row by
    row like the conv (each output byte depends on the skip byte under it only)."""
    rules = window_rules(node, g, pairs)
    skip, y = g.tensor(node.inputs[3]), g.tensor(node.outputs[0])
    if not skip.is_const and skip.shape == y.shape and len(y.shape) == 4 and skip.itemsize == y.itemsize == 1:
        rules.append(OverlapRule(skip.name, y.name, 0, y.shape[0] * y.shape[1]))
    return rules


def transposed_rules(node: Node, g: Graph, pairs: bool = False) -> list[OverlapRule]:
    """transpose_conv2d's gather kernel (c/kernels/transpose_conv2d_s8.c) walks output pixels row-major and reads,
    for output row oy, exactly the input rows iy with oy + pad_top - (kh - 1) <= iy * stride_h <= oy + pad_top
    (columns likewise): the pixel rule of window_rules with those first rows and columns. Emulated row by row."""
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if len(x.shape) != 4 or len(y.shape) != 4 or x.itemsize != 1 or y.itemsize != 1 or y.nbytes == 0:
        return []
    n, ih, iw, ic = x.shape
    _, oh, ow, oc = y.shape
    kh, kw = g.tensor(node.inputs[1]).shape[1:3]
    sh, sw = _pair(node.attrs.get("stride"), (1, 1))
    top, _, left, _ = node.attrs.get("padding") or (0, 0, 0, 0)

    def reach(out: int, pad: int, k: int, stride: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        t = np.arange(out) + pad  # = input index * stride + tap
        first = np.maximum(-(-(t - k + 1) // stride), 0)
        return first, (first <= np.minimum(t // stride, size - 1))  # the first input index read; any read at all

    fy, any_y = reach(oh, top, kh, sh, ih)
    fx, any_x = reach(ow, left, kw, sw, iw)
    start = ((np.arange(n)[:, None, None] * ih + fy[None, :, None]) * iw + fx[None, None, :]) * ic
    start = np.where(any_y[None, :, None] & any_x[None, None, :], start, x.nbytes).reshape(-1)
    need = np.minimum.accumulate(start[::-1])[::-1]
    ends = (np.arange(need.size) + 1) * oc
    return [OverlapRule(x.name, y.name, int(np.max(ends - need)), n * oh)]


# rule family (the registry's `overlap` trait) -> rule function; an op opts in with its trait in ir/ops.py.
RULE_FAMILIES: dict[str, Callable[[Node, Graph], list[OverlapRule]]] = {
    "elementwise": elementwise_rules,
    "window": window_rules,
    "residual": residual_rules,
    "transposed": transposed_rules,
}
OVERLAP_OPS: dict[str, Callable[[Node, Graph], list[OverlapRule]]] = {
    name: RULE_FAMILIES[s.overlap] for name, s in OPS.items() if s.overlap is not None
}


def overlap_rules(node: Node, g: Graph, pairs: bool = False) -> list[OverlapRule]:
    """The overlaps `node` allows between its inputs and outputs (empty for ops that have not opted in);
    pairs: as run by the pairs kernel."""
    fn = OVERLAP_OPS.get(node.op)
    if fn is None:
        return []
    return list(fn(node, g, pairs)) if pairs else list(fn(node, g))


@dataclass(frozen=True)
class Overlap:
    """A rule resolved to buffers: at `step`, buffer `output` may sit over buffer `input` (see OverlapRule)."""

    input: str  # buffer name
    output: str  # buffer name
    step: int
    distance: int
    units: int


def buffer_overlaps(g: Graph, buffers, pinned=frozenset(), pairs=frozenset()) -> tuple[Overlap, ...]:
    """Every rule of every node whose preconditions hold in this schedule: the input's bytes die at the node
    (no later reader, not a graph output, not `pinned` by the caller's contract) and the output's bytes are
    born there (not a view of older bytes). A rule's distance is from its input tensor's start, which a slice read in
    place has inside its buffer: the overlap's is from the buffer's."""
    by_tensor = {t: b for b in buffers for t in b.tensors}
    out_bufs = {by_tensor[n].name for n in g.outputs if n in by_tensor} | set(pinned)
    found: dict[tuple[str, str], Overlap] = {}
    for step, node in enumerate(g.nodes):
        for rule in overlap_rules(node, g, node.name in pairs):
            src, dst = by_tensor.get(rule.input), by_tensor.get(rule.output)
            if src is None or dst is None or src.name == dst.name or src.name in out_bufs:
                continue
            if src.last != step or dst.first != step or dst.producer != node.name:
                continue
            key = (src.name, dst.name)
            distance = rule.distance - src.offset_in(rule.input)  # a slice read in place starts inside its buffer
            if key not in found or distance > found[key].distance:
                found[key] = Overlap(src.name, dst.name, step, distance, rule.units)
    return tuple(found.values())
