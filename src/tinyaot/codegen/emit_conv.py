"""C emitters of the weighted ops whose kernel is chosen at compile time (fully_connected, conv2d) and of their
fast variants, pairs and wide (ir/variants.py); the other CNN ops take the generic call (codegen/ops.py).

Each calls the op's reference `prepare`, so the C reads exactly the numbers the NumPy reference uses, lays the
weights out as the chosen kernel reads them (tinyaot_kernels.h names the functions here), and passes the Params to
the one calling convention (emit.kernel_op): a `static const` params struct in flash, the arrays beside it. A conv
picks its kernel at compile time (`conv_kernel`), the ring emitter too.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tinyaot.codegen.emit import arena_in, arena_out, kernel_op, layer_base, plain_op, without_speed_tables
from tinyaot.codegen.kernel_header import kernel_header
from tinyaot.ir import Graph, Node
from tinyaot.ref import (
    conv2d_add_s8,
    conv2d_pairs_s8,
    conv2d_s8,
    depthwise_conv2d_rows_s8,
    depthwise_conv2d_s8,
    fully_connected_s8,
    fully_connected_wide_s8,
)
from tinyaot.ref.conv2d_pairs_s8 import ConvSparseParams
from tinyaot.ref.conv2d_s8 import ConvParams
from tinyaot.ref.fully_connected_wide_s8 import wide_six_rows
from tinyaot.ref.per_channel import ACC_LIMIT, FAST_MAX_RIGHT, FastRequant

# The patch kernel's limits, read from tinyaot_kernels.h: the C sizes its stack buffers with them.
PATCH16_TAPS = kernel_header().define("TINYAOT_CONV_PATCH16_TAPS")
SHORT_ROW = kernel_header().define("TINYAOT_CONV_SHORT_ROW")
FC_EXACT = kernel_header().define("TINYAOT_FC_EXACT")  # the mark of a wide FC's channel on TFLM's requantization


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
    (or, size mode, int8 in the kernel's order), as the variant's `weights` say, each channel as its fast
    requantization takes it (ref/per_channel.py); a layer with channels on TFLM's exact requantization calls the
    kernel's `_mixed` twin, their shifts marked (TFLM's - TINYAOT_FC_EXACT)."""
    p = fully_connected_s8.prepare(node, g)
    fast = _fast(fully_connected_wide_s8.requantization(node, g, variant.weights), node)
    int8 = variant.weights == "int8"
    w = fast.weights(p.weights)
    w = np.pad(w, ((0, 0), (0, -w.shape[1] % fully_connected_wide_s8.IN_GROUP)))  # a last group of 8, zero padded
    weights = wide_fc_w8_weights(w.astype(np.int8)) if int8 else wide_fc_weights(w)
    multiplier = fast.multiplier if int8 else requant_triples(fast.multiplier, fast.right, p.output_offset)
    shift = np.where(fast.exact, p.shift - FC_EXACT, fast.right).astype(np.int32)
    p = replace(p, bias=fast.scaled_bias().astype(np.int32), weights=weights, shift=shift, multiplier=multiplier)
    fn = variant.c_kernel.removesuffix("_s8") + "_mixed_s8" if fast.exact.any() else variant.c_kernel
    return plain_op(node, prefix, offsets, p, fn, variant.c_file)


emit_wide_w8 = emit_wide  # the same kernel reading int8 weights: the variant says which


