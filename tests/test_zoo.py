"""The model zoo end to end: compiles from PyTorch as written, bit-exact on every engine, int8 tracks float."""
from __future__ import annotations

import re

import mnist_models
import numpy as np
import pytest
import torch
from conftest import shared_file
from zoo import ZOO, synthetic_data, trained

import tinyaot

N_BITEXACT = 20
N_AGREE = 300
# More held-out samples where int8's top-1 ever differs from float's. sensor_conv1d's float logits come within 0.005
# of a tie on some inputs, so int8 flips 0.5% of its predictions: 3 of the 300, 2% bound 3 samples away; with 2,000
# more, 11 of 2,300, 35 samples inside it. Every other model agrees on all 2,300 (float top-2 gaps >= 0.1).
MORE_AGREE = {"sensor_conv1d": 2000}


# Models with several inputs or outputs have their own end-to-end tests (tests/test_multi_io.py).
SINGLE = [e for e in ZOO if e.inputs == 1 and e.outputs == 1]
# Size mode's kernels (int8 weights widened as read: the pairs conv and the wide FC) on models that cover each of
# their shapes (strided, depthwise-separable, grouped, residual, 1-D, transposed, an FC stack); the others run speed
# mode's portable path only.
SIZE_MODE_MODELS = ("dscnn", "mobilenetv2", "resnet8", "shufflenet", "se_cnn", "conv_decoder", "sensor_conv1d",
                    "autoencoder")


@pytest.fixture(scope="module", params=SINGLE, ids=[e.name for e in SINGLE])
def compiled(request):
    entry = request.param
    model = trained(entry)
    x, y = synthetic_data(entry, 200 + N_AGREE, seed=1)
    cm = tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x[:200], name=entry.name)
    return entry, model, cm, x[200:], y[200:]


@pytest.mark.host
@pytest.mark.slow
def test_bit_exact_on_the_host(compiled):
    entry, model, cm, x, _ = compiled
    xq = cm.quantize_input(cm.to_model_layout(x[:N_BITEXACT]))
    np.testing.assert_array_equal(cm.run(xq, engine="host"), cm.run(xq, engine="reference"))


@pytest.mark.m33
@pytest.mark.slow
def test_bit_exact_on_the_m33(compiled):
    entry, model, cm, x, _ = compiled
    xq = cm.quantize_input(cm.to_model_layout(x[:N_BITEXACT]))
    np.testing.assert_array_equal(cm.run(xq, engine="m33"), cm.run(xq, engine="reference"))
    assert cm.last_m33.instructions > 0


@pytest.mark.m33
@pytest.mark.slow
def test_portable_path_equals_the_dsp_path_on_the_m33(compiled, tmp_path):
    """The same generated C built for an M33 without the DSP extension (the kernels' portable C paths) gives the
    bytes of the DSP build, in speed mode (int16 weights) and in size mode (int8 weights widened as read)."""
    from tinyaot.targets.m33 import run_m33

    entry, model, cm, x, _ = compiled
    xq = cm.quantize_input(cm.to_model_layout(x[:4]))
    modes = [("speed", cm)]
    if entry.name in SIZE_MODE_MODELS:
        modes.append(("size", tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x[:200], name=entry.name,
                                              optimize="size")))
    for mode, m in modes:
        want = m.run(xq, engine="reference")
        if mode == "size":  # speed mode's DSP build: test_bit_exact_on_the_m33
            assert np.array_equal(m.run(xq, engine="m33"), want), f"{mode}: DSP build differs from the reference"
        m.export(tmp_path / mode)
        flat = np.asarray(xq).reshape(len(xq), -1).view(np.int8)
        portable = run_m33(tmp_path / mode, m.name, flat, int(np.prod(want.shape[1:])), dsp=False,
                           build_dir=tmp_path / f"{mode}_build")
        assert np.array_equal(portable.outputs.reshape(want.shape), want), f"{mode}: portable build differs"


@pytest.mark.host
@pytest.mark.slow
def test_int8_agrees_with_float(compiled):
    entry, model, cm, x, y = compiled
    if entry.name in MORE_AGREE:
        x = np.concatenate([x, synthetic_data(entry, MORE_AGREE[entry.name], seed=3)[0]])
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    if want.ndim == 4:  # an image out (the conv decoder): channels-last in the compiled model
        want = want.transpose(0, 2, 3, 1)
    got = cm.run_float(cm.to_model_layout(x), engine="host").reshape(want.shape)
    if entry.classes:
        agreement = (got.argmax(-1) == want.argmax(-1)).mean()
        assert agreement >= 0.98, f"{entry.name}: top-1 agreement {agreement:.3f}"
    else:  # the autoencoder: reconstruction within a few output steps (measured 2.2%)
        rel = np.abs(got - want).mean() / np.abs(want).mean()
        assert rel < 0.05, f"{entry.name}: relative error {rel:.3f}"


