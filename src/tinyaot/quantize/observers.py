"""Range estimation: from what calibration saw of one tensor to the real range its int8 steps cover.

Every observer starts from the same statistics (`TensorStats`): each sample's min and max, and a histogram of
the values of the samples that are not outliers. A calibration sample is an outlier for a tensor when its
extreme is several times that of nearly all the others and far beyond every other sample's (a sensor glitch, a
mis-scaled image): keeping it would stretch the range so far that the other samples use fewer than a quarter of
the 256 steps (a digit x50: 5 of them; a raw 0..255 frame among [0, 1] images: 1). Outliers are left out of
every observer but "minmax", and reported (quantize/checks.py) so the user can look at them. The largest sample
of an unbroken spread is not an outlier, however far it is above the 90th percentile: on clean data (torchvision,
timm, the MLPerf models, MNIST; 325 calibrations, 24,000 tensors) the top sample leaves the others at least 103 of
the 256 steps, even where it reaches 4x the 90th percentile; leaving it out would clip it for little gain.

Observers:
- "minmax": the full range of every sample (TFLite's converter, outliers included).
- "percentile": the 0.01th / 99.99th percentile of the inliers' values.
- "mse": the clipping range with the least expected squared error over the inliers' histogram: in-range
  values cost step^2 / 12, clipped ones their distance to the bound squared.
- "auto" (default): the inliers' full range, narrowed to the "mse" range only where that at least halves the
  expected error (a heavy tail); never on the model's output or on what feeds a softmax, where clipping the
  largest value changes the answer (the seed's 4 for a 7). Why not the MSE optimum everywhere: clipping errors
  are systematic and compound through the layers after, rounding errors average out. On the test zoo the plain
  optimum clips 5-15% off well-behaved tensors for a 10-20% lower error per tensor, and costs a DS-CNN 0.9 dB of
  output SQNR against min/max; with the 2x rule "auto" equals min/max wherever there are no outliers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

OBSERVERS = ("auto", "minmax", "percentile", "mse")
BINS = 2048
OUTLIER_FACTOR = 3.0  # a sample is an outlier when its extreme exceeds this many times the typical one
OUTLIER_MAX_FRACTION = 0.02  # ... and at most this share of the samples (otherwise that is the distribution)
OUTLIER_MAX_STEPS = 64  # ... and keeping it would leave the other samples fewer than this many of the 256 steps
MIN_SAMPLES_FOR_OUTLIERS = 20
PERCENTILE = 99.99
AUTO_MSE_GAIN = 0.5  # "auto" clips only where the MSE range has at most this share of the full range's error
MSE_SHRINK = np.geomspace(0.01, 1.0, 121)  # candidate ranges: the inlier range scaled by these factors


@dataclass(frozen=True)
class Range:
    lo: float
    hi: float


@dataclass
class TensorStats:
    """What calibration saw of one tensor."""

    name: str
    sample_lo: np.ndarray  # (N,) per-sample min
    sample_hi: np.ndarray  # (N,) per-sample max
    outliers: tuple[int, ...] = ()  # sample indices left out of the range
    hist: np.ndarray | None = None  # counts over `edges`, inlier samples only
    edges: np.ndarray | None = None
    channel_hi: np.ndarray | None = None  # max per channel (last axis) over all samples
    chosen: str = ""  # the observer that set the range
    range: Range | None = None

    @property
    def lo(self) -> float:
        return float(self.sample_lo.min())

    @property
    def hi(self) -> float:
        return float(self.sample_hi.max())

    @property
    def inliers(self) -> np.ndarray:
        mask = np.ones(len(self.sample_lo), dtype=bool)
        mask[list(self.outliers)] = False
        return mask

    @property
    def inlier_lo(self) -> float:
        return float(self.sample_lo[self.inliers].min())

    @property
    def inlier_hi(self) -> float:
        return float(self.sample_hi[self.inliers].max())

    @property
    def outlier_factor(self) -> float:
        """How far the outliers reach beyond the inliers' extreme (1.0 when there are none)."""
        inner = max(abs(self.inlier_lo), abs(self.inlier_hi))
        outer = max(abs(self.lo), abs(self.hi))
        return outer / inner if inner > 0 else (np.inf if outer > 0 else 1.0)


@dataclass
class Calibration:
    """The result of calibration: a Range per activation tensor and the statistics behind it."""

    ranges: dict[str, Range]
    stats: dict[str, TensorStats]
    samples: int
    observer: str = "auto"
    overrides: dict[str, str] = field(default_factory=dict)  # tensor -> observer the user asked for


