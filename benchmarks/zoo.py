"""The seed MLP and the test zoo through tinyaot: MACs, arena vs lower bound vs fp32, state bytes, flash,
Cortex-M33 instructions (exact, QEMU -icount; per frame too for a recurrent model) and int8-vs-float agreement,
one row per model.

    .venv/bin/python benchmarks/zoo.py [--no-m33] [--json] [--only NAME]

The zoo models are trained for a few epochs on their synthetic data sets (once, their weights committed:
tests/trained_weights.py), so the agreement measures quantization rather than ties between untrained logits. Byte
and instruction counts are deterministic; no wall-clock time is reported.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits, demo_digits
from tinyaot.report.macs import graph_macs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import zoo  # noqa: E402


def _row(name: str, cm, x_float, want, use_m33: bool, regression: bool = False) -> dict:
    """x_float / want: arrays, or lists of them for a model with several inputs / outputs."""
    macs = graph_macs(cm.graph)
    n = len(x_float[0] if isinstance(x_float, list) else x_float)
    got = cm.run_float(cm.to_model_layout(x_float), engine="host")
    pairs = zip(got, want) if isinstance(want, list) else [(got, want)]
    agreement = " / ".join(_agreement(np.asarray(g).reshape(n, -1), np.asarray(w).reshape(n, -1), regression)
                           for g, w in pairs)
    row = {"model": name, "macs": macs, "arena_bytes": cm.arena_bytes, "lower_bound_bytes": cm.lower_bound_bytes,
           "fp32_arena_bytes": cm.float_arena_bytes, "constant_bytes": cm.constant_bytes,
           "code_bytes": cm.code_bytes, "state_bytes": cm.state_bytes, "m33_instructions": None,
           "instructions_per_mac": None, "instructions_per_frame": None, "int8_vs_float": agreement}
    if use_m33:
        first = [v[:1] for v in x_float] if isinstance(x_float, list) else x_float[:1]
        xq = cm.quantize_input(cm.to_model_layout(first))
        got_m33, want_ref = cm.run(xq, engine="m33"), cm.run(xq, engine="reference")
        if not all(np.array_equal(a, b) for a, b in zip(*(v if isinstance(v, list) else [v]
                                                            for v in (got_m33, want_ref)))):
            raise SystemExit(f"{name}: Cortex-M33 output differs from the reference")
        row["m33_instructions"] = cm.last_m33.instructions
        row["instructions_per_mac"] = round(cm.last_m33.instructions / macs, 2) if macs else None
        frames = _frames(cm)
        if frames:
            row["instructions_per_frame"] = round(cm.last_m33.instructions / frames)
    return row


def _frames(cm) -> int | None:
    """A recurrent model's frames per inference (its first recurrent layer's sequence length), else None."""
    from tinyaot.ir.ops import OPS

    for node in cm.graph.nodes:
        if OPS[node.op].macs == "recurrent":
            return cm.graph.tensor(node.inputs[0]).shape[1]
    return None


def _agreement(got: np.ndarray, want: np.ndarray, regression: bool) -> str:
    """Top-1 agreement for classifiers; mean relative error for a regression (the autoencoder)."""
    if regression:
        return f"rel. err {np.abs(got - want).mean() / np.abs(want).mean():.1%}"
    return f"top-1 {(got.argmax(1) == want.argmax(1)).mean():.1%}"


def seed_row(use_m33: bool) -> dict:
    model, cal = build_seed_mlp(), calibration_digits()
    cm = tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name="mnist")
    x, _ = demo_digits()
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    return _row("seed MLP (784-32-16-10)", cm, x, want, use_m33)


def zoo_row(entry, use_m33: bool) -> dict:
    model = zoo.trained(entry)
    x, _ = zoo.synthetic_data(entry, 500, seed=1)
    if entry.inputs > 1:  # one example, calibration batch and held-out batch per input
        example, cal, held = tuple(torch.from_numpy(v[:1]) for v in x), [v[:200] for v in x], [v[200:] for v in x]
    else:
        example, cal, held = torch.from_numpy(x[:1]), x[:200], x[200:]
    cm = tinyaot.compile(model, example, calibration=cal, name=entry.name)
    with torch.no_grad():
        out = model(*[torch.from_numpy(v) for v in held]) if entry.inputs > 1 else model(torch.from_numpy(held))
    want = [o.numpy() for o in out] if isinstance(out, tuple) else out.numpy()
    return _row(entry.name, cm, held, want, use_m33, regression=entry.classes == 0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-m33", action="store_true", help="skip the emulated Cortex-M33 (instruction counts)")
    ap.add_argument("--only", help="one zoo model by name, or 'seed'")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_m33 = not args.no_m33
    if use_m33:
        from tinyaot.targets.toolchain import have_m33_toolchain

        use_m33 = have_m33_toolchain()
    rows = []
    if args.only in (None, "seed"):
        rows.append(seed_row(use_m33))
    rows += [zoo_row(e, use_m33) for e in zoo.ZOO if args.only in (None, e.name)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="tinyaot on the seed MLP and the zoo (int8 I/O; bytes; Cortex-M33 instructions per inference)")
    cols = [("model", "model"), ("MACs", "macs"), ("arena", "arena_bytes"), ("lower bound", "lower_bound_bytes"),
            ("fp32 arena", "fp32_arena_bytes"), ("state", "state_bytes"), ("flash consts", "constant_bytes"),
            ("code", "code_bytes"), ("M33 instr", "m33_instructions"), ("instr/MAC", "instructions_per_mac"),
            ("instr/frame", "instructions_per_frame"),
            ("int8 vs float", "int8_vs_float")]
    for title, _ in cols:
        t.add_column(title, justify="left" if title == "model" else "right")
    for r in rows:
        t.add_row(*("n/a" if r[k] is None else f"{r[k]:,}" if isinstance(r[k], int) else str(r[k]) for _, k in cols))
    Console(width=180).print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
