"""Convolution geometry shared by the stages: TFLM's grouped-convolution rule, checked in one place for the TFLite
importer (at the operator) and the reference kernels (at the layer)."""
from __future__ import annotations

from tinyaot.errors import ModelError


def conv_groups(in_c: int, w_in: int, out_c: int, where: str) -> int:
    """TFLM's rule: groups = input depth / the weights' input depth, which must split both channel counts.
    `where` names the operator or layer the error is about."""
    if w_in < 1 or in_c % w_in or out_c % (in_c // w_in):
        raise ModelError(f"{where}: weights take {w_in} input channels, which does not split the input's {in_c} "
                         f"channels and the {out_c} output channels into equal groups")
    return in_c // w_in
