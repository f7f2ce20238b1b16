"""The wide fully connected kernels (tinyaot_fully_connected_wide_s8 / _wide_w8_s8 in c/kernels/fully_connected_s8.c),
the `wide` and `wide_w8` variants.

They compute fully_connected_s8's numbers eight outputs at a time over weights laid out at compile time, int16
pairs (speed) or int8 in the kernel's order (size), the input offset folded into the bias and the fast
requantization (ref/per_channel.py) after. The reference is the plain kernel's; this module holds when a layer
qualifies and the Params as the C reads them. They need no work buffer.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ir.variants import KernelOptions
from tinyaot.ref import fully_connected_s8
from tinyaot.ref.per_channel import FAST_ALIGNMENT, fast_requantization, requant_triples, right_shifts

OUTPUTS = 8  # outputs per pass of the kernel: the weights are padded to whole groups of them
IN_GROUP = 8  # the kernel reads the input in whole groups of 8 features
X_BOUND = 256  # the input offset is folded into the bias: |bias| + 256 * sum |w| bounds the accumulator


def qualifies(node: Node, g: Graph, options: KernelOptions) -> tuple[bool, str]:
    """An int8 layer with constant weights, a multiple of 8 input features, whose requantization takes the fast
    exact path, in an arena at least word aligned."""
    if options.alignment < FAST_ALIGNMENT:
        return False, f"the arena is {options.alignment}-byte aligned; the kernel loads words (LDRD)"
    x, w, b = (g.tensor(n) for n in node.inputs[:3])
    y = g.tensor(node.outputs[0])
    if len(w.shape) != 2 or w.shape[1] % IN_GROUP:
        return False, f"{w.shape[-1]} input features; the wide kernels read whole groups of {IN_GROUP}"
    if x.dtype != "int8" or w.data is None or None in (w.qparams, x.qparams, y.qparams):
        return False, f"its input is {x.dtype}, or its weights are not constant int8"
    return fast_requantization(x.qparams.scale[0], w, b, y.qparams.scale[0], X_BOUND)


def work_bytes(node: Node, g: Graph) -> int:
    """No work buffer: the kernel keeps its eight accumulators in registers."""
    return 0


def prepare(node: Node, g: Graph, weights: str):
    """fully_connected_s8's Params as the wide kernel reads them (its variant's `weights`: "int16" speed, "int8"
    size): bias folded, weights laid out, the right shifts positive, speed's (multiplier, right, k) triples."""
    p = fully_connected_s8.prepare(node, g)
    int8 = weights == "int8"
    laid_out = wide_fc_w8_weights(p.weights) if int8 else wide_fc_weights(p.weights)
    right = right_shifts(p.shift)
    multiplier = p.multiplier if int8 else requant_triples(p.multiplier, right, p.output_offset)
    return replace(p, bias=p.folded_bias.astype(np.int32), weights=laid_out, shift=right, multiplier=multiplier)


def wide_fc_w8_weights(weights: np.ndarray) -> np.ndarray:
    """fc weights [out][in] -> the size-mode wide kernel's int8 [ceil(out / 8)][in / 4][8][4] (tinyaot_kernels.h).

    >>> wide_fc_w8_weights(np.arange(1, 9, dtype=np.int8).reshape(1, 8))[0, 1, 0].tolist()
    [5, 6, 7, 8]
    """
    out_f, in_f = weights.shape
    groups = -(-out_f // OUTPUTS)
    w = np.zeros((groups * OUTPUTS, in_f), dtype=np.int8)
    w[:out_f] = weights
    return np.ascontiguousarray(w.reshape(groups, OUTPUTS, in_f // 4, 4).transpose(0, 2, 1, 3))


def wide_fc_weights(weights: np.ndarray) -> np.ndarray:
    """fc weights [out][in] (in a multiple of 4) -> tinyaot_fully_connected_wide_s8's int32 words
    [ceil(out / 8)][in / 4][2][8] (layout in tinyaot_kernels.h).

    >>> wide_fc_weights(np.array([[1, 2, 3, -4]], dtype=np.int8))[0, 0, :, 0].tolist()
    [196609, -262142]
    """
    out_f, in_f = weights.shape
    groups = -(-out_f // OUTPUTS)
    w = np.zeros((groups * OUTPUTS, in_f), dtype=np.int64)
    w[:out_f] = weights
    w = w.reshape(groups, OUTPUTS, in_f // 4, 4)  # [g][i][j][tap in quad]
    even = (w[..., 0] & 0xFFFF) | (w[..., 2] << 16)
    odd = (w[..., 1] & 0xFFFF) | (w[..., 3] << 16)
    return np.stack([even, odd], axis=-1).transpose(0, 2, 3, 1).astype(np.int32)  # [g][j][even/odd][i]
