"""Per-channel requantization: TFLite Micro's multipliers and shifts, and the rule the fast kernels add to them.

The one home of what every weighted kernel, the plan's kernel choice (ir/variants.py `qualifies`) and the
quantizer (quantize/lower.py) ask about a layer's per-channel scales:

- the (multiplier, shift) per output channel, from double(in_scale) * double(w_scale[c]) / double(out_scale), as
  TFLM's PopulateConvolutionQuantizationParams computes them;
- how the fast kernels (the pairs and wide kernels) requantize each channel so that every output byte is TFLM's
  (`fast_requant`), or which channels they cannot take and why. The kernels' one rounding step, the fast form
  (tinyaot_requantize_right, and its in-register twins with the zero point folded into k), is

      F(a, m, r) = (floor((2a * m + 2^31) / 2^32) + floor(2^r / 2) + (a < 0 ? -1 : 0)) >> r     (arithmetic shift)

  for the accumulator a the kernel holds. Per channel, one of three forms is proven equal to TFLM's
  MultiplyByQuantizedMultiplier(acc, m, shift) (then + zero point, clamped):

  1. a right shift r = -shift in 1..FAST_MAX_RIGHT, |acc| < 2^30: F(acc, m, r) is TFLM's double rounding itself
     (tinyaot_fixedpoint.h; tests/test_pairs_kernel.py checks it on 400,000 values and every exact half);
  2. a zero or left shift L = shift in 0..max_left: TFLM rounds once, y = floor((acc * 2^L * m + 2^30) / 2^31)
     (RoundingDivideByPOT by 0 is the identity; SaturatingRoundingDoublingHighMul rounds half up for both signs
     when m >= 0, and acc * 2^L does not wrap when |acc| * 2^L < 2^30). The kernel gets the channel's weights and
     bias times 2^L at compile time, so a = acc * 2^L, and r = 0: floor((2a * m + 2^31) / 2^32) is
     floor((acc * 2^L * m + 2^30) / 2^31) = y exactly, so F = y for acc >= 0 and F = y - 1 for acc < 0. There
     y <= 0 (acc * m <= 0), so y + zero_point <= zero_point and F + zero_point < zero_point: when the layer's
     clamp has act_min >= zero_point (a ReLU's: TFLM maps every output at or below the zero point to act_min), or
     when the channel's accumulator is never negative, both give act_min. So the form is exact under that clamp
     (or sign), and the channel qualifies only then. (No form with r >= 1 can be exact: the kernel's SMMLAR adds
     2^31 below bit 32, which a single rounding at bit 31 cannot absorb.)
  3. a constant channel: all its weights are 0 (dead channels of trained models, with int32 biases near 2^30 and
     shifts of 25-31) or its multiplier is 0, so its output is the constant v = MultiplyByQuantizedMultiplier(bias,
     m, shift) (+ zero point, clamped) for every input. The kernel gets zero weights, bias 4v (v clipped to
     [-256, 256], which saturates the int8 output exactly as v does), multiplier 2^30 and r = 1:
     F(4v, 2^30, 1) = (2v + 1 + (v < 0 ? -1 : 0)) >> 1 = v.

  Channels that already take form 1 keep it (their numbers are unchanged); form 3 only replaces a channel the
  others cannot take.

  A kernel that can requantize some channels the slow way may take a layer with channels none of the forms
  takes (`exact_ok`): those get their raw accumulator (weights and bias as the layer's, summed in wrapping int32
  as TFLM does) and TFLM's MultiplyByQuantizedMultiplier itself, any shift, any accumulator; the others keep
  their fast form. The wide fully connected kernels do (a fall-back per channel, not per layer).
- the accumulator's bound: the interval of bias + sum (x + input_offset) * w over the int8 values the input can
  hold (`input_range`: its producer's clamp, else all of int8), each tap's term also allowed to be 0 (a tap
  outside the image, the padded tail), rather than |bias| + 255 * sum |w|.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ir.ops import OPS, kernel_ref

ACC_LIMIT = 2**30  # |acc| below this: tinyaot_requantize_right's doubling cannot overflow
FAST_MAX_RIGHT = 22  # speed's k = 2^(right - 1) + (zero_point << right) fits in 30 bits (emit_conv.requant_triples)
FAST_ALIGNMENT = 4  # the fast kernels load the arena a word pair at a time (LDRD): at least word aligned
DEAD_BIAS_LIMIT = ACC_LIMIT // 2  # a channel of zero weights keeps |bias| below this (quantize/lower.py): its
#                                   accumulator is its bias, inside the fast kernels' bound with room to spare
CONSTANT_MULTIPLIER, CONSTANT_RIGHT = 2**30, 1  # form 3: F(4v, 2^30, 1) = v
CONSTANT_REACH = 256  # |v| beyond this saturates the int8 output as 256 does (|zero point| <= 128)
LISTED = 8  # channels a reason names before "..."


def per_channel_multipliers(in_scale: float, w_scales, out_scale: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLM's per-channel rule: double(in_scale) * double(w_scale[c]) / double(out_scale); one weight scale
    stands for all n channels."""
    scales = list(w_scales) if len(w_scales) > 1 else [w_scales[0]] * n
    if len(scales) != n:
        raise ModelError(f"{len(scales)} weight scales for {n} output channels; expected one per channel")
    pairs = [quantize_multiplier(float(in_scale) * float(s) / float(out_scale)) for s in scales]
    return np.array([m for m, _ in pairs], dtype=np.int32), np.array([s for _, s in pairs], dtype=np.int32)


