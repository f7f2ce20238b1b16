"""tinyaot: compile trained neural networks to integer-only C for microcontrollers."""
__version__ = "0.1.0"

from tinyaot.errors import (  # noqa: E402
    ArenaTooSmallError,
    CalibrationError,
    ModelError,
    TinyAOTError,
    UnsupportedOpError,
)


def compile(model, example_input=None, calibration=None, name: str = "model", **options):
    """Compile a model to int8; see tinyaot.pipeline.compile_model for the options."""
    from tinyaot.pipeline import compile_model

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
