"""uint8 model input: pixels straight from a camera, converted in place by one exact first step."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from zoo import ZOO, synthetic_data, trained

import tinyaot


@pytest.fixture(scope="module")
def pair():
    entry = next(e for e in ZOO if e.name == "lenet5")
    model = trained(entry)
    x, _ = synthetic_data(entry, 260, seed=3)
    x = np.clip(x / 6 + 0.5, 0, 1)  # an image in [0, 1]
    s8 = tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x[:200], name="lenet_s8")
    u8 = tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x[:200], name="lenet_u8", input_dtype="uint8")
    return s8, u8, x[200:]


def test_uint8_input_has_shifted_zero_point_and_same_scale(pair):
    s8, u8, _ = pair
    assert u8.input_dtype == "uint8" and s8.input_dtype == "int8"
    assert u8.input_qparams == (s8.input_qparams[0], s8.input_qparams[1] + 128)
    assert u8.input_qparams[1] == 0  # an image in [0, 1]: uint8 0 is black
    h = u8.c_sources.files["lenet_u8.h"]
    assert "uint8_t *lenet_u8_input(void);" in h and "#define LENET_U8_INPUT_ZERO_POINT (0)" in h
    assert u8.arena_bytes == s8.arena_bytes  # the conversion runs in place


@pytest.mark.host
def test_same_outputs_as_the_int8_model_on_the_host(pair):
    s8, u8, x = pair
    xq8 = s8.quantize_input(s8.to_model_layout(x))
    xu8 = u8.quantize_input(u8.to_model_layout(x))
    assert xu8.dtype == np.uint8
    np.testing.assert_array_equal(xu8.astype(np.int16) - 128, xq8)
    want = s8.run(xq8)
    np.testing.assert_array_equal(u8.run(xu8), want)
    np.testing.assert_array_equal(u8.run(xu8, engine="host"), want)


@pytest.mark.m33
def test_same_outputs_as_the_int8_model_on_the_m33(pair):
    s8, u8, x = pair
    xq8 = s8.quantize_input(s8.to_model_layout(x[:8]))
    np.testing.assert_array_equal(u8.run(u8.quantize_input(u8.to_model_layout(x[:8])), engine="m33"), s8.run(xq8))


def test_int8_values_are_refused_for_a_uint8_model(pair):
    _, u8, x = pair
    with pytest.raises(tinyaot.ModelError, match="uint8"):
        u8.run(np.full((1,) + u8.input_shape[1:], -5, np.int16))
