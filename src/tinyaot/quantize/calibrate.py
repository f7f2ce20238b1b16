"""Calibration: run representative samples through the float graph and record value ranges."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from tinyaot.errors import CalibrationError
from tinyaot.ir import Graph
from tinyaot.quantize.float_eval import evaluate


@dataclass(frozen=True)
class Range:
    lo: float
    hi: float


def as_sample_batch(samples, sample_shape: tuple[int, ...], what: str = "calibration") -> np.ndarray:
    """Accept an array/tensor of samples, one sample, or an iterable of batches; return (N, *shape).

    `sample_shape` is the model's input shape without its batch dimension.
    """
    arrays = [_to_numpy(s) for s in _batches(samples)]
    if not arrays:
        raise CalibrationError(f"{what} data is empty: pass at least one sample")
    out = []
    for i, a in enumerate(arrays):
        if a.shape == sample_shape:
            a = a[None]
        if a.shape[1:] != sample_shape:
            raise CalibrationError(
                f"{what} batch {i} has shape {tuple(a.shape)}, but the model takes samples of shape "
                f"{sample_shape} (batches of shape (N, {', '.join(map(str, sample_shape))})). "
                "Pass samples shaped like the example input."
            )
        out.append(a.astype(np.float64))
    batch = np.concatenate(out, axis=0)
    bad = ~np.isfinite(batch)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CalibrationError(
            f"{what} data holds {int(bad.sum())} NaN/Inf value(s) (first at index {first}). "
            "Clean the samples: int8 ranges cannot be chosen from non-finite data."
        )
    return batch


def _batches(samples) -> Iterable:
    if _is_array_like(samples):
        return [samples]
    try:
        return list(samples)
    except TypeError:
        raise CalibrationError(
            f"calibration data must be an array/tensor of samples or an iterable of batches, "
            f"got {type(samples).__name__}"
        ) from None


def _is_array_like(x) -> bool:
    return isinstance(x, np.ndarray) or type(x).__name__ == "Tensor"


def _to_numpy(x) -> np.ndarray:
    if type(x).__name__ == "Tensor":
        x = x.detach().cpu().numpy()
    if isinstance(x, (tuple, list)) and len(x) >= 1 and _is_array_like(x[0]):
        x = _to_numpy(x[0])  # (inputs, labels) pairs from a DataLoader
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationError(f"calibration batch is not numeric: {exc}") from None


def collect_ranges(g: Graph, batch: np.ndarray, chunk: int = 256) -> dict[str, Range]:
    """Min/max of every activation tensor over all samples."""
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for start in range(0, len(batch), chunk):
        values = evaluate(g, batch[start : start + chunk])
        for t in g.activations():
            v = values[t.name]
            lo[t.name] = min(lo.get(t.name, np.inf), float(v.min()))
            hi[t.name] = max(hi.get(t.name, -np.inf), float(v.max()))
    return {k: Range(lo[k], hi[k]) for k in lo}
