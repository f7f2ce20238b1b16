"""Calibration checks at compile time: samples that cannot be what the model will see, and ranges that went wrong.

Each check returns Findings (tinyaot.diagnostics) that say what is wrong and what to do; the pipeline turns them
into warnings, or into one CalibrationError with strict=True. The seed's mistake, one `torch.randn` tensor as
the only calibration sample, trips two of them: too few samples, and samples that look like noise.
"""
from __future__ import annotations

import numpy as np

from tinyaot.diagnostics import Finding
from tinyaot.ir import Graph
from tinyaot.ir.ops import OPS
from tinyaot.quantize.calibrate import as_sample_batch
from tinyaot.quantize.float_eval import STREAM_DEFINITIONS, streamed
from tinyaot.quantize.observers import Calibration, steps_used

MIN_SAMPLES = 32  # fewer and the ranges are a guess
NOISE_CORRELATION = 0.15  # |lag-1 autocorrelation| below this: neighbouring values are unrelated
SIGNAL_MIN_FEATURES = 64  # a flat vector this long is treated as a signal (spectrum, waveform, image rows)
MAX_MAGNITUDE, MIN_MAGNITUDE = 1e4, 1e-4  # beyond these, the samples are probably scaled wrong
STREAM_FILL = 4  # a stream of fewer frames than this many times what the output reads: a quarter of it or more
#                  runs with a state not yet full


# ---- the samples themselves ------------------------------------------------------------------------------


def check_samples(samples, g: Graph, what: str = "calibration") -> list[Finding]:
    """Checks on the raw samples (in the caller's layout): count, noise, constant samples, dtype, scale."""
    x = samples.batch
    out = []
    if len(x) < MIN_SAMPLES:
        out.append(Finding(
            "too_few_samples", "input",
            f"only {len(x)} {what} sample(s), and ranges estimated from so few are a guess",
            f"pass a few hundred representative inputs (at least {MIN_SAMPLES}), e.g. a slice of the training set"))
    with np.errstate(all="ignore"):
        noise = noise_like(x, _signal_axes(x.shape[1:], g))
    if noise:
        out.append(Finding(
            "noise_like", "input",
            f"the {what} samples look like random noise, not data ({noise}), and ranges set by noise clip real "
            "inputs (the seed's 4 for a 7)",
            "calibrate on real samples of what the model will see, e.g. a few hundred training inputs"))
    out += _constant_samples(x, what)
    out += _dtype_and_scale(x, samples.dtype, what)
    return out


def _signal_axes(sample_shape: tuple[int, ...], g: Graph) -> tuple[int, ...]:
    """Sample axes along which neighbouring values of real data are correlated (image rows/cols, time)."""
    rank = len(sample_shape)
    if rank == 0:
        return ()
    if g.layout == "NHWC" and g.torch_input_rank == 0 and rank == 3:  # a .tflite image: (H, W, C)
        axes = (0, 1)
    elif rank >= 2:
        axes = (rank - 2, rank - 1)
    else:
        axes = (0,) if sample_shape[0] >= SIGNAL_MIN_FEATURES else ()
    return tuple(a for a in axes if sample_shape[a] >= 4)


def noise_like(x: np.ndarray, axes: tuple[int, ...]) -> str:
    """'' for data; a description when neighbours are uncorrelated and values follow a textbook distribution."""
    if not axes or x.size < 64:
        return ""
    centered = x - x.reshape(len(x), -1).mean(axis=1).reshape((-1,) + (1,) * (x.ndim - 1))
    energy = float(np.sum(centered**2))
    if energy == 0:
        return ""
    corr = []
    for a in axes:
        lead = np.take(centered, range(0, x.shape[a + 1] - 1), axis=a + 1)
        lag = np.take(centered, range(1, x.shape[a + 1]), axis=a + 1)
        corr.append(float(np.sum(lead * lag)) / energy)
    if max(abs(c) for c in corr) >= NOISE_CORRELATION:
        return ""
    z = (x - x.mean()) / x.std()
    skew, kurt = float(np.mean(z**3)), float(np.mean(z**4))
    if abs(skew) < 0.25 and abs(kurt - 3.0) < 0.5:
        shape = "Gaussian"
    elif abs(skew) < 0.25 and abs(kurt - 1.8) < 0.25:
        shape = "uniform"
    else:
        return ""
    return f"{shape} values whose neighbours are uncorrelated: lag-1 autocorrelation {max(corr, key=abs):+.2f}"


