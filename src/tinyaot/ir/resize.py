"""Source coordinates of TFLite's resize ops, the one definition the front ends, the real-valued evaluator and the
reference kernels share (the coordinates depend only on the sizes and flags, so they are fixed at compile time).

Nearest: TFLite Micro's GetNearestNeighbor, in float32 arithmetic exactly as its C++ computes it. Bilinear: its
ResizeBilinearInteger, whose source coordinates are integers in units of 1/1024 pixel.
"""
from __future__ import annotations

import numpy as np

BILINEAR_FRACTION_BITS = 10  # TFLM's ResizeBilinearInteger: source coordinates in units of 1/1024 pixel
BILINEAR_ONE = 1 << BILINEAR_FRACTION_BITS


def nearest_source(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """The input index each output index copies (int32 [out_size]), as TFLM's float32 GetNearestNeighbor."""
    f32 = np.float32
    if align_corners and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    else:
        scale = f32(in_size) / f32(out_size)
    offset = f32(0.5) if half_pixel_centers else f32(0.0)
    pos = (np.arange(out_size, dtype=np.float32) + offset) * scale  # float32 products, as the C++ rounds them
    pos = pos.astype(np.float64)  # exact: every float32 is a float64
    # TfLiteRound is round-half-away-from-zero; the positions are >= 0
    src = np.floor(pos + 0.5) if align_corners else np.floor(pos)
    src = np.minimum(src.astype(np.int64), in_size - 1)
    if half_pixel_centers:
        src = np.maximum(src, 0)
    return src.astype(np.int32)


def bilinear_scale_10(in_size: int, out_size: int, align_corners: bool) -> int:
    """in_size / out_size in units of 1/1024, rounded to nearest (TFLM's height_scale_10 / width_scale_10)."""
    if align_corners and out_size > 1:
        return (BILINEAR_ONE * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    return (BILINEAR_ONE * in_size + out_size // 2) // out_size


def bilinear_source(in_size: int, out_size: int, scale_10: int, half_pixel_centers: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower, upper, fraction) per output index (int64 [out_size] each): output index o blends input indices
    lower and upper with weights BILINEAR_ONE - fraction and fraction (TFLM's ComputeInterpolationValuesInteger;
    C's division truncates toward zero, so a coordinate just below 0 has lower 0 and a negative fraction)."""
    value = np.arange(out_size, dtype=np.int64) * scale_10
    if half_pixel_centers:
        value = value + scale_10 // 2 - BILINEAR_ONE // 2
    lower = np.maximum(_c_div(value, BILINEAR_ONE), 0)
    upper = np.minimum(_c_div(value + BILINEAR_ONE - 1, BILINEAR_ONE), in_size - 1)
    return lower, upper, value - BILINEAR_ONE * lower


def _c_div(a: np.ndarray, b: int) -> np.ndarray:
    """C's integer division (truncates toward zero; NumPy's // floors)."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)
