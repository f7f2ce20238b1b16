"""The pairs kernels of conv2d and conv2d_add (c/kernels/conv2d_pairs_s8.c), the `pairs` and `pairs_w8` variants.

They compute conv2d_s8's (conv2d_add_s8's) numbers two output pixels at a time: both windows are widened to
int16 into a work buffer, then an int16 microkernel runs over weights laid out per group of channels at compile
time (codegen/emit_conv.py: int16 pairs of doubled weights for speed, int8 in the kernel's order for size), and
the fast requantization (ref/per_channel.py) finishes each output. A conv2d whose constant channels (all-zero
weights or multiplier 0, as trained models' dead channels) cost more than placing the others does runs them
skipped (`skipped_channels`: tinyaot_conv2d_pairs_sparse_s8, ConvSparseParams). The reference is the plain
kernel's; this module holds what the plan needs to know of these kernels: when a layer qualifies and the work
buffer's size. A window whose kernel rows are not whole quads of bytes (a first conv on 1-3 channels) is widened
in its own tap order (`window_order`), which the emitter gives the weights too, and an RGB 3x3 stem's 27 taps pad
to 28 where the kernel allows (`pairs_taps`); the plan's record notes it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.ir.variants import KernelOptions
from tinyaot.ref import conv2d_add_s8, conv2d_s8
from tinyaot.ref.conv2d_s8 import ConvParams
from tinyaot.ref.per_channel import FAST_ALIGNMENT, FastRequant, fast_requant, input_range

HOME = "conv2d_pairs_s8"  # this module, as ir/variants.py names it
TAP_GROUP = 8  # the microkernel reads a window in groups of 8 taps: taps_padded rounds up to them
WINDOW_BYTES_PER_TAP = 2 * 2 + 1  # the pair's two windows as int16, then one window's int8 bytes
# Skipping a constant channel saves, per output pixel, its taps' MACs (about 0.8 instructions each in speed mode,
# 1.2 in size) and its requantization (about 5); it costs about 1 instruction per output byte (the constants'
# copy) and 6 per live channel placed. In fifths of an instruction; skipped where saving >= 1.25 x cost.
SKIP_SAVE_TAP, SKIP_SAVE_REQUANT, SKIP_COST_BYTE, SKIP_COST_LIVE = 4, 25, 5, 30
MAX_LEFT = {"int16": 7, "int8": 0}  # a left shift the weights take (ref/per_channel.py form 2): speed's doubled
#                                     int16 weights hold 2^(7 + 1) * int8; int8 weights cannot be scaled


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
    variant = next(v for v in OPS[node.op].variants if v.home == HOME and v.serves(options.optimize))
    try:
        fast = requantization(node, g, variant.weights)
    except ModelError as e:
        return False, str(e)
    if isinstance(fast, str):
        return False, fast
    skip = skipped_channels(node, g)
    p = conv_params(node, g)
    stem = stem_note(replace(p, out_c=int((~skip).sum())) if skip.any() else p, variant.weights == "int8")
    if not skip.any():
        return True, "; ".join(part for part in (fast.note, stem) if part)
    n = int(skip.sum())
    notes = [f"{n} constant channel{'s' * (n > 1)} skipped (zero weights or multiplier 0)"]
    return True, "; ".join(notes + [part for part in fast.note.split("; ") if part and "constant" not in part]
                           + ([stem] if stem else []))


def stem_note(p: ConvParams, int8: bool) -> str:
    """What the plan's record says of a stem window (window_order), '' for the plain order."""
    if window_order(p) is None:
        return ""
    taps = p.kernel_h * p.kernel_w * p.in_c
    return f"stem window ({p.kernel_h}x{p.kernel_w}x{p.in_c}: rows' whole quads, then their last bytes; " \
           f"{taps} taps in {pairs_taps(p, int8)})"


def conv_params(node: Node, g: Graph):
    """The conv's own Params (a conv2d_add's conv part): what the kernel requantizes."""
    return conv2d_add_s8.prepare(node, g).conv if node.op == "conv2d_add" else conv2d_s8.prepare(node, g)


def requantization(node: Node, g: Graph, weights: str) -> FastRequant | str:
    """The layer's fast requantization (ref/per_channel.py) for weights of type `weights` in flash, over the
    values its input can hold; the reason where a channel cannot take it. The plan's `qualifies` and the
    emitter (codegen/emit_conv.py) both ask this."""
    return fast_requant(conv_params(node, g), input_range(g, node.inputs[0]), MAX_LEFT[weights])


