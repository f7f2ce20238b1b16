"""Per-layer int8 vs float error, and the warning when calibration does not cover the data."""
from __future__ import annotations

import numpy as np
import torch
from conftest import make_mlp

import tinyaot


def _compiled(cal_scale: float):
    model = make_mlp([12, 16, 8, 4], True, 5)
    cal = torch.randn(200, 12, generator=torch.Generator().manual_seed(0)) * cal_scale
    return model, tinyaot.compile(model, torch.zeros(1, 12), calibration=cal, name="err")


def test_well_calibrated_layers_have_small_error_and_no_warning():
    """Held-out samples of the calibration's distribution. A few reach past all 200 calibration samples and
    saturate, so the report is asked for 2,000 of them (the method stops at 200), where that is a small, settled
    share. Measured: at most 0.3% of a layer's values saturate (24 of 8,000; bound 1%), SQNR >= 30.7 dB (bound
    25), mean error <= 0.45 steps (bound 1.5). On 100 samples one saturated value was a quarter of the bound."""
    from tinyaot.report.quant_error import layer_errors

    _, cm = _compiled(1.0)
    x = np.random.default_rng(0).normal(size=(2000, 12))
    rep = layer_errors(cm, x, max_samples=len(x))
    assert [e.layer for e in rep.layers] == ["0", "2", "4"]
    for e in rep.layers:
        assert e.sqnr_db > 25 and e.mean_abs_steps < 1.5 and e.saturated < 0.01
    assert rep.warnings == []
    d = rep.to_dict()
    assert d["samples"] == 2000 and len(d["layers"]) == 3
    assert "SQNR" in str(rep)


def test_narrow_calibration_is_flagged_per_layer():
    _, cm = _compiled(0.2)  # calibrated on a fifth of the real spread
    x = np.random.default_rng(0).normal(size=(100, 12))
    rep = cm.layer_errors(x)
    assert any(e.saturated > 0.05 for e in rep.layers)  # seeded: 17%, 9% and 25% saturate
    assert rep.warnings and "calibrate on data that covers" in rep.warnings[0].lower()
    worst = min(e.sqnr_db for e in rep.layers)
    assert worst < 20  # measured 5.5 dB


def test_run_float_warns_when_inputs_saturate():
    _, cm = _compiled(0.2)
    x = np.random.default_rng(1).normal(size=(50, 12))
    import pytest

    with pytest.warns(UserWarning, match="outside the calibrated range"):
        cm.run_float(x)


def test_layer_trace_equals_the_planned_run_on_an_in_place_cnn():
    """The per-layer report runs kernels outside the arena; on a model planned with in-place ring kernels its
    output bytes must still be the reference interpreter's."""
    from zoo import ZOO, synthetic_data, trained

    from tinyaot.ref.interpreter import prepare_all
    from tinyaot.report.quant_error import trace_int8

    entry = next(e for e in ZOO if e.name == "dscnn")
    x, _ = synthetic_data(entry, 40, 1)
    cm = tinyaot.compile(trained(entry), torch.from_numpy(x[:1]), calibration=x[:32], name="dscnn_trace",
                         optimize="memory")  # speed mode runs its depthwise layers on the rows kernel instead
    assert cm.plan.rings  # some node runs through a ring kernel: the trace does not
    xq = cm.quantize_input(cm.to_model_layout(x[32:]))
    traced = trace_int8(cm.graph, prepare_all(cm.graph), xq)
    last = cm.graph.nodes[-1].name
    np.testing.assert_array_equal(np.stack(traced[last]).reshape(len(xq), -1),
                                  cm.run(xq, engine="reference").reshape(len(xq), -1))


def test_imported_int8_tflite_is_checked_against_its_dequantized_float():
    from conftest import shared_file

    path = shared_file("models/mlperf_tiny/kws_ref_model.tflite")
    real = np.load(shared_file("models/mlperf_tiny/kws_input_int8_1x49x10x1.npy"))
    cm = tinyaot.compile(str(path), name="kws_check")
    s, z = cm.input_qparams
    x = (real.astype(np.float64) - z) * s
    rep = cm.layer_errors(x)
    assert rep.reference == "dequantized float" and len(rep.layers) == 12
    assert all(e.sqnr_db > 15 for e in rep.layers)  # measured 18.7-31 dB on the real input
    assert rep.output.argmax_agreement == 1.0


def test_int8_tflite_checked_against_the_float_tflite_it_came_from():
    from conftest import shared_file

    d = "models/mlperf_tiny/"
    path, float_path = shared_file(d + "kws_ref_model.tflite"), shared_file(d + "kws_ref_model_float32.tflite")
    real = np.load(shared_file(d + "kws_input_int8_1x49x10x1.npy"))
    s, z = tinyaot.compile(str(path), name="kws_q").input_qparams
    x = (real.astype(np.float64) - z) * s
    cm = tinyaot.compile(str(path), name="kws_q", data=x, float_model=str(float_path))
    vs_float = cm.check.extra["float .tflite"]
    assert vs_float["argmax_agreement"] == 1.0 and vs_float["sqnr_db"] > 10  # both say "on" on the real input
    assert "float .tflite" in cm.check.to_dict()


def test_an_outlier_that_set_the_range_is_named_as_the_cause():
    import warnings

    from tinyaot.demo_model import build_seed_mlp, calibration_digits

    cal = calibration_digits()
    cal[17] *= 50  # one mis-scaled sample
    check = cal[::8]  # representative digits, without the outlier
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = tinyaot.compile(build_seed_mlp(), torch.zeros(1, 28, 28), calibration=cal, observer="minmax",
                              data=check)
        good = tinyaot.compile(build_seed_mlp(), torch.zeros(1, 28, 28), calibration=cal, data=check)
    d = bad.check.diagnosis
    assert d.layer == "fc1" and d.cause == "outlier set the range" and "[17]" in d.message
    assert bad.check.layers[0].steps_used < 17 and good.check.layers[0].steps_used > 200
    assert good.check.diagnosis is None and good.check.output.argmax_agreement == 1.0
    assert good.check.layers[-1].sqnr_db > bad.check.layers[-1].sqnr_db + 15  # seeded digits: 40.9 vs 21.9 dB


def test_diagnosis_of_an_error_jump_and_of_a_noisy_table_activation():
    from types import SimpleNamespace

    from tinyaot.report.quant_error import LayerError, diagnose

    def row(layer, op, sqnr, local, steps=200.0):
        return LayerError(layer, op, layer, 0.1, sqnr, local, 0.3, 1.0, 0.0, steps, -1.0, 1.0, -12.8, 12.7)

    cm = SimpleNamespace(findings=[], calibration=None)
    fine = (row("a", "conv2d", 40, 40), row("b", "conv2d", 38, 39))
    assert diagnose(cm, fine, None) is None
    jump = fine + (row("c", "fully_connected", 20, 21),)
    d = diagnose(cm, jump, None)
    assert d.layer == "c" and d.cause == "error jump" and "layer_observers" in d.advice
    table = fine + (row("t", "lut", 30, 12),)
    d = diagnose(cm, table, None)
    assert d.layer == "t" and d.cause == "saturating activation"
