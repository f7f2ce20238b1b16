"""Errors users see. Each one says what is wrong and what to do about it."""


class TinyAOTError(Exception):
    """Base class: every error tinyaot raises on purpose derives from it."""


class UnsupportedOpError(TinyAOTError):
    """The model uses an operation tinyaot cannot compile."""


class CalibrationError(TinyAOTError):
    """Calibration data is missing, mis-shaped or not finite."""


class ModelError(TinyAOTError):
    """The model itself is unusable (non-finite weights, wrong input shape, ...)."""


class ArenaTooSmallError(TinyAOTError):
    """A caller-provided arena is smaller than the plan needs."""


class InternalError(TinyAOTError):
    """Base class of tinyaot's own bugs, never the user's fault (the IR, a plan, a kernel's Params and its C struct,
    a pass's contract, a template): the command line exits with code 4 and asks for a bug report."""


class InternalCompilerError(InternalError):
    """A bug in tinyaot, never the user's fault: a stage broke its own rules, or an unexpected exception escaped it
    (then chained as __cause__, its traceback kept). `stage` and `layer` say where, when known."""

    def __init__(self, message: str, stage: str | None = None, layer: str | None = None) -> None:
        super().__init__(message)
        self.stage = stage
        self.layer = layer


class PlanError(InternalCompilerError):
    """A memory plan failed verification (a bug in a planner, never the user's fault)."""