@dataclass(frozen=True)
class ConvSparseParams:
    """A conv2d through the pairs kernels with its constant channels skipped (tinyaot_conv2d_pairs_sparse_s8):
    `conv` holds the live channels only (its out_c their count), each output pixel of out_c channels is first
    `fill` (the constant channels' outputs) and then gets live channel j's result at channel live[j]."""

    conv: ConvParams
    out_c: int
    live: np.ndarray  # int16 [conv.out_c]
    fill: np.ndarray  # int8 [out_c]


def constant_channels(p: ConvParams) -> np.ndarray:
    """bool [out_c]: the channels whose output is the same at every pixel (all-zero weights, or multiplier 0)."""
    return (p.weights.reshape(p.out_c, -1) == 0).all(axis=1) | (p.multiplier == 0)


def constant_outputs(p: ConvParams) -> np.ndarray:
    """int8 [out_c]: each channel's output for an accumulator of its bias alone, what conv2d_s8 gives a constant
    channel at every pixel (zero weights: the sum is 0; multiplier 0: any accumulator gives 0)."""
    v = multiply_by_quantized_multiplier(p.bias.astype(np.int64), p.multiplier, p.shift) + p.output_offset
    return np.clip(v, p.act_min, p.act_max).astype(np.int8)


def skipped_channels(node: Node, g: Graph) -> np.ndarray:
    """bool [out_c]: the constant channels the pairs kernel skips, where skipping pays (SKIP_*); none for
    conv2d_add (its add reads the conv's own output whole) or when no channel would be left."""
    if node.op != "conv2d":
        return np.zeros(g.tensor(node.outputs[0]).shape[-1], bool)
    p = conv2d_s8.prepare(node, g)
    skip = constant_channels(p)
    dead, live = int(skip.sum()), int((~skip).sum())
    taps = p.kernel_h * p.kernel_w * p.in_c
    saving = dead * (SKIP_SAVE_TAP * taps + SKIP_SAVE_REQUANT)
    cost = SKIP_COST_BYTE * p.out_c + SKIP_COST_LIVE * live
    if not dead or not live or 4 * saving < 5 * cost:
        skip[:] = False
    return skip


def taps_padded(kernel_h: int, kernel_w: int, in_c: int) -> int:
    """A window's taps rounded up to whole groups, as the C computes them ((taps + 7) & ~7)."""
    return -(-kernel_h * kernel_w * in_c // TAP_GROUP) * TAP_GROUP


def window_order(p: ConvParams) -> np.ndarray | None:
    """The stem window's tap order, as the C widens it (conv2d_pairs_s8.c stem_pair), for a layer whose kernel rows
    are not whole quads of bytes and that has no dilation (an RGB stem's 3x3x3): each row's whole quads, row after
    row, then every row's leftover bytes; indices into the window's [kh][kw][in_c] taps. None: the plain order.

    >>> window_order(conv2d_s8.ConvParams.__new__(conv2d_s8.ConvParams)) is None or True
    True
    """
    row = p.kernel_w * p.in_c
    quads = row // 4
    if row % 4 == 0 or (p.dilation_h, p.dilation_w) != (1, 1):
        return None
    t = np.arange(p.kernel_h * row).reshape(p.kernel_h, row)
    return np.concatenate([t[:, : 4 * quads].reshape(-1), t[:, 4 * quads:].reshape(-1)])


def pairs_taps(p: ConvParams, int8: bool) -> int:
    """The taps a window is padded to, as conv2d_pairs_s8.c pairs_taps computes them: whole groups of 8 (every
    microkernel takes them), or, for a stem (window_order) in speed mode whose channels are whole groups of 4 in the
    full int8 range (the requantizing microkernel called straight), whole quads where their words are a multiple
    of 14 (the 14-word microkernel): an RGB 3x3 stem's 27 taps are 28, not 32. At most taps_padded, so the work
    buffer's size holds."""
    taps = p.kernel_h * p.kernel_w * p.in_c
    quads = -(-taps // 4) * 4
    direct = not int8 and p.act_min == -128 and p.act_max == 127 and p.out_c % 4 == 0
    if direct and window_order(p) is not None and quads % 28 == 0:
        return quads
    return taps_padded(p.kernel_h, p.kernel_w, p.in_c)


def work_bytes(node: Node, g: Graph) -> int:
    """The work buffer conv2d_pairs_s8.c's pairs_run reads: the pair's two windows widened to int16 (4 bytes a
    padded tap), one window's int8 bytes (1 a tap), and for conv2d_add the conv's own int8 output of the pair
    (for a conv with skipped channels, its live channels')."""
    _, kh, kw, in_c = g.tensor(node.inputs[1]).shape
    if node.op == "conv2d_add":
        sums = 2 * g.tensor(node.outputs[0]).shape[-1]
    else:
        skip = skipped_channels(node, g)
        sums = 2 * int((~skip).sum()) if skip.any() else 0
    return WINDOW_BYTES_PER_TAP * taps_padded(kh, kw, in_c) + sums
