"""TFLite Micro's Prepare checks of an int8 / 16x8 model (its quantization, mostly), made at import so that a
model TFLM would refuse (or would run wrongly) is refused naming the operator, not deep inside the compiler.

Each check names the TFLM rule it enforces (the kernel's Prepare function) or says where tinyaot's rule is its own.
The converters run the quantization checks through `Importer.prepare`, so they apply to the file's qparams only: a
float model has none yet (tinyaot's PTQ chooses them, and checks its own). The requantization multipliers are TFLM's
QuantizeMultiplier (tinyaot.fixedpoint.tflm_quantize_multiplier), the shift it returns being what decides.
"""
from __future__ import annotations

import math

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import tflm_quantize_multiplier
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.reader import INT16_SOFTMAX_ZERO_POINT, REPAIR, OpInfo, TensorInfo
from tinyaot.ir import Tensor
from tinyaot.ir.conv import conv_groups

# TFLite's QuantizeMultiplier stores a requantization multiplier M as Q31 * 2^shift with shift in [-31, 30]:
# M >= 2^30 does not fit (the single-rounding build saturates it, the double-rounding one shifts an int32 left
# by more than 30 bits), and M < 2^-32 is flushed to zero (the output is its zero point whatever the input).
MAX_SHIFT = 30
# The int32 bias is read at input_scale * weight_scale whatever scale the file gives it (TFLite Micro does the
# same), so a bias stored at another scale is silently a different bias. Converters store the float32 product
# (the MLPerf models agree within 6e-8); 1 % leaves room for any tool's rounding.
BIAS_SCALE_TOLERANCE = 0.01


def scale_names(imp: Importer, indices: list[int]) -> str:
    """'name' scale * ... of the tensors, for a message."""
    return " * ".join(f"'{imp.t(i).name}' {imp.t(i).scale[0]:.6g}" for i in indices)


def check_multipliers(imp: Importer, op: OpInfo, reals: list[float], formula: str, scales: str,
                      per_channel: bool = False) -> None:
    """TFLM's QuantizeMultiplier, as every kernel's Prepare calls it: refuse multipliers it cannot hold (shift > 30),
    and a layer whose every multiplier it flushes to zero (its output would be its zero point whatever the input).
    One flushed channel among others is left alone: its accumulator times such a multiplier is below half a step,
    so flushing is exact."""
    quantized = [tflm_quantize_multiplier(r) for r in reals]
    for c, (real, (_, shift)) in enumerate(zip(reals, quantized)):
        if shift > MAX_SHIFT:
            chan = f" of output channel {c}" if per_channel else ""
            raise ModelError(
                f"operator {op.index} ({op.name}): the requantization multiplier{chan} {formula} = {scales} = "
                f"{real:.3g} is 2^30 or more, which TFLite's QuantizeMultiplier cannot represent (shift {shift} > "
                f"{MAX_SHIFT}): the output scale is far too small for its inputs' scales; {REPAIR}")
    if all(mantissa == 0 for mantissa, _ in quantized):
        which = "every output channel's multiplier" if per_channel and len(reals) > 1 else "the multiplier"
        raise ModelError(
            f"operator {op.index} ({op.name}): {which} {formula} = {scales} is at most {max(reals):.3g}, below "
            "2^-32, so TFLite's QuantizeMultiplier flushes it to zero and the output is its zero point whatever the "
            f"input: the output scale is far too large for its inputs' scales; {REPAIR}")


def rescale(imp: Importer, op: OpInfo, inputs: list[int], out: int) -> None:
    """An op that rescales product(input scales) / output scale: TFLM's PrepareQuantizeReference (QUANTIZE),
    CalculateReluOpData (RELU), PrepareSimple (MEAN), CalculateOpDataMul (MUL); BATCH_MATMUL's the same, and
    CONCATENATION's per input is tinyaot's (TFLM's int8 one takes no rescale)."""
    if not all(imp.t(i).quantized for i in [*inputs, out]):
        return  # a tensor without qparams is refused with its own message
    real = math.prod(float(imp.t(i).scale[0]) for i in inputs) / float(imp.t(out).scale[0])
    formula = " * ".join("input_scale" for _ in inputs) + " / output_scale"
    check_multipliers(imp, op, [real], formula, f"{scale_names(imp, inputs)} / {scale_names(imp, [out])}")


