"""The real-model corpus through tinyaot, one row per model (tests/model_corpus.py lists them): imported or the
refusal; bit-exact with TFLite Micro (a quantized .tflite, on seeded random inputs and the real ones shipped);
reference == host C; int8 vs float agreement (a float model); arena and state region vs the layer-by-layer bound
and TFLite Micro's smallest arena (which holds the state too: an SVDF's, an LSTM's); flash constants; whether it
fits a Pico 2; Cortex-M33 instructions (--m33).

    .venv/bin/python benchmarks/corpus.py [--only SUBSTRING ...] [--source tflm_examples mlperf_tiny torchvision
                                          timm paper] [--m33] [--json]

Vision models are random-init (torchvision / timm as the libraries build them) and calibrated on 32 smooth
image-like inputs, so their agreement says how closely int8 tracks float, not accuracy. Byte and instruction
counts are deterministic; compile time is wall time on this run (shown for scale only).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import tinyaot
from tinyaot.errors import TinyAOTError
from tinyaot.report.kernels import fast_kernel_coverage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_corpus as corpus  # noqa: E402
from mlperf_tiny import _quiet_stderr  # noqa: E402

N_CAL, N_EVAL, N_RANDOM = 32, 16, 8
# TFLite Micro + CMSIS-NN on the same QEMU Cortex-M33 (measured once; the recipe in shared/reference/cortex-m33)
TFLM_CMSIS_INSTRUCTIONS = {"kws_ref_model.tflite": 7_682_309, "pretrainedResnet_quant.tflite": 29_962_398,
                           "ad01_int8.tflite": 583_540, "vww_96_int8.tflite": 24_047_057}


def tflm_outputs(model: bytes, xs: list[np.ndarray], arena: int = 8 << 20) -> list[np.ndarray]:
    """One invoke per input on one interpreter, in order, as tinyaot's run() takes a batch: TFLM's SVDF and LSTM
    keep their state in variable tensors across invokes (until a reset), and so does the compiled model."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=arena)
    out = []
    for x in xs:
        interp.set_input(x, 0)
        interp.invoke()
        out.append(np.array(interp.get_output(0)))
    return out


def from_resets(cm, q: np.ndarray, engine: str) -> np.ndarray:
    """Each sample run from a reset (a model with state, whose run() takes a batch as one stream): what the float
    model, evaluated sample by sample from zero state, is compared with."""
    if not cm.state_bytes:
        return cm.run(q, engine=engine)
    stream = cm.stream(engine)
    rows = []
    for x in q:
        stream.reset()
        rows.append(stream.step(x[None]))
    return np.concatenate(rows)