@dataclass(frozen=True)
class FastRequant:
    """One layer's requantization as the fast kernels run it, per output channel (the module docstring's forms):
    the kernel's accumulator is (bias + sum (x + input_offset) * weights) * 2^left, with the weights and bias
    below, then F(., multiplier, right) + the zero point."""

    bias: np.ndarray  # int64 [out_c]: the layer's; a constant channel's 4v (form 3)
    multiplier: np.ndarray  # int32 [out_c], Q31
    right: np.ndarray  # int32 [out_c], 0..FAST_MAX_RIGHT (0: TFLM's shift is a zero or left shift, form 2)
    left: np.ndarray  # int32 [out_c], >= 0: the channel's weights and bias are multiplied by 2^left (form 2)
    constant: np.ndarray  # bool [out_c]: form 3, the channel's weights are zeroed
    exact: np.ndarray  # bool [out_c]: no form takes it; TFLM's requantization of the raw accumulator (exact_ok)
    note: str = ""  # what the forms 2 and 3 took, for the plan's record ("" when every channel is form 1)

    def weights(self, w: np.ndarray) -> np.ndarray:
        """The layer's int8 weights [out_c, ...] as the kernel sums them (int64): constant channels zeroed, form 2
        channels times 2^left."""
        w = w.astype(np.int64).copy()
        w[self.constant] = 0
        return w << self.left.astype(np.int64).reshape((-1,) + (1,) * (w.ndim - 1))

    def scaled_bias(self) -> np.ndarray:
        return self.bias << self.left.astype(np.int64)

    def take(self, channels: np.ndarray) -> FastRequant:
        """The same forms for these channels only (a kernel that skips the others)."""
        return FastRequant(self.bias[channels], self.multiplier[channels], self.right[channels],
                           self.left[channels], self.constant[channels], self.exact[channels], self.note)