def find_outliers(sample_lo: np.ndarray, sample_hi: np.ndarray) -> tuple[int, ...]:
    """The most samples (at most OUTLIER_MAX_FRACTION of them) whose magnitude exceeds OUTLIER_FACTOR x the 90th
    percentile of all samples' magnitudes, and whose least extreme one, kept, would leave the others fewer than
    OUTLIER_MAX_STEPS of the 256 int8 steps: a gap, not the top of a spread."""
    n = len(sample_hi)
    if n < MIN_SAMPLES_FOR_OUTLIERS:
        return ()
    mag = np.maximum(np.abs(sample_lo), np.abs(sample_hi))
    typical = float(np.percentile(mag, 90))
    if typical <= 0:
        return ()
    order = np.argsort(-mag, kind="stable")
    for k in range(min(max(1, int(OUTLIER_MAX_FRACTION * n)), n - 1), 0, -1):
        last, rest = order[k - 1], order[k:]
        if mag[last] <= OUTLIER_FACTOR * typical:
            continue
        lo, hi = float(sample_lo[rest].min()), float(sample_hi[rest].max())
        if steps_used(lo, hi, min(lo, float(sample_lo[last])), max(hi, float(sample_hi[last]))) < OUTLIER_MAX_STEPS:
            return tuple(sorted(int(i) for i in order[:k]))
    return ()


def steps_used(lo: float, hi: float, full_lo: float, full_hi: float) -> float:
    """How many of the 256 int8 steps of [full_lo, full_hi] the span [lo, hi] covers."""
    span = max(full_hi, 0.0) - min(full_lo, 0.0)
    return 256.0 * (max(hi, 0.0) - min(lo, 0.0)) / span if span > 0 else 256.0


def histogram_edges(stats: TensorStats) -> np.ndarray:
    lo, hi = min(stats.inlier_lo, 0.0), max(stats.inlier_hi, 0.0)
    if hi == lo:
        hi = lo + 1.0
    return np.linspace(lo, hi, BINS + 1)


def choose_range(stats: TensorStats, observer: str, decision: bool) -> tuple[Range, str]:
    """The range `observer` picks for this tensor; `decision` marks outputs and softmax inputs."""
    if observer == "minmax":
        return Range(stats.lo, stats.hi), "minmax"
    full = Range(stats.inlier_lo, stats.inlier_hi)
    if stats.hist is None or stats.hist.sum() == 0:
        return full, "minmax"
    if observer == "percentile":
        return _percentile(stats), "percentile"
    if observer == "mse" or (observer == "auto" and not decision):
        best, err, full_err = _mse(stats, full)
        if observer == "mse" or err <= AUTO_MSE_GAIN * full_err:
            return best, "mse"
    return full, "minmax" if not stats.outliers else "minmax (inliers)"


def _percentile(stats: TensorStats) -> Range:
    centers = (stats.edges[:-1] + stats.edges[1:]) / 2
    cdf = np.cumsum(stats.hist) / stats.hist.sum()
    lo = float(centers[np.searchsorted(cdf, 1 - PERCENTILE / 100)])
    hi = float(centers[min(np.searchsorted(cdf, PERCENTILE / 100), len(centers) - 1)])
    return Range(min(lo, 0.0) if stats.inlier_lo < 0 else 0.0, max(hi, 0.0))


def expected_error(centers: np.ndarray, counts: np.ndarray, lo: float, hi: float) -> float:
    """Mean squared error of int8 with range [lo, hi] over a histogram: rounding noise plus clipping."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    step = (hi - lo) / 255.0
    inside = (centers >= lo) & (centers <= hi)
    clip = np.where(centers < lo, lo - centers, np.where(centers > hi, centers - hi, 0.0))
    total = counts.sum()
    return float((counts[inside].sum() * step * step / 12.0 + np.sum(counts * clip * clip)) / total)


def _mse(stats: TensorStats, full: Range) -> tuple[Range, float, float]:
    """The least-error candidate range, its expected error, and the full range's."""
    centers = (stats.edges[:-1] + stats.edges[1:]) / 2
    full_err = expected_error(centers, stats.hist, full.lo, full.hi)
    best, best_err = full, full_err
    for f in MSE_SHRINK:
        cand = Range(full.lo * f, full.hi * f)
        err = expected_error(centers, stats.hist, cand.lo, cand.hi)
        if err < best_err * (1 - 1e-9):
            best, best_err = cand, err
    return best, best_err, full_err
