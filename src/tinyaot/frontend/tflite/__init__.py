"""TFLite front end: a .tflite flatbuffer -> an IR graph (NHWC).

Two kinds of file come in. An int8 model (`from_tflite`) becomes an int8 graph that keeps the file's own scales
and zero points, so no calibration is needed; a float model's boundary QUANTIZE / DEQUANTIZE ops are folded away
so the compiled model has int8 input and output with the qparams those ops publish. A float32 model
(`from_tflite_float`, chosen by `is_float_tflite`) becomes a float graph that tinyaot's own calibration and PTQ
quantize, exactly like a PyTorch model: float32 activations without qparams, float32 weights in the IR layouts
(dynamic-range "hybrid" int8 weights are dequantized, scale * (q - zero_point), which is what they stand for).
One importer serves both, under two policies (policy.py) that say what a tensor becomes and what is refused.

The modules, lowest first: reader (the flatbuffer, bounds-checked), policy (int8 vs float), importer (the pass
over the operators and the helpers every converter uses), tflm_checks (TFLite Micro's Prepare checks), the
converters by family (conv, elementwise, activations, pooling, moves, slices, requantize, recurrent, svdf),
converters (the tables), api (the entry points).
"""
from tinyaot.frontend.tflite.api import from_tflite, from_tflite_float, is_float_tflite
from tinyaot.frontend.tflite.conv import compute_padding
from tinyaot.frontend.tflite.converters import CONVERTERS
from tinyaot.frontend.tflite.importer import custom_op_hint

__all__ = ["CONVERTERS", "compute_padding", "custom_op_hint", "from_tflite", "from_tflite_float", "is_float_tflite"]
