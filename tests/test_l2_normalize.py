"""l2_normalize: TFLite Micro's L2_NORMALIZATION (reference_integer_ops::L2Normalization) bit-exact, from .tflite
graphs TFLM runs: every output byte of seeded one-op int8 graphs equals TFLM's in the reference and the host C,
including the rows its special cases take (all at the zero point, a single step off it, the largest sums); a float
graph's tinyaot float definition equals TFLM's float kernel; what TFLM's Prepare refuses is refused."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import have_host_cc

import tinyaot
from tinyaot.errors import UnsupportedOpError
from tinyaot.ref.l2_normalize_s8 import MAX_DEPTH, inv_sqrt_multiplier
from tinyaot.targets import host
from tinyaot.targets.base import ModelSources

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")

SHAPES = [(1, 8), (1, 3, 5), (1, 2, 3, 16), (1, 1), (1, 4, 200), (1, 7, 2), (1, 2, 2, 1)]
SAMPLES = 12


def _graph(shape, scale, zp, out_qp=(1 / 128, 0), activation=0) -> bytes:
    x = tb.T(shape, "int8", scale=scale, zero_point=zp)
    y = tb.T(shape, "int8", scale=out_qp[0], zero_point=out_qp[1])
    op = tb.Op("L2_NORMALIZATION", [0], [1], ("L2NormOptions", {"FusedActivationFunction": activation}))
    return tb.build(tb.Model([x, y], [op], [0], [1]))


def _samples(shape, zp: int, rng) -> np.ndarray:
    """Random rows, then the special ones: every value at the zero point (a zero norm), one value a step off it
    (the sum of squares 1, TFLM's other special case), every value as far from it as int8 allows (the largest
    sum), two steps off (a sum that TFLM's inverse square root normalizes by the most bits)."""
    x = rng.integers(-128, 128, size=(SAMPLES, *shape)).astype(np.int8)
    far = -128 if zp > 0 else 127
    x[0] = zp
    x[1] = zp
    x[1].reshape(-1, shape[-1])[:, 0] = zp + (1 if zp < 127 else -1)
    x[2] = far
    x[3] = zp
    x[3].reshape(-1, shape[-1])[:, -1] = zp + (2 if zp < 126 else -2)
    return x


@pytest.mark.host
@pytest.mark.parametrize("case", range(len(SHAPES) * 2))
def test_int8_graph_equals_tflm(case, tmp_path):
    rng = np.random.default_rng(100 + case)
    shape = SHAPES[case % len(SHAPES)]
    scale = float(np.float32(10 ** rng.uniform(-3, 0)))
    zp = int(rng.integers(-128, 128))
    model = _graph(shape, scale, zp)
    path = tmp_path / "l2.tflite"
    path.write_bytes(model)
    cm = tinyaot.compile(path, name="l2")
    assert [n.op for n in cm.graph.nodes] == ["l2_normalize"]
    x = _samples(shape, zp, rng)
    want = tb.run_tflm(model, x)
    ref = cm.run(x, engine="reference")
    np.testing.assert_array_equal(ref.reshape(want.shape), want)
    if not have_host_cc():
        pytest.skip("no host C compiler (gcc or $CC); the reference equals TFLM")
    np.testing.assert_array_equal(cm.run(x, engine="host"), ref)


def test_output_qparams_the_file_gives_do_not_change_the_bytes(tmp_path):
    """TFLM's Prepare does not check the int8 output's qparams and its kernel writes at 1/128 and 0 anyway: so
    does tinyaot's."""
    rng = np.random.default_rng(7)
    model = _graph((1, 6), 0.02, 3, out_qp=(0.05, -7))
    path = tmp_path / "l2.tflite"
    path.write_bytes(model)
    cm = tinyaot.compile(path, name="l2")
    x = _samples((1, 6), 3, rng)
    np.testing.assert_array_equal(cm.run(x).reshape(-1, 1, 6), tb.run_tflm(model, x))


@pytest.mark.host
def test_float_graph_is_tflm_float_kernel(tmp_path):
    """A float model's l2_normalize is TFLM's float kernel (x / max(||x||, 1e-6)), zero rows included; tinyaot
    quantizes it (output scale 1/128), the reference equal to the host C."""
    rng = np.random.default_rng(3)
    x_t, y_t = tb.T((1, 3, 10), "float32"), tb.T((1, 3, 10), "float32")
    model = tb.build(tb.Model([x_t, y_t], [tb.Op("L2_NORMALIZATION", [0], [1], ("L2NormOptions", {}))], [0], [1]))
    path = tmp_path / "l2f.tflite"
    path.write_bytes(model)
    x = rng.normal(0, 2, size=(16, 3, 10)).astype(np.float32)
    x[0, 1] = 0.0
    cm = tinyaot.compile(path, calibration=x, name="l2f")
    got = np.asarray(cm.float_reference(x)).reshape(16, 1, 3, 10)
    np.testing.assert_allclose(got, tb.run_tflm(model, x), rtol=1e-5, atol=1e-7)
    if not have_host_cc():
        pytest.skip("no host C compiler (gcc or $CC)")
    q = cm.quantize_input(x)
    np.testing.assert_array_equal(cm.run(q, engine="reference"), cm.run(q, engine="host"))


@pytest.mark.parametrize("what", ["5-D input", "fused RELU"])
def test_what_tflm_refuses_is_refused(what, tmp_path):
    model = _graph((1, 1, 2, 2, 3), 0.1, 0) if what == "5-D input" else _graph((1, 4), 0.1, 0, activation=1)
    assert tb.tflm_refuses(model)
    path = tmp_path / "l2.tflite"
    path.write_bytes(model)
    with pytest.raises(UnsupportedOpError, match="L2_NORMALIZATION.*TFLite Micro's Prepare"):
        tinyaot.compile(path, name="l2")


def test_inverse_square_root_over_the_whole_int32_range():
    """TFLM's GetInvSqrtQuantizedMultiplierExp: within 2^-19 of 1 / sqrt(acc) for every sum a row can make (a few
    thousand spread over [2, 255^2 * MAX_DEPTH]), and INT32_MAX, 0 for 0 and 1."""
    acc = np.unique(np.concatenate([np.arange(2, 4096), np.geomspace(4096, 255**2 * MAX_DEPTH, 3000).astype(np.int64)]))
    m, s = inv_sqrt_multiplier(acc)
    approx = m.astype(np.float64) * 2.0 ** (s.astype(np.float64) - 31)
    np.testing.assert_allclose(approx * np.sqrt(acc), 1.0, atol=2**-19)
    m0, s0 = inv_sqrt_multiplier(np.array([0, 1]))
    assert m0.tolist() == [2**31 - 1] * 2 and s0.tolist() == [0, 0]


@pytest.mark.host
def test_kernel_is_clean_under_asan_and_ubsan(tmp_path):
    """The special rows and the largest sums (rows of 200 values as far from the zero point as int8 goes) under
    AddressSanitizer and UndefinedBehaviorSanitizer: no report, TFLM's bytes."""
    problem = host.sanitizer_problem()
    if problem is not None:
        pytest.skip(f"no sanitizer support on this machine: {problem}")
    rng = np.random.default_rng(11)
    model = _graph((1, 4, 200), 0.003, -128)
    path = tmp_path / "l2.tflite"
    path.write_bytes(model)
    cm = tinyaot.compile(path, name="l2")
    x = _samples((1, 4, 200), -128, rng)
    target = host.SanitizedHostTarget()
    got = target.run(target.build(ModelSources.of(cm)), x).outputs
    np.testing.assert_array_equal(got.reshape(-1), tb.run_tflm(model, x).reshape(-1))
