"""tinyaot's PTQ of the MLPerf Tiny float .tflite models against the TF converter's int8 models, on the same inputs:
arena and flash, output SQNR against the float model, argmax agreement with it (AD: anomaly-score error).

    .venv/bin/python benchmarks/tflite_ptq.py [--shared PATH] [--n-cal 300] [--n-eval 500] [--json]

Per model, three int8 models of one network run the same evaluation inputs:
- "tinyaot": tinyaot.compile(float .tflite, calibration=...) with the default observer ("auto": MSE ranges inside,
  full ranges at the output and before softmax);
- "tinyaot minmax": the same with observer="minmax" (every range the full calibration range, the converter's rule);
- "TF int8": the converter's int8 file (kws_ref_model.tflite, pretrainedResnet_quant.tflite, ad01_int8.tflite)
  compiled by tinyaot, which is bit-exact with TensorFlow Lite Micro.
The reference is the float file itself (tinyaot's float import, which equals TFLM's float kernels; for KWS, whose
float file keeps int8 "hybrid" conv weights, those weights dequantized). Every int8 model takes float inputs
quantized with its own input qparams and its outputs are dequantized with its own output qparams.

Inputs (tests/mlperf_inputs.py): shared/ holds one real KWS input and no CIFAR-10 or ToyADMOS data, so calibration
(seed 1) and evaluation (seed 2) sets are synthesized: KWS = the real MFCC input time-shifted, scaled and noised;
IC = 1/f-spectrum colour images in integer pixels; AD = smooth log-mel-like frames. The converter calibrated on
the real training data, tinyaot on draws from the distribution it is evaluated on: the figures say how each int8
model tracks float on these inputs, not which is more accurate on the benchmarks' test sets.
Everything is seeded and counted: the output is the same on every run (no wall-clock time is reported).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

import tinyaot
from tinyaot.plan import buffers_of, plan_memory
from tinyaot.quantize.float_eval import evaluate
from tinyaot.ref.interpreter import Interpreter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import mlperf_inputs as mi  # noqa: E402

MODELS = {
    "kws (DS-CNN)": ("kws", "kws_ref_model_float32.tflite", "kws_ref_model.tflite"),
    "ic (ResNet-8)": ("ic", "pretrainedResnet.tflite", "pretrainedResnet_quant.tflite"),
    "ad (FC autoencoder)": ("ad", "ad01_fp32.tflite", "ad01_int8.tflite"),
}
INPUTS = {
    "kws": "the real input, shifted / scaled / noised",
    "ic": "1/f-spectrum colour images",
    "ad": "smooth log-mel-like frames",
}


def inputs(key: str, n: int, seed: int, shared: Path) -> np.ndarray:
    if key == "kws":
        real = mi.kws_real_input(np.load(shared / mi.KWS_INPUT))
        return mi.kws_inputs(real, n, seed)
    return {"ic": mi.ic_inputs, "ad": mi.ad_inputs}[key](n, seed)


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - got) ** 2)))


def run_int8(cm, x: np.ndarray) -> np.ndarray:
    """The int8 kernels (NumPy reference, disjoint plan: the same bytes as the C) on float inputs, dequantized."""
    disjoint = plan_memory(buffers_of(cm.graph), len(cm.graph.nodes), alignment=cm.plan.alignment)
    return cm.dequantize_output(Interpreter(cm.graph, disjoint).run(cm.quantize_input(x))).reshape(len(x), -1)


def tracking(key: str, x: np.ndarray, want: np.ndarray, got: np.ndarray) -> dict:
    row = {"sqnr_db": round(sqnr_db(want, got), 2)}
    if key == "ad":  # an autoencoder: the anomaly score is the reconstruction error
        score, ours = ((x - want) ** 2).mean(1), ((x - got) ** 2).mean(1)
        row["score_rel_error"] = round(float(np.abs(ours - score).mean() / score.mean()), 4)
    else:
        row["argmax_agreement"] = round(float(np.mean(got.argmax(1) == want.argmax(1))), 4)
    return row


def measure(label: str, key: str, float_file: Path, int8_file: Path, shared: Path, n_cal: int, n_eval: int) -> dict:
    cal, x = inputs(key, n_cal, mi.CAL_SEED, shared), inputs(key, n_eval, mi.EVAL_SEED, shared)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # calibration advice is for users; the figures below are the point here
        models = {
            "tinyaot": tinyaot.compile(float_file, calibration=cal, name=f"{key}_ptq"),
            "tinyaot_minmax": tinyaot.compile(float_file, calibration=cal, name=f"{key}_minmax", observer="minmax"),
            "tf_int8": tinyaot.compile(int8_file, name=f"{key}_tf"),
        }
        fg = models["tinyaot"].float_graph
        want = evaluate(fg, x)[fg.outputs[0]].reshape(len(x), -1)
        row = {"model": label, "float_file": float_file.name, "int8_file": int8_file.name, "inputs": INPUTS[key],
               "n_calibration": n_cal, "n_eval": n_eval}
        if key != "ad":
            row["float_classes_seen"] = int(len(np.unique(want.argmax(1))))
        if key == "kws":  # the one real input: the word "on" (class 5)
            real = mi.kws_real_input(np.load(shared / mi.KWS_INPUT))
            row["real_input_class"] = {"float": int(np.argmax(evaluate(fg, real)[fg.outputs[0]]))}
        for name, cm in models.items():
            row[name] = {"arena_bytes": cm.arena_bytes, "constant_bytes": cm.constant_bytes,
                         "code_bytes": cm.code_bytes, **tracking(key, x, want, run_int8(cm, x))}
            if key == "kws":
                row["real_input_class"][name] = int(np.argmax(run_int8(cm, real)))
    return row


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.2f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    repo = Path(__file__).resolve().parents[1]
    ap.add_argument("--shared", default=os.environ.get("TINYAOT_SHARED", str(repo.parent / "shared")))
    ap.add_argument("--n-cal", type=int, default=300, help="calibration samples per model (seed 1)")
    ap.add_argument("--n-eval", type=int, default=500, help="evaluation samples per model (seed 2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    shared = Path(args.shared)
    folder = shared / "models" / "mlperf_tiny"
    if not folder.is_dir():
        print(f"no MLPerf Tiny models in {folder} (pass --shared)", file=sys.stderr)
        return 2
    rows = [measure(label, key, folder / ff, folder / qf, shared, args.n_cal, args.n_eval)
            for label, (key, ff, qf) in MODELS.items()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"tinyaot PTQ of the float .tflite vs the TF converter's int8 .tflite ({args.n_cal} calibration, "
                    f"{args.n_eval} evaluation inputs; bytes; SQNR of the dequantized output vs float, dB)")
    for title in ("model", "int8 model", "arena", "flash consts", "code", "SQNR dB", "argmax agree",
                  "AD score err"):
        t.add_column(title, justify="left" if title in ("model", "int8 model") else "right")
    names = {"tinyaot": "tinyaot PTQ", "tinyaot_minmax": "tinyaot PTQ, minmax", "tf_int8": "TF converter int8"}
    for r in rows:
        for i, (name, title) in enumerate(names.items()):
            m = r[name]
            agree = m.get("argmax_agreement")
            err = m.get("score_rel_error")
            t.add_row(r["model"] if i == 0 else "", title, _fmt(m["arena_bytes"]), _fmt(m["constant_bytes"]),
                      _fmt(m["code_bytes"]), _fmt(m["sqnr_db"]), "n/a" if agree is None else f"{agree:.1%}",
                      "n/a" if err is None else f"{err:.1%}", end_section=i == len(names) - 1)
    console = Console(width=150)
    console.print(t)
    for r in rows:
        classes = r.get("float_classes_seen")
        seen = f"; the float model's argmax takes {classes} classes on them" if classes else ""
        console.print(f"{r['model']}: inputs = {r['inputs']}{seen}")
        if "real_input_class" in r:
            console.print("  the real KWS input ('on' = class 5) -> class "
                          + ", ".join(f"{k} {v}" for k, v in r["real_input_class"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
