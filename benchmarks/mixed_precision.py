"""int8 vs mixed int8 / int16 (16x8) activations from PyTorch: what int16 buys in accuracy and costs in bytes and
instructions, one row per model and choice.

    .venv/bin/python benchmarks/mixed_precision.py [--no-m33] [--json]

Choices: all int8; int16="auto" (the layers whose int8 kernel alone is below 30 dB SQNR on the calibration
samples, and the layers feeding them); every layer with a 16x8 kernel in int16. Models: the loud-channels MLP of
tests/test_mixed_precision.py (two feature channels 60x the others, which int8 crushes), the zoo's autoencoder
(a regression) and DS-CNN keyword spotter, trained for a few epochs on their synthetic data (tests/zoo.py).
Accuracy is on held-out samples against the float model: output SQNR, and top-1 agreement or mean relative error.
A second table gives the 16x8 kernels' own cost against the int8 kernels' (the default speed mode) on three layers:
Cortex-M33 instructions of that layer alone (`cm.profile()`), per MAC. Byte and instruction counts are
deterministic.
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

import tinyaot
from tinyaot.ir.ops import OPS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import zoo  # noqa: E402
from test_mixed_precision import loud_channels  # noqa: E402


def _every_16x8_layer(cm) -> list[str]:
    return [n.name for n in cm.float_graph.nodes if OPS[n.op].s16 and not OPS[n.op].view]


def _accuracy(cm, held, want, regression: bool) -> dict:
    got = cm.run_float(cm.to_model_layout(held), engine="host").reshape(want.shape)
    sqnr = 10 * np.log10(np.mean(want ** 2) / max(np.mean((got - want) ** 2), 1e-30))
    if regression:
        return {"sqnr_db": round(float(sqnr), 1),
                "score": f"rel. err {np.abs(got - want).mean() / np.abs(want).mean():.2%}"}
    return {"sqnr_db": round(float(sqnr), 1), "score": f"top-1 {(got.argmax(1) == want.argmax(1)).mean():.1%}"}


def _rows(name: str, model, cal, held, regression: bool, use_m33: bool) -> list[dict]:
    example = torch.from_numpy(np.asarray(cal[:1]))
    with torch.no_grad():
        want = model(torch.from_numpy(np.asarray(held))).numpy()
    base = tinyaot.compile(model, example, calibration=cal, name="mixed")
    rows = []
    for choice, int16 in (("int8", None), ("auto", "auto"), ("all 16x8", _every_16x8_layer(base))):
        cm = base if int16 is None else tinyaot.compile(model, example, calibration=cal, name="mixed", int16=int16)
        row = {"model": name, "choice": choice, "int16_layers": len(cm.int16_layers),
               "arena_bytes": cm.arena_bytes, "lower_bound_bytes": cm.lower_bound_bytes,
               "constant_bytes": cm.constant_bytes, "m33_instructions": None} | _accuracy(cm, held, want, regression)
        if use_m33:
            xq = cm.quantize_input(cm.to_model_layout(np.asarray(held[:1])))
            if not np.array_equal(cm.run(xq, engine="m33"), cm.run(xq, engine="reference")):
                raise SystemExit(f"{name} ({choice}): Cortex-M33 output differs from the reference")
            row["m33_instructions"] = cm.last_m33.instructions
        rows.append(row)
    return rows


class _One(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return torch.relu(self.layer(x))


LAYERS = (("conv 3x3, 16x16x16 -> 16", lambda: torch.nn.Conv2d(16, 16, 3, padding=1), (16, 16, 16)),
          ("depthwise 3x3, 16x16x16", lambda: torch.nn.Conv2d(16, 16, 3, padding=1, groups=16), (16, 16, 16)),
          ("linear 256 -> 64", lambda: torch.nn.Linear(256, 64), (256,)))


def kernel_rows() -> list[dict]:
    """One layer in int8 and in 16x8: its own M33 instructions per MAC (the conversions around it excluded)."""
    rows = []
    for title, build, shape in LAYERS:
        torch.manual_seed(0)
        model = _One(build()).eval()
        x = torch.randn(64, *shape).cumsum(-1) / 4
        row = {"layer": title}
        for key, int16 in (("int8", None), ("16x8", ["layer"])):
            cm = tinyaot.compile(model, x[:1], calibration=x, name="one", int16=int16)
            prof = cm.profile(cm.quantize_input(cm.to_model_layout(x[:1].numpy())))
            op = next(o for o in prof.ops if o.layer == "layer")
            row["macs"] = op.macs
            row[key] = round(op.instructions / op.macs, 2)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-m33", action="store_true", help="skip the emulated Cortex-M33 (instruction counts)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_m33 = not args.no_m33
    if use_m33:
        from tinyaot.targets.toolchain import have_m33_toolchain

        use_m33 = have_m33_toolchain()
    warnings.simplefilter("ignore")
    model, cal, held, _ = loud_channels()
    rows = _rows("loud-channels MLP", model, cal.numpy(), held, False, use_m33)
    for entry in (e for e in zoo.ZOO if e.name in ("autoencoder", "dscnn")):
        x, _ = zoo.synthetic_data(entry, 500, seed=1)
        rows += _rows(entry.name, zoo.trained(entry), x[:200], x[200:], entry.classes == 0, use_m33)
    kernels = kernel_rows() if use_m33 else []
    if args.json:
        print(json.dumps({"models": rows, "kernels": kernels}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="int8 vs int16 activations (int8 I/O; bytes; Cortex-M33 instructions per inference)")
    cols = [("model", "model"), ("choice", "choice"), ("int16 layers", "int16_layers"), ("arena", "arena_bytes"),
            ("lower bound", "lower_bound_bytes"), ("flash consts", "constant_bytes"),
            ("M33 instr", "m33_instructions"), ("output SQNR dB", "sqnr_db"), ("vs float", "score")]
    for title, _ in cols:
        t.add_column(title, justify="left" if title in ("model", "choice") else "right")
    for r in rows:
        t.add_row(*("n/a" if r[k] is None else f"{r[k]:,}" if isinstance(r[k], int) else str(r[k]) for _, k in cols))
    Console(width=160).print(t)
    if kernels:
        k = Table(title="one layer's own Cortex-M33 instructions per MAC: int8 (speed mode) vs 16x8")
        for title in ("layer", "MACs", "int8", "16x8"):
            k.add_column(title, justify="left" if title == "layer" else "right")
        for r in kernels:
            k.add_row(r["layer"], f"{r['macs']:,}", str(r["int8"]), str(r["16x8"]))
        Console(width=160).print(k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