def add_qparams(imp: Importer, op: OpInfo, ai: int, bi: int) -> None:
    """TFLM's CalculateOpDataAdd (ADD, and SUB): both inputs scaled by s / (2 max(s_a, s_b)) and the sum by
    2 max(s_a, s_b) / (2^20 s_out), each through QuantizeMultiplierSmallerThanOneExp, which needs a multiplier below
    1 that does not flush; its int16 ADD / SUB (16x8) the same with 2^15."""
    sa, sb, so = (float(imp.t(i).scale[0]) for i in (ai, bi, op.outputs[0]))
    twice_max = 2.0 * max(sa, sb)
    names = f"{scale_names(imp, [ai])}, {scale_names(imp, [bi])} -> {scale_names(imp, [op.outputs[0]])}"
    left = 15 if imp.t(op.outputs[0]).dtype == "int16" else 20
    real = twice_max / (2**left * so)
    if real >= 1.0:
        raise ModelError(
            f"operator {op.index} ({op.name}): the output multiplier 2 * max(input scales) / (2^{left} * output_scale) "
            f"= {real:.3g} must be below 1 for TFLite's {op.name} (scales {names}): the output scale is far too "
            f"small; {REPAIR}")
    for what, real in (("output", real), ("first input", sa / twice_max), ("second input", sb / twice_max)):
        if tflm_quantize_multiplier(real)[0] == 0:
            raise ModelError(
                f"operator {op.index} ({op.name}): the {what} multiplier {real:.3g} is below 2^-32 and flushes to zero "
                f"in TFLite's QuantizeMultiplier, so that operand is ignored (scales {names}); {REPAIR}")


def weighted_qparams(imp: Importer, op: OpInfo, xi: int, wi: int, bi: int) -> None:
    """CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV (TFLM's PopulateConvolutionQuantizationParams,
    CalculateOpDataFullyConnected): per output channel, the multiplier input_scale * weight_scale / output_scale (in
    double, as TFLM) must be representable; and tinyaot's rule that the bias scale be input_scale * weight_scale, the
    scale TFLM reads the int32 bias at."""
    x, w, y = imp.t(xi), imp.t(wi), imp.t(op.outputs[0])
    in_s, out_s = float(x.scale[0]), float(y.scale[0])
    w_scales = [float(s) for s in w.scale]
    names = f"'{x.name}' {in_s:.6g} * '{w.name}' {{}} / '{y.name}' {out_s:.6g}"
    reals = [in_s * s / out_s for s in w_scales]
    span = f"{min(w_scales):.6g}..{max(w_scales):.6g}" if len(w_scales) > 1 else f"{w_scales[0]:.6g}"
    check_multipliers(imp, op, reals, "input_scale * weight_scale / output_scale", names.format(span),
                      per_channel=len(w_scales) > 1)
    b = imp.t(bi) if bi >= 0 else None
    if b is None or not b.quantized:
        return  # TFLite reads the bias at input_scale * weight_scale whatever the file says
    channels = imp.g.tensor(imp.names[op.outputs[0]]).shape[-1]
    if len(b.scale) not in (1, channels):
        raise ModelError(f"operator {op.index} ({op.name}): the bias '{b.name}' has {len(b.scale)} scales for "
                         f"{channels} output channels; {REPAIR}")
    for c in range(channels):
        want = in_s * (w_scales[c] if len(w_scales) > 1 else w_scales[0])
        got = float(b.scale[c] if len(b.scale) > 1 else b.scale[0])
        if abs(got - want) > BIAS_SCALE_TOLERANCE * want:
            chan = f" (output channel {c})" if len(b.scale) > 1 or len(w_scales) > 1 else ""
            raise ModelError(
                f"operator {op.index} ({op.name}): the bias '{b.name}' has scale {got:.6g}{chan}, but input_scale * "
                f"weight_scale is {want:.6g} ('{x.name}' {in_s:.6g} * '{w.name}' {want / in_s:.6g}); TFLite reads "
                "the int32 bias at input_scale * weight_scale, so its values would stand for another bias. "
                "Re-convert the model, or store the bias quantized at input_scale * weight_scale")


