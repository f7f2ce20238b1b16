"""Snapshot what tinyaot generates, so a change meant to keep behaviour (a refactor) can prove it did: the C
sources of the seed MLP, every zoo model, every .tflite under shared/models/ and a few real PyTorch architectures
(several compile options among them), a Pico 2 project, and each model's arena, state, bound and constant bytes;
with --m33, the Cortex-M33 instruction count of one invoke for the models named.

    .venv/bin/python scripts/codegen_snapshot.py write DIR [--m33 NAME ...] [--only SUBSTRING ...]
    .venv/bin/python scripts/codegen_snapshot.py compare OLD_DIR NEW_DIR

Take one snapshot on the commit before the change and one after; `compare` lists every file and figure that
differs (exit 1) or says they are identical (exit 0). Inputs are seeded, so two runs of one commit are identical.
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

import tinyaot
from tinyaot.errors import TinyAOTError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

FIGURES = ("arena_bytes", "state_bytes", "lower_bound_bytes", "constant_bytes")
DEFAULT_M33 = ("mlperf_tiny__kws_ref_model", "mlperf_tiny__ad01_int8", "tflm_examples__keyword_scrambled",
               "zoo__resnet8", "seed__speed")


def _seed_models():
    from tinyaot.demo_model import build_seed_mlp, calibration_digits

    model, cal = build_seed_mlp(), calibration_digits()
    ex = torch.from_numpy(cal[:1])
    for mode in ("speed", "size", "memory"):
        yield f"seed__{mode}", lambda m=mode: tinyaot.compile(model, ex, calibration=cal, name="mnist", optimize=m)
    yield "seed__preserve_nchw", lambda: tinyaot.compile(model, ex, calibration=cal, name="mnist",
                                                         preserve_input=True, separate_output=True)


def _zoo_models():
    import zoo

    for entry in zoo.ZOO:
        def build(entry=entry, **options):
            model = zoo.trained(entry)
            x, _ = zoo.synthetic_data(entry, 200, seed=1)
            if entry.inputs > 1:
                example, cal = tuple(torch.from_numpy(v[:1]) for v in x), list(x)
            else:
                example, cal = torch.from_numpy(x[:1]), x
            return tinyaot.compile(model, example, calibration=cal, name=entry.name, **options)
        yield f"zoo__{entry.name}", build
        if entry.name in ("lenet5", "resnet8", "dscnn"):
            for mode in ("size", "memory"):
                yield f"zoo__{entry.name}__{mode}", lambda b=build, m=mode: b(optimize=m)
        if entry.name in ("resnet8", "tiny_transformer"):
            yield f"zoo__{entry.name}__int16_auto", lambda b=build: b(int16="auto")
        if entry.name in ("gru_kws", "lstm_sensor", "sensor_conv1d"):
            yield f"zoo__{entry.name}__stream", lambda b=build: b(stream=True)


def _tflite_models():
    import model_corpus as corpus

    for e in corpus.tflite_entries():
        def build(e=e):
            if e.inputs is None:
                return tinyaot.compile(e.model(), name=Path(e.name).stem[:32])
            return tinyaot.compile(e.model(), calibration=e.inputs(32, corpus.CAL_SEED), name=Path(e.name).stem[:32])
        yield f"{e.source}__{Path(e.name).stem}", build


def _pytorch_models():
    import model_corpus as corpus

    small = {"mobilenet_v3_small 96x96": 64, "shufflenet_v2_x0_5 96x96": 64, "mixnet_s 96x96": 64,
             "mobilevit_xxs 96x96": 64, "bc_resnet-1 40x101": None}
    for e in corpus.pytorch_entries():
        if e.name not in small:
            continue
        def build(e=e, res=small[e.name]):
            shape = e.example[1:] if res is None else (e.example[1], res, res)
            torch.manual_seed(0)  # the architectures are random-init
            model = e.model()
            cal = (corpus.smooth_images(16, shape, corpus.CAL_SEED) if res is not None
                   else e.inputs(16, corpus.CAL_SEED))
            return tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name="net")
        yield f"pytorch__{e.name.split()[0]}", build


def _pt2e_models():
    import pt2e_models

    def build():
        import model_corpus as corpus

        x, _ = pt2e_models.mnist(corpus.MNIST)
        model = pt2e_models.trained_dscnn16()
        ex = torch.from_numpy(x[:1])
        q = pt2e_models.quantize_pt2e(model, ex, x[:64])
        return tinyaot.compile(q, ex, name="dscnn16")
    yield "pt2e__dscnn16", build


def models():
    yield from _seed_models()
    yield from _zoo_models()
    yield from _tflite_models()
    yield from _pytorch_models()
    yield from _pt2e_models()


def _pico2_files(cm) -> dict[str, str]:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        paths = cm.export(d, target="pico2")
        return {str(p.relative_to(d)): p.read_text() for p in paths if p.suffix in (".c", ".h", ".txt", ".cmake")}


def write(out: Path, only: list[str] | None, m33: set[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name, build in models():
        if only and not any(s in name for s in only):
            continue
        print(name, flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                cm = build()
            except TinyAOTError as e:  # a refusal is part of the behaviour too
                summary[name] = {"refused": f"{type(e).__name__}: {e}".replace(str(ROOT), "<checkout>")}
                continue
        files = dict(cm.c_sources.files)
        if name == "seed__speed":
            files.update({f"pico2/{k}": v for k, v in _pico2_files(cm).items()})
        for fname, text in files.items():
            path = out / name / fname
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        row = {k: getattr(cm, k) for k in FIGURES}
        if name in m33:
            cm.run(np.zeros(cm.input_shape, cm.input_dtype), engine="m33")
            row["m33_instructions"] = cm.last_m33.instructions
        summary[name] = row
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(f"{len(summary)} models -> {out}")
    return 0


def compare(old: Path, new: Path) -> int:
    differences = []
    a, b = (json.loads((d / "summary.json").read_text()) for d in (old, new))
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            differences.append(f"{name}: {a.get(name)} -> {b.get(name)}")
    files_a = {p.relative_to(old) for p in old.rglob("*") if p.is_file()}
    files_b = {p.relative_to(new) for p in new.rglob("*") if p.is_file()}
    for rel in sorted(files_a ^ files_b):
        differences.append(f"{rel}: only in {old if rel in files_a else new}")
    for rel in sorted(files_a & files_b):
        ta, tb = (old / rel).read_text(), (new / rel).read_text()
        if ta != tb:
            diff = list(difflib.unified_diff(ta.splitlines(), tb.splitlines(), str(old / rel), str(new / rel),
                                             lineterm="", n=1))
            differences.append("\n".join(diff[:40]))
    for d in differences:
        print(d)
    print(f"{len(differences)} difference(s) over {len(files_a | files_b)} files and {len(set(a) | set(b))} models"
          if differences else f"identical: {len(files_a)} files, {len(a)} models")
    return 1 if differences else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="compile every snapshot model and write its C and figures into DIR")
    w.add_argument("dir", type=Path)
    w.add_argument("--only", nargs="*", help="models whose name contains one of these")
    w.add_argument("--m33", nargs="*", default=None,
                   help=f"also count Cortex-M33 instructions for these models (no names: {', '.join(DEFAULT_M33)})")
    c = sub.add_parser("compare", help="list what differs between two snapshots")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    args = ap.parse_args(argv)
    if args.command == "compare":
        return compare(args.old, args.new)
    m33 = set() if args.m33 is None else set(args.m33 or DEFAULT_M33)
    return write(args.dir, args.only, m33)


if __name__ == "__main__":
    sys.exit(main())
