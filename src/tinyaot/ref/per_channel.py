"""Per-channel requantization: TFLite Micro's multipliers and shifts, and the rule the fast kernels add to them.

The one home of what every weighted kernel, the plan's kernel choice (ir/variants.py `qualifies`) and the
quantizer (quantize/lower.py) ask about a layer's per-channel scales:

- the (multiplier, shift) per output channel, from double(in_scale) * double(w_scale[c]) / double(out_scale), as
  TFLM's PopulateConvolutionQuantizationParams computes them;
- whether the fast kernels' requantization (tinyaot_requantize_right: the pairs and wide kernels) gives TFLM's
  result for them: every shift a right shift of 1..FAST_MAX_RIGHT and every accumulator provably below ACC_LIMIT
  (codegen/emit_conv.py then hands those kernels the right shifts positive, and speed's (multiplier, right, k)).
"""
from __future__ import annotations

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import quantize_multiplier

ACC_LIMIT = 2**30  # |bias + sum x * w| below this: tinyaot_requantize_right's doubling cannot overflow
FAST_MAX_RIGHT = 22  # speed's k = 2^(right - 1) + (zero_point << right) fits in 30 bits (emit_conv.requant_triples)
FAST_ALIGNMENT = 4  # the fast kernels load the arena a word pair at a time (LDRD): at least word aligned
DEAD_BIAS_LIMIT = ACC_LIMIT // 2  # a channel of zero weights keeps |bias| below this (quantize/lower.py): its
#                                   accumulator is its bias, inside the fast kernels' bound with room to spare


def per_channel_multipliers(in_scale: float, w_scales, out_scale: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLM's per-channel rule: double(in_scale) * double(w_scale[c]) / double(out_scale); one weight scale
    stands for all n channels."""
    scales = list(w_scales) if len(w_scales) > 1 else [w_scales[0]] * n
    if len(scales) != n:
        raise ModelError(f"{len(scales)} weight scales for {n} output channels; expected one per channel")
    pairs = [quantize_multiplier(float(in_scale) * float(s) / float(out_scale)) for s in scales]
    return np.array([m for m, _ in pairs], dtype=np.int32), np.array([s for _, s in pairs], dtype=np.int32)


def fast_requantization(x_scale: float, w, b, out_scale: float, x_bound: int) -> tuple[bool, str]:
    """(True, "") when the fast kernels' requantization equals TFLM's for this layer, else (False, why): every
    channel's shift is a right shift of 1..FAST_MAX_RIGHT, and |bias| + x_bound * sum |w| < ACC_LIMIT per channel,
    where x_bound is the largest |input + offset| the kernel sums (255; 256 where the offset is folded into the
    bias). `w`, `b`: the weight and bias tensors."""
    n = w.shape[0]
    if len(w.qparams.scale) not in (1, n):
        return False, f"{len(w.qparams.scale)} weight scales for {n} output channels"
    _, shift = per_channel_multipliers(x_scale, w.qparams.scale, out_scale, n)
    left = np.flatnonzero(shift > -1)
    if left.size:
        return False, (f"channel {left[0]} requantizes with a left shift ({shift[left[0]]}): the fast "
                       "requantization shifts right only")
    far = np.flatnonzero(shift < -FAST_MAX_RIGHT)
    if far.size:
        return False, f"channel {far[0]} shifts right by {-shift[far[0]]}, beyond the fast kernels' {FAST_MAX_RIGHT}"
    over = np.flatnonzero(~accumulators_fit(w, b, x_bound))
    if over.size:
        return False, (f"channel {over[0]}'s accumulator may reach 2^30 (|bias| + {x_bound} x sum |weights|): the "
                       "fast requantization needs it below")
    return True, ""


def accumulators_fit(w, b, x_bound: int) -> np.ndarray:
    """Per output channel: |bias| + x_bound * sum |w| < ACC_LIMIT, the bound tinyaot_requantize_right needs."""
    weights = np.abs(w.data.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1)
    bias = np.abs(b.data.astype(np.int64)) if b is not None and b.data is not None else 0
    return bias + x_bound * weights < ACC_LIMIT
