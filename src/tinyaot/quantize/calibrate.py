"""Calibration: run representative samples through the float graph and choose every activation's range."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.progress import Progress

from tinyaot.errors import CalibrationError, TinyAOTError
from tinyaot.ir import Graph
from tinyaot.ir.ops import OPS
from tinyaot.quantize.float_eval import evaluate, streamed
from tinyaot.quantize.observers import (
    BINS,
    OBSERVERS,
    Calibration,
    Range,
    TensorStats,
    choose_range,
    find_outliers,
    histogram_edges,
)

PROGRESS_SAMPLES = 2048  # show a progress bar from this many calibration samples on

__all__ = ["Calibration", "Range", "SampleSet", "as_real_array", "as_sample_batch", "as_sample_batches",
           "collect_ranges"]


@dataclass(frozen=True)
class SampleSet:
    """Calibration (or check) samples as float64, and what they looked like before conversion."""

    batch: np.ndarray  # (N, *sample_shape), float64, in the caller's layout
    dtype: str  # the dtype the caller passed ("float32", "int8", "uint8", ...)

    def __len__(self) -> int:
        return len(self.batch)


def as_sample_batch(samples, sample_shape: tuple[int, ...], what: str = "calibration") -> SampleSet:
    """Accept an array/tensor of samples, one sample, or an iterable of batches; return (N, *shape).

    `sample_shape` is the model's input shape without its batch dimension. Everything a user can get wrong here
    (no samples, text or complex or object arrays, the wrong shape, NaN/Inf, values beyond float32) is a
    CalibrationError that says what to pass instead, never an exception from deep inside the calibration.
    """
    raw = [_raw_numpy(s, what) for s in _batches(samples, what)]
    dtypes = sorted({str(a.dtype) for a in raw})
    out = []
    for i, a in enumerate(raw):
        a = _as_float(a, what, i)
        if a.shape == sample_shape:
            a = a[None]
        if a.ndim >= 1 and a.shape[0] == 0 and a.size == 0:
            continue  # an empty batch among others (the last of a loader, say) adds nothing
        if a.shape[1:] != sample_shape:
            raise CalibrationError(
                f"{what} batch {i} has shape {tuple(a.shape)}, but the model takes samples of shape "
                f"{sample_shape} (batches of shape (N, {', '.join(map(str, sample_shape))})). "
                "Pass samples shaped like the example input."
            )
        out.append(a)
    if not out:
        shapes = ", ".join(str(tuple(a.shape)) for a in raw[:3])
        raise CalibrationError(
            f"the {what} samples are empty ({f'shape {shapes}' if raw else 'no batches'}): pass at least one "
            f"sample, an array shaped (N, {', '.join(map(str, sample_shape))}) with N >= 1 (a few hundred "
            "representative inputs for calibration)"
        )
    batch = np.concatenate(out, axis=0)
    bad = ~np.isfinite(batch)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CalibrationError(
            f"{what} data holds {int(bad.sum())} NaN/Inf value(s) (first at index {first}). "
            "Clean the samples: int8 ranges cannot be chosen from non-finite data."
        )
    big = np.abs(batch) > FLOAT32_MAX
    if big.any():
        first = tuple(int(i) for i in np.argwhere(big)[0])
        raise CalibrationError(
            f"{what} data holds {int(big.sum())} value(s) beyond the float32 range (first at index {first}: "
            f"{batch[first]:.3g}): the samples are far out of scale for a model that computes in float32, where "
            "they are Inf. Pass inputs scaled like the data the model was trained on"
        )
    return SampleSet(batch, dtypes[0] if len(dtypes) == 1 else "/".join(dtypes))


def as_sample_batches(samples, sample_shapes: list[tuple[int, ...]], what: str = "calibration") -> list[SampleSet]:
    """A model with several inputs: a list/tuple with one batch per input (each accepted as as_sample_batch
    accepts one input's samples), or an iterable of tuples (x0, x1, ...[, labels]) such as a DataLoader's."""
    k = len(sample_shapes)
    if len(sample_shapes) == 1:
        return [as_sample_batch(samples, sample_shapes[0], what)]
    if isinstance(samples, (list, tuple)) and len(samples) == k and all(_is_array_like(s) for s in samples):
        per_input = [[s] for s in samples]
    else:
        items = _batches(samples, what)
        if not items or not all(isinstance(it, (list, tuple)) and len(it) >= k for it in items):
            raise CalibrationError(
                f"this model has {k} inputs: pass {what} as a list of {k} arrays (one batch per input, in the order "
                f"of forward()'s arguments), or an iterable of ({', '.join(f'x{i}' for i in range(k))}) tuples")
        per_input = [[it[i] for it in items] for i in range(k)]
    sets = [as_sample_batch(b, shape, f"{what} input {i}")
            for i, (b, shape) in enumerate(zip(per_input, sample_shapes))]
    if len({len(s) for s in sets}) != 1:
        raise CalibrationError(f"the {what} batches of the {k} inputs hold {', '.join(str(len(s)) for s in sets)} "
                               "samples: pass the same number of samples for every input")
    return sets


FLOAT32_MAX = float(np.finfo(np.float32).max)
_HOW = "pass a numeric array or tensor (float32 samples shaped like the example input): np.asarray(x, np.float32)"


def _batches(samples, what: str = "calibration") -> list:
    if _is_array_like(samples):
        return [samples]
    if samples is None or isinstance(samples, (str, bytes, dict)) or np.isscalar(samples):
        raise CalibrationError(
            f"{what} data must be an array/tensor of samples or an iterable of batches, got "
            f"{type(samples).__name__}; {_HOW}"
        )
    try:
        return list(samples)
    except TypeError:
        raise CalibrationError(
            f"{what} data must be an array/tensor of samples or an iterable of batches, "
            f"got {type(samples).__name__}"
        ) from None


def _is_array_like(x) -> bool:
    return isinstance(x, np.ndarray) or type(x).__name__ == "Tensor"


def _raw_numpy(x, what: str = "calibration") -> np.ndarray:
    if type(x).__name__ == "Tensor":
        x = x.detach().cpu()
        try:
            x = x.numpy()
        except TypeError:  # bfloat16 and other dtypes NumPy lacks: their float32 values
            x = x.float().numpy() if x.is_floating_point() else _refuse_dtype(x.dtype, what)
    if isinstance(x, (tuple, list)) and len(x) >= 1 and _is_array_like(x[0]):
        x = _raw_numpy(x[0], what)  # (inputs, labels) pairs from a DataLoader
    try:
        return np.asarray(x)
    except ValueError as exc:  # a ragged list of samples
        raise CalibrationError(f"{what} batch cannot become one array ({exc}); {_HOW}") from None


_KINDS = {"U": "text", "S": "bytes", "O": "Python objects", "c": "complex numbers", "V": "structured records",
          "M": "dates", "m": "time spans"}


def _refuse_dtype(dtype, what: str, index: int | None = None, error: type[TinyAOTError] = CalibrationError):
    kind = _KINDS.get(dtype.kind, f"{dtype} values") if isinstance(dtype, np.dtype) else f"{dtype} values"
    batch = f" batch {index}" if index is not None else ""
    raise error(f"{what}{batch} holds {kind} (dtype {dtype}), not real numbers; {_HOW}")


def as_real_array(x, what: str = "input", error: type[TinyAOTError] = CalibrationError) -> np.ndarray:
    """`x` as float64 if it holds real numbers (bool, integers, floats); else `error` says what to pass. NumPy
    alone would read the text '1.5' as 1.5, drop an imaginary part with a warning and crash on other text."""
    try:
        a = np.asarray(x)
    except ValueError as exc:  # a ragged nested list
        raise error(f"{what} cannot become one array ({exc}); {_HOW}") from None
    if a.dtype.kind not in "biuf":
        _refuse_dtype(a.dtype, what, error=error)
    return a.astype(np.float64)


def _as_float(x: np.ndarray, what: str, index: int = 0) -> np.ndarray:
    """as_real_array for one batch of samples: its index goes into the message."""
    if x.dtype.kind not in "biuf":
        _refuse_dtype(x.dtype, what, index)
    return x.astype(np.float64)


def _resolve_overrides(g: Graph, layer_observers: dict | None) -> dict[str, str]:
    """Layer or tensor name -> observer, as tensor name -> observer; unknown names are an error."""
    out: dict[str, str] = {}
    if layer_observers is not None and not isinstance(layer_observers, dict):
        raise CalibrationError(f"layer_observers must be a dict of layer name -> observer (e.g. {{'fc3': 'minmax'}}), "
                               f"got {type(layer_observers).__name__}")
    by_layer = {n.name: n.outputs[0] for n in g.nodes}
    tensors = {t.name for t in g.activations()}
    for key, obs in (layer_observers or {}).items():
        _check_observer(obs, f"layer_observers[{key!r}]")
        if key in by_layer:
            out[by_layer[key]] = obs
        elif key in tensors:
            out[key] = obs
        else:
            raise CalibrationError(
                f"layer_observers names {key!r}, which is no layer or tensor of this model; layers: "
                f"{', '.join(by_layer)}"
            )
    return out


def _check_observer(obs, what: str) -> None:
    if obs not in OBSERVERS:
        raise CalibrationError(f"{what} is {obs!r}; choose one of {', '.join(OBSERVERS)}")


def decision_tensors(g: Graph) -> set[str]:
    """Tensors whose largest values decide the answer: the outputs and what feeds a softmax."""
    out = set(g.outputs)
    out.update(n.inputs[0] for n in g.nodes if n.op == "softmax")
    return out


def state_tensors(g: Graph) -> set[str]:
    """The observed outputs of a float graph (an SVDF's feature activations, what its int16 state keeps): with 65,536
    steps, clipping them gains nothing (the observers weigh clipping against 256 steps), so their range is every
    inlier's."""
    return {n.outputs[1] for n in g.nodes if OPS[n.op].observed and len(n.outputs) > 1}


def _chunks(n: int, chunk: int, progress: bool, what: str):
    starts = range(0, n, chunk)
    if not progress:
        yield from starts
        return
    console = Console(stderr=True)
    if not console.is_terminal:  # a log file gets no bar
        yield from starts
        return
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task(what, total=n)
        for start in starts:
            yield start
            bar.update(task, advance=min(chunk, n - start))


def collect_ranges(g: Graph, batch: np.ndarray, *, observer: str = "auto", layer_observers: dict | None = None,
                   chunk: int = 256, progress: bool | None = None) -> Calibration:
    """Run the samples through the float graph and choose every activation tensor's range.

    Two passes: per-sample extremes first (they decide which samples are outliers per tensor), then
    histograms of the inliers for the observers that search a clipping range.

    A graph with state carried from one invoke to the next (an SVDF: float_eval.streamed) reads the samples as
    consecutive frames of one stream, in order, as the compiled model will see them: each pass runs them from a
    reset with the state carried from sample to sample (and chunk to chunk), so the ranges are those of the states
    and outputs of a running stream, not of first invokes after a reset (an SVDF's output sums its whole memory).
    """
    _check_observer(observer, "observer")
    overrides = _resolve_overrides(g, layer_observers)
    batch = _checked_batch(g, batch)
    n = batch_len(batch)
    progress = n >= PROGRESS_SAMPLES if progress is None else progress
    names = [t.name for t in g.activations()]
    lo = {k: [] for k in names}
    hi = {k: [] for k in names}
    chan: dict[str, np.ndarray] = {}
    cached = None
    stream = {} if streamed(g) else None  # the state of the stream so far; a fresh dict is a reset
    for start in _chunks(n, chunk, progress, "calibrating: ranges"):
        values = _evaluate_checked(g, batch_slice(batch, start, start + chunk), start, stream)
        if n <= chunk:
            cached = values
        for k in names:
            v = values[k].reshape(len(values[k]), -1)
            lo[k].append(v.min(axis=1))
            hi[k].append(v.max(axis=1))
            c = values[k].reshape(-1, values[k].shape[-1]).max(axis=0) if values[k].ndim > 1 else None
            if c is not None:
                chan[k] = c if k not in chan else np.maximum(chan[k], c)
    stats = {k: TensorStats(k, np.concatenate(lo[k]), np.concatenate(hi[k]), channel_hi=chan.get(k))
             for k in names}
    for s in stats.values():
        s.outliers = find_outliers(s.sample_lo, s.sample_hi)  # minmax keeps them in its range, but they are reported
        s.edges = histogram_edges(s)
        s.hist = np.zeros(BINS, dtype=np.int64)
    stream = {} if streamed(g) else None
    for start in _chunks(n, chunk, progress, "calibrating: histograms"):
        values = cached if cached is not None else evaluate(g, batch_slice(batch, start, start + chunk), stream)
        for k, s in stats.items():
            v = values[k]
            keep = s.inliers[start : start + len(v)]
            if keep.any():
                s.hist += np.histogram(np.clip(v[keep], s.edges[0], s.edges[-1]), bins=s.edges)[0]
    decision, states = decision_tensors(g), state_tensors(g)
    ranges = {}
    for k, s in stats.items():  # a state's range is its inliers' whatever the observer, unless asked by name
        s.range, s.chosen = choose_range(s, overrides.get(k, "auto" if k in states else observer),
                                         k in decision or k in states)
        ranges[k] = s.range
    return Calibration(ranges, stats, n, observer, overrides)


def _checked_batch(g: Graph, batch):
    """collect_ranges is public: what as_sample_batch refuses is refused here too, with the same message (the
    pipeline's batch, already checked, passes through without a copy). Several inputs: one batch per input."""
    if len(g.inputs) > 1:
        if not isinstance(batch, (list, tuple)) or len(batch) != len(g.inputs):
            raise CalibrationError(f"this model has {len(g.inputs)} inputs: pass the calibration samples as a list "
                                   "with one batch per input, in the order of forward()'s arguments")
        out = [_checked_one(g, name, b) for name, b in zip(g.inputs, batch)]
        if len({len(b) for b in out}) != 1:
            raise CalibrationError(f"the inputs' calibration batches hold {', '.join(str(len(b)) for b in out)} "
                                   "samples: pass the same number of samples for every input")
        return out
    return _checked_one(g, g.inputs[0], batch)


def _checked_one(g: Graph, name: str, batch) -> np.ndarray:
    shape = tuple(g.tensor(name).shape[1:])
    if (isinstance(batch, np.ndarray) and batch.dtype == np.float64 and batch.ndim == len(shape) + 1
            and batch.shape[1:] == shape and len(batch) and np.isfinite(batch).all()
            and np.abs(batch).max() <= FLOAT32_MAX):
        return batch
    return as_sample_batch(batch, shape).batch


def batch_len(batch) -> int:
    """Samples in a batch: an array, or a list of arrays (one per input of a several-input model)."""
    return len(batch[0]) if isinstance(batch, list) else len(batch)


def batch_slice(batch, start: int, stop: int):
    return [b[start:stop] for b in batch] if isinstance(batch, list) else batch[start:stop]


def _largest(batch) -> float:
    return max(float(np.abs(b).max()) for b in batch) if isinstance(batch, list) else float(np.abs(batch).max())


def _evaluate_checked(g: Graph, batch: np.ndarray, start: int, stream: dict | None = None) -> dict[str, np.ndarray]:
    with np.errstate(over="ignore", invalid="ignore"):
        values = evaluate(g, batch, stream)
    for node in g.nodes:
        v = values[node.outputs[0]]
        with np.errstate(invalid="ignore"):
            bad_values = ~(np.abs(v) <= FLOAT32_MAX)  # NaN, Inf, and what is Inf in the model's float32
        if bad_values.any():
            bad = int(np.flatnonzero(bad_values.reshape(len(v), -1).any(axis=1))[0]) + start
            raise CalibrationError(
                f"calibration sample {bad} drives layer '{node.name}' to Inf/NaN in float32: the samples are far "
                f"out of scale (largest input magnitude {_largest(batch):.3g}). Pass inputs scaled "
                "like the data the model was trained on"
            )
    return values