def tflm_min_arena(model: bytes, start: int) -> int | None:
    """The smallest arena_size TFLite Micro's interpreter allocates the model in (allocation runs every kernel's
    Prepare, scratch buffers included). The search starts at `start` (tinyaot's layer-by-layer bound plus its state,
    which TFLite Micro's arena cannot be below). The interpreter crashes, instead of failing, on some arenas too
    small (16 KB for the 224x224 MobileNetV2; 15-16 KB for keyword_scrambled, whose smallest is 18 KB), so each
    size is tried in a child process and a crash counts as too small."""
    import multiprocessing

    from tflite_micro.python.tflite_micro import runtime

    def allocate(size: int) -> None:
        try:
            runtime.Interpreter.from_bytes(model, arena_size=size)
        except RuntimeError:
            os._exit(1)
        os._exit(0)

    def fits(size: int) -> bool:
        child = multiprocessing.get_context("fork").Process(target=allocate, args=(size,))
        child.start()
        child.join()
        return child.exitcode == 0

    with _quiet_stderr():
        hi = max(4096, start)
        while not fits(hi):
            hi *= 2
            if hi > 64 << 20:
                return None
        lo = max(hi // 2, start - 1) if hi > 4096 else 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def _random_int8(cm, n: int, seed: int) -> np.ndarray:
    info = np.iinfo(cm.input_dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, info.max + 1, size=(n,) + tuple(cm.input_shape[1:])).astype(cm.input_dtype)


def _real_inputs(entry, cm) -> np.ndarray | None:
    """Real inputs shipped for a quantized model, as its int8 input."""
    if entry.name == "kws_ref_model.tflite":
        import mlperf_inputs as mi

        return np.load(corpus.SHARED / mi.KWS_INPUT).reshape((1,) + tuple(cm.input_shape[1:]))
    if entry.name == "trained_lstm_int8.tflite" and corpus.MNIST.exists():
        return cm.quantize_input(corpus.mnist_sequences(N_EVAL, corpus.EVAL_SEED))
    return None


def _agreement(want: np.ndarray, got: np.ndarray, classifier: bool) -> dict:
    want, got = want.reshape(len(want), -1).astype(np.float64), got.reshape(len(got), -1).astype(np.float64)
    row = {"sqnr_db": round(float(10 * np.log10(np.sum(want**2) / max(np.sum((want - got) ** 2), 1e-30))), 1)}
    if classifier and want.shape[1] > 1:
        row["top1_agreement"] = round(float(np.mean(want.argmax(1) == got.argmax(1))), 3)
    return row


def _build(entry):
    """The model object; a PyTorch model is built under a fixed seed, so its random init is the same every run."""
    if entry.is_tflite:
        return entry.model()
    import torch

    torch.manual_seed(0)
    return entry.model()


def _compile(entry, model):
    if entry.is_tflite and entry.inputs is None:
        return tinyaot.compile(model, name="m")
    if entry.is_tflite:
        return tinyaot.compile(model, calibration=entry.inputs(N_CAL, corpus.CAL_SEED), name="m")
    import torch

    cal = torch.from_numpy(entry.inputs(N_CAL, corpus.CAL_SEED))
    return tinyaot.compile(model, cal[:1], calibration=cal, name="m")


def measure(entry, use_m33: bool) -> dict:
    row = {"model": entry.name, "source": entry.source}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = _build(entry)
            cm = _compile(entry, model)
    except TinyAOTError as e:
        row.update(status="refused", reason=f"{type(e).__name__}: {str(e).splitlines()[0][:160]}")
        return row
    except Exception as e:  # a crash is a bug to report, not a refusal
        row.update(status="CRASH", reason=f"{type(e).__name__}: {str(e).splitlines()[0][:160]}")
        return row
    row.update(status="ok", compile_s=round(time.perf_counter() - t0, 1), arena_bytes=cm.arena_bytes,
               state_bytes=cm.state_bytes, lower_bound_bytes=cm.lower_bound_bytes, constant_bytes=cm.constant_bytes,
               warnings=sorted({type(w.message).__name__ + ": " + str(w.message).split(".")[0][:90] for w in caught}))
    row["n_warnings"] = len(row["warnings"])
    row["fits_pico2"] = cm.budget.fits  # report/budget.py: constants and RAM against the Pico 2's
    row["fast_mac_share"] = fast_kernel_coverage(cm.graph, cm.plan).share  # conv / FC MACs on fast kernels
    row.update(_outputs(entry, cm, model))
    if use_m33:
        x = _random_int8(cm, 1, 0)
        ref = cm.run(x, engine="reference")
        row["m33_equal"] = bool(np.array_equal(cm.run(x, engine="m33"), ref))
        row["m33_instructions"] = cm.last_m33.instructions
        row["tflm_cmsis_instructions"] = TFLM_CMSIS_INSTRUCTIONS.get(entry.name)
    return row


def _outputs(entry, cm, model) -> dict:
    """Every comparison one model's outputs allow."""
    row = {}
    if entry.inputs is None:  # a quantized .tflite: TFLite Micro is the definition
        data = Path(model).read_bytes()
        xs = _random_int8(cm, N_RANDOM, 0)
        real = _real_inputs(entry, cm)
        batches = [("random", xs)] + ([("real", real)] if real is not None else [])
        verdicts = []
        for label, x in batches:
            with _quiet_stderr():
                want = np.stack(tflm_outputs(data, list(x[:, None])))
            ref, host = cm.run(x, engine="reference"), cm.run(x, engine="host")
            same = np.array_equal(ref.reshape(want.shape), want) and np.array_equal(host, ref)
            verdicts.append(f"{len(x)} {label} {'equal' if same else 'DIFFER'}")
        row["tflm_bit_exact"] = ", ".join(verdicts)
        row["tflm_min_arena_bytes"] = tflm_min_arena(data, cm.lower_bound_bytes + cm.state_bytes)
        return row
    x = entry.inputs(N_EVAL, corpus.EVAL_SEED)
    xm = x if entry.is_tflite else cm.to_model_layout(x)
    q = cm.quantize_input(xm)
    ref, host = from_resets(cm, q, "reference"), from_resets(cm, q, "host")
    row["ref_equals_host"] = bool(np.array_equal(ref, host))
    if entry.is_tflite:
        want = cm.float_reference(xm)
    else:
        import torch

        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
    row.update(_agreement(np.asarray(want), cm.dequantize_output(ref), entry.classifier))
    return row


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _cell(r: dict, key: str) -> str:
    v = r.get(key)
    if v is None:
        return ""
    if key == "top1_agreement":
        return f"{v:.0%}"
    if key == "fast_mac_share":
        return f"{v:.1%}"
    if key == "fits_pico2":
        return "yes" if v else "**no**"
    if key in ("ref_equals_host",):
        return "equal" if v else "**differs**"
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def markdown(rows: list[dict]) -> str:
    """The README's corpus table: one row per model; a refused model's row gives the refusal."""
    cols = [("model", "model"), ("source", "source"), ("arena B", "arena_bytes"), ("state B", "state_bytes"),
            ("bound B", "lower_bound_bytes"), ("TFLM arena B", "tflm_min_arena_bytes"),
            ("constants B", "constant_bytes"), ("fits Pico 2", "fits_pico2"), ("= TFLM", "tflm_bit_exact"),
            ("ref = host", "ref_equals_host"), ("SQNR dB", "sqnr_db"), ("top-1 agree", "top1_agreement"),
            ("fast MACs", "fast_mac_share"), ("M33 instr", "m33_instructions")]
    cols = [c for c in cols if any(r.get(c[1]) is not None for r in rows)]
    lines = ["| " + " | ".join(t for t, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"| {r['model']} | {r['source']} | refused: {r['reason']} |" + " |" * (len(cols) - 3))
            continue
        lines.append("| " + " | ".join(_cell(r, k) for _, k in cols) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=[], help="models whose name contains one of these")
    ap.add_argument("--source", nargs="*", default=[], help="only these sources")
    ap.add_argument("--m33", action="store_true", help="also run one input on the emulated Cortex-M33")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="print the README's table (Markdown)")
    ap.add_argument("--rows", nargs="*", type=Path, default=[],
                    help="format the rows of earlier --json runs instead of measuring")
    args = ap.parse_args(argv)
    if args.rows:
        rows = [r for path in args.rows for r in json.loads(path.read_text())]
        print(markdown(rows) if args.markdown else json.dumps(rows, indent=2))
        return 0
    chosen = [e for e in corpus.entries() if (not args.only or any(s in e.name for s in args.only))
              and (not args.source or e.source in args.source)]
    if not corpus.SHARED.is_dir():
        print(f"note: no shared/ folder next to the repository ({os.fspath(corpus.SHARED)}): the .tflite models "
              "are left out", file=sys.stderr)
    rows = []
    for e in chosen:
        rows.append(measure(e, args.m33))
        if not args.json:
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json or args.markdown:
        print(markdown(rows) if args.markdown else json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="Real-model corpus on tinyaot (bytes; random-init vision models calibrated on smooth images)")
    cols = [("model", "model"), ("source", "source"), ("status", "status"), ("arena", "arena_bytes"),
            ("state", "state_bytes"), ("bound", "lower_bound_bytes"), ("TFLM arena", "tflm_min_arena_bytes"),
            ("consts", "constant_bytes"),
            ("fits Pico 2", "fits_pico2"), ("= TFLM", "tflm_bit_exact"), ("ref = host", "ref_equals_host"),
            ("SQNR dB", "sqnr_db"), ("top-1 agree", "top1_agreement"), ("fast MACs", "fast_mac_share"),
            ("M33 instr", "m33_instructions"),
            ("TFLM+CMSIS", "tflm_cmsis_instructions"), ("warnings", "n_warnings"), ("compile s", "compile_s")]
    for title, _ in cols:
        t.add_column(title, justify="left" if title in ("model", "source", "status", "= TFLM") else "right")
    for r in rows:
        t.add_row(*(_cell(r, key) if key == "fast_mac_share" else _fmt(r.get(key)) for _, key in cols))
    Console(width=220).print(t)
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['model']}: {r['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