def pairs_params(p, int8: bool, fast: FastRequant):
    """A conv's params as the pairs kernels read them (tinyaot_kernels.h): weights and bias laid out per group,
    each channel as its fast requantization takes it (ref/per_channel.py: right shifts positive, constant
    channels' weights zero, a left shift's weights and bias times 2^left), and (speed) (multiplier, right, k) per
    channel, padded to the group. Speed mode doubles weights and bias: the accumulators come out as the 2 * acc
    the requantization's SMMLAR wants, one instruction less per output (exact: the plan proved |acc| * 2^left <
    2^30, and 2 * 2^left * int8 fits the int16 halves)."""
    taps_padded = conv2d_pairs_s8.pairs_taps(p, int8)
    weights, bias = fast.weights(p.weights), fast.scaled_bias()
    order = conv2d_pairs_s8.window_order(p)
    if order is not None:  # a stem's window order (the kernel widens its rows' whole quads first)
        weights = weights.reshape(p.out_c, -1)[:, order]
    if int8:
        return replace(p, weights=w8_weights(weights.astype(np.int8), taps_padded), shift=fast.right,
                       bias=pair_bias(bias.astype(np.int32), 2), multiplier=fast.multiplier)
    triples = np.zeros((-(-p.out_c // 4) * 4, 3), dtype=np.int32)
    triples[: p.out_c] = requant_triples(fast.multiplier, fast.right, p.output_offset)
    return replace(p, weights=pair_weights(2 * weights, taps_padded), shift=fast.right,
                   bias=pair_bias((2 * bias).astype(np.int32), 4), multiplier=triples.reshape(-1))


def _fast(fast: FastRequant | str, node: Node) -> FastRequant:
    if isinstance(fast, str):
        raise ValueError(f"layer '{node.name}': a fast kernel was chosen, but {fast}; its variant's qualifies "
                         "(ref/per_channel.py) should have refused the layer")
    return fast


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


def requant_triples(multiplier: np.ndarray, right: np.ndarray, zero_point: int) -> np.ndarray:
    """The speed-mode kernels' per-output (multiplier, right, k): k = floor(2^right / 2) + (zero_point << right)
    rounds and adds the zero point in one step before the shift (exact: a multiple of 2^right; right 0, a zero
    or left shift's channel, has no rounding term).

    >>> requant_triples(np.array([1 << 30, 1 << 30]), np.array([3, 0]), -2).tolist()
    [[1073741824, 3, -12], [1073741824, 0, -2]]
    """
    r = right.astype(np.int64)
    k = ((np.int64(1) << r) >> 1) + (np.int64(zero_point) << r)
    if k.size and np.abs(k).max() >= ACC_LIMIT:
        raise ValueError(f"requant_triples: a right shift above {FAST_MAX_RIGHT} does not fit; the variant's "
                         "qualifies (ref/per_channel.py) should have refused the layer")
    return np.stack([multiplier.astype(np.int64), r, k], axis=1).astype(np.int32)


def wide_fc_w8_weights(weights: np.ndarray) -> np.ndarray:
    """fc weights [out][in] -> the size-mode wide kernel's int8 [ceil(out / 8)][in / 4][8][4] (tinyaot_kernels.h).

    >>> wide_fc_w8_weights(np.arange(1, 9, dtype=np.int8).reshape(1, 8))[0, 1, 0].tolist()
    [5, 6, 7, 8]
    """
    out_f, in_f = weights.shape
    groups = -(-out_f // 8)
    w = np.zeros((groups * 8, in_f), dtype=np.int8)
    w[:out_f] = weights
    return np.ascontiguousarray(w.reshape(groups, 8, in_f // 4, 4).transpose(0, 2, 1, 3))


def wide_fc_weights(weights: np.ndarray) -> np.ndarray:
    """fc weights [out][in] (in a multiple of 4) -> tinyaot_fully_connected_wide_s8's int32 words (tinyaot_kernels.h):
    the first wide_six_rows(out) rows in groups of six, [six / 6][in / 4][2][6], then the rest in groups of eight
    (zero beyond out), [ceil(rest / 8)][in / 4][2][8]; word [j][0][i] of a group holds its output i's inputs 4j and
    4j + 2, word [j][1][i] inputs 4j + 1 and 4j + 3, low halves first.

    Shaped [rows][in / 2] (rows: out padded to its groups; each row's in / 2 words, group by group), the C array's
    size so spelled.

    >>> wide_fc_weights(np.array([[1, 2, 3, -4]], dtype=np.int8)).reshape(2, 6)[:, 0].tolist()
    [196609, -262142]
    >>> wide_fc_weights(np.arange(24, dtype=np.int8).reshape(6, 4)).reshape(2, 6)[0, :2].tolist()
    [131072, 393220]
    """
    out_f, in_f = weights.shape
    six = wide_six_rows(out_f)
    parts = [_wide_words(weights[:six], 6)] if six else []
    if out_f > six:
        parts.append(_wide_words(weights[six:], 8))
    return np.concatenate([part.reshape(-1) for part in parts]).reshape(-1, in_f // 2)


def _wide_words(weights: np.ndarray, group: int) -> np.ndarray:
    """[out][in] -> int32 words [ceil(out / group)][in / 4][2][group] (zero rows beyond out)."""
    out_f, in_f = weights.shape
    groups = -(-out_f // group)
    w = np.zeros((groups * group, in_f), dtype=np.int64)
    w[:out_f] = weights
    w = w.reshape(groups, group, in_f // 4, 4)  # [g][i][j][tap in quad]
    even = (w[..., 0] & 0xFFFF) | (w[..., 2] << 16)
    odd = (w[..., 1] & 0xFFFF) | (w[..., 3] << 16)
    return np.stack([even, odd], axis=-1).transpose(0, 2, 3, 1).astype(np.int32)  # [g][j][even/odd][i]


def emit_pairs(node: Node, g: Graph, prefix: str, offsets: dict[str, str], choice, variant, speed: bool = True):
    """The plan's pairs kernel for a conv2d or conv2d_add (ref/conv2d_pairs_s8.py): weights widened to int16 pairs
    at compile time (or, size mode, int8 in the kernel's order), the work buffer the plan placed for this layer."""
    work = f"(int32_t *)(void *)(arena + {offsets[choice.work]})"
    base = layer_base(prefix, node)
    int8 = variant.weights == "int8"
    fast = _fast(conv2d_pairs_s8.requantization(node, g, variant.weights), node)
    if node.op == "conv2d_add":
        p = conv2d_add_s8.prepare(node, g)
        p = p if speed else without_speed_tables(p)
        p = replace(p, conv=pairs_params(p.conv, int8, fast))
        x, skip = node.inputs[0], node.inputs[3]
        return kernel_op(p, base, variant.c_kernel, variant.c_file, [arena_in(offsets, x), arena_in(offsets, skip)],
                         [work, arena_out(offsets, node.outputs[0])],
                         comment=f"conv {node.attrs.get('conv', '?')} + residual add, two pixels at a time")
    p = conv2d_s8.prepare(node, g)
    skip = conv2d_pairs_s8.skipped_channels(node, g)
    if skip.any():  # the constant channels skipped: the live ones computed, then placed among the constants
        live = np.flatnonzero(~skip)
        sub = replace(p, weights=p.weights[live], bias=p.bias[live], multiplier=p.multiplier[live],
                      shift=p.shift[live], out_c=len(live))
        sparse = ConvSparseParams(pairs_params(sub, int8, fast.take(live)), p.out_c, live.astype(np.int16),
                                  conv2d_pairs_s8.constant_outputs(p))
        return kernel_op(sparse, base, variant.c_kernel.replace("_pairs", "_pairs_sparse"), variant.c_file,
                         [arena_in(offsets, node.inputs[0])], [work, arena_out(offsets, node.outputs[0])],
                         comment=f"{int(skip.sum())} constant channels skipped")
    return kernel_op(pairs_params(p, int8, fast), base, variant.c_kernel, variant.c_file,
                     [arena_in(offsets, node.inputs[0])], [work, arena_out(offsets, node.outputs[0])])


emit_pairs_w8 = emit_pairs  # the same kernels reading int8 weights: the variant says which


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


def emit_rows(node: Node, g: Graph, prefix: str, offsets: dict[str, str], choice, variant, speed: bool = True):
    """The plan's rows kernel for a depthwise conv (ref/depthwise_conv2d_rows_s8.py): weights widened to doubled
    int16 pairs per channel and kernel row at compile time, bias doubled, (multiplier, right, k, 2 * bias) per
    channel, and the ring the plan placed for this layer as its work buffer."""
    p = depthwise_conv2d_s8.prepare(node, g)
    fast = _fast(depthwise_conv2d_rows_s8.requantization(node, g), node)
    w = fast.weights(depthwise_conv2d_rows_s8.channel_params(p).weights)  # [out_c, kh * kw], as the kernel sums
    p = replace(p, weights=depthwise_rows_weights(2 * w.reshape(p.out_c, p.kernel_h, p.kernel_w), p.stride_w),
                bias=(2 * fast.scaled_bias()).astype(np.int32), shift=fast.right,
                multiplier=depthwise_rows_requant(fast, p.output_offset))
    work = f"(int32_t *)(void *)(arena + {offsets[choice.work]})"
    return kernel_op(p, layer_base(prefix, node), variant.c_kernel, variant.c_file,
                     [arena_in(offsets, node.inputs[0])], [work, arena_out(offsets, node.outputs[0])])


def depthwise_rows_requant(fast: FastRequant, zero_point: int) -> np.ndarray:
    """The rows kernel's per-channel (multiplier, right, k, 2 * bias): requant_triples and the doubled, scaled bias
    the channel's accumulators start from, in one block its loops read with one LDM.

    >>> depthwise_rows_requant(FastRequant(np.array([5]), np.array([1 << 30]), np.array([3]), np.array([0]),
    ...                                    np.array([False])), -2).tolist()
    [1073741824, 3, -12, 10]
    """
    triples = requant_triples(fast.multiplier, fast.right, zero_point).astype(np.int64)
    bias2 = 2 * fast.scaled_bias()
    return np.concatenate([triples, bias2[:, None]], axis=1).astype(np.int32).reshape(-1)


def depthwise_rows_weights(w: np.ndarray, stride_w: int) -> np.ndarray:
    """Per-channel weights [c][kh][kw] (doubled, scaled) -> the rows kernel's int32 words [c][kh][words]
    (layout in tinyaot_kernels.h): the even words E_j = (w[2j], w[2j + 1]), then for stride 1 the odd words
    O_j = (w[2j - 1], w[2j]), low halves first, zero beyond the kernel; a 3-wide kernel at stride 1 the compact
    (E0, O1, R) with R = (w[2], w[0]).

    >>> depthwise_rows_weights(np.array([[[1, 2, -3, 4]]]), 1)[0, 0].tolist()
    [131073, 327677, 0, 65536, -196606, 4]
    >>> depthwise_rows_weights(np.array([[[1, 2, -3]]]), 1)[0, 0].tolist()
    [131073, -196606, 131069]
    """
    c, kh, kw = w.shape
    if kw == 3 and stride_w == 1:  # the compact form: the even output's E0 and R's low half, the odd one's
        w = w.astype(np.int64) & 0xFFFF  # R's high half and O1
        return np.stack([w[..., 0] | (w[..., 1] << 16), w[..., 1] | (w[..., 2] << 16), w[..., 2] | (w[..., 0] << 16)],
                        axis=-1).astype(np.uint32).view(np.int32)
    n = depthwise_conv2d_rows_s8.pair_words(kw, stride_w)
    even = np.zeros((c, kh, 2 * n), np.int64)
    even[..., :kw] = w
    words = [(even[..., 0::2] & 0xFFFF) | (even[..., 1::2] << 16)]
    if stride_w == 1:
        odd = np.zeros((c, kh, 2 * n), np.int64)
        odd[..., 1:kw + 1] = w
        words.append((odd[..., 0::2] & 0xFFFF) | (odd[..., 1::2] << 16))
    return np.ascontiguousarray(np.concatenate(words, axis=-1)).astype(np.int32)


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
