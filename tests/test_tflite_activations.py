"""TFLite LOGISTIC, TANH and HARD_SWISH bit-exact with TensorFlow Lite Micro.

Each single-op .tflite model is run by TFLM on all 256 int8 inputs; tinyaot's NumPy reference (a table filled by
ref/tflm_activations.py) and the generated host C must give the same 256 bytes. Random input scales / zero points
(and random output qparams for HARD_SWISH; LOGISTIC / TANH have TFLite's fixed ones), plus pinned cases where
TFLM's fixed-point result differs from the correctly rounded real function, so a table of the real function
(tinyaot's PyTorch semantics) would fail here.
"""
from __future__ import annotations

import numpy as np
import pytest
from tflite_builder import Model, Op, T, build, run_tflm

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite import from_tflite
from tinyaot.ref import lut_s8, tflm_activations

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")

FUNCTION = {"LOGISTIC": "tflm_logistic", "TANH": "tflm_tanh", "HARD_SWISH": "tflm_hard_swish"}
REAL = {"LOGISTIC": "sigmoid", "TANH": "tanh", "HARD_SWISH": "hardswish"}
ALL_INPUTS = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 256)
RANDOM_CASES = 40


def _out_qp(code: str, rng, in_scale: float) -> tuple[float, int]:
    if code != "HARD_SWISH":
        return tflm_activations.FIXED_OUTPUT[FUNCTION[code]]
    while True:  # TFLM's HARD_SWISH requires input_scale / 128 < output_scale
        scale = float(np.float32(10 ** rng.uniform(-3.0, 0.5)))
        if in_scale / 128 < scale:
            return scale, int(rng.integers(-128, 128))


def _random_cases(code: str, seed: int) -> list[tuple[float, int, float, int]]:
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(RANDOM_CASES):
        scale = float(np.float32(10 ** rng.uniform(-3.5, 1.3)))  # up to ~20: TFLM's saturation radius reaches 0
        zp = int(rng.integers(-128, 128))
        cases.append((scale, zp, *_out_qp(code, rng, scale)))
    return cases


def _model(code: str, in_scale: float, in_zp: int, out_scale: float, out_zp: int, shape=(1, 256)) -> bytes:
    tensors = [T(shape, scale=in_scale, zero_point=in_zp), T(shape, scale=out_scale, zero_point=out_zp)]
    return build(Model(tensors, [Op(code, [0], [1])], [0], [1]))


def _reference(model: bytes, x: np.ndarray) -> np.ndarray:
    g = from_tflite(model)
    node = g.nodes[0]
    p = lut_s8.prepare(node, g)
    return lut_s8.lut_s8(x, p)


@pytest.mark.parametrize("code", list(FUNCTION))
def test_random_qparams_match_tflm_on_all_256_inputs(code):
    for case in _random_cases(code, seed=len(code)):
        model = _model(code, *case)
        g = from_tflite(model)
        assert [n.op for n in g.nodes] == ["lut"] and g.nodes[0].attrs["function"] == FUNCTION[code]
        want = run_tflm(model, ALL_INPUTS).reshape(-1)
        got = _reference(model, ALL_INPUTS.reshape(-1))
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, (f"{code} {case}: inputs {(bad - 128).tolist()[:8]} give {got[bad][:8]}, "
                               f"TFLM {want[bad][:8]}")


# (code, in_scale, in_zp, out_scale, out_zp) where TFLM's integer kernel is not the rounded real function.
DIVERGENT = [
    ("LOGISTIC", 4.767284393310547, -117, 1 / 256, -128),  # fixed-point error at two inputs
    ("LOGISTIC", 9.287923812866211, 1, 1 / 256, -128),  # radius 0: input == zero point saturates low, not 0.5
    ("TANH", 8.872514724731445, -95, 1 / 128, 0),  # the same for tanh
    ("HARD_SWISH", 0.1, 10, 0.03, -60),  # int16 multipliers, truncating SaturatingDoublingHighMul
    ("HARD_SWISH", 0.001, 5, 1.0, 3),  # output shift of 16 or more: gemmlowp's int16 mask wraps
]


@pytest.mark.parametrize("case", DIVERGENT, ids=lambda c: f"{c[0]}-{c[1]:.3g}-{c[2]}")
def test_where_tflm_differs_from_the_real_function_tinyaot_follows_tflm(case):
    code, *qp = case
    model = _model(code, *qp)
    want = run_tflm(model, ALL_INPUTS).reshape(-1)
    real_table = lut_s8.build_table(REAL[code], *qp)
    assert (real_table != want).any(), "pinned case no longer distinguishes TFLM from the real function"
    np.testing.assert_array_equal(_reference(model, ALL_INPUTS.reshape(-1)), want)