@pytest.mark.arm
def test_plan_never_above_the_layer_by_layer_bound(compiled):
    entry, model, cm, *_ = compiled
    align = cm.plan.alignment  # the arena's size is a multiple of it (gru_kws: a 637-byte input, bound 1053)
    assert cm.arena_bytes <= -(-cm.lower_bound_bytes // align) * align
    source_bound = getattr(cm.plan, "source_lower_bound", None)
    assert source_bound is not None and cm.lower_bound_bytes <= source_bound  # the chosen order never loses
    rep = cm.report().to_dict()
    assert rep["arena_bytes"] == cm.arena_bytes and rep["lower_bound_bytes"] == cm.lower_bound_bytes


def test_no_runtime_permute_and_no_float_in_generated_c(compiled):
    """No layout transpose (the input's layout is converted at compile time); attention's head split and merge
    are real transposes, exactly as many as the entry declares."""
    entry, model, cm, *_ = compiled
    assert [n.op for n in cm.graph.nodes].count("transpose") == entry.head_transposes
    for fname, text in cm.c_sources.files.items():
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        if fname.endswith(".c"):
            assert not re.search(r"\b(float|double)\b", code), fname
            assert entry.head_transposes or not re.search(r"\btinyaot_transpose_(s8|params)\b", code), fname
    if len(entry.shape) == 3 and entry.shape[0] > 1 and entry.shape[1] > 1:
        assert cm.input_layout == "NHWC"
        assert f'#define {entry.name.upper()}_INPUT_LAYOUT "NHWC"' in cm.c_sources.files[f"{entry.name}.h"]


def test_nchw_input_option_adds_exactly_one_transpose():
    entry = next(e for e in ZOO if e.name == "branch_concat")
    model = trained(entry)
    x, _ = synthetic_data(entry, 60, seed=2)
    nhwc = tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x[:50], name="nhwc")
    nchw = tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x[:50], name="nchw", input_layout="NCHW")
    assert [n.op for n in nchw.graph.nodes].count("transpose") == 1 and nchw.input_layout == "NCHW"
    xq = nhwc.quantize_input(nhwc.to_model_layout(x[50:]))
    xq_nchw = np.ascontiguousarray(xq.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(nchw.run(xq_nchw), nhwc.run(xq))


@pytest.mark.host
@pytest.mark.slow
def test_lenet_on_mnist_keeps_accuracy():
    data = np.load(shared_file("data/mnist10k.npz"))
    images = (data["images"].astype(np.float32) / 255.0)[:, None]
    labels = data["labels"].astype(np.int64)
    model = mnist_models.trained("lenet5")  # trained once on digits 0..7999, committed (tests/trained_weights.py)
    xt = torch.from_numpy(images[:8000])
    with torch.no_grad():
        float_pred = model(torch.from_numpy(images[8000:])).argmax(1).numpy()
    cm = tinyaot.compile(model, xt[:1], calibration=xt[:500], name="lenet")
    int8_pred = cm.run_float(cm.to_model_layout(images[8000:]), engine="host").argmax(-1)
    float_acc = (float_pred == labels[8000:]).mean()
    int8_acc = (int8_pred == labels[8000:]).mean()
    print(f"LeNet-5 MNIST: float {float_acc:.4f} int8 {int8_acc:.4f}")
    # Committed weights, fixed digits: float 96.65% (33 digits above 95%), int8 96.80%, 13 digits inside the bound.
    assert float_acc > 0.95
    assert int8_acc >= float_acc - 0.005


def test_branchy_concat_model_order_beats_the_source_order():
    from tinyaot.plan.schedule import schedule

    entry = next(e for e in ZOO if e.name == "branch_concat")
    model = trained(entry)
    x, _ = synthetic_data(entry, 60, seed=2)
    cm = tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x[:50], name="branchy")
    source_bound = _source_order_bound(model, x)
    assert source_bound == 2048 + 4096 + 8192  # source order: x, the right branch's output and left1 at once
    assert cm.lower_bound_bytes == 2048 + 8192 + 512 < source_bound  # left branch first, right branch after
    assert cm.arena_bytes <= cm.lower_bound_bytes
    assert schedule(cm.graph).peak == cm.lower_bound_bytes  # the compiled graph is in the chosen order


def _source_order_bound(model, x) -> int:
    from tinyaot.pipeline import float_passes, import_float_model
    from tinyaot.plan import buffers_of, lower_bound

    g = float_passes(import_float_model(model, torch.from_numpy(x[:1])))
    return lower_bound(buffers_of(g), len(g.nodes)) // 4  # float32 graph: bytes / 4 = int8 bytes