def _constant_samples(x: np.ndarray, what: str) -> list[Finding]:
    if x.size == 0:
        return []
    flat = x.reshape(len(x), -1)
    if flat.shape[1] < 2:
        return []
    const = np.flatnonzero(flat.max(axis=1) == flat.min(axis=1))
    if len(const) == 0:
        return []
    zeros = int(np.sum(np.abs(flat[const]).max(axis=1) == 0))
    if len(const) == len(x):
        kind = "all zeros" if zeros == len(x) else "each one a single repeated value"
        return [Finding("constant_samples", "input",
                        f"every {what} sample is constant ({kind}), so the ranges of every layer are meaningless",
                        "calibrate on real inputs; zeros are what torch.zeros gives, not what a sensor sends")]
    return [Finding("constant_samples", "input",
                    f"{len(const)} of {len(x)} {what} samples are constant ({zeros} all zeros; first: sample "
                    f"{int(const[0])}) and teach the ranges nothing",
                    "drop blank samples, or make sure they are really part of the data")]


def _dtype_and_scale(x: np.ndarray, dtype: str, what: str) -> list[Finding]:
    out = []
    if dtype in ("int8", "uint8", "int16", "int32", "int64", "uint16", "bool") or "int" in dtype:
        hint = ("int8 data looks already quantized: pass the float values the model sees "
                "(real = scale * (q - zero_point))" if dtype == "int8" else
                "pass the float values the model was trained on (e.g. pixels / 255.0 if it was trained on [0, 1]); "
                "if it really takes raw integers, pass them as float32 to silence this")
        out.append(Finding("integer_samples", "input",
                           f"the {what} samples are {dtype}, not float (values {x.min():.4g} .. {x.max():.4g})", hint))
    mag = float(np.abs(x).max())
    if mag > MAX_MAGNITUDE or 0 < mag < MIN_MAGNITUDE:
        out.append(Finding("suspicious_scale", "input",
                           f"the {what} samples reach |x| = {mag:.3g}, an unusual scale for a network input",
                           "check the units and the normalization: pass inputs scaled like the training data"))
    return out


# ---- the ranges calibration chose ---------------------------------------------------------------------------


def check_ranges(g: Graph, calib: Calibration, observer: str) -> list[Finding]:
    return _short_stream(g, calib) + _outliers(g, calib, observer) + _dead(g, calib)


def stream_frames(g: Graph) -> int:
    """How many consecutive frames an output of a stateful graph depends on: 1, plus each SVDF's memory - 1 along
    the deepest chain of them."""
    depth: dict[str, int] = {}
    for node in g.nodes:
        d = max((depth.get(i, 0) for i in node.inputs), default=0)
        if node.op in STREAM_DEFINITIONS:  # svdf: weights_time [filters, memory]
            d += g.tensor(node.inputs[2]).shape[1] - 1
        depth.update(dict.fromkeys(node.outputs, d))
    return 1 + max((depth.get(o, 0) for o in g.outputs), default=0)


def _short_stream(g: Graph, calib: Calibration) -> list[Finding]:
    """A stateful model (an SVDF) is calibrated on one stream (calibrate.collect_ranges): too short a one leaves
    the states mostly part-filled from the reset, and the output ranges below what a running model reaches."""
    if not streamed(g):
        return []
    frames, n = stream_frames(g), calib.samples
    if n >= STREAM_FILL * frames:
        return []
    return [Finding(
        "short_stream", "input",
        f"this model keeps state from one invoke to the next (SVDF) and its output depends on the last {frames} "
        f"frames, so its calibration samples are read as consecutive frames of one stream: {n} of them give "
        f"{max(0, n - frames + 1)} invokes with every state full, and the ranges may miss those of a running stream",
        f"pass at least {STREAM_FILL * frames} consecutive frames (a few hundred or more) in the order the model sees "
        "them, e.g. a recording's feature frames, not shuffled samples")]


