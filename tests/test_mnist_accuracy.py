"""Real data: an MLP trained on MNIST (once, its weights committed) keeps its accuracy in int8 on the generated C."""
from __future__ import annotations

import mnist_models
import numpy as np
import pytest
import torch
from conftest import shared_file

import tinyaot


@pytest.fixture(scope="module")
def mnist_run():
    data = np.load(shared_file("data/mnist10k.npz"))
    images = data["images"].astype(np.float32) / 255.0
    labels = data["labels"].astype(np.int64)
    x_train = torch.from_numpy(images[:8000])
    x_test, y_test = images[8000:], labels[8000:]
    model = mnist_models.trained("mlp")  # 784-64-32-10, trained once and committed (tests/trained_weights.py)
    with torch.no_grad():
        float_pred = model(torch.from_numpy(x_test)).argmax(1).numpy()
    cm = tinyaot.compile(model, x_train[:1], calibration=x_train[:500], name="mnist_mlp")
    return cm, x_test, y_test, float_pred


@pytest.mark.host
@pytest.mark.slow
def test_int8_accuracy_holds_on_host_c(mnist_run):
    cm, x_test, y_test, float_pred = mnist_run
    int8_pred = cm.run_float(x_test, engine="host").argmax(-1)
    float_acc = (float_pred == y_test).mean()
    int8_acc = (int8_pred == y_test).mean()
    agreement = (int8_pred == float_pred).mean()
    print(f"float {float_acc:.4f} int8 {int8_acc:.4f} agreement {agreement:.4f}")
    # Committed weights, fixed digits: float 92.80% (56 digits above 90%), int8 92.90% (22 inside the bound), int8
    # and float differ on 6 of the 2,000 (60 allowed).
    assert float_acc > 0.90  # the model really learned something
    assert int8_acc >= float_acc - 0.01
    assert agreement >= 0.97


@pytest.mark.host
def test_reference_equals_host_on_real_digits(mnist_run):
    cm, x_test, _, _ = mnist_run
    x_q = cm.quantize_input(x_test[:300])
    np.testing.assert_array_equal(cm.run(x_q, engine="reference"), cm.run(x_q, engine="host"))


def test_input_is_int8_with_published_qparams(mnist_run):
    cm, *_ = mnist_run
    scale, zp = cm.input_qparams
    assert zp == -128 and abs(scale - 1 / 255) < 1e-6  # images in [0, 1] map onto the full int8 range
    header = cm.c_sources.files["mnist_mlp.h"]
    assert "#define MNIST_MLP_INPUT_ZERO_POINT (-128)" in header
    assert f"#define MNIST_MLP_OUTPUT_ZERO_POINT ({cm.output_qparams[1]})" in header
    assert cm.arena_bytes == cm.lower_bound_bytes == 784 + 64
