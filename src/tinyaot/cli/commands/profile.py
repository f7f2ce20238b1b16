"""tinyaot profile: exact Cortex-M33 instructions per op for one inference, on QEMU."""
from __future__ import annotations

import argparse

import numpy as np

from tinyaot.cli.arguments import add_model_args
from tinyaot.cli.compiling import compile_request
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.inputs import model_inputs
from tinyaot.cli.request import Request
from tinyaot.errors import ModelError
from tinyaot.report.dual import dual_profile

NAME = "profile"
HELP = "exact Cortex-M33 instructions per op for one inference (QEMU)"
SPINNER = True  # a status line names the stage at work (on a terminal, without --json)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    p.add_argument("--input", action="append", help=".npy whose first sample is profiled (default: zeros); once "
                   "per input for a model with several")
    p.add_argument("--mix", action="store_true", help="also count each op's loads, stores, multiplies/MACs and "
                   "branches (taken or not): the profiling run goes through a QEMU plugin (built with the host C "
                   "compiler)")


def run(req: Request, feedback: Feedback) -> int:
    cm = compile_request(req, feedback).cm
    x = _first_sample(cm, req) if req.input else None
    if req.cores == 2:
        if req.mix:
            raise ModelError("--mix counts one core's instruction kinds: profile --cores 2 without it")
        feedback.stage("profiling on two emulated Cortex-M33s (QEMU mps2-an521) and on one")
        rep = dual_profile(cm, x)
        if req.json:
            feedback.print_json(rep.to_dict())
        else:
            feedback.results().print(rep)
        return 0
    feedback.stage("profiling on the emulated Cortex-M33" + (" (with the instruction mix)" if req.mix else ""))
    rep = cm.profile(x, mix=req.mix)
    if req.json:
        feedback.print_json(rep.to_dict())
    else:
        feedback.results().print(rep)
    return 0


def _first_sample(cm, req: Request):
    """The first sample of each --input, in the model's layout and quantized (one array, or a list of them)."""
    xs = model_inputs(cm, req.arrays.inputs, req.layout)
    xs = xs if isinstance(xs, list) else [xs]
    shapes = [cm.graph.tensor(t).shape for t in cm.graph.inputs]
    xs = [v.reshape((-1,) + tuple(shape[1:]))[:1] for v, shape in zip(xs, shapes)]
    if not np.issubdtype(xs[0].dtype, np.integer):
        xs = cm.quantize_input(xs if len(xs) > 1 else xs[0])
        xs = xs if isinstance(xs, list) else [xs]
    return xs if len(xs) > 1 else xs[0]
