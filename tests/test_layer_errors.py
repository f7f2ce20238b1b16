"""Per-layer int8 vs float error, and the warning when calibration does not cover the data."""
from __future__ import annotations

import numpy as np
import torch
from conftest import make_mlp

import tinyaot


def _compiled(cal_scale: float):
    model = make_mlp([12, 16, 8, 4], True, 5)
    cal = torch.randn(200, 12) * cal_scale
    return model, tinyaot.compile(model, torch.zeros(1, 12), calibration=cal, name="err")


def test_well_calibrated_layers_have_small_error_and_no_warning():
    _, cm = _compiled(1.0)
    x = np.random.default_rng(0).normal(size=(100, 12))
    rep = cm.layer_errors(x)
    assert [e.layer for e in rep.layers] == ["0", "2", "4"]
    for e in rep.layers:
        assert e.sqnr_db > 25 and e.mean_abs_steps < 1.5 and e.saturated < 0.01
    assert rep.warnings == []
    d = rep.to_dict()
    assert d["samples"] == 100 and len(d["layers"]) == 3
    assert "SQNR" in str(rep)


def test_narrow_calibration_is_flagged_per_layer():
    _, cm = _compiled(0.2)  # calibrated on a fifth of the real spread
    x = np.random.default_rng(0).normal(size=(100, 12))
    rep = cm.layer_errors(x)
    assert any(e.saturated > 0.05 for e in rep.layers)
    assert rep.warnings and "calibrate on data that covers" in rep.warnings[0].lower()
    worst = min(e.sqnr_db for e in rep.layers)
    assert worst < 20


def test_run_float_warns_when_inputs_saturate():
    _, cm = _compiled(0.2)
    x = np.random.default_rng(1).normal(size=(50, 12))
    import pytest

    with pytest.warns(UserWarning, match="outside the calibrated range"):
        cm.run_float(x)
