"""16x8 (int16 activation) MAX_POOL_2D and AVERAGE_POOL_2D bit-exact with TensorFlow Lite Micro: random one-op
.tflite graphs (SAME and VALID padding, strides, fused RELU / RELU6 / RELU_N1_TO_1) compiled by tinyaot equal
TFLM's int16 kernels on every output byte, on the reference and the host C. (The Cortex-M33 run of both kernels
is tests/test_s16_activations.py's chain of 16x8 kernels.)"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")
from s16_suite import assert_matches_tflm, int16_samples, scale16, t16  # noqa: E402

from tinyaot.errors import TinyAOTError  # noqa: E402

CASES, SAMPLES = 50, 4
HOST_EVERY = 5  # every case on the reference, every fifth also through gcc
POOLS = ("MAX_POOL_2D", "AVERAGE_POOL_2D")


def _same(size: int, k: int, s: int) -> int:
    return -(-size // s)


def pool_case(code: str, rng) -> tuple[tb.Model, np.ndarray]:
    n, h, w = 1, int(rng.integers(1, 9)), int(rng.integers(1, 9))
    c = int(rng.integers(1, 9)) if rng.random() < 0.8 else int(rng.integers(15, 40))  # avg_pool2d_s16.c's blocks
    kh, kw, sh, sw = (int(v) for v in rng.integers(1, 4, size=4))
    same = bool(rng.random() < 0.5)
    if same:
        oh, ow = _same(h, kh, sh), _same(w, kw, sw)
    else:
        kh, kw = min(kh, h), min(kw, w)
        oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    act = int(rng.choice([0, 0, 1, 2, 3]))  # NONE, RELU, RELU_N1_TO_1, RELU6
    s = scale16(rng) * float(rng.uniform(1, 100))  # some RELU6 / RELU_N1_TO_1 bounds inside the int16 range
    opts = ("Pool2DOptions", {"Padding": 0 if same else 1, "StrideW": sw, "StrideH": sh, "FilterWidth": kw,
                              "FilterHeight": kh, "FusedActivationFunction": act})
    m = tb.Model([t16((n, h, w, c), s), t16((n, oh, ow, c), s)], [tb.Op(code, [0], [1], opts)], [0], [1])
    return m, int16_samples((n, h, w, c), SAMPLES, rng, spread=int(rng.choice([3000, 32767])))


@pytest.mark.host
@pytest.mark.parametrize("code", POOLS)
def test_pooling_equals_tflm(code):
    rng = np.random.default_rng(170 + POOLS.index(code))
    for k in range(CASES):
        m, x = pool_case(code, rng)
        assert_matches_tflm(m, [x], engines=("reference", "host") if k % HOST_EVERY == 0 else ("reference",))


@pytest.mark.parametrize("code", POOLS)
def test_pooling_that_rescales_is_refused(code):
    """TFLM's int16 pooling takes the input's qparams for the output (it checks them equal); tinyaot refuses a
    pool whose output scale differs rather than reading it as another number."""
    opts = ("Pool2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1, "FilterWidth": 2, "FilterHeight": 2,
                              "FusedActivationFunction": 0})
    m = tb.Model([t16((1, 3, 3, 2), 1e-3), t16((1, 2, 2, 2), 2e-3)], [tb.Op(code, [0], [1], opts)], [0], [1])
    import tinyaot

    with pytest.raises(TinyAOTError, match=rf"operator 0 \({code}\) changes scale"):
        tinyaot.compile(tb.build(m))


@pytest.mark.m33
def test_pooling_of_odd_and_long_channel_rows_runs_on_the_m33():
    """The M33 build takes max_pool2d_s16.c's two-channels-at-once path (SSUB16 + SEL) at odd pixel offsets and
    the scalar tail of an odd channel count, and avg_pool2d_s16.c's blocks of 16 channels and a partial one
    (37 channels); both must still equal TFLM."""
    max_opts = ("Pool2DOptions", {"Padding": 0, "StrideW": 2, "StrideH": 1, "FilterWidth": 3, "FilterHeight": 2,
                                  "FusedActivationFunction": 3})
    avg_opts = ("Pool2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 3,
                                  "FusedActivationFunction": 0})
    s = 4e-4
    m = tb.Model([t16((1, 5, 6, 37), s), t16((1, 5, 3, 37), s), t16((1, 3, 3, 37), s)],
                 [tb.Op("MAX_POOL_2D", [0], [1], max_opts), tb.Op("AVERAGE_POOL_2D", [1], [2], avg_opts)], [0], [2])
    x = int16_samples((1, 5, 6, 37), 3, np.random.default_rng(172))
    cm = assert_matches_tflm(m, [x], engines=("reference", "m33"))
    assert cm.last_m33.instructions > 0
