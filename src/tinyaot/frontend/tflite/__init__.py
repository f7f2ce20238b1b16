"""TFLite front end: a .tflite flatbuffer -> an IR graph (NHWC)."""
from tinyaot.frontend.tflite.importer import (
    CONVERTERS,
    compute_padding,
    custom_op_hint,
    from_tflite,
    from_tflite_float,
    is_float_tflite,
)

__all__ = ["CONVERTERS", "compute_padding", "custom_op_hint", "from_tflite", "from_tflite_float", "is_float_tflite"]