def symmetric_weights(imp: Importer, op: OpInfo, wt: Tensor, axis: int) -> None:
    """int8 weights symmetric, per tensor or per output channel (TFLM's ConvPrepare / DepthwiseConvPrepare: one
    scale per channel of the quantized dimension; its kernels add no weight offset)."""
    qp = wt.qparams
    if qp is None:
        raise ModelError(f"operator {op.index} ({op.name}): the weights carry no quantization parameters")
    if any(z != 0 for z in qp.zero_point):
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): weights must be symmetric (zero point 0), "
                                 f"got zero points {sorted(set(qp.zero_point))[:4]}")
    if not qp.is_per_tensor and qp.axis != axis:
        raise UnsupportedOpError(f"operator {op.index} ({op.name}): per-channel weights quantized along axis "
                                 f"{qp.axis}; expected the output-channel axis {axis}")


def grouped_conv(op: OpInfo, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> None:
    """TFLM's grouped CONV_2D (ConvPrepare): groups = input depth / filter depth, which must split both channel
    counts. Geometry, not quantization: it holds for float models too."""
    if len(x_shape) == 4:
        conv_groups(x_shape[3], w_shape[3], w_shape[0], f"operator {op.index} (CONV_2D)")


def same_activation_types(imp: Importer, op: OpInfo, indices: list[int]) -> None:
    """FULLY_CONNECTED, ADD, SUB, MUL, CONCATENATION: TFLM computes in one integer type, int8 or int16 (16x8)
    throughout (each Prepare's TF_LITE_ENSURE_TYPES_EQ)."""
    types = {imp.t(i).dtype for i in indices} & {"int8", "int16"}
    if len(types) > 1:
        listing = ", ".join(f"'{imp.t(i).name}' {imp.t(i).dtype}" for i in indices)
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) mixes int8 and int16 tensors ({listing}); TFLite "
                                 "Micro's kernel takes one type throughout: put a QUANTIZE between int8 and int16")


def same_qparams(imp: Importer, op: OpInfo, xi: int) -> None:
    """Ops that move values without rescaling (pools: TFLM's PoolingPrepare; reshape, transpose, pad, resize,
    MINIMUM / MAXIMUM, RELU6): the output must read them at the input's scale and zero point."""
    a, b = imp.t(xi), imp.t(op.outputs[0])
    if (a.scale, a.zero_point) != (b.scale, b.zero_point):
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) changes scale/zero point ({a.scale}, "
                                 f"{a.zero_point}) -> ({b.scale}, {b.zero_point}); tinyaot needs them equal here")


def same_int16_scales(imp: Importer, op: OpInfo) -> None:
    """TFLM's int16 CONCATENATION (ConcatenationPrepare) copies its inputs as they are (it checks only their zero
    points), so an input at another scale than the output's would be read at the output's: refused, not
    reinterpreted."""
    out = imp.t(op.outputs[0])
    if out.dtype != "int16":
        return
    for i in op.inputs:
        if imp.t(i).scale != out.scale:
            raise UnsupportedOpError(
                f"operator {op.index} (CONCATENATION): int16 input '{imp.t(i).name}' has scale {imp.t(i).scale[0]:.6g}"
                f" and the output {out.scale[0]:.6g}; TFLite Micro's int16 concatenation copies values without "
                "rescaling, so every int16 input must have the output's scale (put a QUANTIZE before it)")


