"""MLPerf Tiny models on two Cortex-M33 cores (compile(cores=2)): one-core instructions vs the critical path on
QEMU mps2-an521, the speed-up, what the second core costs in RAM, and every output byte of the two-core run
against the one-core run (its own compile) and TensorFlow Lite Micro.

    .venv/bin/python benchmarks/dual_core.py [--shared PATH] [--samples N] [--optimize speed] [--zoo] [--json]

The models are read from shared/models/mlperf_tiny (next to the repository, or --shared / TINYAOT_SHARED); --zoo
adds the test zoo's one-input one-output models (tests/zoo.py; PyTorch, so no TFLM column). The inputs are seeded
random int8 rows (the first one is profiled). Instruction counts are exact and deterministic;
no wall-clock time is reported.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import tinyaot
from tinyaot.report.dual import dual_profile
from tinyaot.targets.m33.an521 import run_model_two_cores

MODELS = {
    "kws (DS-CNN)": "kws_ref_model.tflite",
    "ic (ResNet-8)": "pretrainedResnet_quant.tflite",
    "vww (MobileNetV1-0.25)": "vww_96_int8.tflite",
}


def tflm_outputs(model: bytes, x: np.ndarray) -> np.ndarray | None:
    """TFLM's reference kernels on each row, or None without tflite-micro."""
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        return None
    interp = runtime.Interpreter.from_bytes(model, arena_size=512 * 1024)
    outs = []
    for row in x:
        interp.set_input(row[None], 0)
        interp.invoke()
        outs.append(interp.get_output(0).copy().reshape(-1))
    return np.stack(outs)


def measure(label: str, path: Path | None, samples: int, optimize: str, compile_args=None) -> dict:
    """One model (a .tflite `path`, or a PyTorch model's `compile_args`) on one core and on two."""
    args = (str(path),) if path is not None else compile_args[0]
    kwargs = {} if path is not None else compile_args[1]
    one = tinyaot.compile(*args, name="model", optimize=optimize, **kwargs)
    two = tinyaot.compile(*args, name="model", optimize=optimize, cores=2, **kwargs)
    shape = one.graph.tensor(one.graph.inputs[0]).shape
    x = np.random.default_rng(26).integers(-128, 128, size=(samples, *shape[1:]), dtype=np.int16).astype(np.int8)
    rows = x.reshape(samples, -1)
    rep = dual_profile(two, rows[:1], one=one)
    one_out = np.asarray(one.run(x, engine="m33")).reshape(samples, -1)
    with tempfile.TemporaryDirectory(prefix="tinyaot-dual-bench-") as tmp:
        two.c_sources.write(Path(tmp))
        run = run_model_two_cores(Path(tmp), two.name, rows, sum(two.output_sizes), Path(tmp) / "build")
    two_out = run.outputs.reshape(samples, -1)
    tflm = tflm_outputs(path.read_bytes(), x) if path is not None else None
    return {"model": label, "optimize": optimize, "samples": samples,
            "single_core_instructions": rep.single_core_instructions,
            "critical_path_instructions": rep.critical_path_instructions,
            "critical_path_ratio": round(rep.ratio, 4), "speedup": round(rep.speedup, 3),
            "split_layers": sum(1 for r in rep.layers if r.core1),
            "layers": len(rep.layers), "barrier_instructions": rep.barrier_instructions,
            "arena_one_core": rep.arena_bytes[0], "arena_two_cores": rep.arena_bytes[1],
            "core1_work_bytes": rep.core1_work_bytes, "second_core_ram_bytes": rep.second_core_ram_bytes,
            "core1_stack_bytes": rep.core1_stack_bytes,
            "bytes_equal_one_core": bool(np.array_equal(two_out, one_out)),
            "bytes_equal_tflm": None if tflm is None else bool(np.array_equal(two_out.view(np.int8),
                                                                             tflm.reshape(samples, -1).view(np.int8)))}


def zoo_models():
    """(name, (compile's positional arguments, its keywords)) of each zoo model with one input and one output
    that is not streamed (tests/zoo.py: trained weights committed there)."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import zoo

    for entry in zoo.ZOO:
        if entry.inputs != 1 or entry.outputs != 1:
            continue
        model = zoo.trained(entry)
        x, _ = zoo.synthetic_data(entry, 200, seed=1)
        yield entry.name, ((model, torch.from_numpy(x[:1])), {"calibration": x})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    repo = Path(__file__).resolve().parent.parent
    ap.add_argument("--shared", default=os.environ.get("TINYAOT_SHARED", str(repo.parent / "shared")))
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--optimize", default="speed", choices=["speed", "size", "memory"])
    ap.add_argument("--zoo", action="store_true", help="also the test zoo's one-input one-output models")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    folder = Path(args.shared) / "models" / "mlperf_tiny"
    if not folder.is_dir():
        print(f"no MLPerf Tiny models in {folder} (pass --shared)", file=sys.stderr)
        return 2
    results = [measure(label, folder / f, args.samples, args.optimize) for label, f in MODELS.items()]
    if args.zoo:
        results += [measure(f"zoo {name}", None, args.samples, args.optimize, how) for name, how in zoo_models()]
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print(f"{'model':24} {'one core':>12} {'critical':>12} {'ratio':>7} {'speed-up':>8} {'split':>6} "
              f"{'arena 1->2 cores':>18} {'core1 work':>10} {'== 1 core':>9} {'== TFLM':>8}")
        for r in results:
            print(f"{r['model']:24} {r['single_core_instructions']:>12,} {r['critical_path_instructions']:>12,} "
                  f"{r['critical_path_ratio']:>7.3f} {r['speedup']:>7.2f}x {r['split_layers']:>3}/{r['layers']:<2} "
                  f"{r['arena_one_core']:>8,} -> {r['arena_two_cores']:>6,} {r['core1_work_bytes']:>10,} "
                  f"{str(r['bytes_equal_one_core']):>9} {str(r['bytes_equal_tflm']):>8}")
    ok = all(r["bytes_equal_one_core"] and r["bytes_equal_tflm"] is not False for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