def fast_requant(p, x_range: tuple[int, int], max_left: int, exact_ok: bool = False) -> FastRequant | str:
    """How the fast kernels requantize the layer of Params `p` (a conv's or a fully connected layer's: weights
    [out_c, ...], bias, multiplier, shift, input_offset, output_offset, act_min) whose input holds int8 values in
    `x_range`, with weights that take a left shift up to `max_left` (their type in flash: int8 weights cannot be
    scaled, 0); or why not, naming every channel none of the forms takes. With `exact_ok` such channels are
    marked `exact` instead (the module docstring), and the note names them and why."""
    w = np.asarray(p.weights).astype(np.int64).reshape(len(p.bias), -1)
    bias = np.asarray(p.bias).astype(np.int64)
    m, shift = np.asarray(p.multiplier).astype(np.int64), np.asarray(p.shift).astype(np.int64)
    lo, hi = accumulator_bounds(w, bias, x_range, p.input_offset)
    reach = np.maximum(-lo, hi)
    right = shift < 0
    form1 = right & (-shift <= FAST_MAX_RIGHT) & (reach < ACC_LIMIT)
    left = np.maximum(shift, 0)
    relu = p.act_min >= p.output_offset  # every output at or below the zero point clamps to act_min
    form2 = ~right & (m > 0) & (left <= max_left) & (reach < (ACC_LIMIT >> np.minimum(left, 30))) & (relu | (lo >= 0))
    constant = ~form1 & ~form2 & ((np.abs(w).sum(axis=1) == 0) | (m == 0))
    bad = ~(form1 | form2 | constant)
    if bad.any() and not exact_ok:
        return _why_not(bad, shift, m, reach, left, max_left)
    v = np.clip(multiply_by_quantized_multiplier(bias, m, shift), -CONSTANT_REACH, CONSTANT_REACH)
    out = FastRequant(bias=np.where(constant, 4 * v, bias),
                      multiplier=np.where(constant, CONSTANT_MULTIPLIER, m).astype(np.int32),
                      right=np.where(constant, CONSTANT_RIGHT, np.where(form1, -shift, 0)).astype(np.int32),
                      left=np.where(form2, left, 0).astype(np.int32), constant=constant, exact=bad)
    notes = [f"{n} constant channel{'s' * (n > 1)} (zero weights or multiplier 0)" for n in [int(constant.sum())] if n]
    notes += [f"{n} channel{'s' * (n > 1)} with a zero or left shift" for n in [int(form2.sum())] if n]
    if bad.any():
        notes.append(_why_not(bad, shift, m, reach, left, max_left,
                              "run TFLM's exact requantization (slow path), as the fast one cannot take them"))
    return FastRequant(out.bias, out.multiplier, out.right, out.left, out.constant, out.exact, "; ".join(notes))


def accumulator_bounds(w: np.ndarray, bias: np.ndarray, x_range: tuple[int, int],
                       input_offset: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel, the least and greatest bias + sum_k (x_k + input_offset) * w[c, k] over inputs x_k in
    x_range, each term also allowed to be 0 (a tap outside the image, the padded tail): int64 [out_c] twice."""
    a = min(0, x_range[0] + input_offset)
    b = max(0, x_range[1] + input_offset)
    lo = bias + np.minimum(a * w, b * w).sum(axis=1)
    hi = bias + np.maximum(a * w, b * w).sum(axis=1)
    return lo, hi


def _why_not(bad, shift, m, reach, left, max_left: int,
             what: str = "cannot take the fast requantization") -> str:
    """The reason naming the channels no form takes, grouped by what stops them."""
    groups = []
    far = bad & (shift < -FAST_MAX_RIGHT)
    groups.append((far, f"shift right by more than the fast kernels' {FAST_MAX_RIGHT}"))
    wide = bad & ~far & (reach >= (ACC_LIMIT >> np.minimum(left, 30)))
    groups.append((wide, "may reach 2^30 in the accumulator over the input's values (times 2^L for a left shift L)"))
    rest = bad & ~far & ~wide
    over = rest & (left > max_left)
    groups.append((over, f"shift left by more than the {max_left} this variant's weights allow"))
    signed = rest & ~over & (m > 0)
    groups.append((signed, "have a zero or left shift and negative accumulators without a clamp at the zero point "
                           "(the fast rounding is one lower there)"))
    groups.append((rest & ~over & ~signed, "have a negative multiplier"))
    parts = [f"{_channels(mask)} {why}" for mask, why in groups if mask.any()]
    return f"{int(bad.sum())} of {len(bad)} channels {what}: " + "; ".join(parts)


def _channels(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask).tolist()
    head = ", ".join(str(c) for c in idx[:LISTED]) + (", ..." if len(idx) > LISTED else "")
    return f"channel {head}" if len(idx) == 1 else f"channels {head}"


def input_range(g, tensor: str) -> tuple[int, int]:
    """The int8 values `tensor` can hold: its producer's clamp where the producer's kernel has one (its Params'
    act_min / act_max: every int8 kernel with them clamps its output last), through views (the same bytes under
    another shape); all of int8 for a model input or any other producer."""
    node = g.producer(tensor)
    while node is not None and OPS[node.op].view:
        node = g.producer(node.inputs[0])
    if node is None or g.tensor(node.outputs[0]).dtype != "int8" or not OPS[node.op].has_clamp:
        return -128, 127
    ref = kernel_ref(node, g)
    params = import_module(f"tinyaot.ref.{ref}").prepare(node, g) if ref else None
    if not (hasattr(params, "act_min") and hasattr(params, "act_max")):
        return -128, 127
    return int(params.act_min), int(params.act_max)
