"""Budgets on the MLPerf Tiny models: for each, three RAM / flash budgets (tight, middle, loose, set from what the
single optimize modes take), the plan compile(ram=, flash=) chooses, its exact RAM and flash (and the Cortex-M33
object's .data + .bss beside them: the link map's view), its estimated cycles against the fastest single mode that
fits, and that its outputs equal the speed mode's on reference and host C; then one impossible budget's error.

    .venv/bin/python benchmarks/budgets.py [--shared PATH] [--only kws ...] [--json]

Budgets: tight = the smallest RAM and the smallest flash any single mode takes (plus 2 %); middle = the largest RAM
of the modes and flash half-way between size and speed; loose = the speed mode's RAM plus room for every constant
in SRAM, and its flash. Byte counts exact; cycles estimated (docs/timing.md); no wall-clock time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

import tinyaot
from tinyaot.errors import ModelError
from tinyaot.targets.sizes import measure_objects

MODELS = {
    "kws (DS-CNN)": "kws_ref_model.tflite",
    "ic (ResNet-8)": "pretrainedResnet_quant.tflite",
    "vww (MobileNetV1-0.25)": "vww_96_int8.tflite",
}


def budgets(modes: dict) -> dict[str, tuple[int, int]]:
    ram = {m: cm.ram_bytes for m, cm in modes.items()}
    flash = {m: cm.constant_bytes for m, cm in modes.items()}
    return {
        "tight": (int(min(ram.values()) * 1.02), int(min(flash.values()) * 1.02)),
        "middle": (max(ram.values()), (flash["size"] + flash["speed"]) // 2),
        "loose": (ram["speed"] + flash["speed"], flash["speed"]),
    }


def measure(name: str, path: Path) -> list[dict]:
    modes = {m: tinyaot.compile(str(path), optimize=m) for m in ("speed", "size", "memory")}
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, size=(2, *modes["speed"].graph.tensor(modes["speed"].graph.inputs[0]).shape[1:]),
                     dtype=np.int8)
    want = modes["speed"].run(x)
    rows = []
    for label, (ram, flash) in budgets(modes).items():
        cm = tinyaot.compile(str(path), ram=ram, flash=flash)
        t = cm.tradeoffs
        single = [p for p in t.points if not p.layer_modes and not p.sram_constants and p.fits]
        best_single = min(single, key=lambda p: p.estimated_cycles) if single else None
        state = measure_objects(cm.c_sources).state_bytes(f"{cm.name}.c")
        same = all(np.array_equal(cm.run(x, engine=e), want) for e in ("reference", "host"))
        rows.append({"model": name, "budget": label, "ram_budget": ram, "flash_budget": flash,
                     "plan": t.chosen.label, "ram_bytes": cm.ram_bytes, "flash_bytes": cm.constant_bytes,
                     "m33_data_bss_bytes": state, "estimated_cycles": t.chosen.estimated_cycles,
                     "measured": t.chosen.measured,
                     "fastest_single": None if best_single is None else best_single.label,
                     "fastest_single_cycles": None if best_single is None else best_single.estimated_cycles,
                     "plans_considered": len(t.points), "outputs_equal_speed_mode": same})
    try:
        tinyaot.compile(str(path), ram=min(cm.ram_bytes for cm in modes.values()) // 4)  # below any patching
        rows.append({"model": name, "budget": "impossible", "error": None})
    except ModelError as e:
        rows.append({"model": name, "budget": "impossible", "error": str(e)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    repo = Path(__file__).resolve().parents[1]
    ap.add_argument("--shared", default=os.environ.get("TINYAOT_SHARED", str(repo.parent / "shared")))
    ap.add_argument("--only", nargs="*", default=[], help="models whose name contains one of these")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    folder = Path(args.shared) / "models" / "mlperf_tiny"
    if not folder.is_dir():
        print(f"no MLPerf Tiny models in {folder} (pass --shared)", file=sys.stderr)
        return 2
    rows = [r for name, fname in MODELS.items() if not args.only or any(o in name for o in args.only)
            for r in measure(name, folder / fname)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="Budgets on MLPerf Tiny: the plan chosen (RAM, flash exact; cycles estimated)")
    cols = ("model", "budget", "ram_budget", "flash_budget", "plan", "ram_bytes", "flash_bytes",
            "m33_data_bss_bytes", "estimated_cycles", "fastest_single", "fastest_single_cycles",
            "outputs_equal_speed_mode")
    for c in cols:
        t.add_column(c.replace("_", " "), justify="left" if c in ("model", "budget", "plan") else "right")
    for r in rows:
        if "error" in r:
            t.add_row(r["model"], r["budget"], *[""] * 2, r["error"] or "NO ERROR", *[""] * (len(cols) - 5))
        else:
            t.add_row(*(f"{r[c]:,}" if isinstance(r[c], int) and not isinstance(r[c], bool) else str(r[c])
                        for c in cols))
    Console(width=200).print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
