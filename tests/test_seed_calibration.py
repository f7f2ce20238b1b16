"""The seed's second complaint: an int8 model that answers 4 for a 7. It must never pass silently.

The seed calibrated its PT2E graph on one `torch.randn(1, 28, 28)`. Over torch.manual_seed(0..19) that draw
gets the 7 right 8 times; draw 9 turns the 7 into a 4. tinyaot must warn at compile time, and a check on the
drawn digits must name the layer that clips and show the 7 becoming a 4.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits, demo_digits
from tinyaot.diagnostics import CalibrationWarning
from tinyaot.errors import CalibrationError

BAD_DRAW = 9  # torch.manual_seed(9): the 7 comes out as a 4 (measured; 12 of the draws 0..19 get the 7 wrong)


def _noise(seed: int = BAD_DRAW):
    torch.manual_seed(seed)
    return torch.randn(1, 28, 28)


def _compile_caught(*args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cm = tinyaot.compile(*args, **kw)
    return cm, [w for w in caught if issubclass(w.category, CalibrationWarning)]


@pytest.fixture(scope="module")
def seed_pt2e():
    pytest.importorskip("torchao", reason="torchao (the PT2E quantization flow) is not installed")
    from test_pt2e import quantize_pt2e

    example = _noise()
    converted = quantize_pt2e(build_seed_mlp(), example, [example[0]], per_channel=True)
    return converted, example


def test_seed_pt2e_flow_warns_that_calibration_was_noise(seed_pt2e):
    converted, example = seed_pt2e
    _, said = _compile_caught(converted, example, name="seed_q")
    assert any("example input looks like random noise" in str(w.message) for w in said)
    assert any("convert_pt2e" in str(w.message) for w in said)  # says where the fix goes


def test_seed_pt2e_check_on_digits_names_the_clipping_layer_and_the_7_as_4(seed_pt2e):
    converted, example = seed_pt2e
    images, labels = demo_digits()
    cm, said = _compile_caught(converted, example, name="seed_q", data=(images, labels))
    pred = cm.run(cm.quantize_input(images), engine="reference").argmax(-1)
    assert pred[3] == 4  # the seed's failure, reproduced
    check = cm.check
    assert (3, 7, 4) in check.output.disagreements  # "float says 7, int8 says 4"
    assert check.diagnosis is not None and check.diagnosis.cause == "range too narrow"
    clipping = [e.layer for e in check.layers if e.saturated > 0.01]
    assert check.diagnosis.layer == clipping[0] == "fc1"
    assert "convert_pt2e" in check.diagnosis.advice
    text = " ".join(str(w.message) for w in said)
    assert "float 7, int8 4" in text and "first fault: layer 'fc1'" in text
    assert "sample 3: float says 7, int8 says 4" in str(check)


def test_seed_pt2e_strict_refuses_it(seed_pt2e):
    converted, example = seed_pt2e
    images, labels = demo_digits()
    with pytest.raises(CalibrationError, match="strict=True"):
        tinyaot.compile(converted, example, name="seed_q", data=(images, labels), strict=True)


def test_pt2e_layer_errors_work_without_a_float_model(seed_pt2e):
    converted, example = seed_pt2e
    images, _ = demo_digits()
    cm, _ = _compile_caught(converted, example, name="seed_q")
    rep = cm.layer_errors(images)
    assert rep.reference == "dequantized float"
    assert [e.layer for e in rep.layers] == ["fc1", "fc2", "fc3"]


def test_tinyaot_ptq_on_one_random_tensor_warns_at_compile_time():
    model = build_seed_mlp()
    _, said = _compile_caught(model, _noise(), calibration=_noise(), name="seed_noise")
    codes = " ".join(str(w.message) for w in said)
    assert "only 1 calibration sample" in codes
    assert "look like random noise" in codes


def test_tinyaot_ptq_one_random_tensor_is_the_same_lottery_and_the_check_catches_it():
    images, labels = demo_digits()
    cm, said = _compile_caught(build_seed_mlp(), _noise(), calibration=_noise(), name="seed_noise",
                               data=(images, labels))
    assert cm.run(cm.quantize_input(images)).argmax(-1)[3] == 4
    assert cm.check.diagnosis.layer == "fc1" and cm.check.diagnosis.cause == "range too narrow"
    assert "calibrate on a few hundred real inputs" in cm.check.diagnosis.advice


def test_representative_digits_get_all_four_right_with_no_warning():
    images, labels = demo_digits()
    cm, said = _compile_caught(build_seed_mlp(), torch.from_numpy(images[:1]), calibration=calibration_digits(),
                               name="seed_ok", data=(images, labels))
    assert said == []
    assert cm.findings == []
    for engine in ("reference",):
        assert cm.run(cm.quantize_input(images), engine=engine).argmax(-1).tolist() == [0, 1, 4, 7]
    assert cm.check.output.argmax_agreement == 1.0 and cm.check.diagnosis is None
    assert min(e.sqnr_db for e in cm.check.layers) > 35  # seeded digits: measured 43.0 dB


def test_demo_random_calibration_shows_the_mistake_then_the_fix():
    from tinyaot.demo import run_seed_mistake

    m = run_seed_mistake()
    assert m.predictions == [0, 1, 4, 4] and m.expected == [0, 1, 4, 7]
    assert any("random noise" in w for w in m.warnings)
    assert m.report.diagnosis.layer == "fc1"
    d = m.to_dict()
    assert d["report"]["output"]["disagreements"] == [[3, 7, 4]]
    assert np.isfinite(d["report"]["layers"][0]["local_sqnr_db"])


def test_seed_pt2e_flow_is_a_lottery_and_every_draw_is_warned_about():
    pytest.importorskip("torchao", reason="torchao (the PT2E quantization flow) is not installed")
    from test_pt2e import quantize_pt2e

    images, _ = demo_digits()
    right, warned = 0, 0
    for seed in range(20):
        example = _noise(seed)
        converted = quantize_pt2e(build_seed_mlp(), example, [example[0]], per_channel=True)
        cm, said = _compile_caught(converted, example, name="seed_q")
        right += int(cm.run(cm.quantize_input(images)).argmax(-1)[3] == 7)
        warned += int(any("looks like random noise" in str(w.message) for w in said))
    # Fixed draws (torch.manual_seed(0..19)); another CPU's randn may differ in the last bits, which cannot move
    # either count: every draw's 7-or-not is 10+ int8 steps from changing (draw 14: the 7 at 125 trails two
    # logits saturated at 127), and every draw is far inside the noise check but draw 0 (excess kurtosis 0.477,
    # limit 0.5: a last-bit change moves it by 1e-7).
    assert warned == 20
    assert right == 8  # measured: the 7 survives 8 of 20 draws


def test_pt2e_calibrated_on_digits_with_a_digit_example_is_not_flagged():
    pytest.importorskip("torchao", reason="torchao (the PT2E quantization flow) is not installed")
    from test_pt2e import quantize_pt2e

    images, labels = demo_digits()
    example = torch.from_numpy(images[3:4])
    converted = quantize_pt2e(build_seed_mlp(), example, calibration_digits()[::4], per_channel=True)
    cm, said = _compile_caught(converted, example, name="seed_q_ok", data=(images, labels))
    assert said == [] and cm.findings == []
    assert cm.run(cm.quantize_input(images)).argmax(-1).tolist() == [0, 1, 4, 7]
    assert cm.check.diagnosis is None
