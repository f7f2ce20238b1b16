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


class PlanError(TinyAOTError):
    """A memory plan failed verification (a bug in a planner, never the user's fault)."""
