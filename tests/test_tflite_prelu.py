"""TFLite PRELU and LEAKY_RELU bit-exact with TensorFlow Lite Micro, and their C kernel with the reference.

Seeded one-op models: PRELU with random shapes (2-D to 4-D), alphas that broadcast in every way TFLM's
BroadcastPrelu4DSlow takes (one value, one per channel, per pixel, the input's full shape) and random scales and
zero points for input, alpha and output; LEAKY_RELU with random qparams and alphas (negative, zero, above 1) on all
256 inputs, and its int16 (16x8) form on 4,096 inputs across the int16 range. TFLM runs each; tinyaot's reference
(ref/prelu_s8.py, ref/leaky_relu_s16.py) must give every byte, and the generated C the reference's.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from kernel_suite import Case, mismatches, run_host
from tflite_builder import Model, Op, T, build, run_tflm, tflm_refuses

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.frontend.tflite import from_tflite, from_tflite_float
from tinyaot.ref import leaky_relu_s16, prelu_s8

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")

PRELU_CASES = 50
LEAKY_CASES = 60
ALL_INPUTS = np.arange(-128, 128, dtype=np.int8)


def _f32(v: float) -> float:
    return float(np.float32(v))


def _prelu_model(rng) -> tuple[bytes, tuple[int, ...], tuple[int, ...]]:
    rank = int(rng.integers(2, 5))
    shape = (1, *(int(d) for d in rng.integers(1, 7, size=rank - 1)))
    kind = rng.choice(["one", "channel", "trailing"])
    if kind == "one":
        a_shape = (1,)
    elif kind == "channel":  # Keras' PReLU with shared_axes over the spatial dims: [1, 1, C] or [C]
        a_shape = (1,) * int(rng.integers(0, rank - 1)) + shape[-1:]
    else:  # any trailing axes, each whole or broadcast
        a_shape = tuple(d if rng.random() < 0.6 else 1 for d in shape[rank - int(rng.integers(1, rank + 1)):])
    alpha = rng.integers(-128, 128, size=a_shape).astype(np.int8)
    in_scale = _f32(10 ** rng.uniform(-3, 0))
    tensors = [T(shape, scale=in_scale, zero_point=int(rng.integers(-128, 128))),
               T(a_shape, data=alpha, scale=_f32(10 ** rng.uniform(-3, -0.5)), zero_point=int(rng.integers(-128, 128))),
               T(shape, scale=_f32(in_scale * 10 ** rng.uniform(-0.8, 0.8)), zero_point=int(rng.integers(-128, 128)))]
    return build(Model(tensors, [Op("PRELU", [0, 1], [2])], [0], [2])), shape, a_shape


def _leaky_model(rng) -> tuple[bytes, float]:
    alpha = _f32(rng.choice([0.1, 0.2, 0.01, 0.0, -0.5, 1.7, rng.uniform(-2.0, 3.0)]))
    in_scale = _f32(rng.choice([0.05, 0.1, 0.03125, 10 ** rng.uniform(-3, 0)]))  # round scales: rounding ties
    out_scale = _f32(rng.choice([0.04, 0.125, in_scale * 10 ** rng.uniform(-0.7, 0.7)]))
    tensors = [T((1, 256), scale=in_scale, zero_point=int(rng.integers(-128, 128))),
               T((1, 256), scale=out_scale, zero_point=int(rng.integers(-128, 128)))]
    return build(Model(tensors, [Op("LEAKY_RELU", [0], [1], ("LeakyReluOptions", {"Alpha": alpha}))], [0], [1])), alpha


def _leaky16_model(rng) -> tuple[bytes, float]:
    """TFLM's int16 LEAKY_RELU takes any zero points; converters write 0, as tinyaot's 16x8 tensors have them."""
    alpha = _f32(rng.choice([0.1, 0.2, -0.5, 1.7, rng.uniform(-2.0, 3.0)]))
    in_scale = _f32(10 ** rng.uniform(-5, -2))
    out_scale = _f32(rng.choice([in_scale, in_scale * 10 ** rng.uniform(-0.7, 0.7)]))
    tensors = [T((1, 4096), "int16", scale=in_scale), T((1, 4096), "int16", scale=out_scale)]
    return build(Model(tensors, [Op("LEAKY_RELU", [0], [1], ("LeakyReluOptions", {"Alpha": alpha}))], [0], [1])), alpha


INT16_INPUTS = np.concatenate([np.arange(-32768, 32768, 32), np.arange(-1024, 1024)]).astype(np.int16).reshape(1, 4096)


def _inputs(shape, rng, n: int = 3) -> np.ndarray:
    """Every int8 value at least once per position pattern, then random bytes."""
    size = int(np.prod(shape))
    rows = [np.resize(np.roll(ALL_INPUTS, 37 * k), size) for k in range(n)]
    return np.stack([*rows, rng.integers(-128, 128, size=size)]).astype(np.int8).reshape(-1, *shape)


def _reference(model: bytes, x: np.ndarray) -> np.ndarray:
    g = from_tflite(model)
    p = prelu_s8.prepare(g.nodes[0], g)
    return np.stack([prelu_s8.prelu_s8(xi, p).reshape(xi.shape) for xi in x])


@cache
def _prelu_cases():
    rng = np.random.default_rng(2022)
    return [_prelu_model(rng) for _ in range(PRELU_CASES)]


@cache
def _leaky_cases():
    rng = np.random.default_rng(23)
    return [_leaky_model(rng) for _ in range(LEAKY_CASES)]


def test_prelu_matches_tflm_on_50_random_one_op_graphs():
    rng = np.random.default_rng(1)
    kinds = set()
    for k, (model, shape, a_shape) in enumerate(_prelu_cases()):
        assert not tflm_refuses(model), f"case {k}: TFLM's Prepare refuses it; the generator must not make it"
        g = from_tflite(model)
        assert [n.op for n in g.nodes] == ["prelu"]
        x = _inputs(shape, rng)
        want, got = run_tflm(model, x), _reference(model, x)
        bad = np.argwhere(got != want)
        assert bad.size == 0, f"case {k} x {shape} alpha {a_shape}: {len(bad)} bytes differ, first at {bad[0]}"
        kinds.add("one" if a_shape == (1,) else "channel" if a_shape[-1] == shape[-1] and np.prod(a_shape) ==
                  shape[-1] else "other")
    assert kinds == {"one", "channel", "other"}  # every broadcast kind was drawn


def test_leaky_relu_matches_tflm_on_every_input():
    negative = 0
    for k, (model, alpha) in enumerate(_leaky_cases()):
        g = from_tflite(model)
        assert [n.op for n in g.nodes] == ["leaky_relu"] and g.nodes[0].attrs["alpha"] == alpha
        want = run_tflm(model, ALL_INPUTS.reshape(1, 1, 256)).reshape(-1)
        got = _reference(model, ALL_INPUTS.reshape(1, 256)).reshape(-1)
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, f"case {k} alpha {alpha}: inputs {(bad - 128).tolist()[:8]} give {got[bad][:8]}, " \
                              f"TFLM {want[bad][:8]}"
        negative += alpha < 0
    assert negative >= 10


def test_a_negative_alpha_rounds_as_tflm_does_not_as_the_literal_multiply():
    """TFLM's result for a negative alpha is the negated requantization by the multiplier's magnitude; requantizing
    by the negative multiplier itself (MultiplyByQuantizedMultiplier as written) rounds the ties the other way."""
    in_scale, in_zp, out_scale, out_zp, alpha = 0.03125, 47, 0.125, -1, -0.5
    tensors = [T((1, 256), scale=in_scale, zero_point=in_zp), T((1, 256), scale=out_scale, zero_point=out_zp)]
    model = build(Model(tensors, [Op("LEAKY_RELU", [0], [1], ("LeakyReluOptions", {"Alpha": alpha}))], [0], [1]))
    want = run_tflm(model, ALL_INPUTS.reshape(1, 1, 256)).reshape(-1)
    g = from_tflite(model)
    p = prelu_s8.prepare(g.nodes[0], g)
    assert p.output_multiplier_2 < 0
    v = ALL_INPUTS.astype(np.int64) - in_zp
    literal = multiply_by_quantized_multiplier(v, p.output_multiplier_2, p.output_shift_2) + out_zp
    literal = np.where(v >= 0, want, np.clip(literal, -128, 127))
    assert (literal != want).sum() >= 10, "the pinned case no longer tells the two roundings apart"
    np.testing.assert_array_equal(prelu_s8.prelu_s8(ALL_INPUTS, p).reshape(-1), want)


def test_int16_leaky_relu_matches_tflm():
    rng = np.random.default_rng(16)
    for k in range(30):
        model, alpha = _leaky16_model(rng)
        g = from_tflite(model)
        p = leaky_relu_s16.prepare(g.nodes[0], g)
        want = run_tflm(model, INT16_INPUTS.reshape(1, 1, 4096)).reshape(-1)
        got = leaky_relu_s16.leaky_relu_s16(INT16_INPUTS.reshape(-1), p)
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, f"case {k} alpha {alpha}: inputs {INT16_INPUTS.reshape(-1)[bad][:6]} give " \
                              f"{got[bad][:6]}, TFLM {want[bad][:6]}"


@pytest.mark.host
def test_int16_leaky_relu_host_c_equals_tflm():
    rng = np.random.default_rng(17)
    for k in range(3):
        model, _ = _leaky16_model(rng)
        cm = tinyaot.compile(model, name=f"leaky16_{k}")
        np.testing.assert_array_equal(cm.run(INT16_INPUTS, engine="host"), run_tflm(model, INT16_INPUTS[None])[0])


@pytest.mark.host
def test_host_c_equals_reference_on_every_byte():
    """All 50 PRELU graphs and the LEAKY_RELU ones in one host build (kernel_suite)."""
    rng = np.random.default_rng(3)
    cases = []
    for k, (model, shape, _) in enumerate(_prelu_cases()):
        cases.append(Case(f"prelu_{k}", from_tflite(model), [_inputs(shape, rng)]))
    for k, (model, _) in enumerate(_leaky_cases()):
        cases.append(Case(f"leaky_{k}", from_tflite(model), [_inputs((1, 256), rng)]))
    assert mismatches(cases, run_host(cases)) == []


@pytest.mark.m33
def test_cortex_m33_equals_tflm():
    model, shape, _ = next(c for c in _prelu_cases() if len(c[1]) == 4 and c[2][-1] == c[1][-1] > 1)
    x = _inputs(shape, np.random.default_rng(4))
    cm = tinyaot.compile(model, name="prelu_m33")
    np.testing.assert_array_equal(cm.run(x, engine="m33"), run_tflm(model, x))


@pytest.mark.filterwarnings("ignore::tinyaot.diagnostics.CalibrationWarning")
def test_float_prelu_and_leaky_relu_are_quantized_by_tinyaot():
    """A float model's PRELU (float32 alpha, per channel) and LEAKY_RELU: the graph keeps them, tinyaot's PTQ
    quantizes the alpha as an int8 constant, and the int8 model tracks TFLM's float output."""
    rng = np.random.default_rng(6)
    shape = (1, 4, 4, 6)
    alpha = rng.uniform(-0.5, 1.0, size=(1, 1, 6)).astype(np.float32)
    tensors = [T(shape, "float32"), T((1, 1, 6), "float32", data=alpha), T(shape, "float32"), T(shape, "float32")]
    ops = [Op("PRELU", [0, 1], [2]), Op("LEAKY_RELU", [2], [3], ("LeakyReluOptions", {"Alpha": 0.25}))]
    model = build(Model(tensors, ops, [0], [3]))
    g = from_tflite_float(model)
    assert [n.op for n in g.nodes] == ["prelu", "leaky_relu"]
    cal = rng.uniform(-2, 2, size=(64, *shape[1:])).astype(np.float32)
    cm = tinyaot.compile(model, calibration=cal, name="float_prelu")
    x = rng.uniform(-2, 2, size=(8, *shape[1:])).astype(np.float32)
    want = run_tflm(model, x.reshape(8, *shape)).reshape(8, *shape[1:])
    got = cm.run_float(x)
    assert np.abs(got - want).max() < 0.05, np.abs(got - want).max()


