"""Calibration survives real data: models trained on real MNIST digits keep their accuracy in int8 when the
200 calibration samples hold gross outliers, and the default observer never loses to min/max on the zoo.

The accuracy tests train three small models on mnist10k (tests/mnist_models.py) and score int8 on the
2,000 held-out digits with the generated C on the host. The zoo test compares the output SQNR (int8 vs the
float graph) of the default observer with min/max, both calibrated on the same 200 samples.

None of these can fail by chance: the weights are committed and the data are a fixed file or seeded, so each
accuracy is a fixed count of the 2,000 held-out digits, which a float's last bits could move only through a logit
tie. Measured: int8 is 1-3 digits above float on every model and outlier count (mlp 92.90%, lenet5 96.75%, dscnn
94.65%), 12 digits inside the half-point bound and 22 inside the one-point bound; min/max with the outliers scores
10.85% / 84.30% / 11.00%, 147+ digits below its bound. On the zoo the default observer keeps min/max's range on
every tensor (no zoo sample is an outlier), so the two give the same C byte for byte and the same SQNR; the test
runs the held-out samples only where the C differs.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import shared_file
from mnist_models import MODELS, float_predictions, load_mnist, trained, with_outliers
from zoo import ZOO, synthetic_data
from zoo import trained as zoo_trained

import tinyaot

pytestmark = pytest.mark.filterwarnings("ignore::tinyaot.diagnostics.CalibrationWarning")

# The SQNR of two observers is measured on the same 500 held-out samples, so their difference is paired.
# Where the observers differ, its sampling error (paired bootstrap over those samples, benchmarks/calibration.py)
# is 0.07-0.2 dB on the zoo; a deficit below 0.1 dB (2.3% more noise power) cannot be told from zero on this data.
SQNR_TOLERANCE_DB = 0.1
N_SQNR_HELD_OUT = 500  # as benchmarks/calibration.py


@pytest.fixture(scope="session")
def mnist_runs():
    """(data, run): run(model, n_outliers, observer) -> (cm, float accuracy, int8 accuracy), cached."""
    path = str(shared_file("data/mnist10k.npz"))
    data = load_mnist(path)
    floats: dict[str, np.ndarray] = {}
    runs: dict[tuple, tuple] = {}

    def run(name: str, n_outliers: int, observer: str = "auto"):
        key = (name, n_outliers, observer)
        if key not in runs:
            model = trained(name, path)
            if name not in floats:
                floats[name] = float_predictions(model, data.x_test)
            cal = with_outliers(data.calibration, n_outliers)
            cm = tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, observer=observer,
                                 name=f"mnist_{name}")
            got = cm.run_float(cm.to_model_layout(data.x_test), engine="host").reshape(len(data.x_test), -1)
            runs[key] = (cm, (floats[name] == data.y_test).mean(), (got.argmax(1) == data.y_test).mean())
        return runs[key]

    return data, run


@pytest.mark.host
@pytest.mark.slow
@pytest.mark.parametrize("n_outliers", [1, 2])
@pytest.mark.parametrize("name", list(MODELS))
def test_int8_within_1_point_of_float_with_gross_outliers(mnist_runs, name, n_outliers):
    _, run = mnist_runs
    cm, float_acc, int8_acc = run(name, n_outliers)
    print(f"{name}, {n_outliers} outlier(s): float {float_acc:.4f} int8 {int8_acc:.4f}")
    assert float_acc > 0.90  # the model learned the digits
    assert int8_acc >= float_acc - 0.01, f"{name}: int8 {int8_acc:.4f} vs float {float_acc:.4f}"


@pytest.mark.host
@pytest.mark.slow
@pytest.mark.parametrize("n_outliers", [0, 1, 2])
@pytest.mark.parametrize("name", ["lenet5", "dscnn"])
def test_cnn_int8_within_half_a_point_of_float(mnist_runs, name, n_outliers):
    _, run = mnist_runs
    cm, float_acc, int8_acc = run(name, n_outliers)
    print(f"{name}, {n_outliers} outlier(s): float {float_acc:.4f} int8 {int8_acc:.4f}")
    assert float_acc > 0.90
    assert int8_acc >= float_acc - 0.005, f"{name}: int8 {int8_acc:.4f} vs float {float_acc:.4f}"


@pytest.mark.host
@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_the_outliers_are_gross_enough_to_break_minmax(mnist_runs, name):
    """Guards the tests above: these calibration sets really do ruin a min/max calibration."""
    _, run = mnist_runs
    _, float_acc, minmax_acc = run(name, 2, "minmax")
    assert minmax_acc < float_acc - 0.05, f"{name}: min/max kept {minmax_acc:.4f} (float {float_acc:.4f})"


@pytest.mark.host
@pytest.mark.slow
@pytest.mark.parametrize("n_outliers", [1, 2])
def test_outlier_samples_are_left_out_of_the_input_range(mnist_runs, n_outliers):
    _, run = mnist_runs
    cm, *_ = run("mlp", n_outliers)
    stats = cm.calibration.stats[cm.graph.inputs[0]]
    assert set(stats.outliers) == set(range(n_outliers))
    assert stats.range.hi <= 1.0 + 1e-9  # the real digits' range, not the glitch's


# The zoo models whose activations the observers shape (the README's list): the recurrent, attention and multi-I/O
# entries add no observer case of their own and test_zoo checks their int8-vs-float agreement.
OBSERVER_ZOO = ("lenet5", "dscnn", "mobilenetv2", "resnet8", "autoencoder", "branch_concat", "sensor_conv1d", "lut_net")
ONE_IO = [e for e in ZOO if e.name in OBSERVER_ZOO]


@pytest.fixture(scope="module", params=ONE_IO, ids=[e.name for e in ONE_IO])
def zoo_sqnr(request):
    """Output SQNR (dB) of int8 vs float on held-out samples, per observer, for one zoo model."""
    entry = request.param
    model = zoo_trained(entry)
    cal = synthetic_data(entry, 500, seed=1)[0][:200]  # the zoo's calibration set (tests/test_zoo.py)
    held_out = synthetic_data(entry, N_SQNR_HELD_OUT, seed=2)[0]
    cms = {observer: tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, observer=observer,
                                     name=entry.name) for observer in ("minmax", "auto")}
    if cms["auto"].c_sources.files == cms["minmax"].c_sources.files:
        # the same ranges, so the same C byte for byte: the same SQNR on any samples, no run needed
        return entry, {"minmax": 0.0, "auto": 0.0, "same_c": True}
    out, want = {}, None
    for observer, cm in cms.items():
        x = cm.to_model_layout(held_out)
        if want is None:
            want = np.asarray(cm.float_reference(x), np.float64).reshape(len(x), -1)
        got = cm.run_float(x, engine="host").reshape(want.shape)
        out[observer] = 10 * np.log10(np.sum(want**2) / max(np.sum((got - want) ** 2), 1e-30))
    return entry, out


@pytest.mark.host
@pytest.mark.slow
def test_default_observer_no_worse_than_minmax_on_the_zoo(zoo_sqnr):
    entry, sqnr = zoo_sqnr
    if sqnr.get("same_c"):
        print(f"{entry.name}: both observers give the same C, so the same SQNR")
    else:
        print(f"{entry.name}: SQNR minmax {sqnr['minmax']:.2f} dB, auto {sqnr['auto']:.2f} dB")
    assert sqnr["auto"] >= sqnr["minmax"] - SQNR_TOLERANCE_DB, (
        f"{entry.name}: the default observer's output SQNR {sqnr['auto']:.2f} dB is "
        f"{sqnr['minmax'] - sqnr['auto']:.2f} dB below min/max's ({sqnr['minmax']:.2f} dB)")
