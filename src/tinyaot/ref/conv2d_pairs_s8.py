"""The pairs kernels of conv2d and conv2d_add (c/kernels/conv2d_pairs_s8.c), the `pairs` and `pairs_w8` variants.

They compute conv2d_s8's (conv2d_add_s8's) numbers two output pixels at a time: both windows are widened to
int16 into a work buffer, then an int16 microkernel runs over weights laid out per group of channels at compile
time, int16 pairs of doubled weights (speed) or int8 in the kernel's order (size), and the fast requantization
(ref/per_channel.py) finishes each output. The reference is the plain kernel's; this module holds what the plan
and the code generator need to know of these kernels: when a layer qualifies, the work buffer's size and the
Params as the C reads them.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ir.variants import KernelOptions
from tinyaot.ref import conv2d_add_s8, conv2d_s8
from tinyaot.ref.per_channel import FAST_ALIGNMENT, fast_requantization, requant_triples, right_shifts

TAP_GROUP = 8  # the microkernel reads a window in groups of 8 taps: taps_padded rounds up to them
WINDOW_BYTES_PER_TAP = 2 * 2 + 1  # the pair's two windows as int16, then one window's int8 bytes
X_BOUND = 255  # |x + input_offset| the kernel sums (ref/per_channel.py fast_requantization)


def qualifies(node: Node, g: Graph, options: KernelOptions) -> tuple[bool, str]:
    """An int8 conv (groups = 1) with constant weights whose requantization takes the fast exact path, in an
    arena at least word aligned."""
    if options.alignment < FAST_ALIGNMENT:
        return False, f"the arena is {options.alignment}-byte aligned; the kernel loads words (LDRD)"
    x, w, b = (g.tensor(n) for n in node.inputs[:3])
    y = g.tensor(node.outputs[0])
    if len(x.shape) != 4 or len(w.shape) != 4 or x.dtype != "int8":
        return False, f"its input is {x.dtype} {list(x.shape)}; the pairs kernels take int8 NHWC"
    if w.data is None or w.qparams is None:
        return False, "its weights are not constant int8"
    out_qp = node.attrs.get("conv_qparams") if node.op == "conv2d_add" else y.qparams  # the conv's own rounding
    if x.qparams is None or out_qp is None:
        return False, "its input or output has no qparams"
    if w.shape[3] != x.shape[3]:
        return False, f"a grouped conv ({x.shape[3] // w.shape[3]} groups); the pairs kernels take groups = 1"
    return fast_requantization(x.qparams.scale[0], w, b, out_qp.scale[0], X_BOUND)


def taps_padded(kernel_h: int, kernel_w: int, in_c: int) -> int:
    """A window's taps rounded up to whole groups, as the C computes them ((taps + 7) & ~7)."""
    return -(-kernel_h * kernel_w * in_c // TAP_GROUP) * TAP_GROUP


def work_bytes(node: Node, g: Graph) -> int:
    """The work buffer conv2d_pairs_s8.c's pairs_run reads: the pair's two windows widened to int16 (4 bytes a
    padded tap), one window's int8 bytes (1 a tap), and for conv2d_add the conv's own int8 output of the pair."""
    _, kh, kw, in_c = g.tensor(node.inputs[1]).shape
    sums = 2 * g.tensor(node.outputs[0]).shape[-1] if node.op == "conv2d_add" else 0
    return WINDOW_BYTES_PER_TAP * taps_padded(kh, kw, in_c) + sums


def prepare(node: Node, g: Graph, weights: str):
    """The Params the pairs kernel reads (its variant's `weights`: "int16" speed, "int8" size): conv2d_s8's, or
    conv2d_add_s8's with its conv part, laid out by pairs_params."""
    if node.op == "conv2d_add":
        p = conv2d_add_s8.prepare(node, g)
        return replace(p, conv=pairs_params(p.conv, weights == "int8"))
    return pairs_params(conv2d_s8.prepare(node, g), weights == "int8")


def pairs_params(p, int8: bool):
    """A conv's params as the pairs kernels read them (tinyaot_kernels.h): weights and bias laid out per group,
    the right shifts positive, and (speed) (multiplier, right, k) per channel, padded to the group. Speed mode
    doubles weights and bias: the accumulators come out as the 2 * acc the requantization's SMMLAR wants, one
    instruction less per output (exact: the plan proved |acc| < 2^30, and 2 * int8 fits the int16 halves)."""
    taps = taps_padded(p.kernel_h, p.kernel_w, p.in_c)
    right = right_shifts(p.shift)
    if int8:
        return replace(p, weights=w8_weights(p.weights, taps), shift=right, bias=pair_bias(p.bias, 2))
    triples = np.zeros((-(-p.out_c // 4) * 4, 3), dtype=np.int32)
    triples[: p.out_c] = requant_triples(p.multiplier, right, p.output_offset)
    doubled = (2 * p.bias.astype(np.int64)).astype(np.int32)
    return replace(p, weights=pair_weights(2 * p.weights.astype(np.int64), taps), shift=right,
                   bias=pair_bias(doubled, 4), multiplier=triples.reshape(-1))


def pair_bias(bias: np.ndarray, group: int) -> np.ndarray:
    """The pairs kernels' bias: per group of `group` channels, the group's bias for each of the two pixels, so the
    microkernel loads its accumulators' start in one LDM ([ceil(out_c / group)][2][group], zero beyond out_c).

    >>> pair_bias(np.array([1, 2, 3], np.int32), 2).tolist()
    [1, 2, 1, 2, 3, 0, 3, 0]
    """
    groups = -(-len(bias) // group)
    b = np.zeros(groups * group, dtype=np.int32)
    b[: len(bias)] = bias
    b = b.reshape(groups, 1, group)
    return np.ascontiguousarray(np.concatenate([b, b], axis=1)).reshape(-1)


def w8_weights(weights: np.ndarray, taps_padded: int) -> np.ndarray:
    """conv weights [out_c][kh][kw][in_c] -> the size-mode pairs kernel's int8 [out_c / 2][taps_padded / 4][2][4]
    (layout in tinyaot_kernels.h): per pair of channels and group of four taps, each channel's four bytes.

    >>> w8_weights(np.arange(1, 6, dtype=np.int8).reshape(1, 1, 1, 5), 8).reshape(-1).tolist()
    [1, 2, 3, 4, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]
    """
    out_c, taps = weights.shape[0], int(np.prod(weights.shape[1:]))
    groups = -(-out_c // 2)
    w = np.zeros((groups * 2, taps_padded), dtype=np.int8)
    w[:out_c, :taps] = weights.reshape(out_c, taps)
    return np.ascontiguousarray(w.reshape(groups, 2, taps_padded // 4, 4).transpose(0, 2, 1, 3))


def pair_weights(weights: np.ndarray, taps_padded: int) -> np.ndarray:
    """conv weights [out_c][kh][kw][in_c] -> the pairs kernel's int32 words [out_c / 4][taps_padded / 2][4]
    (layout in tinyaot_kernels.h): word 2j of channel i holds taps 4j and 4j + 2, word 2j + 1 taps 4j + 1 and 4j + 3.

    >>> pair_weights(np.array([[[[1, 2, 3, -4, 5]]]], dtype=np.int8), 8)[0, :, 0].tolist()
    [196609, -262142, 5, 0]
    """
    out_c, taps = weights.shape[0], int(np.prod(weights.shape[1:]))
    groups = -(-out_c // 4)
    w = np.zeros((groups * 4, taps_padded), dtype=np.int64)
    w[:out_c, :taps] = weights.reshape(out_c, taps)
    w = w.reshape(groups, 4, taps_padded // 4, 4)  # [g][i][j][tap in quad]
    even = (w[..., 0] & 0xFFFF) | (w[..., 2] << 16)
    odd = (w[..., 1] & 0xFFFF) | (w[..., 3] << 16)
    words = np.stack([even, odd], axis=-1).transpose(0, 2, 3, 1)  # [g][j][even/odd][i]
    return words.reshape(groups, taps_padded // 2, 4).astype(np.int32)
