"""batch_matmul_s8: int8 matrix product of two activations, TFLite Micro's int8 BATCH_MATMUL.

out[b, i, j] = clamp(MultiplyByQuantizedMultiplier(sum_k (lhs[b, i, k] - lhs_zp) * (rhs[b, k, j] - rhs_zp))
+ out_zp, -128, 127): int32 accumulation, one per-tensor requantization whose real multiplier is TFLM's
GetQuantizedConvolutionMultipler without bias: the float32 product of the two input scales, divided by the output
scale in double. adj_x / adj_y say an operand is stored with its last two axes swapped; the kernel reads it at
those strides (TFLM transposes into a scratch copy first: the same sums); lhs_perm / rhs_perm, a transpose the front
end folded in, are read at permuted strides the same way. Batch axes (operands up to 5-D) broadcast, as TFLM's
do. Output must not overlap either operand.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier, wrap_i32
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ref import _checks

BATCH_AXES = 4  # batch dims the kernel loops over (operands padded to 6-D)
MAX_RANK = 5  # operands up to 5-D, as TFLM's BATCH_MATMUL takes them


@dataclass(frozen=True)
class BatchMatmulParams:
    out_batch: tuple[int, ...]  # [4]: the output's batch dims, left-padded with 1s
    lhs_batch_strides: tuple[int, ...]  # [4]: element strides of the lhs per batch dim; 0 where it broadcasts
    rhs_batch_strides: tuple[int, ...]  # [4]
    rows: int  # M
    cols: int  # N
    depth: int  # K, the accumulation depth
    lhs_row_stride: int  # lhs element (i, k) is at i * lhs_row_stride + k * lhs_depth_stride
    lhs_depth_stride: int
    rhs_depth_stride: int  # rhs element (k, j) is at k * rhs_depth_stride + j * rhs_col_stride
    rhs_col_stride: int
    lhs_offset: int  # -lhs zero point
    rhs_offset: int  # -rhs zero point
    output_offset: int  # output zero point
    multiplier: int
    shift: int
    lhs_view: tuple  # (stored shape, perm, adj): how the product reads the lhs tensor
    rhs_view: tuple


def _operand(node: Node, t: Tensor, perm, adj: bool) -> tuple[tuple[int, ...], list[int]]:
    """The operand as the product reads it: its logical shape (stored tensor permuted by perm, then the last two
    axes swapped if adj) and the element stride of each logical axis in the stored tensor."""
    shape = tuple(int(d) for d in t.shape)
    stored_strides = [int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]
    perm = tuple(perm) if perm is not None else tuple(range(len(shape)))
    if len(perm) != len(shape):
        raise ModelError(f"batch_matmul '{node.name}': permutation {perm} does not fit operand '{t.name}' of shape "
                         f"{list(shape)}")
    order = list(perm)
    if adj:
        order[-2], order[-1] = order[-1], order[-2]
    return tuple(shape[k] for k in order), [stored_strides[k] for k in order]


def _batch_strides(shape: tuple[int, ...], strides: list[int]) -> tuple[int, ...]:
    """The strides of the batch axes, padded to BATCH_AXES; 0 where the axis is 1 (it broadcasts)."""
    pad = BATCH_AXES - (len(shape) - 2)
    return (0,) * pad + tuple(s if d != 1 else 0 for d, s in zip(shape[:-2], strides[:-2]))


def prepare(node: Node, g: Graph) -> BatchMatmulParams:
    if len(node.inputs) != 2:
        raise ModelError(f"batch_matmul '{node.name}' needs two operands, got {len(node.inputs)}")
    a, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    for t in (a, b, y):
        _checks.int8_per_tensor(node, t)
    if a.is_const or b.is_const:
        raise UnsupportedOpError(f"batch_matmul '{node.name}': operand '{(a if a.is_const else b).name}' is a "
                                 "constant; a product with constant weights is a fully_connected layer")
    for t in (a, b):
        if not 2 <= len(t.shape) <= MAX_RANK:
            raise UnsupportedOpError(f"batch_matmul '{node.name}': operand '{t.name}' has shape {list(t.shape)}; "
                                     f"the kernel takes 2-D to {MAX_RANK}-D operands")
    adj_x, adj_y = bool(node.attrs.get("adj_x", False)), bool(node.attrs.get("adj_y", False))
    a_view = (tuple(a.shape), node.attrs.get("lhs_perm"), adj_x)
    b_view = (tuple(b.shape), node.attrs.get("rhs_perm"), adj_y)
    (a_shape, a_strides), (b_shape, b_strides) = _operand(node, a, *a_view[1:]), _operand(node, b, *b_view[1:])
    m, k, k2, n = a_shape[-2], a_shape[-1], b_shape[-2], b_shape[-1]
    if k != k2:
        raise ModelError(f"batch_matmul '{node.name}': lhs {list(a.shape)} (adj_x={adj_x}) and rhs {list(b.shape)} "
                         f"(adj_y={adj_y}) do not share the accumulation depth ({k} vs {k2})")
    try:
        batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        raise ModelError(f"batch_matmul '{node.name}': the batch dims of {list(a.shape)} and {list(b.shape)} do "
                         "not broadcast") from None
    _checks.same_shape(node, y, tuple(batch) + (m, n))
    if k * 256 * 256 >= 2**31:
        raise UnsupportedOpError(f"batch_matmul '{node.name}' accumulates {k} products; int32 could overflow "
                                 "beyond 32767")
    product = float(np.float32(a.qparams.scale[0]) * np.float32(b.qparams.scale[0]))  # float32, as TFLM
    multiplier, shift = quantize_multiplier(product / float(y.qparams.scale[0]))
    return BatchMatmulParams(
        out_batch=(1,) * (BATCH_AXES - len(batch)) + tuple(int(d) for d in batch),
        lhs_batch_strides=_batch_strides(a_shape, a_strides), rhs_batch_strides=_batch_strides(b_shape, b_strides),
        rows=m, cols=n, depth=k, lhs_row_stride=a_strides[-2], lhs_depth_stride=a_strides[-1],
        rhs_depth_stride=b_strides[-2], rhs_col_stride=b_strides[-1],
        lhs_offset=-a.qparams.zero_point[0], rhs_offset=-b.qparams.zero_point[0],
        output_offset=y.qparams.zero_point[0], multiplier=multiplier, shift=shift, lhs_view=a_view, rhs_view=b_view,
    )


def _read(x: np.ndarray, view: tuple) -> np.ndarray:
    shape, perm, adj = view
    v = x.reshape(shape).astype(np.int64)
    v = np.transpose(v, perm) if perm is not None else v
    return np.swapaxes(v, -1, -2) if adj else v


def batch_matmul_s8(lhs: np.ndarray, rhs: np.ndarray, p: BatchMatmulParams) -> np.ndarray:
    a = _read(lhs, p.lhs_view) + p.lhs_offset
    b = _read(rhs, p.rhs_view) + p.rhs_offset
    acc = wrap_i32(np.matmul(a, b))
    out = multiply_by_quantized_multiplier(acc, p.multiplier, p.shift) + p.output_offset
    return np.clip(out, -128, 127).astype(np.int8)