def softmax_output(imp: Importer, op: OpInfo, xi: int) -> None:
    """TFLM's CalculateSoftmaxParams: an int8 output at scale 1/256, zero point -128; an int16 end as
    _softmax16_qparams says."""
    y = imp.t(op.outputs[0])
    if "int16" in (y.dtype, imp.t(xi).dtype):
        _softmax16_qparams(op, imp.t(xi), y)
    elif y.scale != (1.0 / 256.0,) or y.zero_point != (-128,):
        raise UnsupportedOpError(f"operator {op.index} (SOFTMAX): int8 output must have scale 1/256 and zero point "
                                 f"-128 (TFLite's rule), got {y.scale} / {y.zero_point}")


def _softmax16_qparams(op: OpInfo, x: TensorInfo, y: TensorInfo) -> None:
    """SOFTMAX with an int16 end: int16 in and out, output scale 1/32768 within 0.1 % and zero point 0; or int8 in,
    int16 out, output scale 1/65536 within 0.1 % and zero point -32768."""
    if x.dtype == "int8":
        if y.zero_point != (INT16_SOFTMAX_ZERO_POINT,) or abs(
                np.float32(y.scale[0]) - np.float32(1.0 / 65536.0)) > np.float32(0.001) * np.float32(1.0 / 65536.0):
            raise UnsupportedOpError(f"operator {op.index} (SOFTMAX): an int8 input's int16 output must have scale "
                                     f"1/65536 and zero point -32768 (TFLite Micro's rule), got {y.scale} / "
                                     f"{y.zero_point}")
        return
    if y.dtype != "int16":
        raise UnsupportedOpError(f"operator {op.index} (SOFTMAX): {x.dtype} input with an {y.dtype} output; TFLite "
                                 "Micro's SOFTMAX writes an int16 input's result as int16")
    if y.zero_point != (0,) or abs(float(y.scale[0]) - 1.0 / 32768.0) > 0.001 / 32768.0:
        raise UnsupportedOpError(f"operator {op.index} (SOFTMAX): int16 output must have scale 1/32768 and zero "
                                 f"point 0 (TFLite's rule), got {y.scale} / {y.zero_point}")


def int16_mirror_pad(imp: Importer, op: OpInfo, xi: int) -> None:
    """TFLM's MIRROR_PAD (MirrorPadEval) takes float32 and int8 only."""
    if imp.t(xi).dtype == "int16":
        raise UnsupportedOpError(f"operator {op.index} (MIRROR_PAD) on int16: TFLite Micro's MIRROR_PAD takes "
                                 "float32 and int8 only; keep it int8 (a QUANTIZE on each side)")


def int16_relu(imp: Importer, op: OpInfo, xi: int) -> None:
    """TFLM's int16 activations of the RELU family (ReluPrepare, Relu6Prepare): RELU and RELU6."""
    if imp.t(xi).dtype == "int16" and op.name not in ("RELU", "RELU6"):
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) on int16: TFLite Micro's int16 activations "
                                 "are RELU and RELU6; keep it int8")


TFLM_INT16_TABLES = ("tflm_logistic", "tflm_tanh")  # the lut functions TFLM also has for int16 (ref/lut_s16.py)


def int16_table(imp: Importer, op: OpInfo, xi: int, function: str) -> None:
    """TFLM's int16 LOGISTIC and TANH exist (LogisticPrepare, TanhPrepare); its HARD_SWISH is int8 only."""
    if imp.t(xi).dtype == "int16" and function not in TFLM_INT16_TABLES:
        raise UnsupportedOpError(f"operator {op.index} ({op.name}) on int16: TFLite Micro has no int16 "
                                 f"{op.name} kernel (its int16 LOGISTIC and TANH are imported); keep it int8")