def _host_cases():
    cases = []
    for code in FUNCTION:
        cases += [(code, *c) for c in _random_cases(code, seed=100 + len(code))[:2]]
    return cases + DIVERGENT


@pytest.mark.host
@pytest.mark.parametrize("case", _host_cases(), ids=lambda c: f"{c[0]}-{c[1]:.3g}-{c[2]}")
def test_host_c_equals_reference_and_tflm(case):
    code, *qp = case
    model = _model(code, *qp, shape=(1, 16, 16))
    x = ALL_INPUTS.reshape(1, 1, 16, 16)
    cm = tinyaot.compile(model, name=f"act_{code.lower()}")
    want = run_tflm(model, x)
    ref = cm.run(x)
    np.testing.assert_array_equal(ref, want)
    np.testing.assert_array_equal(cm.run(x, engine="host"), ref)
    assert f"/* {FUNCTION[code]}: output for input q" in cm.c_sources.files[f"{cm.name}.c"]


@pytest.mark.m33
def test_cortex_m33_equals_reference():
    code, *qp = DIVERGENT[3]
    model = _model(code, *qp, shape=(1, 16, 16))
    x = ALL_INPUTS.reshape(1, 1, 16, 16)
    cm = tinyaot.compile(model, name="act_m33")
    np.testing.assert_array_equal(cm.run(x, engine="m33"), run_tflm(model, x))


def test_relu_after_hard_swish_matches_tflm_and_a_fused_clamp_clips_the_table():
    """HARD_SWISH then RELU end to end equals TFLM; and a clamp fused into the lut (as passes/fuse_activations
    does for PyTorch graphs) clips TFLM's table exactly like that RELU with the same qparams."""
    qp = (0.05, 7, 0.02, -100)
    tensors = [T((1, 256), scale=qp[0], zero_point=qp[1]), T((1, 256), scale=qp[2], zero_point=qp[3]),
               T((1, 256), scale=qp[2], zero_point=qp[3])]
    model = build(Model(tensors, [Op("HARD_SWISH", [0], [1]), Op("RELU", [1], [2])], [0], [2]))
    want = run_tflm(model, ALL_INPUTS).reshape(1, 256)
    unclamped = _reference(_model("HARD_SWISH", *qp), ALL_INPUTS.reshape(-1))
    assert (unclamped < qp[3]).any(), "the case must have negative outputs for the RELU to cut"
    np.testing.assert_array_equal(tinyaot.compile(model, name="hswish_relu").run(ALL_INPUTS.reshape(1, 256)), want)
    g = from_tflite(_model("HARD_SWISH", *qp))
    g.nodes[0] = g.nodes[0].with_attrs(clamp=(0.0, float("inf")))
    np.testing.assert_array_equal(lut_s8.lut_s8(ALL_INPUTS.reshape(-1), lut_s8.prepare(g.nodes[0], g)),
                                  want.reshape(-1))


@pytest.mark.parametrize("code,out_qp", [("LOGISTIC", (1 / 256, 0)), ("LOGISTIC", (1 / 128, -128)),
                                         ("TANH", (1 / 256, 0)), ("TANH", (1 / 128, -128))])
def test_logistic_tanh_with_other_output_qparams_are_refused(code, out_qp):
    model = _model(code, 0.05, 0, *out_qp)
    with pytest.raises(ModelError, match=r"TFLite Micro's int8 kernel always produces scale .* requantize"):
        tinyaot.compile(model, name="bad")


def test_hard_swish_output_scale_too_small_is_refused():
    model = _model("HARD_SWISH", 0.5, 0, 0.003, 0)  # 0.5 / 128 > 0.003: TFLM's Prepare fails too
    with pytest.raises(ModelError, match=r"must be below the output scale .* requantize the output"):
        tinyaot.compile(model, name="bad")


def test_input_scale_below_tflm_range_is_refused():
    model = _model("LOGISTIC", 1e-9, 0, 1 / 256, -128)
    with pytest.raises(UnsupportedOpError, match=r"below 2\^-28.*requantize the input"):
        tinyaot.compile(model, name="bad")  # TFLM's Prepare rules run at compile, in the code generation stage
