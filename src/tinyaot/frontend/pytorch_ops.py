"""ATen -> IR converters, with compile-time layout conversion: the table the PyTorch and PT2E front ends look ops
up in, assembled from one module per op family.

PyTorch tensors are channels-first (NCHW, or NCL for 1-D convs); the IR is channels-last (NHWC; a 1-D
signal is NHWC with H = 1). Each IR value remembers whether it is the channels-last form of a torch
tensor (`nhwc`, see pytorch_builder.py), so ops that name axes (cat, mean, softmax, flatten, slicing) map them at
compile time and no permute runs on the device unless the model itself mixes layouts.
"""
from __future__ import annotations

from typing import Any, Callable

from tinyaot.frontend.pytorch_activations import CONVERTERS as ACTIVATION_CONVERTERS
from tinyaot.frontend.pytorch_attention import CONVERTERS as ATTENTION_CONVERTERS
from tinyaot.frontend.pytorch_builder import CHANNEL_OPS, Builder, Value, torch_to_ir_shape
from tinyaot.frontend.pytorch_conv import CONVERTERS as CONV_CONVERTERS
from tinyaot.frontend.pytorch_elementwise import CONVERTERS as ELEMENTWISE_CONVERTERS
from tinyaot.frontend.pytorch_pooling import CONVERTERS as POOLING_CONVERTERS
from tinyaot.frontend.pytorch_recurrent import CONVERTERS as RECURRENT_CONVERTERS
from tinyaot.frontend.pytorch_shape import CONVERTERS as SHAPE_CONVERTERS
from tinyaot.frontend.pytorch_slicing import CONVERTERS as SLICING_CONVERTERS
from tinyaot.frontend.pytorch_spatial import CONVERTERS as SPATIAL_CONVERTERS

__all__ = ["CHANNEL_OPS", "CONVERTERS", "Builder", "Value", "torch_to_ir_shape"]

CONVERTERS: dict[str, Callable[[Builder, Any], None]] = {
    **CONV_CONVERTERS,            # linear, conv1d / conv2d / transposed, batch_norm
    **ACTIVATION_CONVERTERS,      # relu family, softmax, table activations (and their in-place spellings)
    **POOLING_CONVERTERS,         # max / avg / adaptive pooling, mean, sum
    **ELEMENTWISE_CONVERTERS,     # add / sub / mul / div / minimum / maximum, cat, stack
    **SPATIAL_CONVERTERS,         # pad, resize
    **SHAPE_CONVERTERS,           # reshape, permute, expand, no-ops and casts
    **ATTENTION_CONVERTERS,       # LayerNorm, matmul of two activations, attention
    **RECURRENT_CONVERTERS,       # nn.LSTM / nn.GRU, their zero initial state and last-step reads
    **SLICING_CONVERTERS,         # slicing, narrow, select, split, chunk, getitem of their pieces
}
