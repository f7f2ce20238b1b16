"""The real-model corpus (tests/model_corpus.py), a bounded slice of benchmarks/corpus.py on every run: every
quantized .tflite of TFLite Micro's examples equals TFLite Micro on every output byte (reference and host C),
every float one quantizes with tinyaot's calibration and tracks its float model, and torchvision / timm models
as the libraries build them compile with reference == host C. (The MLPerf Tiny models have their own, longer
tests: test_tflite_import.py, test_tflite_float.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import have_host_cc
from model_corpus import CAL_SEED, EVAL_SEED, SHARED, pytorch_entries, smooth_images, tflite_entries

import tinyaot

pytestmark = pytest.mark.host
N_RANDOM = 4
# The stateful and recurrent examples have their own, deeper tests (every tensor and state against TFLM, the M33):
# test_tflite_svdf.py (keyword_scrambled), test_tflite_lstm_models.py (the two int8 LSTMs and the float one).
OWN_TESTS = {"keyword_scrambled.tflite", "micro_speech_lstm.tflite", "trained_lstm_int8.tflite",
             "trained_lstm.tflite"}
# The 224x224 MobileNetV2 (300 M MACs, 7 MB of constants) runs only in benchmarks/corpus.py: its ops are the MLPerf
# models', tested bit-exact with TFLM in test_tflite_import.py, and it alone would take half a minute here.
TOO_BIG = {"mobilenet_v2_quantized_1x3x224x224.tflite"}
TFLITE = [e for e in tflite_entries() if e.source == "tflm_examples" and e.name not in OWN_TESTS | TOO_BIG]
NOT_YET: dict[str, str] = {}  # file -> why it is refused; strict: the day one imports, its test says so
QUANTIZED = [e for e in TFLITE if e.inputs is None]
FLOAT = [e for e in TFLITE if e.inputs is not None]


def _params(entries):
    return [pytest.param(e, id=e.name, marks=[pytest.mark.xfail(reason=NOT_YET[e.name], strict=True)]
                         if e.name in NOT_YET else []) for e in entries]


def _need_shared():
    if not SHARED.is_dir():
        pytest.skip(f"the shared/ test data folder is not at {SHARED} (set TINYAOT_SHARED)")


@pytest.fixture(autouse=True)
def _host_cc():
    if not have_host_cc():
        pytest.skip("no host C compiler (gcc or $CC)")


def _tflm(model: bytes, x: np.ndarray) -> np.ndarray:
    """TFLite Micro on a batch as tinyaot's run() takes it: one invoke per sample on one interpreter, in order (a
    model with state, an SVDF's or an LSTM's, carries it from one invoke to the next in TFLM as in tinyaot)."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=max(1 << 20, 4 * len(model)))
    out = []
    for sample in x:
        interp.set_input(sample[None], 0)
        interp.invoke()
        out.append(np.array(interp.get_output(0)))
    return np.stack(out)


@pytest.mark.parametrize("entry", _params(QUANTIZED))
def test_quantized_tflite_equals_tflm(entry):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    _need_shared()
    cm = tinyaot.compile(entry.model(), name="m")
    info = np.iinfo(cm.input_dtype)
    rng = np.random.default_rng(len(entry.name))
    x = rng.integers(info.min, info.max + 1, size=(N_RANDOM,) + tuple(cm.input_shape[1:])).astype(cm.input_dtype)
    want = _tflm(entry.model().read_bytes(), x)
    ref = cm.run(x, engine="reference")
    np.testing.assert_array_equal(ref.reshape(want.shape), want)
    np.testing.assert_array_equal(cm.run(x, engine="host"), ref)


@pytest.mark.parametrize("entry", _params(FLOAT))
def test_float_tflite_quantizes(entry):
    """Calibrated on deterministic realistic inputs, the int8 model tracks its float model on others."""
    _need_shared()
    cm = tinyaot.compile(entry.model(), calibration=entry.inputs(64, CAL_SEED), name="m")
    x = entry.inputs(16, EVAL_SEED)
    q = cm.quantize_input(x)
    ref = cm.run(q, engine="reference")
    np.testing.assert_array_equal(cm.run(q, engine="host"), ref)
    want = np.asarray(cm.float_reference(x), np.float64).reshape(len(x), -1)
    got = cm.dequantize_output(ref).reshape(len(x), -1)
    sqnr = 10 * np.log10(np.sum(want**2) / np.sum((want - got) ** 2))
    assert sqnr > 15, f"int8 output tracks float at only {sqnr:.1f} dB"


# A bounded slice, one model per path the corpus needed that no other test file covers with a library's own model
# (ceil-mode pooling; MobileViT-v2's GroupNorm, 6-D unfold and linear attention; EdgeNeXt's F.normalize), at a
# test's resolution and with a 10-class head so each builds in seconds. benchmarks/corpus.py runs every corpus
# model as listed. (ShuffleNetV2: test_slicing.py; timm's ViT: test_vision_transformers.py; standalone BatchNorm
# and the whole BC-ResNet: test_robustness.py; in-place activations: test_pytorch_inplace_ops.py; the spellings of
# SK-ResNet, ResNeSt, XCiT and CoaT in small models: test_pytorch_timm_ops.py.)
VISION = {"squeezenet1_1 96x96": 64, "mobilevitv2_050 96x96": 64, "edgenext_xx_small 96x96": 64}


@pytest.mark.parametrize("name", list(VISION))
def test_pytorch_model_compiles_as_the_library_builds_it(name):
    """Random init (eval mode), calibrated on smooth image-like inputs: reference == host C on every byte, and
    the int8 logits follow the float ones (a loose floor: the logits of random weights are close together)."""
    torch = pytest.importorskip("torch")
    entry = next(e for e in pytorch_entries() if e.name == name)
    try:
        torch.manual_seed(0)
        model = entry.model(num_classes=10)
    except ImportError as e:
        pytest.skip(f"{entry.source} is not importable here: {e}")
    res = VISION[name]
    inputs = entry.inputs if res is None else (lambda n, seed: smooth_images(n, (3, res, res), seed))
    cal = torch.from_numpy(inputs(16, CAL_SEED))
    cm = tinyaot.compile(model, cal[:1], calibration=cal, name="m")
    x = inputs(2, EVAL_SEED)
    q = cm.quantize_input(cm.to_model_layout(x))
    ref = cm.run(q, engine="reference")
    np.testing.assert_array_equal(cm.run(q, engine="host"), ref)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy().reshape(len(x), -1)
    got = np.asarray(cm.dequantize_output(ref)).reshape(len(x), -1)
    assert np.corrcoef(want.ravel(), got.ravel())[0, 1] > 0.5
