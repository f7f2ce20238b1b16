"""tinyaot eval: int8 against float accuracy on a data set, its confusion matrix, and the error per layer."""
from __future__ import annotations

import argparse

import numpy as np
from rich.table import Table

from tinyaot.cli.arguments import add_model_args
from tinyaot.cli.compiling import compile_request
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.inputs import model_input, one_input_only
from tinyaot.cli.request import Request
from tinyaot.targets.engines import ENGINES, REGISTRY

NAME = "eval"
HELP = "int8 vs float accuracy on a data set, its confusion matrix, and the error per layer"
SPINNER = True  # a status line names the stage at work (on a terminal, without --json)
LAYER_SAMPLES = 100  # the per-layer table runs the (slow) reference interpreter on this many samples


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p, data=False)
    p.add_argument("--data", required=True, help=".npz with inputs 'x' and labels 'y' (or a .npy of inputs)")
    p.add_argument("--engine", default="host", choices=list(ENGINES))
    p.add_argument("--no-layers", action="store_true", help=f"skip the per-layer table (it runs the reference "
                   f"interpreter on the first {LAYER_SAMPLES} samples)")


def run(req: Request, feedback: Feedback) -> int:
    x, y = req.arrays.data
    cm = compile_request(req, feedback).cm
    one_input_only(cm, "eval --data")
    x = model_input(cm, x.astype(np.float32) if x.dtype != np.int8 else x, req.layout, "--data")
    quantized = x.dtype == np.int8
    result: dict = {"samples": int(len(x)), "engine": req.engine}
    feedback.stage(f"running {len(x)} samples on {REGISTRY[req.engine].description}")
    out = cm.run(x, engine=req.engine) if quantized else cm.run_float(x, engine=req.engine)
    pred = np.asarray(out).reshape(len(x), -1).argmax(-1)
    if cm.reference_graph is not None and not quantized:
        feedback.stage("running the float model")
        fpred = np.asarray(cm.float_reference(x)).reshape(len(x), -1).argmax(-1)
        result["float_int8_agreement"] = float((fpred == pred).mean())
        if y is not None:
            result["float_accuracy"] = float((fpred == y).mean())
    if y is not None:
        result["int8_accuracy"] = float((pred == y).mean())
        result["confusion"] = confusion_matrix(y, pred).tolist()  # rows: true class, columns: int8 prediction
    errors = None
    if cm.reference_graph is not None and not quantized and not req.no_layers:
        feedback.stage("measuring the error per layer")
        errors = cm.layer_errors(x[:LAYER_SAMPLES], labels=None if y is None else y[:LAYER_SAMPLES])
    if req.json:
        feedback.print_json(result | ({"layers": errors.to_dict()} if errors else {}))
        return 0
    c = feedback.results()
    for k, v in result.items():
        if k != "confusion":
            c.print(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")
    if "confusion" in result:
        c.print(_confusion_table(np.asarray(result["confusion"])))
    if errors:
        c.print(errors)
    return 0


def confusion_matrix(y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    n = int(max(y.max(initial=0), pred.max(initial=0))) + 1
    m = np.zeros((n, n), dtype=np.int64)
    np.add.at(m, (y.astype(np.int64), pred.astype(np.int64)), 1)
    return m


def _confusion_table(m: np.ndarray) -> Table:
    t = Table(title="confusion matrix of the int8 model (rows: true class, columns: predicted)")
    t.add_column("true", justify="right")
    for j in range(len(m)):
        t.add_column(str(j), justify="right")
    t.add_column("recall", justify="right")
    for i, row in enumerate(m):
        cells = [f"[bold]{v}[/]" if i == j else (f"[red]{v}[/]" if v else "·") for j, v in enumerate(row)]
        recall = f"{row[i] / row.sum():.1%}" if row.sum() else "-"
        t.add_row(str(i), *cells, recall)
    return t
