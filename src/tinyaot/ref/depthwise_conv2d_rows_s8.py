"""The rows kernel of depthwise_conv2d (c/kernels/depthwise_conv2d_rows_s8.c), the `rows` variant.

It computes depthwise_conv2d_s8's numbers with SMLAD: two taps of one channel per instruction. Output row by
output row, the input rows its windows need are widened once into a ring of kernel_h rows in the work buffer,
per channel a row of words (x[2t] + input_offset, x[2t + 1] + input_offset) over the padded columns (0 outside
the image: TFLM skips those taps, so they add nothing), then each channel's output row is computed from the
ring with its weights widened and doubled at compile time (codegen/emit_conv.py depthwise_rows_weights), and the
fast requantization (ref/per_channel.py) finishes each output; narrow 3x3 rows go two output rows at a time from
one more ring row (`paired`). The plan chooses it where it is faster than the plain kernel (3x3 kernels, rows of
MIN_OUT_W+ pixels). The reference is the plain kernel's; this module holds what the plan needs to know of the
kernel: when a layer qualifies, the work buffer's size, the words.
"""
from __future__ import annotations

from dataclasses import replace

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.variants import KernelOptions
from tinyaot.ref import depthwise_conv2d_s8
from tinyaot.ref.conv2d_s8 import ConvParams
from tinyaot.ref.per_channel import FAST_ALIGNMENT, FastRequant, fast_requant, input_range

HOME = "depthwise_conv2d_rows_s8"  # this module, as ir/variants.py names it
MAX_KERNEL = 7  # kernel rows and columns the kernel takes (its ring holds kernel_h rows): C's
#                TINYAOT_DEPTHWISE_ROWS_MAX_KERNEL
ROWS_WIDE = 12  # C's TINYAOT_DEPTHWISE_ROWS_WIDE: narrower 3x3 rows at strides 1 are computed two at a time
FAST_KERNEL = (3, 3)  # the kernel with hand-scheduled loops; others run the C loops, slower than the plain kernel
MIN_OUT_W = {1: 4, 2: 12}  # per column stride: narrower output rows pay more per row and channel (groups of
#                            outputs half used, border words) than SMLAD saves them: measured on VWW, 3-wide stride 1
#                            rows take 4.4 instructions / MAC here against the plain kernel's 3.4, 6-wide stride 2
#                            rows 5.6 against 4.3 (stride 1 rows narrower than ROWS_WIDE go two at a time)
MAX_LEFT = 7  # a left shift the doubled int16 weights take (ref/per_channel.py form 2), as the pairs kernel's


def qualifies(node: Node, g: Graph, options: KernelOptions) -> tuple[bool, str]:
    """An int8 3x3 depthwise conv with depth multiplier 1, no dilation, a column stride of 1 or 2, output rows of
    at least MIN_OUT_W pixels, constant weights and a requantization that takes the fast exact path, in a
    word-aligned arena. (The C kernel takes any kernel up to MAX_KERNEL; where it is slower it is not chosen.)"""
    if options.alignment < FAST_ALIGNMENT:
        return False, f"the arena is {options.alignment}-byte aligned; the kernel stores words"
    x, w = g.tensor(node.inputs[0]), g.tensor(node.inputs[1])
    if len(x.shape) != 4 or len(w.shape) != 4 or x.dtype != "int8" or g.tensor(node.outputs[0]).dtype != "int8":
        return False, f"its input is {x.dtype} {list(x.shape)}; the rows kernel takes int8 NHWC"
    if w.data is None or w.qparams is None:
        return False, "its weights are not constant int8"
    p = depthwise_conv2d_s8.prepare(node, g)
    if p.depth_multiplier != 1:
        return False, (f"depth multiplier {p.depth_multiplier}; the rows kernel pairs each output channel with its "
                       "own input channel (multiplier 1)")
    if (p.dilation_h, p.dilation_w) != (1, 1):
        return False, f"dilation {p.dilation_h}x{p.dilation_w}; the rows kernel pairs adjacent columns"
    if p.kernel_h > MAX_KERNEL or p.kernel_w > MAX_KERNEL:
        return False, f"a {p.kernel_h}x{p.kernel_w} kernel; the rows kernel takes up to {MAX_KERNEL}x{MAX_KERNEL}"
    if p.stride_w not in (1, 2):
        return False, f"column stride {p.stride_w}; the rows kernel takes 1 or 2"
    if (p.kernel_h, p.kernel_w) != FAST_KERNEL:
        return False, (f"a {p.kernel_h}x{p.kernel_w} kernel; the rows kernel has hand-scheduled loops for 3x3 only "
                       "(its C loops are slower than the plain kernel)")
    if p.out_w < MIN_OUT_W[p.stride_w]:
        return False, (f"output rows of {p.out_w} pixels; below {MIN_OUT_W[p.stride_w]} at column stride "
                       f"{p.stride_w} the rows kernel's per-row costs make it slower than the plain kernel")
    try:
        fast = requantization(node, g)
    except ModelError as e:
        return False, str(e)
    if isinstance(fast, str):
        return False, fast
    return True, fast.note


def channel_params(p: ConvParams) -> ConvParams:
    """The depthwise params with weights [out_c, kh * kw] (per output channel, as ref/per_channel.py reads them)."""
    return replace(p, weights=p.weights.reshape(p.kernel_h * p.kernel_w, p.out_c).T.copy())


def requantization(node: Node, g: Graph) -> FastRequant | str:
    """The layer's fast requantization (ref/per_channel.py) for doubled int16 weights over the values its input
    can hold; the reason where a channel cannot take it. The plan's `qualifies` and the emitter both ask this."""
    p = depthwise_conv2d_s8.prepare(node, g)
    return fast_requant(channel_params(p), input_range(g, node.inputs[0]), MAX_LEFT)


def pair_words(kernel_w: int, stride_w: int) -> int:
    """Words a kernel row's taps span for one output (stride 1: its even and odd outputs alike; a word holds two
    columns): kernel_w // 2 + 1 for stride 1, ceil(kernel_w / 2) for stride 2."""
    return kernel_w // 2 + 1 if stride_w == 1 else (kernel_w + 1) // 2


def row_words(out_w: int, kernel_w: int, stride_w: int) -> int:
    """Words of one channel's widened input row: one per pixel pair over the padded columns the outputs read
    (stride 1: output pair t reads words t .. t + pair_words - 1; stride 2: output t does), for whole groups of
    four outputs (the kernel's 3x3 loops compute a last partial group whole)."""
    groups = -(-out_w // 4)
    return (2 * groups if stride_w == 1 else 4 * groups) + pair_words(kernel_w, stride_w) - 1


def paired(p: ConvParams) -> bool:
    """Narrow rows of a 3x3 kernel at strides 1 go two output rows at a time, from one more ring row (C's
    TINYAOT_DEPTHWISE_ROWS_PAIRED, TINYAOT_DEPTHWISE_ROWS_WIDE)."""
    return (p.kernel_h, p.kernel_w, p.stride_h, p.stride_w) == (3, 3, 1, 1) and p.out_w < ROWS_WIDE


def work_bytes(node: Node, g: Graph) -> int:
    """The ring: kernel_h widened input rows of every channel (one more when paired), row_words words each; then
    a pixel of the input zero point (what the DSP widening reads outside the image), out_c bytes rounded to words."""
    p = depthwise_conv2d_s8.prepare(node, g)
    slots = p.kernel_h + paired(p)
    words = -(-p.out_w // 2) + 1 if paired(p) else row_words(p.out_w, p.kernel_w, p.stride_w)
    return 4 * slots * p.out_c * words + -(-p.out_c // 4) * 4
