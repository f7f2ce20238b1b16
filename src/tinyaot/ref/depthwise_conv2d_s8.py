"""depthwise_conv2d_s8: int8 NHWC depthwise convolution with a depth multiplier.

Semantics of TFLite Micro's reference DepthwiseConvPerChannel: output channel ic * multiplier + m reads
input channel ic only; taps outside the image are skipped; per-channel requantization as in conv2d_s8
(TFLM fills both from PopulateConvolutionQuantizationParams).
"""
from __future__ import annotations

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ref.conv2d_s8 import ConvParams, patches, prepare_conv_like, requantize


def prepare(node: Node, g: Graph) -> ConvParams:
    return prepare_conv_like(node, g, depthwise=True)


def depthwise_conv2d_s8(x: np.ndarray, p: ConvParams) -> np.ndarray:
    cols = patches(x, p, np.float64)  # [b, oh, ow, kh, kw, in_c]
    w = p.weights.reshape(p.kernel_h, p.kernel_w, p.in_c, p.depth_multiplier).astype(np.float64)
    # Exact: integer products and sums far below 2**53.
    acc = np.einsum("bhwyxc,yxcm->bhwcm", cols, w, optimize=True)
    acc = np.rint(acc).astype(np.int64).reshape(p.batches, p.out_h, p.out_w, p.out_c)
    return requantize(acc, p)
