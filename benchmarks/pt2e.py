"""PT2E-quantized models through tinyaot: how closely the compiled int8 model reproduces the PT2E graph's own
reference, and what that does to accuracy, per model and, for the deep nets, per layer.

    .venv/bin/python benchmarks/pt2e.py [--shared PATH] [--only NAME] [--samples N] [--layer-samples N] [--json]

Each model is quantized with torchao's PT2E flow (XNNPACKQuantizer, get_symmetric_quantization_config per tensor
and per channel, prepare_pt2e, calibrate one sample per call, convert_pt2e) and compiled with
tinyaot.compile(converted_graph, example). The PT2E reference is the converted graph itself (float math between
its quantize/dequantize pairs, tinyaot.report.pt2e_agreement). Models (tests/pt2e_models.py), all on 28x28 inputs:
- the seed MLP 784-32-16-10, hand-set weights for drawn digits 0, 1, 4, 7, calibrated on
  demo_model.calibration_digits() and measured on 2,000 other jittered drawings (seed 1); its detectors look at
  fixed pixels, so even in float it labels only two thirds of the shifted drawings right;
- trained here for 1-2 epochs on 8,000 real MNIST digits, calibrated on 256 of them, measured on the 2,000
  held-out digits: an MLP 784-128-64-10; LeNet-5; a DS-CNN (MLPerf Tiny KWS shape: a 3x3 stride-2 conv, then 4
  depthwise-separable blocks of width 32 at 14x14, conv-BN-ReLU, global average pool, linear; 9 convs); and
  MobileNetV1-0.25 (the 13 depthwise-separable blocks at width 0.25, conv-BN-ReLU6; maps 14, 7, 4, 2, 1; 27 convs).
Training runs on one torch thread with fixed seeds, so the figures repeat on a given torch build; tinyaot runs
on the host C engine (byte-equal to the reference interpreter, tests/test_pt2e.py) or, without gcc, on the
reference interpreter (slow on the conv nets: lower --samples). About 2.5 minutes on 2 cores, most of it training.

Per layer (DS-CNN and MobileNetV1, per-channel weights): `chained` compares every int8 tensor tinyaot computes in
a whole-model run with the PT2E graph's, `isolated` runs each tinyaot kernel on PT2E's own int8 inputs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

import tinyaot
from tinyaot.demo_model import DEMO_DIGITS, build_seed_mlp, calibration_digits
from tinyaot.report.macs import graph_macs
from tinyaot.report.pt2e_agreement import agreement_of, pt2e_layer_agreement, pt2e_reference

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pt2e_models as pm  # noqa: E402


@dataclass(frozen=True)
class Entry:
    name: str
    build: Callable[[], torch.nn.Module]
    epochs: int  # 0: not trained (the seed MLP's weights are set by hand)
    lr: float = 3e-3
    layers: bool = False  # print the per-layer table


MODELS = [
    Entry("seed MLP", build_seed_mlp, 0),
    Entry("MLP 784-128-64-10", pm.mlp, 2),
    Entry("LeNet-5", pm.lenet5, 1),
    Entry("DS-CNN 4x32", pm.DSCNN, 2, lr=1e-2, layers=True),
    Entry("MobileNetV1-0.25", pm.MobileNetV1, 2, lr=1e-2, layers=True),
]
CALIBRATION = 256
PER = {"per-tensor": False, "per-channel": True}


def _accuracy(pred: np.ndarray, labels: np.ndarray) -> float:
    return float((pred == labels).mean())


def measure(entry: Entry, images: np.ndarray, labels: np.ndarray, samples: int, layer_samples: int,
            engine: str) -> tuple[list[dict], dict[str, list[dict]]]:
    x_train, y_train = images[pm.TRAIN], labels[pm.TRAIN]
    x_test, y_test = images[pm.HELD_OUT][:samples], labels[pm.HELD_OUT][:samples]
    torch.manual_seed(0)
    model = entry.build()
    if entry.epochs:
        pm.train(model, x_train, y_train, epochs=entry.epochs, lr=entry.lr)
        calibration, example = x_train[:CALIBRATION], torch.zeros(1, 1, 28, 28)
    else:  # the seed MLP takes (N, 28, 28) and knows drawn digits 0, 1, 4 and 7: held-out drawings
        calibration, example = calibration_digits(), torch.zeros(1, 28, 28)
        per_digit = max(min(samples, 2000) // len(DEMO_DIGITS), 1)
        x_test, y_test = calibration_digits(per_digit, seed=1), np.repeat(DEMO_DIGITS, per_digit)
    model.eval()
    float_pred = pm.predict(model, x_test)
    params = sum(p.numel() for p in model.parameters())
    rows, layers = [], {}
    for per, per_channel in PER.items():
        gm = pm.quantize_pt2e(model, example, calibration, per_channel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CalibrationWarning findings are not what this measures
            cm = tinyaot.compile(gm, example, name="pt2e_bench")
            x_q = cm.to_model_layout(cm.quantize_input(x_test))
        want = pt2e_reference(cm, gm, x_q)
        got = np.asarray(cm.run(x_q, engine=engine)).reshape(len(x_q), -1)
        a = agreement_of(got, want)
        rows.append({
            "model": entry.name, "weights": per, "params": params, "macs": graph_macs(cm.graph),
            "samples": a.samples, "equal_fraction": a.equal_fraction, "max_abs_steps": a.max_abs_steps,
            "mean_abs_steps": a.mean_abs_steps, "argmax_agreement": a.argmax_agreement,
            "accuracy_tinyaot": _accuracy(got.argmax(1), y_test), "accuracy_pt2e": _accuracy(want.argmax(1), y_test),
            "accuracy_float": _accuracy(float_pred, y_test),
        })
        if entry.layers and per_channel and layer_samples:
            layers[entry.name] = [r.as_dict() for r in pt2e_layer_agreement(cm, gm, x_q[:layer_samples])]
    return rows, layers


def _pct(v: float) -> str:
    return f"{v:.2%}"


def print_tables(rows: list[dict], layers: dict[str, list[dict]], engine: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    t = Table(title=f"PT2E graphs compiled by tinyaot vs the PT2E graph's own reference (held-out MNIST; tinyaot "
                    f"on the {engine} engine)")
    cols = ["model", "weights", "params", "MACs", "bytes = PT2E", "max |diff|", "mean |diff|", "argmax = PT2E",
            "acc tinyaot", "acc PT2E", "acc float"]
    for c in cols:
        t.add_column(c, justify="left" if c in ("model", "weights") else "right")
    for r in rows:
        t.add_row(r["model"], r["weights"], f"{r['params']:,}", f"{r['macs']:,}", _pct(r["equal_fraction"]),
                  str(r["max_abs_steps"]), f"{r['mean_abs_steps']:.3f}", _pct(r["argmax_agreement"]),
                  _pct(r["accuracy_tinyaot"]), _pct(r["accuracy_pt2e"]), _pct(r["accuracy_float"]))
    console.print(t)
    for name, per_layer in layers.items():
        iso = [r["isolated_equal"] for r in per_layer]
        caption = (f"isolated: every kernel within {max(r['isolated_max_steps'] for r in per_layer)} step of PT2E, "
                   f"equal on {min(iso):.2%}-{max(iso):.2%}; chained: {per_layer[0]['chained_equal']:.2%} equal "
                   f"after the first layer, {per_layer[-1]['chained_equal']:.2%} at the output")
        t = Table(title=f"{name}, per-channel weights: each int8 tensor vs PT2E's (steps of that tensor's scale)",
                  caption=caption)
        for c in ("layer", "op", "values", "chained: equal", "chained: max", "isolated: equal", "isolated: max"):
            t.add_column(c, justify="left" if c in ("layer", "op") else "right")
        for r in per_layer:
            t.add_row(r["layer"], r["op"], f"{r['size']:,}", _pct(r["chained_equal"]), str(r["chained_max_steps"]),
                      _pct(r["isolated_equal"]), str(r["isolated_max_steps"]))
        console.print(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    repo = Path(__file__).resolve().parents[1]
    ap.add_argument("--shared", default=os.environ.get("TINYAOT_SHARED", str(repo.parent / "shared")))
    ap.add_argument("--only", help="models whose name contains this (case-insensitive), e.g. 'ds-cnn'")
    ap.add_argument("--samples", type=int, default=2000, help="held-out digits per model (at most 2000)")
    ap.add_argument("--layer-samples", type=int, default=50, help="held-out digits for the per-layer tables")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    path = Path(args.shared) / "data" / "mnist10k.npz"
    if not path.exists():
        print(f"no MNIST digits at {path} (pass --shared)", file=sys.stderr)
        return 2
    pm.quiet()
    torch.set_num_threads(1)
    engine = "host" if shutil.which(os.environ.get("CC", "gcc")) else "reference"
    images, labels = pm.mnist(path)
    rows, layers = [], {}
    for entry in MODELS:
        if args.only and args.only.lower() not in entry.name.lower():
            continue
        r, per_layer = measure(entry, images, labels, args.samples, args.layer_samples, engine)
        rows += r
        layers.update(per_layer)
    if args.json:
        print(json.dumps({"engine": engine, "models": rows, "layers": layers}, indent=2))
    else:
        print_tables(rows, layers, engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
