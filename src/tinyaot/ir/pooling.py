"""Pooling geometry, the one definition the front ends, the real-valued evaluator and the reference kernels share:
PyTorch's output size (floor or ceil_mode) and its adaptive pooling windows."""
from __future__ import annotations


def pooled_size(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, ceil_mode: bool) -> int:
    """Output positions along one axis, PyTorch's pooling_output_shape: windows that fit in the padded input, and
    with ceil_mode one more where a last window would hang over its end, unless that window would start past the
    input (in the bottom / right padding)."""
    span = size + pad_lo + pad_hi - kernel
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out