def _outliers(g: Graph, calib: Calibration, observer: str) -> list[Finding]:
    """One finding for every sample an observer calls an outlier (quantize/observers.py find_outliers): named by
    index, with what it reaches against every other sample, and what keeping it would cost them."""
    hit = [s for s in calib.stats.values() if s.outliers]
    if not hit:
        return []
    samples = sorted({i for s in hit for i in s.outliers})
    first = next((s for s in hit if s.name in g.inputs), hit[0])
    where = "the input" if first.name in g.inputs else f"tensor '{first.name}'"
    more = f" ({len(hit) - 1} more tensor(s) see it too)" if len(hit) > 1 else ""
    inner = max(abs(first.inlier_lo), abs(first.inlier_hi))
    used = steps_used(first.inlier_lo, first.inlier_hi, first.lo, first.hi)
    idx = ", ".join(map(str, samples[:8])) + (" ..." if len(samples) > 8 else "")
    one = len(samples) == 1
    it, they = ("it", "it was") if one else ("them", "they were")
    head = (f"{len(samples)} of {calib.samples} calibration samples (index {idx}) {'reaches' if one else 'reach'} "
            f"{max(abs(first.lo), abs(first.hi)):.4g} at {where}{more}, {first.outlier_factor:.1f}x the {inner:.4g} "
            "that every other sample stays within")
    if any(calib.overrides.get(s.name, observer) == "minmax" for s in hit):
        return [Finding("outlier_range", first.name,
                        f"{head}, and with observer 'minmax' {it} {'sets' if one else 'set'} the range, leaving the "
                        f"other samples {used:.0f} of the 256 int8 steps",
                        f"remove or fix {it}, or use observer='auto' (the default), which leaves outliers out")]
    return [Finding("outlier_samples", first.name,
                    f"{head}, so {they} left out of the range (keeping {it} would leave the other samples "
                    f"{used:.0f} of the 256 int8 steps) and inputs like {it} will saturate",
                    f"check {it} for a glitch or a wrong scale and remove or fix {it}, or calibrate on more such "
                    "inputs if they are real")]


def _dead(g: Graph, calib: Calibration) -> list[Finding]:
    """Layers that output 0 for every sample although their weights could have made them fire: a layer whose
    weights are all zero outputs its bias whatever the data (timm zero-initializes the last BatchNorm of a
    residual block), which is no calibration problem."""
    out = []
    for node in g.nodes:
        s = calib.stats.get(node.outputs[0])
        if s is None or OPS[node.op].moves_only or not (s.lo == 0.0 and s.hi == 0.0) or _zero_weights(g, node):
            continue
        why = " (its ReLU never fires)" if node.attrs.get("clamp") and node.attrs["clamp"][0] == 0 else ""
        out.append(Finding("dead_activation", node.name,
                           f"layer '{node.name}' outputs 0 for every one of the {calib.samples} calibration "
                           f"samples{why}, so everything after it sees a constant",
                           "check that the calibration samples exercise this layer, or that the layer is not dead "
                           "in the trained model"))
    return out


def _zero_weights(g: Graph, node) -> bool:
    w = g.tensors.get(node.inputs[1]) if len(node.inputs) > 1 else None
    return w is not None and w.is_const and w.data is not None and not np.any(w.data)


def check_pt2e_example(example_input, cm) -> list[Finding]:
    """A PT2E graph's ranges come from whatever it was calibrated on; often that was the example input."""
    if example_input is None:
        return []
    if isinstance(example_input, (tuple, list)):  # several inputs: one finding at most, for the first that is noise
        return next((f for f in (check_pt2e_example(x, cm) for x in example_input) if f), [])
    x = as_sample_batch(example_input, tuple(np.asarray(example_input).shape[1:]), "example input").batch
    noise = noise_like(x, _signal_axes(x.shape[1:], cm.graph))
    if not noise:
        return []
    return [Finding(
        "noise_like", "input",
        f"the example input looks like random noise ({noise}). A PT2E graph keeps the scales of the data it was "
        "calibrated on (what ran through the prepared model before convert_pt2e): if that was this tensor, its "
        "ranges come from noise and real inputs will clip",
        "calibrate the prepared model on a few hundred real samples before convert_pt2e, and check the result "
        "with tinyaot.compile(..., data=real_samples)")]
