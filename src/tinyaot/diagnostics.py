"""Findings: what the compiler noticed about the calibration or the quantized model, and what to do.

A finding is a warning by default (CalibrationWarning, so users can filter it) and an error with strict=True,
for CI that must not ship a model whose calibration looks wrong.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from dataclasses import asdict, dataclass

from tinyaot.errors import CalibrationError


class TinyAOTWarning(UserWarning):
    """Base class of tinyaot's warnings: `warnings.filterwarnings("error", category=TinyAOTWarning)` makes them
    all errors."""


class CalibrationWarning(TinyAOTWarning):
    """The calibration (or the quantized model checked on data) looks wrong; the message says what to do."""


class MemoryBudgetWarning(TinyAOTWarning):
    """The compiled model does not fit the target's flash or RAM (report/budget.py); the message says by how much
    and what would help."""


@dataclass(frozen=True)
class Finding:
    code: str  # stable identifier, e.g. "noise_like", "outlier_samples"
    where: str  # the layer or tensor it is about ("input" for the samples themselves)
    message: str  # what is wrong
    advice: str  # what to do

    def __str__(self) -> str:
        """One sentence: what is wrong, with its numbers, then what to do."""
        return f"{self.message}; {self.advice}."

    def to_dict(self) -> dict:
        return asdict(self)


def raise_or_warn(findings: list[Finding], strict: bool, model: str) -> None:
    if not findings:
        return
    if strict:
        lines = "\n".join(f"- {f}" for f in findings)
        raise CalibrationError(f"model '{model}': {len(findings)} calibration problem(s) (strict=True):\n{lines}")
    warn(findings, model, CalibrationWarning)


def warn(findings: list[Finding], model: str | None, category: type[Warning]) -> None:
    """Each finding as one warning pointing at the user's call; `model` prefixes it unless the message names it."""
    level = _caller_level()
    for f in findings:
        warnings.warn(f"model '{model}': {f}" if model else str(f), category, stacklevel=level)


def _caller_level() -> int:
    """The stacklevel of the first frame outside tinyaot, so a warning points at the user's compile() call. The
    frame that calls warnings.warn is level 1; the guard's context-decorator frames (contextlib) between tinyaot's
    own are skipped too."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and _inside(os.path.abspath(frame.f_code.co_filename), package):
        frame, level = frame.f_back, level + 1
    return level


def _inside(filename: str, package: str) -> bool:
    return filename.startswith(package) or filename == os.path.abspath(contextlib.__file__)
