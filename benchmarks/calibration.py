"""Does calibration survive real data? Output SQNR per observer on the seed MLP and the zoo, and int8 accuracy of
models trained on real MNIST digits calibrated on 200 digits with and without gross outliers.

    .venv/bin/python benchmarks/calibration.py [--json] [--only zoo|mnist|NAME] [--engine host|reference]

(a) Every zoo model (tests/zoo.py, trained on its synthetic data) and the seed MLP, compiled once per observer on
    the same calibration samples: output SQNR in dB of int8 vs the float graph (cm.float_reference) on held-out
    inputs, the default ("auto") minus min/max with its paired bootstrap standard error, and a flag where "auto"
    is worse. For flagged models, the tensors the MSE search clipped most.
(b) An MLP, LeNet-5 and a depthwise-separable CNN trained on mnist10k (tests/mnist_models.py): float vs int8
    accuracy on the 2,000 held-out digits per observer, calibrated on 200 training digits, then on the same 200
    with 1 and 2 gross outliers (a digit x50; a saturated 255 frame). Needs ../shared/data/mnist10k.npz.

Everything is seeded; int8 runs on the host C (bit-exact with the reference interpreter) when gcc is present.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits
from tinyaot.diagnostics import CalibrationWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import mnist_models  # noqa: E402
import zoo  # noqa: E402

OBSERVERS = ("minmax", "percentile", "mse", "auto")
N_CALIBRATION = 200
N_HELD_OUT = 500  # ResNet-8 and MobileNetV2 cost ~4 s per observer on the host C at 500
N_BOOTSTRAP = 400


def sqnr_db(got: np.ndarray, want: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(want**2) / max(np.sum((got - want) ** 2), 1e-30)))


def _paired_se(err_a: np.ndarray, err_b: np.ndarray) -> float:
    """Bootstrap standard error of SQNR(a) - SQNR(b) = 10 log10(sum err_b / sum err_a) over the held-out samples
    (per-sample squared errors; both observers resampled alike, so the difference is paired)."""
    rng = np.random.default_rng(0)
    diffs = []
    for _ in range(N_BOOTSTRAP):
        i = rng.integers(0, len(err_a), len(err_a))
        diffs.append(10 * np.log10(max(err_b[i].sum(), 1e-30) / max(err_a[i].sum(), 1e-30)))
    return float(np.std(diffs))


def _clipped_tensors(cm, top: int = 4) -> list[str]:
    """The tensors whose chosen range is furthest inside the inliers' range (the MSE search's clipping)."""
    rows = []
    for name, s in cm.calibration.stats.items():
        if s.range is None or not s.chosen.startswith(("mse", "percentile")):
            continue
        full = max(abs(s.inlier_lo), abs(s.inlier_hi))
        kept = max(abs(s.range.lo), abs(s.range.hi))
        if full > 0:
            rows.append((kept / full, name))
    return [f"{name} {f:.2f}" for f, name in sorted(rows)[:top]]


def _c_name(model: str) -> str:
    return "cal_" + "".join(c if c.isalnum() else "_" for c in model.split(" ")[0].lower())


def sqnr_row(name: str, model, cal: np.ndarray, held_out: np.ndarray, engine: str) -> dict:
    want = None
    errs, sqnr, clipped = {}, {}, []
    for obs in OBSERVERS:
        cm = tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name=_c_name(name), observer=obs)
        x = cm.to_model_layout(held_out)
        if want is None:
            want = np.asarray(cm.float_reference(x), np.float64).reshape(len(x), -1)
        got = np.asarray(cm.run_float(x, engine=engine), np.float64).reshape(want.shape)
        errs[obs] = np.sum((got - want) ** 2, axis=1)
        sqnr[obs] = round(sqnr_db(got, want), 2)
        if obs == "auto":
            clipped = _clipped_tensors(cm)
    delta = round(sqnr["auto"] - sqnr["minmax"], 2)
    return {"model": name, "calibration": len(cal), "held_out": len(held_out), "sqnr_db": sqnr,
            "auto_minus_minmax_db": delta, "delta_se_db": round(_paired_se(errs["auto"], errs["minmax"]), 2),
            "auto_worse": bool(delta < 0), "most_clipped_by_auto": clipped}


def zoo_rows(only: str | None, engine: str) -> list[dict]:
    rows = []
    if only in (None, "zoo", "seed"):
        held_out = calibration_digits(seed=1)  # other jitters of the same drawn digits
        rows.append(sqnr_row("seed MLP (784-32-16-10)", build_seed_mlp(), calibration_digits(), held_out, engine))
    for e in zoo.ZOO:
        if only not in (None, "zoo", e.name) or e.inputs > 1 or e.outputs > 1:  # one SQNR per model: one I/O
            continue
        cal = zoo.synthetic_data(e, 500, seed=1)[0][:N_CALIBRATION]  # the zoo's calibration set
        held_out = zoo.synthetic_data(e, N_HELD_OUT, seed=2)[0]
        rows.append(sqnr_row(e.name, zoo.trained(e), cal, held_out, engine))
    return rows


def mnist_rows(only: str | None, engine: str) -> list[dict]:
    path = mnist_models.shared_mnist_path()
    if path is None:
        print("mnist10k.npz not found (set TINYAOT_SHARED to the shared/ folder): skipping the MNIST table",
              file=sys.stderr)
        return []
    data = mnist_models.load_mnist(str(path))
    rows = []
    for name in mnist_models.MODELS:
        if only not in (None, "mnist", name):
            continue
        model = mnist_models.trained(name, str(path))
        float_acc = float((mnist_models.float_predictions(model, data.x_test) == data.y_test).mean())
        for n in range(len(mnist_models.OUTLIER_KINDS) + 1):
            cal = mnist_models.with_outliers(data.calibration, n)
            acc = {}
            for obs in OBSERVERS:
                cm = tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name=_c_name(f"mnist_{name}"),
                                     observer=obs)
                got = cm.run_float(cm.to_model_layout(data.x_test), engine=engine).reshape(len(data.x_test), -1)
                acc[obs] = round(float((got.argmax(1) == data.y_test).mean()), 4)
            rows.append({"model": name, "outliers": n, "outlier_kinds": list(mnist_models.OUTLIER_KINDS[:n]),
                         "calibration": len(cal), "held_out": len(data.x_test), "float_accuracy": round(float_acc, 4),
                         "int8_accuracy": acc,
                         "minmax_drop_points": round(100 * (float_acc - acc["minmax"]), 2),
                         "auto_drop_points": round(100 * (float_acc - acc["auto"]), 2)})
    return rows


SEED_DRAWS = 20


def seed_lottery_rows() -> list[dict]:
    """(c) The seed's mistake, one torch.randn(1, 28, 28) as the only calibration sample, over torch.manual_seed
    0..19: how often the 7 survives, how often tinyaot warns, and which layer the check on the drawn digits blames.
    Once with tinyaot's own PTQ and, when torchao is installed, with the seed's PT2E script (XNNPACK, per channel)."""
    from tinyaot.demo_model import demo_digits

    images, labels = demo_digits()
    flows = {"tinyaot PTQ": lambda ex: (build_seed_mlp(), {"calibration": ex})}
    try:
        from pt2e_models import quantize_pt2e

        flows["PT2E (XNNPACK, per channel)"] = lambda ex: (
            quantize_pt2e(build_seed_mlp(), ex, [ex[0]], per_channel=True), {})
    except ImportError:
        pass
    rows = []
    for flow, make in flows.items():
        right, warned, blamed = 0, 0, {}
        for seed in range(SEED_DRAWS):
            torch.manual_seed(seed)
            example = torch.randn(1, 28, 28)
            model, kw = make(example)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cm = tinyaot.compile(model, example, name="seed", data=(images, labels), **kw)
            right += int(cm.run(cm.quantize_input(images)).argmax(-1)[3] == 7)
            warned += int(any(issubclass(w.category, CalibrationWarning) and "noise" in str(w.message)
                              for w in caught))
            d = cm.check.diagnosis
            if d is not None:
                blamed[d.layer] = blamed.get(d.layer, 0) + 1
        rows.append({"flow": flow, "draws": SEED_DRAWS, "seven_right": right, "noise_warned": warned,
                     "first_fault": blamed})
    return rows


def _print(zoo_table: list[dict], mnist_table: list[dict], seed_table: list[dict] = ()) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    if zoo_table:
        t = Table(title="(a) output SQNR of int8 vs float on held-out inputs, dB (higher is better; every observer "
                        "calibrated on the same samples)")
        for col in ("model", "cal / held out", *OBSERVERS, "auto - minmax", "± SE", "flag"):
            t.add_column(col, justify="left" if col in ("model", "flag") else "right")
        for r in zoo_table:
            flag = "[red]auto worse[/red]" if r["auto_worse"] else ""
            t.add_row(r["model"], f"{r['calibration']} / {r['held_out']}",
                      *(f"{r['sqnr_db'][o]:.2f}" for o in OBSERVERS), f"{r['auto_minus_minmax_db']:+.2f}",
                      f"{r['delta_se_db']:.2f}", flag)
        console.print(t)
        flagged = [r for r in zoo_table if r["auto_worse"]]
        if flagged:
            t = Table(title="tensors 'auto' clipped most (kept share of the inliers' range), flagged models")
            t.add_column("model")
            t.add_column("tensors")
            for r in flagged:
                t.add_row(r["model"], ", ".join(r["most_clipped_by_auto"]))
            console.print(t)
    if mnist_table:
        r0 = mnist_table[0]
        t = Table(title=f"(b) MNIST accuracy on {r0['held_out']} held-out digits, calibrated on {r0['calibration']} "
                        "training digits with n gross outliers (1: a digit x50; 2: + a saturated 255 frame)")
        for col in ("model", "outliers", "float", *OBSERVERS, "minmax drop", "auto drop"):
            t.add_column(col, justify="left" if col == "model" else "right")
        for r in mnist_table:
            t.add_row(r["model"], str(r["outliers"]), f"{r['float_accuracy']:.2%}",
                      *(f"{r['int8_accuracy'][o]:.2%}" for o in OBSERVERS),
                      f"{r['minmax_drop_points']:+.2f} pt", f"{r['auto_drop_points']:+.2f} pt")
        console.print(t)
    if seed_table:
        t = Table(title="(c) the seed's calibration: one torch.randn tensor, draws torch.manual_seed(0..19), "
                        "checked on the four drawn digits")
        for col in ("flow", "7 right", "warned: noise", "first fault named by the check"):
            t.add_column(col, justify="left" if col in ("flow", "first fault named by the check") else "right")
        for r in seed_table:
            faults = ", ".join(f"{k} ({v} draws)" for k, v in r["first_fault"].items())
            t.add_row(r["flow"], f"{r['seven_right']} / {r['draws']}", f"{r['noise_warned']} / {r['draws']}", faults)
        console.print(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="'zoo', 'mnist', 'seed', 'lottery' (the seed's one-random-tensor calibration), or "
                    "a model of either (lenet5 and dscnn name one of each)")
    ap.add_argument("--engine", choices=("host", "reference"), help="int8 engine (default: host if gcc exists)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    engine = args.engine or ("host" if shutil.which("gcc") else "reference")
    zoo_names = {"zoo", "seed"} | {e.name for e in zoo.ZOO}
    mnist_names = {"mnist"} | set(mnist_models.MODELS)
    if args.only is not None and args.only not in zoo_names | mnist_names | {"lottery"}:
        ap.error(f"--only {args.only!r}: choose one of {', '.join(sorted(zoo_names | mnist_names | {'lottery'}))}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)  # the outlier warnings are what (b) is about
        zoo_table = zoo_rows(args.only, engine) if args.only is None or args.only in zoo_names else []
        mnist_table = mnist_rows(args.only, engine) if args.only is None or args.only in mnist_names else []
    seed_table = seed_lottery_rows() if args.only in (None, "lottery") else []
    if args.json:
        print(json.dumps({"engine": engine, "zoo": zoo_table, "mnist": mnist_table, "lottery": seed_table}, indent=2))
        return 0
    _print(zoo_table, mnist_table, seed_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
