"""Patch-based execution (compile(patch=True), plan/patch.py) against layer by layer: arena, MACs run (the
recomputed halos included), Cortex-M33 instructions per inference (exact, QEMU -icount), and whether every engine
gives the layer-by-layer bytes (reference, host C, the emulated M33; TFLite Micro for a .tflite).

    .venv/bin/python benchmarks/patching.py [--shared PATH] [--no-m33] [--json] [--optimize memory speed]

Models: MLPerf Tiny's VWW (MobileNetV1-0.25, 96x96, from shared/models/mlperf_tiny) and torchvision's
mobilenet_v2 width 0.35 at 96x96 (random weights, calibrated on smooth images, as tests/model_corpus.py builds it).
Byte and instruction counts are deterministic; no wall-clock time is reported.
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
from tinyaot.plan.patch import EXTRA_MACS
from tinyaot.report.macs import graph_macs

REPO = Path(__file__).resolve().parents[1]


def _vww(shared: Path):
    path = shared / "models" / "mlperf_tiny" / "vww_96_int8.tflite"
    return "vww (MobileNetV1-0.25)", (lambda **kw: tinyaot.compile(path, name="vww", **kw)), path


def _mobilenet_v2():
    sys.path.insert(0, str(REPO / "tests"))
    import torch
    from model_corpus import CAL_SEED, pytorch_entries

    entry = next(e for e in pytorch_entries() if e.name.startswith("mobilenet_v2"))
    model, cal = entry.model(), torch.from_numpy(entry.inputs(64, CAL_SEED))

    def build(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tinyaot.compile(model, cal[:1], calibration=cal, name="mbv2", **kw)
    return "mobilenet_v2 0.35 96x96", build, None


def _tflm(path: Path, x: np.ndarray) -> np.ndarray | None:
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        return None
    interp = runtime.Interpreter.from_bytes(path.read_bytes())
    out = []
    for sample in x:
        interp.set_input(sample[None], 0)
        interp.invoke()
        out.append(interp.get_output(0).copy())
    return np.concatenate(out)


def measure(name: str, build, tflite: Path | None, optimize: str, use_m33: bool, bounds=(True,)) -> list[dict]:
    """Layer by layer, then patched within each bound on extra MACs (True: the default)."""
    plain = build(optimize=optimize)
    x = np.random.default_rng(0).integers(-128, 128, size=(2,) + tuple(plain.input_shape[1:])).astype(np.int8)
    want = plain.run(x)
    engines = {"reference": lambda cm: cm.run(x), "host": lambda cm: cm.run(x, engine="host")}
    if use_m33:
        engines["m33"] = lambda cm: cm.run(x[:1], engine="m33")
    rows = []
    base_macs = graph_macs(plain.graph)
    for patch in (False, *bounds):
        cm = plain if patch is False else build(optimize=optimize, patch=patch)
        extra = sum(st.extra_macs for st in cm.plan.patches)
        got = {e: run(cm) for e, run in engines.items()}
        same = {e: bool(np.array_equal(y, want[: len(y)])) for e, y in got.items()}
        row = {"model": name, "optimize": optimize, "patch": patch, "arena_bytes": cm.arena_bytes,
               "lower_bound_bytes": cm.lower_bound_bytes, "macs": base_macs + extra, "extra_macs": extra,
               "stages": [st.text() for st in cm.plan.patches], "same_bytes": same,
               "m33_instructions": cm.last_m33.instructions if use_m33 else None}
        if tflite is not None:
            got = _tflm(tflite, x)
            row["same_bytes"]["tflm"] = None if got is None else bool(np.array_equal(cm.run(x), got))
        rows.append(row)
    for row in rows[1:] if use_m33 else ():
        row["instructions_vs_layer_by_layer"] = round(row["m33_instructions"] / rows[0]["m33_instructions"], 4)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.environ.get("TINYAOT_SHARED", str(REPO.parent / "shared")))
    ap.add_argument("--no-m33", action="store_true", help="skip the emulated Cortex-M33 (instruction counts)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--optimize", nargs="+", default=["memory"], choices=["speed", "size", "memory"])
    ap.add_argument("--models", nargs="+", default=["vww", "mobilenet_v2"], choices=["vww", "mobilenet_v2"])
    ap.add_argument("--bounds", nargs="+", type=float, default=[EXTRA_MACS],
                    help="bounds on extra MACs to measure, fractions of the model's (default 0.15, patch=True's)")
    args = ap.parse_args(argv)
    use_m33 = not args.no_m33
    if use_m33:
        from tinyaot.targets.toolchain import have_m33_toolchain

        use_m33 = have_m33_toolchain()
    models = []
    if "vww" in args.models:
        if not (Path(args.shared) / "models" / "mlperf_tiny").is_dir():
            print(f"no MLPerf Tiny models in {args.shared} (pass --shared)", file=sys.stderr)
            return 2
        models.append(_vww(Path(args.shared)))
    if "mobilenet_v2" in args.models:
        models.append(_mobilenet_v2())
    rows = [r for name, build, path in models for mode in args.optimize
            for r in measure(name, build, path, mode, use_m33, tuple(args.bounds))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="Patch-based execution vs layer by layer (arena in bytes; Cortex-M33 instructions per inference)")
    cols = [("model", "model"), ("optimize", "optimize"), ("patch (MAC bound)", "patch"), ("arena", "arena_bytes"),
            ("MACs", "macs"), ("extra MACs", "extra_macs"), ("M33 instr", "m33_instructions"),
            ("instr ratio", "instructions_vs_layer_by_layer"), ("same bytes", "same_bytes")]
    for title, _ in cols:
        t.add_column(title, justify="left" if title in ("model", "same bytes") else "right")
    for r in rows:
        t.add_row(*(_fmt(r.get(key)) for _, key in cols))
    Console(width=160).print(t)
    for r in rows:
        for s in r["stages"]:
            print(f"{r['model']} ({r['optimize']}): {s}")
    return 0


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, dict):
        return " ".join(f"{k}={'yes' if ok else ('n/a' if ok is None else 'NO')}" for k, ok in v.items())
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


if __name__ == "__main__":
    raise SystemExit(main())
