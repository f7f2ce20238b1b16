"""NumPy reference == host C == Cortex-M33, every output byte, for the demo MLP and random MLPs."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import make_mlp, random_int8

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits

N_INPUTS = 120

# (layer sizes, relu, flatten input shape or None)
MLPS = [
    ([17, 3, 1], True, None),
    ([1, 5, 3], False, None),
    ([3, 17, 17, 3], True, None),
    ([64, 33, 10], False, None),
    ([20, 1, 7], True, (4, 5)),
    ([49, 31, 16, 10], True, (7, 7)),
]
MLP_IDS = [f"{'-'.join(map(str, m[0]))}{'-relu' if m[1] else ''}" for m in MLPS]


def _compile_mlp(sizes, relu, flat, seed):
    model = make_mlp(sizes, relu, seed, flatten_from=flat)
    shape = (1,) + (flat or (sizes[0],))
    cal = torch.randn((200,) + shape[1:], generator=torch.Generator().manual_seed(seed)) * 2
    return tinyaot.compile(model, torch.zeros(shape), calibration=cal, name=f"mlp{seed}")


@pytest.fixture(scope="module")
def seed_model():
    model = build_seed_mlp()
    cal = calibration_digits()
    return tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name="mnist")


def _inputs(cm, seed):
    return random_int8((N_INPUTS,) + cm.input_shape[1:], seed)


def test_seed_model_plan_is_at_the_lower_bound(seed_model):
    assert seed_model.lower_bound_bytes == 784 + 32
    assert seed_model.arena_bytes == 816


@pytest.mark.host
def test_seed_model_reference_equals_host(seed_model):
    x = _inputs(seed_model, 7)
    ref = seed_model.run(x, engine="reference")
    assert ref.shape == (N_INPUTS, 10)
    np.testing.assert_array_equal(seed_model.run(x, engine="host"), ref)


@pytest.mark.m33
def test_seed_model_reference_equals_m33(seed_model):
    x = _inputs(seed_model, 7)
    ref = seed_model.run(x, engine="reference")
    np.testing.assert_array_equal(seed_model.run(x, engine="m33"), ref)
    assert seed_model.last_m33.instructions > 25_760 // 2  # 25,760 MACs, at most two per instruction (SMLAD)


@pytest.mark.parametrize("sizes,relu,flat", MLPS, ids=MLP_IDS)
@pytest.mark.host
def test_random_mlp_host(sizes, relu, flat):
    seed = sum(sizes) + relu
    cm = _compile_mlp(sizes, relu, flat, seed)
    x = _inputs(cm, seed)
    ref = cm.run(x, engine="reference")
    np.testing.assert_array_equal(cm.run(x, engine="host"), ref)
    # The outputs must not be degenerate (a constant output would hide a broken kernel).
    assert len(np.unique(ref)) > min(3, ref.size // N_INPUTS)


@pytest.mark.parametrize("sizes,relu,flat", MLPS, ids=MLP_IDS)
@pytest.mark.m33
def test_random_mlp_m33(sizes, relu, flat):
    seed = sum(sizes) + relu
    cm = _compile_mlp(sizes, relu, flat, seed)
    x = _inputs(cm, seed)
    np.testing.assert_array_equal(cm.run(x, engine="m33"), cm.run(x, engine="reference"))


@pytest.mark.parametrize("sizes,relu,flat", MLPS[:4])
def test_int8_tracks_float_within_quantization_error(sizes, relu, flat):
    """run_float (quantize -> int8 reference -> dequantize) stays close to PyTorch in float."""
    seed = sum(sizes) + 11
    cm = _compile_mlp(sizes, relu, flat, seed)
    model = make_mlp(sizes, relu, seed, flatten_from=flat)
    x = torch.randn((300,) + cm.input_shape[1:], generator=torch.Generator().manual_seed(seed + 1)) * 1.5
    with torch.no_grad():
        want = model(x).numpy()
    got = cm.run_float(x.numpy())
    out_scale = cm.output_qparams[0]
    span = want.max() - want.min()
    err = np.abs(got - want)
    # seeded weights and inputs: measured median and max at most 6% and 9% of their bounds
    assert np.median(err) <= 2 * out_scale + 0.02 * span
    assert err.max() <= 12 * out_scale + 0.05 * span
