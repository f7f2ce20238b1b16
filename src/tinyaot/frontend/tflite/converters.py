"""What each TFLite builtin operator becomes: the converter tables of the two policies (policy.py).

CONVERTERS is the int8 / 16x8 model's table (and what `tinyaot ops` lists). A float model's differs where tinyaot's
PTQ takes over from TFLM's integer kernels: its activations are the real functions, a one-number constant operand of
ADD / SUB / MUL is a table, its LSTM and SVDF have float32 weights (its SVDF a float32 state), and QUANTIZE is no
operator of it. A family module may hold its own rows (activations.py: CONVERTERS, FLOAT_CONVERTERS), merged here,
so that adding an operator to it edits that module only.
"""
from __future__ import annotations

from collections.abc import Callable

from tinyaot.frontend.tflite import activations
from tinyaot.frontend.tflite.conv import batch_matmul, conv_2d, depthwise_conv_2d, fully_connected, transpose_conv
from tinyaot.frontend.tflite.elementwise import binary, float_binary, minmax
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.moves import concatenation, mirror_pad, pad, reshape, resize, transpose
from tinyaot.frontend.tflite.pooling import average_pool_2d, max_pool_2d, mean, reduce_max, sum_
from tinyaot.frontend.tflite.reader import OpInfo
from tinyaot.frontend.tflite.recurrent import FloatLstm, IntegerLstm, unidirectional_sequence_lstm
from tinyaot.frontend.tflite.requantize import quantize
from tinyaot.frontend.tflite.slices import (
    depth_to_space,
    expand_dims,
    pack,
    slice_,
    space_to_depth,
    split,
    split_v,
    squeeze,
    strided_slice,
    unpack,
)
from tinyaot.frontend.tflite.svdf import float_svdf, svdf

Converter = Callable[[Importer, OpInfo], None]

CONVERTERS: dict[str, Converter] = {
    **activations.CONVERTERS,
    "ADD": binary("ADD"),
    "AVERAGE_POOL_2D": average_pool_2d,
    "BATCH_MATMUL": batch_matmul,
    "CONCATENATION": concatenation,
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "TRANSPOSE_CONV": transpose_conv,
    "FULLY_CONNECTED": fully_connected,
    "MAX_POOL_2D": max_pool_2d,
    "MAXIMUM": minmax("maximum"),
    "MEAN": mean,
    "MIRROR_PAD": mirror_pad,
    "MINIMUM": minmax("minimum"),
    "MUL": binary("MUL"),
    "PAD": pad,
    "PADV2": pad,
    "QUANTIZE": quantize,
    "RESHAPE": reshape,
    "RESIZE_BILINEAR": resize("resize_bilinear", "ResizeBilinearOptions"),
    "RESIZE_NEAREST_NEIGHBOR": resize("resize_nearest", "ResizeNearestNeighborOptions"),
    "SUB": binary("SUB"),
    "SVDF": svdf,
    "TRANSPOSE": transpose,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_sequence_lstm(IntegerLstm()),
    "STRIDED_SLICE": strided_slice,
    "SLICE": slice_,
    "SPLIT": split,
    "SPLIT_V": split_v,
    "UNPACK": unpack,
    "PACK": pack,
    "SQUEEZE": squeeze,
    "EXPAND_DIMS": expand_dims,
    "DEPTH_TO_SPACE": depth_to_space,
    "SPACE_TO_DEPTH": space_to_depth,
    "SUM": sum_,
    "REDUCE_MAX": reduce_max,
}

FLOAT_CONVERTERS: dict[str, Converter] = {
    **{name: convert for name, convert in CONVERTERS.items() if name != "QUANTIZE"},
    **activations.FLOAT_CONVERTERS,
    "ADD": float_binary("ADD"),
    "MUL": float_binary("MUL"),
    "SUB": float_binary("SUB"),
    "SVDF": float_svdf,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_sequence_lstm(FloatLstm()),
}
