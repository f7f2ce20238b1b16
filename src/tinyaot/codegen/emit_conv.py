"""C emitters of the CNN ops (conv2d, depthwise_conv2d, avg_pool2d, add, softmax).

Each calls the op's reference `prepare`, so the C reads exactly the numbers the NumPy reference uses.
Per-layer geometry goes into one `static const` parameter struct (designated initializers, so the C
names every field), arrays into flash next to it.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tinyaot.codegen.cformat import c_array, c_ident, c_int
from tinyaot.ir import Graph, Node
from tinyaot.ref import add_s8, avg_pool2d_s8, conv2d_s8, depthwise_conv2d_s8, softmax_s8

_CONV_FIELDS = ("batches", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "kernel_h", "kernel_w", "stride_h",
                "stride_w", "dilation_h", "dilation_w", "pad_top", "pad_left", "depth_multiplier", "input_offset",
                "output_offset", "act_min", "act_max")
_POOL_FIELDS = ("batches", "in_h", "in_w", "channels", "out_h", "out_w", "kernel_h", "kernel_w", "stride_h",
                "stride_w", "pad_top", "pad_left", "count_include_pad", "zero_point", "act_min", "act_max")
_ADD_FIELDS = ("size", "input1_offset", "input2_offset", "output_offset", "left_shift", "input1_multiplier",
               "input1_shift", "input2_multiplier", "input2_shift", "output_multiplier", "output_shift", "act_min",
               "act_max")


def _emitted(constants: str, call: str, const_bytes: int, kernel_file: str):
    from tinyaot.codegen.ops import EmittedOp  # here, not at the top: codegen.ops imports this module

    return EmittedOp(constants, call, const_bytes, kernel_file)


def c_struct(ctype: str, name: str, values, fields: tuple[str, ...]) -> str:
    """`static const T name = {.field = value, ...};` for int32 fields read from `values` (an object).

    >>> from types import SimpleNamespace
    >>> print(c_struct("tinyaot_x", "m_x", SimpleNamespace(a=1, b=-2), ("a", "b")), end="")
    static const tinyaot_x m_x = {
        .a = 1,
        .b = (-2),
    };
    """
    body = "".join(f"    .{f} = {c_int(int(getattr(values, f)))},\n" for f in fields)
    return f"static const {ctype} {name} = {{\n{body}}};\n"


def _in(offsets: dict[str, str], tensor: str) -> str:
    return f"(const int8_t *)(arena + {offsets[tensor]})"


def _out(offsets: dict[str, str], tensor: str) -> str:
    return f"(int8_t *)(arena + {offsets[tensor]})"


def _emit_conv_like(node: Node, g: Graph, prefix: str, offsets: dict[str, str], p, fn: str, kernel_file: str):
    base = f"{prefix}_{c_ident(node.name)}"
    arrays = [(f"{base}_weights", p.weights), (f"{base}_bias", p.bias.astype(np.int32)),
              (f"{base}_multiplier", p.multiplier), (f"{base}_shift", p.shift)]
    consts = "".join(c_array(n, a) for n, a in arrays)
    consts += c_struct("tinyaot_conv_params", f"{base}_params", p, _CONV_FIELDS)
    nbytes = sum(a.nbytes for _, a in arrays) + 4 * len(_CONV_FIELDS)
    call = (f"{fn}({_in(offsets, node.inputs[0])},\n"
            f"    {base}_weights, {base}_bias, {base}_multiplier, {base}_shift, &{base}_params,\n"
            f"    {_out(offsets, node.outputs[0])});")
    return _emitted(consts, call, nbytes, kernel_file)


def emit_conv2d(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = conv2d_s8.prepare(node, g)
    folded = _pointwise_bias(p)
    if folded is not None:
        return _emit_conv_like(node, g, prefix, offsets, replace(p, bias=folded), "tinyaot_conv2d_1x1_s8",
                               "conv2d_s8.c")
    if uses_patch_kernel(p):
        return _emit_conv_like(node, g, prefix, offsets, replace(p, weights=patch_weights(p.weights)),
                               "tinyaot_conv2d_patch_s8", "conv2d_s8.c")
    return _emit_conv_like(node, g, prefix, offsets, p, "tinyaot_conv2d_s8", "conv2d_s8.c")


PATCH16_TAPS = 80  # CONV_PATCH16_TAPS in conv2d_s8.c


def uses_patch_kernel(p) -> bool:
    """Windows of a few short rows (first layers: LeNet 5x5x1, KWS 10x4x1, RGB stems 3x3x3) go to
    tinyaot_conv2d_patch_s8, whose weights are widened at compile time (twice the flash of the int8 ones)."""
    taps = p.kernel_h * p.kernel_w * p.in_c
    return (taps <= PATCH16_TAPS and p.kernel_h * p.kernel_w > 1
            and (p.kernel_w * p.in_c < 16 or p.dilation_w != 1))


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


def emit_depthwise_conv2d(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    return _emit_conv_like(node, g, prefix, offsets, depthwise_conv2d_s8.prepare(node, g),
                           "tinyaot_depthwise_conv2d_s8", "depthwise_conv2d_s8.c")


def emit_avg_pool2d(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = avg_pool2d_s8.prepare(node, g)
    base = f"{prefix}_{c_ident(node.name)}"
    consts = c_struct("tinyaot_pool_params", f"{base}_params", p, _POOL_FIELDS)
    call = f"tinyaot_avg_pool2d_s8({_in(offsets, node.inputs[0])}, &{base}_params, {_out(offsets, node.outputs[0])});"
    return _emitted(consts, call, 4 * len(_POOL_FIELDS), "avg_pool2d_s8.c")


def emit_add(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = add_s8.prepare(node, g)
    base = f"{prefix}_{c_ident(node.name)}"
    consts = c_struct("tinyaot_add_params", f"{base}_params", p, _ADD_FIELDS)
    a, b = node.inputs
    call = (f"tinyaot_add_s8({_in(offsets, a)}, {_in(offsets, b)}, &{base}_params,\n"
            f"    {_out(offsets, node.outputs[0])});")
    return _emitted(consts, call, 4 * len(_ADD_FIELDS), "add_s8.c")


def emit_softmax(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = softmax_s8.prepare(node, g)
    args = ", ".join(c_int(v) for v in (p.outer, p.depth, p.input_multiplier, p.input_left_shift, p.diff_min))
    call = f"tinyaot_softmax_s8({_in(offsets, node.inputs[0])}, {args}, {_out(offsets, node.outputs[0])});"
    return _emitted("", call, 0, "softmax_s8.c")


EMITTERS = {
    "conv2d": emit_conv2d,
    "depthwise_conv2d": emit_depthwise_conv2d,
    "avg_pool2d": emit_avg_pool2d,
    "add": emit_add,
    "softmax": emit_softmax,
}
