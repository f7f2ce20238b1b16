"""The compile every model command starts with, and the --data check on samples that never calibrated anything."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import tinyaot
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.inputs import model_input, one_input_only
from tinyaot.cli.request import Request
from tinyaot.diagnostics import raise_or_warn
from tinyaot.errors import ModelError
from tinyaot.loader import load_model
from tinyaot.model import CompiledModel
from tinyaot.report.quant_error import QuantReport


@dataclass(frozen=True)
class Compiled:
    """A compiled model, and what the --data samples said of it (None without --data, and for eval, whose data is
    what it measures)."""

    cm: CompiledModel
    check: QuantReport | None = None


def compile_request(req: Request, feedback: Feedback) -> Compiled:
    options = req.compile_options(lambda stage: feedback.stage(f"compiling {req.model}: {stage}"))
    if req.is_tflite:  # no torch
        feedback.stage(f"compiling {req.model}")
        cal = req.arrays.calibration if req.float_tflite else None
        return _checked(tinyaot.compile(req.model, calibration=cal, **options), req, feedback)
    feedback.stage(f"loading {req.model}")
    import torch  # an optional dependency: only PyTorch models need it

    model = load_model(req.model)
    cals = req.arrays.calibrations
    shapes = req.shapes or [(1,) + tuple(c.shape[1:]) for c in cals]
    feedback.stage(f"compiling {req.model}")
    if len(cals) > 1:  # one example and one calibration batch per input
        example = tuple(torch.zeros(shape) for shape in shapes)
        return _checked(tinyaot.compile(model, example, calibration=list(cals), **options), req, feedback)
    return _checked(tinyaot.compile(model, torch.zeros(shapes[0]), calibration=cals[0], **options), req, feedback)


def _checked(cm: CompiledModel, req: Request, feedback: Feedback) -> Compiled:
    """--data: the trust check on samples that never calibrated anything (strict: its findings are errors)."""
    _check_input_count(cm, req)
    if req.arrays.data is None or req.command == "eval":
        return Compiled(cm)
    one_input_only(cm, "--data")
    feedback.stage(f"checking the int8 model on {req.data}")
    x, y = req.arrays.data
    check = cm.check_data(model_input(cm, x.astype(np.float64), req.layout, "--data"), labels=y,
                          float_model=req.float_model, model_layout=True)
    raise_or_warn(check.findings, req.strict, cm.name)
    return Compiled(cm, check)


def _check_input_count(cm: CompiledModel, req: Request) -> None:
    """A model with several inputs takes one --calibration (PyTorch) and one --input file per input."""
    for flag, files in (("calibration", req.files.calibrations), ("input", req.files.inputs)):
        if flag == "calibration" and (req.is_tflite or not files):
            continue
        if files and len(files) != cm.n_inputs:
            raise ModelError(f"model '{cm.name}' has {cm.n_inputs} input(s) but --{flag} was given {len(files)} "
                             f"time(s); give one --{flag} file per input, in the model's input order")
