"""tinyaot run: a model's outputs on inputs from .npy files, on one engine."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from tinyaot.cli.arguments import add_model_args
from tinyaot.cli.compiling import compile_request
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.inputs import model_inputs
from tinyaot.cli.request import Request
from tinyaot.targets.engines import ENGINES, REGISTRY

NAME = "run"
HELP = "run a model on inputs from a .npy file"
SPINNER = True  # a status line names the stage at work (on a terminal, without --json)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    p.add_argument("--input", required=True, action="append", help=".npy input (int8 is used as is; float is "
                   "quantized); once per input, in order, for a model with several")
    p.add_argument("--engine", default="reference", choices=list(ENGINES))
    p.add_argument("-o", "--output", help="save the outputs to this .npy file")


def run(req: Request, feedback: Feedback) -> int:
    cm = compile_request(req, feedback).cm
    x = model_inputs(cm, req.arrays.inputs, req.layout)
    feedback.stage(f"running {', '.join(req.files.inputs)} on {REGISTRY[req.engine].description}")
    first = x[0] if isinstance(x, list) else x
    if np.issubdtype(first.dtype, np.floating):
        y = cm.run_float(x, engine=req.engine)
    else:
        y = cm.run(x, engine=req.engine)
    ys = y if cm.n_outputs > 1 else [y]
    if req.output:
        _save(req.output, ys if cm.n_outputs > 1 else y, cm.n_outputs)
    feedback.stop()
    if req.json:
        if cm.n_outputs > 1:
            print(json.dumps({"engine": req.engine, "outputs": [v.tolist() for v in ys],
                              "argmax": [np.argmax(v, -1).tolist() for v in ys]}))
        else:
            print(json.dumps({"engine": req.engine, "output": y.tolist(), "argmax": np.argmax(y, -1).tolist()}))
    else:
        np.set_printoptions(linewidth=120)
        for k, v in enumerate(ys):
            if cm.n_outputs > 1:
                print(f"output {k}:")
            print(v)
    return 0


def _save(output: str, y, n_outputs: int) -> None:
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    if n_outputs > 1:  # output k -> <name>.<k>.npy beside the name given
        for k, v in enumerate(y):
            np.save(Path(output).with_suffix(f".{k}.npy"), v)
    else:
        np.save(output, y)
