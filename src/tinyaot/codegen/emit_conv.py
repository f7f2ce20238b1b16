"""C emitters of the weighted ops whose kernel is chosen at compile time (fully_connected, conv2d) and of their
fast variants, pairs and wide (ir/variants.py); the other CNN ops take the generic call (codegen/ops.py).

Each calls the kernel's `prepare` (the op's reference, or the variant's home in ref/), so the C reads exactly the
numbers the NumPy reference uses, and passes the Params to the one calling convention (emit.kernel_op): a
`static const` params struct in flash, the arrays beside it. A conv picks its kernel at compile time
(`conv_kernel`), the ring emitter too.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tinyaot.codegen.emit import arena_in, arena_out, kernel_op, layer_base, plain_op, without_speed_tables
from tinyaot.codegen.kernel_header import kernel_header
from tinyaot.ir import Graph, Node
from tinyaot.ref import conv2d_pairs_s8, conv2d_s8, fully_connected_s8, fully_connected_wide_s8
from tinyaot.ref.conv2d_s8 import ConvParams

# The patch kernel's limits, read from tinyaot_kernels.h: the C sizes its stack buffers with them.
PATCH16_TAPS = kernel_header().define("TINYAOT_CONV_PATCH16_TAPS")
SHORT_ROW = kernel_header().define("TINYAOT_CONV_SHORT_ROW")


def conv_kernel(p: ConvParams, ring: bool = False) -> tuple[ConvParams, str]:
    """The conv2d kernel for these params and the params it takes: the pointwise kernel (bias folded) when every
    tap is inside the image, the patch kernel (weights widened) for first layers, else the general one. A ring
    has the pointwise and the general variant."""
    suffix = "_inplace_s8" if ring else "_s8"
    folded = _pointwise_bias(p)
    if folded is not None:
        return replace(p, bias=folded), f"tinyaot_conv2d_1x1{suffix}"
    if not ring and uses_patch_kernel(p):
        return replace(p, weights=patch_weights(p.weights)), "tinyaot_conv2d_patch_s8"
    return p, f"tinyaot_conv2d{suffix}"


def emit_fully_connected(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    """The input offset folded into the bias at compile time, so the kernel's inner loop is a plain dot."""
    p = fully_connected_s8.prepare(node, g)
    p = replace(p, bias=p.folded_bias.astype(np.int32))
    return plain_op(node, prefix, offsets, p, "tinyaot_fully_connected_s8", "fully_connected_s8.c")


def emit_wide(node: Node, g: Graph, prefix: str, offsets: dict[str, str], choice, variant, speed: bool = True):
    """The plan's wide kernel for a fully connected layer: bias folded, weights widened to int16 at compile time
    (or, size mode, int8 in the kernel's order): ref/fully_connected_wide_s8.py."""
    p = fully_connected_wide_s8.prepare(node, g, variant.weights)
    return plain_op(node, prefix, offsets, p, variant.c_kernel, variant.c_file)


emit_wide_w8 = emit_wide  # the same kernel reading int8 weights: the variant says which


def emit_pairs(node: Node, g: Graph, prefix: str, offsets: dict[str, str], choice, variant, speed: bool = True):
    """The plan's pairs kernel for a conv2d or conv2d_add (ref/conv2d_pairs_s8.py): weights laid out per group
    at compile time, the work buffer the plan placed for this layer."""
    work = f"(int32_t *)(void *)(arena + {offsets[choice.work]})"
    base = layer_base(prefix, node)
    p = conv2d_pairs_s8.prepare(node, g, variant.weights)
    if node.op == "conv2d_add":
        x, skip = node.inputs[0], node.inputs[3]
        return kernel_op(p if speed else without_speed_tables(p), base, variant.c_kernel, variant.c_file,
                         [arena_in(offsets, x), arena_in(offsets, skip)], [work, arena_out(offsets, node.outputs[0])],
                         comment=f"conv {node.attrs.get('conv', '?')} + residual add, two pixels at a time")
    return kernel_op(p, base, variant.c_kernel, variant.c_file, [arena_in(offsets, node.inputs[0])],
                     [work, arena_out(offsets, node.outputs[0])])


emit_pairs_w8 = emit_pairs  # the same kernels reading int8 weights: the variant says which


def emit_conv2d(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    p, fn = conv_kernel(conv2d_s8.prepare(node, g))
    return plain_op(node, prefix, offsets, p, fn, "conv2d_s8.c")


def uses_patch_kernel(p) -> bool:
    """Windows of a few short rows (first layers: LeNet 5x5x1, KWS 10x4x1, RGB stems 3x3x3) go to
    tinyaot_conv2d_patch_s8, whose weights are widened at compile time (twice the flash of the int8 ones)."""
    taps = p.kernel_h * p.kernel_w * p.in_c
    return (taps <= PATCH16_TAPS and p.kernel_h * p.kernel_w > 1
            and (p.kernel_w * p.in_c < SHORT_ROW or p.dilation_w != 1))


def patch_weights(weights: np.ndarray) -> np.ndarray:
    """conv weights [out_c][kh][kw][in_c] -> tinyaot_conv2d_patch_s8's int32 words (layout in tinyaot_kernels.h).

    >>> patch_weights(np.array([[[[1, 2, 3, -4, 5]]]], dtype=np.int8)).tolist()
    [[[[196609, -262142], [0, 0], [0, 0], [0, 0]], [[5, 0], [0, 0], [0, 0], [0, 0]]]]
    """
    out_c, taps = weights.shape[0], int(np.prod(weights.shape[1:]))
    groups, words = -(-out_c // 4), -(-taps // 4)
    w = np.zeros((groups * 4, words * 4), dtype=np.int64)
    w[:out_c, :taps] = weights.reshape(out_c, taps)
    w = w.reshape(groups, 4, words, 4).transpose(0, 2, 1, 3)  # [g][j][i][tap in word]
    even = (w[..., 0] & 0xFFFF) | (w[..., 2] << 16)
    odd = (w[..., 1] & 0xFFFF) | (w[..., 3] << 16)
    return np.stack([even, odd], axis=-1).astype(np.int32)


def _pointwise_bias(p) -> np.ndarray | None:
    """bias + input_offset * sum(weights) per channel when the conv is pointwise with every tap inside the image
    (tinyaot_conv2d_1x1_s8 then skips the offset in its inner loop); None when the general kernel is needed."""
    if (p.kernel_h, p.kernel_w, p.pad_top, p.pad_left) != (1, 1, 0, 0):
        return None
    if (p.out_h - 1) * p.stride_h >= p.in_h or (p.out_w - 1) * p.stride_w >= p.in_w:
        return None
    folded = p.bias.astype(np.int64) + p.input_offset * p.weights.reshape(p.out_c, -1).astype(np.int64).sum(axis=1)
    if folded.min(initial=0) < -(2**31) or folded.max(initial=0) >= 2**31:
        return None
    return folded.astype(np.int32)
