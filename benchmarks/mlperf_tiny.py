"""MLPerf Tiny reference models through tinyaot: MACs, arena vs its lower bound vs the smallest arena TFLite Micro
accepts, flash, and Cortex-M33 instructions per inference (exact, QEMU -icount), one row per model and compile
mode (--optimize speed: int16 weights and the pairs / wide kernels; size: int8 weights, the pairs kernel; memory:
the plain int8 kernels, the smallest arena).

    .venv/bin/python benchmarks/mlperf_tiny.py [--shared PATH] [--no-m33] [--json] [--optimize speed size]

The models are read from shared/models/mlperf_tiny (next to the repository, or --shared / TINYAOT_SHARED).
TFLM's arena is found by bisection over `arena_size` of the tflite-micro Python interpreter (reference kernels);
it holds TFLM's own bookkeeping as well as the activations, so it is the number a TFLM user would have to set.
Byte and instruction counts are deterministic; no wall-clock time is reported.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

import tinyaot
from tinyaot.report.macs import graph_macs

MODELS = {
    "kws (DS-CNN)": "kws_ref_model.tflite",
    "ic (ResNet-8)": "pretrainedResnet_quant.tflite",
    "ad (FC autoencoder)": "ad01_int8.tflite",
    "vww (MobileNetV1-0.25)": "vww_96_int8.tflite",
}


@contextmanager
def _quiet_stderr():
    """TFLM prints every failed allocation to the C stderr; bisection makes many."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def tflm_min_arena(model: bytes, x: np.ndarray) -> int | None:
    """Smallest arena_size for which TFLM allocates and runs the model, or None without tflite-micro."""
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        return None

    def fits(size: int) -> bool:
        try:
            interp = runtime.Interpreter.from_bytes(model, arena_size=size)
            interp.set_input(x, 0)
            interp.invoke()
            return True
        except RuntimeError:
            return False

    with _quiet_stderr():
        hi = 4096
        while not fits(hi):
            hi *= 2
        lo = hi // 2 if hi > 4096 else 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def measure(name: str, path: Path, use_m33: bool, optimize: str = "speed") -> dict:
    cm = tinyaot.compile(path, name=path.stem.split("_")[0].lower(), optimize=optimize)
    x = np.random.default_rng(0).integers(-128, 128, size=cm.input_shape, dtype=np.int16).astype(np.int8)
    macs = graph_macs(cm.graph)
    row = {
        "model": name, "file": path.name, "optimize": optimize, "macs": macs, "arena_bytes": cm.arena_bytes,
        "lower_bound_bytes": cm.lower_bound_bytes, "tflm_min_arena_bytes": tflm_min_arena(path.read_bytes(), x),
        "constant_bytes": cm.constant_bytes, "code_bytes": cm.code_bytes, "m33_instructions": None,
        "instructions_per_mac": None, "m33_stack_bytes": None,
    }
    if use_m33:
        ref = cm.run(x, engine="reference")
        got = cm.run(x, engine="m33")
        if not np.array_equal(got, ref):
            raise SystemExit(f"{name}: Cortex-M33 output differs from the reference")
        row["m33_instructions"] = cm.last_m33.instructions
        row["instructions_per_mac"] = round(cm.last_m33.instructions / macs, 2)
        row["m33_stack_bytes"] = cm.last_m33.stack_bytes
    return row


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:,}" if isinstance(v, int) else str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    repo = Path(__file__).resolve().parents[1]
    ap.add_argument("--shared", default=os.environ.get("TINYAOT_SHARED", str(repo.parent / "shared")))
    ap.add_argument("--no-m33", action="store_true", help="skip the emulated Cortex-M33 (instruction counts)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--optimize", nargs="+", default=["speed", "size", "memory"], choices=["speed", "size", "memory"],
                    help="the compile modes to measure (default both)")
    args = ap.parse_args(argv)
    folder = Path(args.shared) / "models" / "mlperf_tiny"
    if not folder.is_dir():
        print(f"no MLPerf Tiny models in {folder} (pass --shared)", file=sys.stderr)
        return 2
    use_m33 = not args.no_m33
    if use_m33:
        from tinyaot.targets.toolchain import have_m33_toolchain

        use_m33 = have_m33_toolchain()
    rows = [measure(name, folder / fname, use_m33, mode) for name, fname in MODELS.items() for mode in args.optimize]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="MLPerf Tiny on tinyaot (int8; arena and flash in bytes; Cortex-M33 instructions per inference)")
    cols = [("model", "model"), ("optimize", "optimize"), ("MACs", "macs"), ("arena", "arena_bytes"),
            ("lower bound", "lower_bound_bytes"), ("TFLM arena", "tflm_min_arena_bytes"),
            ("flash consts", "constant_bytes"), ("code", "code_bytes"), ("M33 instr", "m33_instructions"),
            ("instr/MAC", "instructions_per_mac"), ("stack", "m33_stack_bytes")]
    for title, _ in cols:
        t.add_column(title, justify="left" if title == "model" else "right")
    for r in rows:
        t.add_row(*(_fmt(r[key]) for _, key in cols))
    Console(width=150).print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
