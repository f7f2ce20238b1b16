"""Every calibration check stays silent on real, clean data: a check that fires where nothing is wrong trains
users to ignore the one that matters (tests/test_calibration_checks.py and tests/test_seed_calibration.py hold
the faults each check must still catch).

The data: the three models trained on real MNIST digits (tests/mnist_models.py) with 256 training digits; the
MLPerf Tiny float models with the corpus's realistic inputs (tests/model_corpus.py, tests/mlperf_inputs.py); and
two random-initialized timm models as the corpus builds them, on its smooth image-like inputs, where the checks
used to fire: lcnet_050 on the draw of 64 images seeded 17 (at 'blocks.1.0.bn2' one sample reaches 3.7x the 90th
percentile and 2.4x the next sample, the top of a heavy but unbroken spread: keeping it leaves the others 134 of
the 256 steps; the outlier check called it a glitch, as it did on 4 of the draws seeded 2..25), and regnetx_002,
whose residual blocks end in a convolution with all-zero weights (timm zero-initializes their last BatchNorm),
which the dead-layer check blamed on the samples (the front end now folds such a branch away, x + 0; a zero layer
left standing is no finding either: test_calibration_checks.py).
Every input is a fixed file or seeded, so each outcome is fixed: none of these can fail by chance.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import torch
from conftest import shared_file

from tinyaot.ir.layout import torch_to_model_layout
from tinyaot.pipeline import float_passes, import_float_model
from tinyaot.quantize.calibrate import as_sample_batch, collect_ranges
from tinyaot.quantize.checks import check_ranges, check_samples
from tinyaot.quantize.lower import lower_to_int8

# Every check a calibration can trip (quantize/checks.py, quantize/lower.py); outlier_range is the outlier check
# as observer='minmax' words it.
CHECKS = ("too_few_samples", "noise_like", "constant_samples", "integer_samples", "suspicious_scale",
          "outlier_samples", "outlier_range", "dead_activation", "bias_clamped", "multiplier_clamped")


def calibrated(g, x):
    """The samples (in the caller's layout) and the calibration compile() makes of them."""
    samples = as_sample_batch(x, tuple(x.shape[1:]))
    return samples, collect_ranges(g, torch_to_model_layout(samples.batch, *g.io_layout_of(g.inputs[0])))


def findings(g, samples, calib) -> set[str]:
    """What compile() says about that calibration, under both observer wordings."""
    said = check_samples(samples, g) + check_ranges(g, calib, "auto") + check_ranges(g, calib, "minmax")
    said += lower_to_int8(g, calib.ranges)[1]
    return {f.code for f in said}


def _mnist(name: str):
    from mnist_models import load_mnist, trained

    path = str(shared_file("data/mnist10k.npz"))
    g = float_passes(import_float_model(trained(name, path), torch.zeros(1, 1, 28, 28)))
    return g, load_mnist(path).x_train[:256]


def _corpus(name: str, n: int, seed: int | None = None):
    import model_corpus as mc

    entry = next(e for e in mc.entries() if e.name.split()[0] == name)
    if entry.is_tflite:
        from tinyaot.frontend.tflite import from_tflite_float

        g = float_passes(from_tflite_float(str(shared_file(f"models/mlperf_tiny/{name}"))))
    else:
        from vision_models import import_timm

        try:
            import_timm()
        except ImportError:
            pytest.skip("timm (the real-model corpus's test extra) is not installed")
        torch.manual_seed(0)
        g = float_passes(import_float_model(entry.model(), torch.zeros(entry.example)))
    return g, entry.inputs(n, mc.CAL_SEED if seed is None else seed)


# 256 samples where they calibrate fast; a 96x96 network calibrates at 0.02-0.1 s a sample here, so 64
CASES = {
    "mnist_mlp": lambda: _mnist("mlp"),
    "mnist_lenet5": lambda: _mnist("lenet5"),
    "mnist_dscnn": lambda: _mnist("dscnn"),
    "kws": lambda: _corpus("kws_ref_model_float32.tflite", 256),
    "ic": lambda: _corpus("pretrainedResnet.tflite", 128),
    "ad": lambda: _corpus("ad01_fp32.tflite", 256),
    "vww": lambda: _corpus("vww_96_float.tflite", 64),
    "lcnet_050": lambda: _corpus("lcnet_050", 64, seed=17),
    "regnetx_002": lambda: _corpus("regnetx_002", 64),
}


@cache
def _run(case: str):
    g, x = CASES[case]()
    samples, calib = calibrated(g, x)
    return frozenset(findings(g, samples, calib)), calib


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("case", list(CASES))
def test_no_check_fires_on_clean_real_data(case, check):
    assert check not in _run(case)[0]


def test_the_lcnet_draw_is_the_reported_case():
    """Guards the lcnet_050 case above: its top sample is past the 3x-the-90th-percentile line the old rule drew
    (measured 3.66x) and 2.38x the next sample, short of the 4x gap (64 of 256 steps) an outlier needs."""
    s = _run("lcnet_050")[1].stats["blocks_1_0_bn2_act_out"]
    mag = np.sort(np.maximum(np.abs(s.sample_lo), np.abs(s.sample_hi)))
    assert mag[-1] > 3.5 * np.percentile(mag, 90) and mag[-1] < 2.5 * mag[-2]


@pytest.mark.parametrize("case", ["mnist_dscnn", "kws"])
def test_the_check_on_held_out_data_is_silent_on_clean_data(case):
    """compile(data=) on held-out samples from the same source (MNIST digits 8,000 on; the corpus's evaluation
    draw). On KWS it used to report its softmax as clipping 1.6% of its values: probabilities of 1, which the
    softmax's fixed int8 range (0 .. 255/256, the scheme's, not the calibration's) rounds one step down."""
    import tinyaot

    _, x = CASES[case]()
    if case == "kws":
        import model_corpus as mc

        entry = next(e for e in mc.entries() if e.name == "kws_ref_model_float32.tflite")
        cm = tinyaot.compile(str(entry.model()), calibration=x, data=entry.inputs(200, mc.EVAL_SEED))
    else:
        from mnist_models import load_mnist, trained

        path = str(shared_file("data/mnist10k.npz"))
        data = load_mnist(path)
        cm = tinyaot.compile(trained("dscnn", path), torch.zeros(1, 1, 28, 28), calibration=x,
                             data=(data.x_test[:500], data.y_test[:500]))
    assert cm.check.findings == [] and cm.check.diagnosis is None
