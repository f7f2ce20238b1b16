"""The pairs kernels of conv2d and conv2d_add (c/kernels/conv2d_pairs_s8.c), the `pairs` and `pairs_w8` variants.

They compute conv2d_s8's (conv2d_add_s8's) numbers two output pixels at a time: both windows are widened to
int16 into a work buffer, then an int16 microkernel runs over weights laid out per group of channels at compile
time (codegen/emit_conv.py: int16 pairs of doubled weights for speed, int8 in the kernel's order for size), and
the fast requantization (ref/per_channel.py) finishes each output. The reference is the plain kernel's; this
module holds what the plan needs to know of these kernels: when a layer qualifies and the work buffer's size.
"""
from __future__ import annotations

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.ir.variants import KernelOptions
from tinyaot.ref import conv2d_add_s8, conv2d_s8
from tinyaot.ref.per_channel import FAST_ALIGNMENT, FastRequant, fast_requant, input_range

HOME = "conv2d_pairs_s8"  # this module, as ir/variants.py names it
TAP_GROUP = 8  # the microkernel reads a window in groups of 8 taps: taps_padded rounds up to them
WINDOW_BYTES_PER_TAP = 2 * 2 + 1  # the pair's two windows as int16, then one window's int8 bytes
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
    return (False, fast) if isinstance(fast, str) else (True, fast.note)


def conv_params(node: Node, g: Graph):
    """The conv's own Params (a conv2d_add's conv part): what the kernel requantizes."""
    return conv2d_add_s8.prepare(node, g).conv if node.op == "conv2d_add" else conv2d_s8.prepare(node, g)


def requantization(node: Node, g: Graph, weights: str) -> FastRequant | str:
    """The layer's fast requantization (ref/per_channel.py) for weights of type `weights` in flash, over the
    values its input can hold; the reason where a channel cannot take it. The plan's `qualifies` and the
    emitter (codegen/emit_conv.py) both ask this."""
    return fast_requant(conv_params(node, g), input_range(g, node.inputs[0]), MAX_LEFT[weights])


def taps_padded(kernel_h: int, kernel_w: int, in_c: int) -> int:
    """A window's taps rounded up to whole groups, as the C computes them ((taps + 7) & ~7)."""
    return -(-kernel_h * kernel_w * in_c // TAP_GROUP) * TAP_GROUP


def work_bytes(node: Node, g: Graph) -> int:
    """The work buffer conv2d_pairs_s8.c's pairs_run reads: the pair's two windows widened to int16 (4 bytes a
    padded tap), one window's int8 bytes (1 a tap), and for conv2d_add the conv's own int8 output of the pair."""
    _, kh, kw, in_c = g.tensor(node.inputs[1]).shape
    sums = 2 * g.tensor(node.outputs[0]).shape[-1] if node.op == "conv2d_add" else 0
    return WINDOW_BYTES_PER_TAP * taps_padded(kh, kw, in_c) + sums
