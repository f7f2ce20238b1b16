"""Lowering of a float SVDF to TFLite Micro's integer SVDF, quantized as TFLite's converter quantizes one.

The converter's scheme (operator_property.cc, BuiltinOperator_SVDF): weights_feature int8 symmetric per tensor;
weights_time int16 symmetric per tensor but within 10 bits, +-512 steps ("6 bits are reserved for the reduce":
an int16 state times weights_time summed over rank x memory products stays within int32); the activation state
int16 symmetric (zero point 0) over its calibrated range; the bias int32 at state scale x weights_time scale (TFLM's
Prepare refuses any other); the input and output int8 with qparams from calibration. TFLM's integer kernel applies
no fused activation, only the clamp to int8: the output's range is the calibrated range within the fused
activation's bounds, so a RELU's output has its zero point at -128 and nothing below 0 survives the clamp.

The state's range is that of the float node's observed output, the feature activations (input @ weights_feature.T)
over the calibration stream: the values the state keeps. Where rank x memory is beyond 64, weights_time gets fewer
steps than 512 so that the worst-case sum still cannot wrap int32 (the converter keeps 512 and risks it).
"""
from __future__ import annotations

import numpy as np

from tinyaot.diagnostics import Finding
from tinyaot.fixedpoint import tflm_quantize_multiplier
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.quantize.observers import Range
from tinyaot.quantize.scheme import INT32_MAX, INT32_MIN, activation_qparams, round_half_away
from tinyaot.ref.svdf_s8 import effective_scale

WEIGHTS_FEATURE_STEPS = 127  # int8 symmetric: [-127, 127]
WEIGHTS_TIME_STEPS = 512  # TFLite's converter: 10 bits of an int16, scale = max |w| / 512
STATE_STEPS = 32767  # int16 symmetric
# |state| <= 32768 times |weights_time| <= steps, rank x memory times, within half of int32: the other half is the
# bias's
PRODUCT_SUM_LIMIT = 2**30
MAX_SHIFT = 30  # TFLM's QuantizeMultiplier: a multiplier of 2^30 or more does not fit (tflm_checks.MAX_SHIFT)


def weights_time_steps(rank: int, memory: int) -> int:
    """The converter's 512, or fewer where rank x memory products of an int16 state could reach 2^30."""
    return max(1, min(WEIGHTS_TIME_STEPS, PRODUCT_SUM_LIMIT // ((STATE_STEPS + 1) * rank * memory)))


def symmetric(w: np.ndarray, steps: int, dtype: str) -> tuple[np.ndarray, QParams]:
    """Per-tensor symmetric quantization to +-steps (zero point 0), the scale a float32 as a .tflite stores it."""
    w = np.asarray(w, dtype=np.float64)
    largest = float(np.abs(w).max()) if w.size else 0.0
    scale = float(np.float32(largest / steps)) if largest > 0 else 1.0
    q = np.clip(round_half_away(w / scale), -steps, steps).astype(dtype)
    return q, QParams.per_tensor(scale, 0)


def state_qparams(r: Range, fallback: float) -> QParams:
    """int16 symmetric over the feature activations' range; `fallback` (whatever makes the feature multiplier 1)
    when they never leave 0."""
    largest = max(abs(r.lo), abs(r.hi))
    return QParams.per_tensor(float(np.float32(largest / STATE_STEPS)) if largest > 0 else fallback, 0)


def output_qparams(r: Range, clamp) -> QParams:
    """int8 over the calibrated range within the fused activation's bounds (the converter's folded activation)."""
    lo, hi = r.lo, r.hi
    if clamp is not None:
        lo, hi = max(lo, clamp[0]), min(hi, clamp[1])
        hi = max(hi, lo)
    return activation_qparams(lo, hi)


def lower_svdf(g: Graph, q: Graph, node: Node, ranges: dict[str, Range]) -> list[Finding]:
    """The int8 svdf node (its input already int8 in `q`) with its constants; the observed output is dropped."""
    x_name, wf_name, wt_name, b_name = node.inputs
    y_name, features = node.outputs
    x_qp = q.tensor(x_name).qparams
    wt_float = g.tensor(wt_name).data
    filters, memory = wt_float.shape
    rank = int(node.attrs["rank"])
    wf, wf_qp = symmetric(g.tensor(wf_name).data, WEIGHTS_FEATURE_STEPS, "int8")
    wt, wt_qp = symmetric(wt_float, weights_time_steps(rank, memory), "int16")
    s_qp = state_qparams(ranges[features], float(np.float32(x_qp.scale[0] * wf_qp.scale[0])))
    y_qp = output_qparams(ranges[y_name], node.attrs.get("float_clamp"))
    b_scale = float(np.float32(s_qp.scale[0]) * np.float32(wt_qp.scale[0]))  # TFLM's product, exactly
    exact = np.asarray(g.tensor(b_name).data, np.float64) / b_scale
    b = np.clip(round_half_away(exact), INT32_MIN, INT32_MAX).astype(np.int32)
    q.add_tensor(Tensor(wf_name, wf.shape, "int8", data=wf, qparams=wf_qp))
    q.add_tensor(Tensor(wt_name, wt.shape, "int16", data=wt, qparams=wt_qp))
    q.add_tensor(Tensor(b_name, b.shape, "int32", data=b, qparams=QParams.per_tensor(b_scale, 0)))
    q.add_tensor(Tensor(y_name, g.tensor(y_name).shape, "int8", qparams=y_qp))
    q.nodes.append(Node(node.op, node.name, [x_name, wf_name, wt_name, b_name], [y_name],
                        dict(node.attrs.replace(state_qparams=s_qp).items()), node.source))
    findings = []
    if np.any((exact > INT32_MAX) | (exact < INT32_MIN)):
        findings.append(Finding(
            "bias_clamped", node.name,
            f"layer '{node.name}': its SVDF bias does not fit int32 at scale {b_scale:.3g} (state scale x "
            "weights_time scale) and was clamped, so those units are wrong",
            "calibrate on representative data: the feature activations' range is far narrower than the bias"))
    for what, real in (("feature", effective_scale(x_qp.scale[0], wf_qp.scale[0], s_qp.scale[0])),
                       ("output", effective_scale(s_qp.scale[0], wt_qp.scale[0], y_qp.scale[0]))):
        mantissa, shift = tflm_quantize_multiplier(real)
        if mantissa == 0 or shift > MAX_SHIFT:
            findings.append(Finding(
                "multiplier_clamped", node.name,
                f"layer '{node.name}': the SVDF's {what} multiplier {real:.3g} "
                f"{'underflows to 0' if mantissa == 0 else 'is 2^30 or more'}, which TFLite Micro's QuantizeMultiplier "
                "cannot represent",
                "the output range of this layer does not match its inputs: calibrate on representative data"))
    return findings
