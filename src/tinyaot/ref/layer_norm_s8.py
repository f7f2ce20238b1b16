"""layer_norm_s8: int8 layer and group normalization, integer only (tinyaot's own definition).

TFLite has no LAYER_NORM or GROUP_NORM builtin (converters decompose them into means, squares and a RSQRT in
float), so this kernel is the definition of both ops: layer_norm normalizes each row of the last axis (D values),
group_norm each group of channels over all positions of a sample (GroupNorm on channels-last data: the
M = positions * C / groups values of one group, MobileViTv2's GroupNorm with 1 group the whole feature map), and
both apply a per-channel affine. The normalization does not change when its input is shifted or scaled, so the
int8 input's zero point drops out and its scale only matters through eps. Per set of D (= M) values q:

- sum = sum(q), d_i = D * q_i - sum = D * (q_i - mean): exact integers (no rounded mean);
- U = D * sum(q^2) - sum^2 + eps_q = D^2 * (var_q + eps / input_scale^2), an exact int64 (eps_q rounded once,
  at compile time);
- 1 / sqrt(U) in fixed point: U normalized by an even shift 2s into u in [2^30, 2^32), y = 1 / sqrt(u / 2^32)
  from a 24-entry table (exact integer square roots) and three Newton steps y * (3 - x y^2) / 2 in Q28;
- n_i = d_i / sqrt(U), the normalized value, as Q16: d_i * y >> (s + 28), rounded half away from zero;
- the affine gamma_i * n_i + beta_i in output units times 2^8: a per-channel requantization of n_i with the
  multiplier gamma_i / output_scale / 2^8 (its sign on the multiplier) plus beta_i / output_scale * 2^8 as an
  int32 bias, then one rounding shift by 8 and the output zero point.

So each output is rounded once (the 2^8 extra bits keep the bias and the product from rounding twice) and its
error against float LayerNorm of the same int8 input is the rounding to the output's step plus the Q16 and
Q28 truncations (measured in tests/test_layer_norm.py). Output may overwrite the input: a row is read whole
(sums) before any of it is written, and each output element is written after its input element is read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier, rounding_divide_by_pot
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks

NORM_BITS = 16  # n_i is Q16
RSQRT_BITS = 28  # y = 1 / sqrt(x) is Q28, x = u / 2^32 in [1/4, 1)
AFFINE_BITS = 8  # the affine's result carries 8 bits below the output step until the final rounding
NEWTON_STEPS = 3
TABLE_BASE = 8  # u >> 27 is in [8, 32): the table's index is (u >> 27) - 8
# y at the midpoint of each of the 24 intervals of x = (i + 8 + 1/2) / 32: 2^28 * sqrt(64 / (2i + 17)), exactly
# floor(sqrt(2^62 / (2i + 17))); layer_norm_s8.c holds the same numbers.
RSQRT_TABLE = tuple(math.isqrt((1 << 62) // (2 * i + 17)) for i in range(24))
EPS_LOW_BITS = 31  # eps_q travels as two int32 halves: eps_high * 2^31 + eps_low


MAX_VALUES = 1 << 16  # values normalized together: sum(q^2) stays an int32, D * q an int32


@dataclass(frozen=True)
class LayerNormParams:
    rows: int  # layer_norm: product of the dims before the last; group_norm: the samples (the batch)
    positions: int  # positions per row normalized together with their channels: 1 (layer_norm), H * W
    groups: int  # channel groups, each normalized apart: 1 (layer_norm)
    depth: int  # D, the channels (the last axis); positions * depth / groups values are normalized together
    eps_high: int  # eps_q = eps * D^2 / input_scale^2, rounded: eps_high * 2^31 + eps_low
    eps_low: int
    multiplier: np.ndarray  # int32 [D], Q31 of gamma_i / output_scale / 2^8 (negative: gamma_i < 0)
    shift: np.ndarray  # int32 [D]
    bias: np.ndarray  # int32 [D], beta_i / output_scale * 2^8, rounded
    output_zero_point: int

    @property
    def eps_q(self) -> int:
        return (self.eps_high << EPS_LOW_BITS) + self.eps_low


def prepare(node: Node, g: Graph) -> LayerNormParams:
    if len(node.inputs) != 3:
        raise ModelError(f"{node.op} '{node.name}' needs x, gamma and beta, got {len(node.inputs)} operands")
    x, gamma_t, beta_t = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    _checks.int8_per_tensor(node, x)
    _checks.int8_per_tensor(node, y)
    _checks.same_shape(node, y, x.shape)
    depth = int(x.shape[-1])
    rows, positions, groups = x.size // depth, 1, 1
    if node.op == "group_norm":
        groups = int(node.attrs.get("groups", 1))
        if len(x.shape) < 2 or depth % groups:
            raise ModelError(f"group_norm '{node.name}': {groups} groups of the {depth} channels (last axis) of "
                             f"{list(x.shape)}; the groups must divide the channels")
        rows, positions = int(x.shape[0]), x.size // depth // int(x.shape[0])
    values = positions * depth // groups
    gamma, beta = (np.asarray(t.data, dtype=np.float64).reshape(-1) for t in (gamma_t, beta_t))
    if gamma.shape != (depth,) or beta.shape != (depth,):
        raise ModelError(f"{node.op} '{node.name}': gamma and beta need {depth} values (the last axis), got "
                         f"{gamma.size} and {beta.size}")
    if values > MAX_VALUES:
        raise UnsupportedOpError(f"{node.op} '{node.name}' normalizes {values} values together; the kernel takes "
                                 f"up to {MAX_VALUES}")
    in_scale, out_scale = float(x.qparams.scale[0]), float(y.qparams.scale[0])
    eps_q = round(float(node.attrs.get("eps", 1e-5)) * values * values / (in_scale * in_scale))
    if eps_q >= 2**62:
        raise ModelError(f"{node.op} '{node.name}': eps {node.attrs.get('eps')} is too large for input scale "
                         f"{in_scale:.3g} (eps / scale^2 beyond 2^62 / D^2)")
    pairs = [quantize_multiplier(abs(gm) / out_scale / (1 << (NORM_BITS - AFFINE_BITS))) for gm in gamma]
    multiplier = np.array([-m if gm < 0 else m for (m, _), gm in zip(pairs, gamma)], dtype=np.int32)
    shift = np.array([s for _, s in pairs], dtype=np.int32)
    bias = np.round(beta / out_scale * (1 << AFFINE_BITS))
    n_max = (math.isqrt(values) + 2) << NORM_BITS  # |n_i| <= sqrt(D - 1)
    affine_max = n_max / (1 << (NORM_BITS - AFFINE_BITS)) * np.abs(gamma) / out_scale + np.abs(bias)
    if int(n_max) << int(max(shift.max(), 0)) >= 2**31 or affine_max.max() >= 2**31 - 2**24:
        raise ModelError(f"{node.op} '{node.name}': gamma / output scale reaches {np.abs(gamma).max() / out_scale:.3g}"
                         f" and beta / output scale {np.abs(beta).max() / out_scale:.3g}, beyond the int32 "
                         "affine; calibrate the output on representative data")
    return LayerNormParams(rows=rows, positions=positions, groups=groups, depth=depth,
                           eps_high=eps_q >> EPS_LOW_BITS,
                           eps_low=eps_q & ((1 << EPS_LOW_BITS) - 1), multiplier=multiplier, shift=shift,
                           bias=bias.astype(np.int32), output_zero_point=int(y.qparams.zero_point[0]))


def _bit_length(u: np.ndarray) -> np.ndarray:
    """Bits of each non-negative int64 (0 for 0), as the C's count-leading-zeros loop gives."""
    n = np.zeros_like(u)
    v = u.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = v >= (np.int64(1) << step)
        n = np.where(big, n + step, n)
        v = np.where(big, v >> step, v)
    return np.where(u > 0, n + 1, 0)


