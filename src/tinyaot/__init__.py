"""tinyaot: compile trained neural networks to integer-only C for microcontrollers."""
import difflib

from tinyaot.errors import (
    ArenaTooSmallError,
    CalibrationError,
    ModelError,
    TinyAOTError,
    UnsupportedOpError,
)
from tinyaot.version import __version__


def compile(model, example_input=None, calibration=None, name: str = "model", **options):
    """Compile a model to int8; see tinyaot.pipeline.compile_model for the options."""
    # Imported here, not at the top, and not to dodge a cycle (nothing the pipeline imports imports this package):
    # `import tinyaot`, which every `import tinyaot.<module>` runs first, stays a few milliseconds instead of
    # loading the whole compiler (the pipeline reaches nearly every module, rich and the tflite schema).
    from tinyaot.pipeline import COMPILE_OPTIONS as known
    from tinyaot.pipeline import compile_model

    for key in options:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            raise ModelError(f"tinyaot.compile has no option {key!r}"
                             + (f" (did you mean {close[0]!r}?)" if close else "")
                             + f"; its options: {', '.join(known)}")
    return compile_model(model, example_input, calibration=calibration, name=name, **options)


__all__ = [
    "ArenaTooSmallError",
    "CalibrationError",
    "ModelError",
    "TinyAOTError",
    "UnsupportedOpError",
    "__version__",
    "compile",
]
