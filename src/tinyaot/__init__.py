"""tinyaot: compile trained neural networks to integer-only C for microcontrollers."""
import difflib
import functools
import inspect

from tinyaot.errors import (
    ArenaTooSmallError,
    CalibrationError,
    ModelError,
    TinyAOTError,
    UnsupportedOpError,
)
from tinyaot.version import __version__


def _unknown_options_named(compile_fn):
    """A misspelt keyword is a ModelError naming the closest option, not Python's bare TypeError."""
    known = tuple(inspect.signature(compile_fn).parameters)[1:]  # after model

    @functools.wraps(compile_fn)
    def checked(*args, **kwargs):
        for key in kwargs:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                raise ModelError(f"tinyaot.compile has no option {key!r}"
                                 + (f" (did you mean {close[0]!r}?)" if close else "")
                                 + f"; its options: {', '.join(known)}")
        return compile_fn(*args, **kwargs)

    return checked


@_unknown_options_named
def compile(model, example=None, *, calibration=None, data=None, float_model=None,
            name: str = "model", alignment: int = 4, input_layout: str = "NHWC", input_dtype: str = "int8",
            observer: str = "auto", layer_observers: dict | None = None, strict: bool = False,
            preserve_input: bool = False, separate_output: bool = False, optimize: str = "speed",
            stream: bool = False, int16=(), target_memory=None, sram_constants=(), ram=None, flash=None,
            layer_optimize=None, patch=False, cores: int = 1, progress=None):
    """Compile a model to int8 C; returns a CompiledModel (a read-only view of its CompileResult, cm.result).

    model: a PyTorch nn.Module, a PT2E-converted GraphModule, or a .tflite model (its path or bytes; int8, 16x8
    or float). example: one input with batch size 1 (a tuple of them when forward() takes several), in PyTorch's
    layout (e.g. NCHW); a .tflite needs none. calibration: a few hundred representative inputs, (N, ...) like
    the example (one array per input for several; a float .tflite's in its own layout, NHWC), which a float model
    is quantized on. data: samples used only to check the compiled model, never to calibrate (inputs, or
    (inputs, labels)): the report is cm.check. float_model: the float .tflite an int8 .tflite came from, which
    the data= check compares with.

    The other keywords are the fields of tinyaot.options.CompileOptions, which says what each is for. A few
    consequences worth knowing: the smallest arena lets invoke overwrite the input and put the output over it
    (preserve_input / separate_output keep them apart; cm.contract says what that cost); int16="auto" picks the
    layers whose int8 kernel loses the most on the calibration samples (local SQNR below 30 dB; cm.int16_layers
    says why each); a model that does not fit target_memory still compiles, with a MemoryBudgetWarning (cm.budget).
    stream=True calibrates and quantizes the full-window model, then converts it to a step function
    (passes/streaming.py): each invoke takes one frame and outputs the full model's output at that frame, each
    causal conv keeping its past frames and each recurrent layer its state in the state region
    (cm.reset_stream() / <name>_reset() start a new stream); its invoke leaves the input frame as it was.

    Every error is a TinyAOTError; an unexpected exception inside a stage (a tinyaot bug) leaves as an
    InternalCompilerError naming the stage and the layer, the original chained (guard.py).
    """
    # Imported here, not at the top, and not to dodge a cycle (nothing the pipeline imports imports this package):
    # `import tinyaot`, which every `import tinyaot.<module>` runs first, stays a few milliseconds instead of
    # loading the whole compiler (the pipeline reaches nearly every module, rich and the tflite schema).
    from tinyaot.pipeline import compile_model

    options = dict(name=name, alignment=alignment, input_layout=input_layout, input_dtype=input_dtype,
                   observer=observer, layer_observers=layer_observers, strict=strict, preserve_input=preserve_input,
                   separate_output=separate_output, optimize=optimize, stream=stream, int16=int16,
                   target_memory=target_memory, sram_constants=sram_constants, ram=ram, flash=flash,
                   layer_optimize=layer_optimize, patch=patch, cores=cores,
                   progress=progress)  # CompileOptions' fields, checked by it
    return compile_model(model, example, calibration=calibration, data=data, float_model=float_model,
                         options=options)


__all__ = [
    "ArenaTooSmallError",
    "CalibrationError",
    "ModelError",
    "TinyAOTError",
    "UnsupportedOpError",
    "__version__",
    "compile",
]
