"""The TFLite int8 scheme: how scales and zero points are chosen from ranges and weights."""
from __future__ import annotations

import numpy as np

from tinyaot.ir import QParams

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def round_half_away(x: np.ndarray) -> np.ndarray:
    """std::round semantics (TFLite's converter rounds ties away from zero)."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def activation_qparams(lo: float, hi: float, qmin: int = INT8_MIN, qmax: int = INT8_MAX) -> QParams:
    """Asymmetric per-tensor parameters whose range covers [lo, hi] and represents 0 exactly."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi == lo:
        return QParams.per_tensor(1.0, 0 if qmin < 0 else qmin)
    scale = float(np.float32((hi - lo) / (qmax - qmin)))  # a .tflite stores float32 scales
    zero_point = int(np.clip(round_half_away(qmin - lo / scale), qmin, qmax))
    return QParams.per_tensor(scale, zero_point)


def quantize_weights_per_channel(w: np.ndarray, axis: int = 0) -> tuple[np.ndarray, QParams]:
    """Symmetric int8 in [-127, 127] per output channel (zero point 0)."""
    w = np.asarray(w, dtype=np.float64)
    reduce_axes = tuple(i for i in range(w.ndim) if i != axis)
    max_abs = np.abs(w).max(axis=reduce_axes) if reduce_axes else np.abs(w)
    scale = np.where(max_abs > 0, max_abs / 127.0, 1.0).astype(np.float32).astype(np.float64)
    bshape = [1] * w.ndim
    bshape[axis] = -1
    q = np.clip(round_half_away(w / scale.reshape(bshape)), -127, 127).astype(np.int8)
    qp = QParams(tuple(float(s) for s in scale), (0,) * len(scale), axis=axis)
    return q, qp


def quantize_bias(b: np.ndarray, input_scale: float, weight_scales: np.ndarray) -> tuple[np.ndarray, QParams]:
    """int32 bias with scale input_scale * weight_scale[c], zero point 0."""
    scale = (input_scale * np.asarray(weight_scales, dtype=np.float64)).astype(np.float32).astype(np.float64)
    q = np.clip(round_half_away(np.asarray(b, np.float64) / scale), INT32_MIN, INT32_MAX)
    return q.astype(np.int32), QParams(tuple(float(s) for s in scale), (0,) * len(scale), axis=0)


def quantize_array(x: np.ndarray, qp: QParams, dtype: str = "int8") -> np.ndarray:
    """Float -> int8 with the given per-tensor parameters (host-side helper for I/O)."""
    info = np.iinfo(dtype)
    q = round_half_away(np.asarray(x, np.float64) / qp.scale[0]) + qp.zero_point[0]
    return np.clip(q, info.min, info.max).astype(dtype)
