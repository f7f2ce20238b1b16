"""The TFLite front end's entry points: which kind of model a file is, and its import under that kind's policy."""
from __future__ import annotations

import numpy as np

from tinyaot.errors import ModelError, TinyAOTError
from tinyaot.frontend.tflite.converters import CONVERTERS, FLOAT_CONVERTERS
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.policy import FloatPolicy, Int8Policy
from tinyaot.frontend.tflite.reader import is_float_model, parse, read_bytes
from tinyaot.ir import Graph

INT8 = Int8Policy(CONVERTERS)
FLOAT = FloatPolicy(FLOAT_CONVERTERS)


def is_float_tflite(model) -> bool:
    """True for a float32 .tflite (a path, or the file's bytes): its input is float32 and is not just quantized by
    a first QUANTIZE (that is an int8 model with a float interface, which from_tflite takes). Never raises: a file
    that cannot be read is not a float model, and from_tflite says what is wrong with it."""
    try:
        buf, _ = read_bytes(model)
        return is_float_model(parse(buf))
    except Exception:  # noqa: BLE001 -- malformed or missing: from_tflite reports it
        return False


def from_tflite(model) -> Graph:
    """Import an int8 .tflite model (a path, or the file's bytes) as an int8 IR graph."""
    return _import(model, INT8)


def from_tflite_float(model) -> Graph:
    """Import a float32 .tflite model (a path, or the file's bytes) as a float IR graph for tinyaot's calibration
    and PTQ: float32 activations without qparams, float32 weights and biases in the IR layouts, fused activations
    as `clamp`, NHWC, and calibration samples in the model's own layout (torch_input_rank 0)."""
    g = _import(model, FLOAT)
    for t in g.constants():
        bad = ~np.isfinite(t.data) if t.dtype == "float32" else np.zeros(t.data.shape, bool)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ModelError(f"constant '{t.name}' holds {int(bad.sum())} non-finite value(s) (first at index "
                             f"{idx}: {t.data[idx]}); int8 quantization needs finite weights (fix the model)")
    return g


def _import(model, policy: Int8Policy | FloatPolicy) -> Graph:
    buf, source = read_bytes(model)
    try:
        g = Importer(parse(buf), source, policy).run()
    except TinyAOTError:
        raise
    except Exception as exc:  # noqa: BLE001 -- the generated parser raises struct.error, IndexError, ...
        raise ModelError(f"malformed .tflite file ({source}): the flatbuffer cannot be read "
                         f"({type(exc).__name__}: {exc}); is the file truncated or corrupt?") from None
    g.prune()
    return g
