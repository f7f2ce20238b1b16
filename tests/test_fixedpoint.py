"""The one rounding, written once in Python and once in C, checked against one table of edge cases."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyaot.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    tflm_quantize_multiplier,
)

# (x, multiplier, shift, expected): hand-checked values of TFLM's MultiplyByQuantizedMultiplier.
EDGE_CASES = [
    (0, 1 << 30, 0, 0),
    (100, 1 << 30, 0, 50),  # multiplier 0.5
    (3, 1 << 30, 0, 2),  # 1.5 rounds away from zero
    (-3, 1 << 30, 0, -1),  # -1.5: the doubling high mul nudges negatives by 1 - 2^30, giving -1
    (5, 1 << 30, -1, 2),  # 1.25 -> 2: double rounding (2.5 -> 3, then 1.5 -> 2), as TFLM
    (7, 1 << 30, -1, 2),  # 1.75 -> 2
    (-7, 1 << 30, -1, -2),
    (1000, INT32_MAX, 0, 1000),  # multiplier ~1.0
    (INT32_MAX, INT32_MAX, 0, INT32_MAX - 1),
    (INT32_MIN, INT32_MIN, 0, INT32_MAX),  # the one saturating case
    (INT32_MIN, INT32_MAX, 0, INT32_MIN + 1),
    (1, 1 << 30, 1, 1),  # left shift: 1 * 0.5 * 2
    (12345, 1518500250, -7, 68),  # 12345 * 0.7071 / 128 = 68.19
    (-12345, 1518500250, -7, -68),
    (1 << 20, 1 << 30, -31, 0),
    (-(1 << 20), 1 << 30, -20, -1),  # -0.5 rounds away from zero in the divide
]


def _c_requantize():
    """Compile the C twin into a tiny shared library."""
    import subprocess
    import tempfile
    from importlib import resources
    from pathlib import Path

    inc = resources.files("tinyaot").joinpath("c", "include")
    tmp = Path(tempfile.mkdtemp(prefix="tinyaot-fp-"))
    src = tmp / "fp.c"
    src.write_text(
        '#include "tinyaot_fixedpoint.h"\n'
        "int32_t requantize(int32_t x, int32_t m, int32_t s) { return tinyaot_requantize(x, m, s); }\n"
        "int32_t requantize_nonneg(int32_t x, int32_t m, int32_t s) { return tinyaot_requantize_nonneg(x, m, s); }\n"
        "int32_t srdhm(int32_t a, int32_t b) { return tinyaot_srdhm(a, b); }\n"
        "int32_t rdbpot(int32_t x, int32_t e) { return tinyaot_rounding_divide_by_pot(x, e); }\n"
    )
    lib = tmp / "libfp.so"
    subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                    f"-I{inc}", str(src), "-o", str(lib)], check=True)
    so = ctypes.CDLL(str(lib))
    for fn in (so.requantize, so.requantize_nonneg, so.srdhm, so.rdbpot):
        fn.restype = ctypes.c_int32
    so.requantize.argtypes = [ctypes.c_int32] * 3
    so.requantize_nonneg.argtypes = [ctypes.c_int32] * 3
    so.srdhm.argtypes = [ctypes.c_int32] * 2
    so.rdbpot.argtypes = [ctypes.c_int32] * 2
    return so


@pytest.fixture(scope="module")
def c_fp():
    return _c_requantize()


def _exact(x: int, m: int, s: int) -> int:
    """Double rounding spelled out with Python integers, independent of the NumPy code."""
    x = x << max(s, 0)
    x = ((x + (1 << 31)) % (1 << 32)) - (1 << 31)
    if x == INT32_MIN and m == INT32_MIN:
        high = INT32_MAX
    else:
        ab = x * m
        nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
        high = int((ab + nudge) / (1 << 31)) if abs(ab + nudge) < 2**52 else _trunc_div(ab + nudge, 1 << 31)
    e = max(-s, 0)
    mask = (1 << e) - 1
    rem = high & mask
    thr = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> e) + (1 if rem > thr else 0)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


@pytest.mark.parametrize("x,m,s,expected", EDGE_CASES)
def test_edge_cases_python(x, m, s, expected):
    got = int(multiply_by_quantized_multiplier(x, m, s))
    assert got == _exact(x, m, s) == expected


@pytest.mark.host
@pytest.mark.parametrize("x,m,s,expected", EDGE_CASES)
def test_edge_cases_c_matches_python(c_fp, x, m, s, expected):
    assert c_fp.requantize(x, m, s) == int(multiply_by_quantized_multiplier(x, m, s))


@pytest.mark.host
@settings(max_examples=400, deadline=None)
@given(
    x=st.integers(INT32_MIN, INT32_MAX),
    m=st.integers(1 << 30, INT32_MAX),
    s=st.integers(-31, 0),
)
def test_random_requantize_c_equals_python(c_fp, x, m, s):
    py = int(multiply_by_quantized_multiplier(x, m, s))
    assert c_fp.requantize(x, m, s) == py == _exact(x, m, s)


@pytest.mark.host
@settings(max_examples=600, deadline=None)
@given(
    x=st.one_of(st.integers(INT32_MIN, INT32_MAX), st.integers(-(1 << 16), 1 << 16)),
    m=st.one_of(st.integers(0, INT32_MAX), st.sampled_from([0, 1, 1 << 30, INT32_MAX])),
    s=st.integers(-31, 30),
)
def test_random_requantize_nonneg_c_equals_python(c_fp, x, m, s):
    """The kernels' epilogue (multiplier >= 0, the rounding bit taken below the shift) against TFLM's."""
    assert c_fp.requantize_nonneg(x, m, s) == c_fp.requantize(x, m, s) == _exact(x, m, s)


@pytest.mark.host
def test_requantize_nonneg_exact_halves(c_fp):
    """Every remainder, exact halves included, for small accumulators and both signs."""
    for m in (1 << 30, (1 << 30) + 1, 1518500250, INT32_MAX):
        for s in range(-9, 3):
            for x in range(-1100, 1100):
                assert c_fp.requantize_nonneg(x, m, s) == _exact(x, m, s), (x, m, s)


@pytest.mark.host
@pytest.mark.parametrize("x,m,s,expected", [c for c in EDGE_CASES if c[1] >= 0])
def test_edge_cases_nonneg_c(c_fp, x, m, s, expected):
    assert c_fp.requantize_nonneg(x, m, s) == expected


@pytest.mark.host
@settings(max_examples=300, deadline=None)
@given(a=st.integers(INT32_MIN, INT32_MAX), b=st.integers(INT32_MIN, INT32_MAX), e=st.integers(0, 31))
def test_primitives_c_equals_python(c_fp, a, b, e):
    assert c_fp.srdhm(a, b) == int(saturating_rounding_doubling_high_mul(a, b))
    assert c_fp.rdbpot(a, e) == int(rounding_divide_by_pot(a, e))


def test_quantize_multiplier_edges():
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(1.0) == (1 << 30, 1)
    m, s = quantize_multiplier(0.75)
    assert (m, s) == (3 << 29, 0)
    # a mantissa that rounds up to 2^31 is halved and the exponent bumped
    m, s = quantize_multiplier(math.nextafter(1.0, 0.0))
    assert (m, s) == (1 << 30, 1)
    assert quantize_multiplier(2.0**-40) == (0, 0)  # below 2^-32 flushes to zero
    for real in (1e-5, 0.00123, 0.3, 0.999, 3.7, 100.0):
        m, s = quantize_multiplier(real)
        assert (1 << 30) <= m <= INT32_MAX
        assert abs(m * 2.0 ** (s - 31) - real) <= real * 2**-30
    with pytest.raises(ValueError):
        quantize_multiplier(float("nan"))


def test_tflm_quantize_multiplier_is_tflms_default_build():
    """TFLM's QuantizeMultiplier (double rounding): the shift the TFLite importer's checks read. It leaves a shift
    above 30 as is (quantize_multiplier saturates it for the kernels) and keeps a negative multiplier's sign."""
    assert tflm_quantize_multiplier(0.0) == (0, 0)
    edge = (2**31 - 0.5) * 2.0**-63  # mantissa rounds half away from zero to 2^31: halved, shift -32 -> -31
    assert tflm_quantize_multiplier(edge) == (1 << 30, -31)
    assert tflm_quantize_multiplier(math.nextafter(edge, 0.0)) == (0, 0)  # shift -32: flushed to zero
    top = 2.0**30 - 0.25  # the smallest multiplier whose shift is 31
    assert tflm_quantize_multiplier(top) == (1 << 30, 31)
    assert tflm_quantize_multiplier(math.nextafter(top, 0.0)) == (INT32_MAX, 30)
    assert quantize_multiplier(top) == (INT32_MAX, 30)  # saturated, as TFLM's single-rounding build does
    assert tflm_quantize_multiplier(2.0**40) == (1 << 30, 41)
    assert tflm_quantize_multiplier(-0.75) == (-(3 << 29), 0)
    for real in (1e-5, 0.3, 0.999, 3.7, 2.0**-31, 2.0**29):
        assert tflm_quantize_multiplier(real) == quantize_multiplier(real)
    with pytest.raises(ValueError):
        tflm_quantize_multiplier(float("inf"))


def test_vectorised_matches_scalar():
    rng = np.random.default_rng(1)
    x = rng.integers(INT32_MIN, INT32_MAX, size=500, dtype=np.int64)
    m = rng.integers(1 << 30, INT32_MAX, size=500, dtype=np.int64)
    s = rng.integers(-20, 2, size=500)
    vec = multiply_by_quantized_multiplier(x, m, s)
    assert [int(v) for v in vec] == [_exact(int(a), int(b), int(c)) for a, b, c in zip(x, m, s)]