def _prelu_with(alpha: T, shape=(1, 2, 2, 3), alpha_input: bool = False) -> bytes:
    tensors = [T(shape, scale=0.05, zero_point=1), alpha, T(shape, scale=0.05, zero_point=1)]
    return build(Model(tensors, [Op("PRELU", [0, 1], [2])], [0, 1] if alpha_input else [0], [2]))


def test_prelu_refusals_say_why():
    computed = _prelu_with(T((1, 3), scale=0.01), alpha_input=True)
    with pytest.raises(UnsupportedOpError, match=r"PRELU\): alpha 't1' is computed by the model"):
        from_tflite(computed)
    per_channel = _prelu_with(T((3,), data=np.array([1, 2, 3], np.int8), scale=[0.01, 0.02, 0.03]))
    with pytest.raises(UnsupportedOpError, match="must be int8 with one scale and zero point"):
        tinyaot.compile(per_channel, name="bad")
    wide = _prelu_with(T((2, 1, 3), data=np.ones((2, 1, 3), np.int8), scale=0.01), shape=(1, 1, 2, 3))
    with pytest.raises(ModelError, match=r"alpha \[2, 1, 3\] does not broadcast to x \[1, 1, 2, 3\]"):
        tinyaot.compile(wide, name="bad")


def test_an_output_scale_tflm_cannot_reach_is_refused():
    tensors = [T((1, 8), scale=1.0, zero_point=0), T((1, 8), scale=1e-10, zero_point=0)]
    model = build(Model(tensors, [Op("LEAKY_RELU", [0], [1], ("LeakyReluOptions", {"Alpha": 0.1}))], [0], [1]))
    with pytest.raises(ModelError, match=r"LEAKY_RELU\): the requantization multiplier input_scale / output_scale"):
        from_tflite(model)
