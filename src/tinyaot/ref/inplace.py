"""The ring kernels' write order, run in the arena: twin of c/kernels/conv2d_inplace_s8.c and
depthwise_conv2d_inplace_s8.c, the `ring` variant of conv2d and depthwise_conv2d (plan/inplace.py explains it and
chooses it while placing the arena, where it shrinks it; its ring's size is the placement's).

Pixel q is computed from the arena as it is at that moment (only its own window, with the plain kernel's
numerics), stored into ring slot q % R at the ring's planned offset, and pixel q - delay is then copied from
its slot to the output; the last `delay` pixels after the loop. A ring placed over live bytes, or an output
placed closer to its input than the ring allows, changes the answer exactly as it would in the C.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ir.variants import KernelOptions
from tinyaot.ref.conv2d_s8 import ConvParams


def qualifies(node: Node, g: Graph, options: KernelOptions) -> tuple[bool, str]:
    """The ring kernels take int8 NHWC; whether a ring pays is the placement's question (plan/inplace.py)."""
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if x.dtype != "int8" or y.dtype != "int8" or len(x.shape) != 4 or len(y.shape) != 4:
        return False, (f"its tensors are {x.dtype} {list(x.shape)} -> {y.dtype} {list(y.shape)}; the ring kernels "
                       "take int8 NHWC")
    return True, ""


def run(arena: np.ndarray, offset_of: Callable[[str], int], node: Node, choice, kernel: Callable,
        p: ConvParams) -> None:
    """The interpreter's call of a variant that runs in the arena: `choice` (the plan's record) names the ring's
    buffer and its size; `kernel` is the plain one, whose numbers each pixel takes."""
    run_ring(arena, offset_of(node.inputs[0]), offset_of(node.outputs[0]), offset_of(choice.work),
             choice.ring.ring_pixels, kernel, p)


def pixel_window(kernel: Callable, x: np.ndarray, p: ConvParams, b: int, oy: int, ox: int) -> np.ndarray:
    """Output pixel (b, oy, ox) of a conv-like kernel, computed from its window only (same taps, same bits)."""
    r0, c0 = oy * p.stride_h - p.pad_top, ox * p.stride_w - p.pad_left
    r1, c1 = r0 + (p.kernel_h - 1) * p.dilation_h + 1, c0 + (p.kernel_w - 1) * p.dilation_w + 1
    lo_r = min(max(r0, 0), p.in_h - 1)  # a window that misses the image keeps one row no tap reads
    lo_c = min(max(c0, 0), p.in_w - 1)
    hi_r, hi_c = max(min(r1, p.in_h), lo_r + 1), max(min(c1, p.in_w), lo_c + 1)
    sub = x[b : b + 1, lo_r:hi_r, lo_c:hi_c, :]
    sp = replace(p, batches=1, in_h=hi_r - lo_r, in_w=hi_c - lo_c, out_h=1, out_w=1, pad_top=lo_r - r0,
                 pad_left=lo_c - c0)
    return kernel(np.ascontiguousarray(sub), sp).reshape(-1)


def run_ring(arena: np.ndarray, x_offset: int, y_offset: int, ring_offset: int, ring_pixels: int,
             kernel: Callable, p: ConvParams) -> None:
    """Execute one ring kernel inside `arena` (uint8) at the planned offsets, in the C's order."""
    oc, delay = p.out_c, ring_pixels - 1
    n_in = p.batches * p.in_h * p.in_w * p.in_c
    x = arena[x_offset : x_offset + n_in].view(np.int8).reshape(p.batches, p.in_h, p.in_w, p.in_c)  # live view

    def flush(q: int) -> None:
        slot = ring_offset + (q % ring_pixels) * oc
        arena[y_offset + q * oc : y_offset + (q + 1) * oc] = arena[slot : slot + oc].copy()

    q = 0
    for b in range(p.batches):
        for oy in range(p.out_h):
            for ox in range(p.out_w):
                slot = ring_offset + (q % ring_pixels) * oc
                arena[slot : slot + oc] = pixel_window(kernel, x, p, b, oy, ox).view(np.uint8)
                if q >= delay:
                    flush(q - delay)
                q += 1
    for j in range(max(q - delay, 0), q):
        flush(j)
