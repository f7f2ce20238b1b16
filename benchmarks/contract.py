"""What the buffer contract costs: arena bytes with the default plan (invoke may overwrite the input, the output
may sit over it), with preserve_input=True and with separate_output=True, and whether each holds by itself.

    .venv/bin/python benchmarks/contract.py [--shared PATH] [--json]

Models: the MLPerf Tiny int8 .tflite files from shared/models/mlperf_tiny (next to the repository, or --shared /
TINYAOT_SHARED), the demo's MLP and three CNNs of the test zoo (untrained: the plan does not depend on weights).
Byte counts are deterministic.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import torch

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import zoo  # noqa: E402

ZOO_MODELS = ("lenet5", "mobilenetv2", "resnet8")

MODELS = {
    "kws (DS-CNN)": "kws_ref_model.tflite",
    "ic (ResNet-8)": "pretrainedResnet_quant.tflite",
    "ad (FC autoencoder)": "ad01_int8.tflite",
}
OPTIONS = {"default": {}, "preserve_input": {"preserve_input": True}, "separate_output": {"separate_output": True}}


def _shared(arg: str | None) -> Path:
    root = arg or os.environ.get("TINYAOT_SHARED") or Path(__file__).resolve().parents[2] / "shared"
    return Path(root) / "models" / "mlperf_tiny"


def _demo_compile(**options):
    cal = calibration_digits()
    return tinyaot.compile(build_seed_mlp(), torch.from_numpy(cal[:1]), calibration=cal, name="mnist", **options)


def _zoo_compile(name: str):
    entry = next(e for e in zoo.ZOO if e.name == name)
    torch.manual_seed(0)
    model = entry.build().eval()
    x, _ = zoo.synthetic_data(entry, 64, 0)
    return lambda **o: tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x, name="m", **o)


def measure(compile_fn) -> dict:
    row = {}
    for label, options in OPTIONS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cm = compile_fn(**options)
        c = cm.contract
        row[label] = {"arena_bytes": cm.arena_bytes, "lower_bound_bytes": cm.lower_bound_bytes,
                      "input_preserved": c.input_preserved, "output_overlaps_input": c.output_overlaps_input}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = {}
    folder = _shared(args.shared)
    for label, fname in MODELS.items():
        if (folder / fname).exists():
            rows[label] = measure(lambda fname=fname, **o: tinyaot.compile(folder / fname, name="m", **o))
    rows["demo (seed MLP)"] = measure(_demo_compile)
    for name in ZOO_MODELS:
        rows[f"zoo {name}"] = measure(_zoo_compile(name))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| model | default arena | input kept | output apart | preserve_input | separate_output |")
    print("|---|---:|---|---|---:|---:|")
    for label, r in rows.items():
        d, p, s = r["default"], r["preserve_input"], r["separate_output"]
        kept, apart = "yes" if d["input_preserved"] else "no", "no" if d["output_overlaps_input"] else "yes"
        print(f"| {label} | {d['arena_bytes']:,} | {kept} | {apart} | {_cost(p, d)} | {_cost(s, d)} |")


def _cost(row: dict, default: dict) -> str:
    return f"{row['arena_bytes']:,} (+{row['arena_bytes'] - default['arena_bytes']:,})"


if __name__ == "__main__":
    main()