def rsqrt(big_u) -> tuple[np.ndarray, np.ndarray]:
    """(y, s) with 1 / sqrt(U) ~= y * 2^-(s + 16 + 28) for int64 U >= 1: U = u * 4^s (u in [2^30, 2^32),
    truncated), y = 1 / sqrt(u / 2^32) in Q28. U = 0 gives (0, 0)."""
    big_u = np.asarray(big_u, dtype=np.int64)
    bits = _bit_length(big_u)
    s = np.where(bits >= 31, (bits - 31) // 2, -((32 - bits) // 2))
    u = np.where(s >= 0, big_u >> np.maximum(2 * s, 0), big_u << np.maximum(-2 * s, 0))
    table = np.asarray(RSQRT_TABLE, dtype=np.int64)
    y = table[np.clip((u >> 27) - TABLE_BASE, 0, len(RSQRT_TABLE) - 1)]
    for _ in range(NEWTON_STEPS):
        y2 = (y * y) >> RSQRT_BITS  # Q28
        xy2 = (u * y2) >> 32  # Q28: x = u / 2^32
        y = (y * ((3 << RSQRT_BITS) - xy2)) >> (RSQRT_BITS + 1)
    zero = big_u <= 0
    return np.where(zero, 0, y), np.where(zero, 0, s)


def layer_norm_s8(x: np.ndarray, p: LayerNormParams) -> np.ndarray:
    """Each [positions, depth / groups] block of a row normalized together (its values' axes 1 and 3 here)."""
    q = x.reshape(p.rows, p.positions, p.groups, p.depth // p.groups).astype(np.int64)
    values = p.positions * p.depth // p.groups
    total = q.sum(axis=(1, 3), keepdims=True)
    big_u = values * (q * q).sum(axis=(1, 3), keepdims=True) - total * total + p.eps_q
    y, s = rsqrt(big_u)
    d = values * q - total
    n = rounding_divide_by_pot(d * y, s + RSQRT_BITS).reshape(p.rows, p.positions, p.depth)  # Q16
    v = multiply_by_quantized_multiplier(n, p.multiplier, p.shift) + p.bias
    out = rounding_divide_by_pot(v, AFFINE_BITS) + p.output_zero_point
    return np.clip(out, -128, 127).astype(np.int8).reshape(x.shape)
