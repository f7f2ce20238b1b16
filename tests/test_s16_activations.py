"""16x8 (int16 activation) SOFTMAX, LOGISTIC, TANH, RELU, RELU6 and MEAN bit-exact with TensorFlow Lite Micro.

Random one-op .tflite graphs compiled by tinyaot equal TFLM's int16 kernels on every output byte, on the reference
and the host C; one chain of every 16x8 kernel of this family (pools included) runs on the emulated Cortex-M33.
What TFLM refuses (or has no int16 kernel for) is refused with the operator named.
"""
from __future__ import annotations

import re
import warnings
from importlib import resources

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")
from s16_suite import assert_matches_tflm, int16_samples, scale16, t16  # noqa: E402

import tinyaot  # noqa: E402
from tinyaot.diagnostics import CalibrationWarning  # noqa: E402
from tinyaot.errors import TinyAOTError, UnsupportedOpError  # noqa: E402
from tinyaot.ir import Graph, Node, QParams, Tensor  # noqa: E402

CASES, SAMPLES = 50, 4
HOST_EVERY = 5  # every case on the reference, every fifth also through gcc (a C build per case is the slow part)
Q15 = 1.0 / 32768.0


def _shape(rng, rank: int = 3) -> tuple[int, ...]:
    return (1, *(int(rng.integers(1, 7)) for _ in range(rank - 2)), int(rng.integers(1, 17)))


def _inputs(shape, rng) -> np.ndarray:
    """Full-range samples, or small ones (most softmax / tanh inputs of a trained model are near 0)."""
    return int16_samples(shape, SAMPLES, rng, spread=int(rng.choice([200, 3000, 32767])))


def softmax_case(rng) -> tuple[tb.Model, np.ndarray]:
    shape = _shape(rng, int(rng.integers(2, 5)))
    beta = float(rng.choice([1.0, 1.0, 0.5, 2.0]))
    scale = scale16(rng) * float(rng.uniform(0.5, 30))
    m = tb.Model([t16(shape, scale), t16(shape, Q15)],
                 [tb.Op("SOFTMAX", [0], [1], ("SoftmaxOptions", {"Beta": beta}))], [0], [1])
    return m, _inputs(shape, rng)


def activation_case(code: str, rng, k: int) -> tuple[tb.Model, np.ndarray]:
    """Input scales: TFLM's power-of-two fast path (2^-12; tanh also 2^-11), other powers of two, any scale."""
    pots = [2.0**-12, 2.0**-11, 2.0**-10, 2.0**-13, 2.0**-9]
    scale = pots[k] if k < len(pots) else scale16(rng) * float(rng.uniform(0.5, 30))
    shape = _shape(rng)
    m = tb.Model([t16(shape, scale), t16(shape, Q15)], [tb.Op(code, [0], [1])], [0], [1])
    return m, _inputs(shape, rng)


def relu_case(rng) -> tuple[tb.Model, np.ndarray]:
    shape = _shape(rng, 4)
    s_in = scale16(rng)
    six = bool(rng.random() < 0.5)
    s_out = s_in if six or rng.random() < 0.3 else s_in * float(rng.uniform(0.3, 3))
    m = tb.Model([t16(shape, s_in), t16(shape, s_out)], [tb.Op("RELU6" if six else "RELU", [0], [1])], [0], [1])
    return m, _inputs(shape, rng)


def mean_case(rng) -> tuple[tb.Model, np.ndarray]:
    shape = (1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 9)))
    axes = [[1, 2], [1, 2], [3], [2]][int(rng.integers(4))]
    keep = bool(rng.random() < 0.5)
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    s_in = scale16(rng)
    axis = tb.T((len(axes),), "int32", data=np.array(axes, np.int32))
    m = tb.Model([t16(shape, s_in), axis, t16(out, s_in * float(rng.uniform(0.2, 2)))],
                 [tb.Op("MEAN", [0, 1], [2], ("ReducerOptions", {"KeepDims": keep}))], [0], [2])
    return m, _inputs(shape, rng)


@pytest.mark.host
def test_softmax_equals_tflm():
    rng = np.random.default_rng(160)
    for k in range(CASES):
        _check(softmax_case(rng), k)


@pytest.mark.host
@pytest.mark.parametrize("code", ["LOGISTIC", "TANH"])
def test_logistic_and_tanh_equal_tflm(code):
    rng = np.random.default_rng(161 if code == "TANH" else 162)
    for k in range(CASES):
        _check(activation_case(code, rng, k), k)


@pytest.mark.host
def test_relu_and_relu6_equal_tflm():
    rng = np.random.default_rng(163)
    for k in range(CASES):
        _check(relu_case(rng), k)


@pytest.mark.host
def test_mean_equals_tflm():
    rng = np.random.default_rng(164)
    for k in range(CASES):
        _check(mean_case(rng), k)


def _check(case, k: int) -> None:
    m, x = case
    assert_matches_tflm(m, [x], engines=("reference", "host") if k % HOST_EVERY == 0 else ("reference",))


@pytest.mark.parametrize("code,scale", [("LOGISTIC", 2.0), ("TANH", 2.0), ("LOGISTIC", 1e-9), ("TANH", 3e-7),
                                        ("SOFTMAX", 1e-5), ("SOFTMAX", 3e-2)])
def test_extreme_scales_and_long_rows_equal_tflm(code, scale):
    """Input scales at the ends of what TFLM's Prepare takes (a multiplier near 32767 with no shift, shifts near
    31; softmax's left and right shifts) and a 1000-value softmax row (the reciprocal's normalisation)."""
    shape = (1, 1000 if code == "SOFTMAX" else 64)
    options = ("SoftmaxOptions", {"Beta": 1.0}) if code == "SOFTMAX" else None
    m = tb.Model([t16(shape, scale), t16(shape, Q15)], [tb.Op(code, [0], [1], options)], [0], [1])
    assert_matches_tflm(m, [int16_samples(shape, SAMPLES, np.random.default_rng(166))])


def chain_model(rng) -> tuple[tb.Model, np.ndarray]:
    """AVERAGE_POOL_2D -> MAX_POOL_2D (+ RELU6 fused) -> RELU (rescaling) -> TANH -> MEAN -> LOGISTIC -> SOFTMAX:
    every 16x8 kernel of this family in one graph."""
    s = 2e-4
    pool = {"Padding": 0, "StrideW": 1, "StrideH": 1, "FilterWidth": 2, "FilterHeight": 2}
    tensors = [t16((1, 6, 6, 8), s), t16((1, 6, 6, 8), s), t16((1, 6, 6, 8), s), t16((1, 6, 6, 8), s / 2),
               t16((1, 6, 6, 8), Q15), tb.T((2,), "int32", data=np.array([1, 2], np.int32)),
               t16((1, 1, 1, 8), Q15 * 2), t16((1, 1, 1, 8), Q15), t16((1, 1, 1, 8), Q15)]
    ops = [tb.Op("AVERAGE_POOL_2D", [0], [1], ("Pool2DOptions", {**pool, "FusedActivationFunction": 0})),
           tb.Op("MAX_POOL_2D", [1], [2], ("Pool2DOptions", {**pool, "FusedActivationFunction": 3})),
           tb.Op("RELU", [2], [3]), tb.Op("TANH", [3], [4]),
           tb.Op("MEAN", [4, 5], [6], ("ReducerOptions", {"KeepDims": True})),
           tb.Op("LOGISTIC", [6], [7]), tb.Op("SOFTMAX", [7], [8], ("SoftmaxOptions", {"Beta": 1.0}))]
    return tb.Model(tensors, ops, [0], [8]), int16_samples((1, 6, 6, 8), 3, rng)


def test_a_chain_of_16x8_kernels_equals_tflm_on_the_reference():
    m, x = chain_model(np.random.default_rng(165))
    cm = assert_matches_tflm(m, [x])
    source = "\n".join(cm.c_sources.files.values())
    for kernel in ("avg_pool2d_s16", "max_pool2d_s16", "relu_s16", "lut_s16", "mean_s16", "softmax_s16"):
        assert f"tinyaot_{kernel}(" in source, kernel


@pytest.mark.m33
def test_a_chain_of_16x8_kernels_runs_on_the_m33():
    m, x = chain_model(np.random.default_rng(165))
    cm = assert_matches_tflm(m, [x], engines=("reference", "m33"))
    assert cm.last_m33.instructions > 0


def test_the_int16_tables_are_tflms():
    """The softmax tables (513 entries, Q0.15: exp rising to 1 at 0, 1 / (1 + x) falling from 1 to 1/2) and the sigmoid
    table in lut_s16.c is the LSTM's (ref/lstm_s8.py SIGMOID_Q16, which tests/test_lstm.py checks)."""
    from tinyaot.ref.lstm_s8 import SIGMOID_Q16
    from tinyaot.ref.softmax_s16 import tables

    exp_lut, recip_lut = tables()
    assert exp_lut.shape == recip_lut.shape == (513,)
    assert exp_lut[-1] == 32767 and exp_lut[0] == 2 and np.all(np.diff(exp_lut.astype(int)) >= 0)  # e^-10 ~ 1.5
    assert recip_lut[0] == 32767 and recip_lut[-1] == 16384  # 1 / (1 + 0) and 1 / (1 + 1), Q0.15
    source = resources.files("tinyaot").joinpath("c", "kernels", "lut_s16.c").read_text()
    body = source[source.index("lut16_sigmoid_q16[256] = {"):]
    values = [int(v) for v in re.findall(r"\d+", body[body.index("{") : body.index("}")])]
    np.testing.assert_array_equal(values, SIGMOID_Q16)


def _compile_error(m: tb.Model) -> str:
    with pytest.raises(TinyAOTError) as info:
        tinyaot.compile(tb.build(m))
    return str(info.value)


def test_what_tflm_refuses_is_refused():
    shape = (1, 2, 8)
    softmax = ("SoftmaxOptions", {"Beta": 1.0})
    bad_scale = tb.Model([t16(shape, 1e-3), t16(shape, 1.0 / 256)], [tb.Op("SOFTMAX", [0], [1], softmax)], [0], [1])
    assert re.search(r"operator 0 \(SOFTMAX\): int16 output must have scale 1/32768", _compile_error(bad_scale))
    from s16_suite import t8

    from_int8 = tb.Model([t8(shape, 0.1, 3), t16(shape, Q15)], [tb.Op("SOFTMAX", [0], [1], softmax)], [0], [1])
    assert "an int8 input's int16 output must have scale 1/65536 and zero point -32768" in _compile_error(from_int8)
    to_int8 = tb.Model([t16(shape, 1e-3), t8(shape, 1.0 / 256, -128)], [tb.Op("SOFTMAX", [0], [1], softmax)], [0],
                       [1])
    assert "int16 input with an int8 output" in _compile_error(to_int8)
    logistic = tb.Model([t16(shape, 1e-3), t16(shape, 1.0 / 256)], [tb.Op("LOGISTIC", [0], [1])], [0], [1])
    assert re.search(r"lut 'lut_0'.*Q0\.15", _compile_error(logistic))
    swish = tb.Model([t16(shape, 1e-3), t16(shape, 1e-3)], [tb.Op("HARD_SWISH", [0], [1])], [0], [1])
    assert "no int16 HARD_SWISH kernel" in _compile_error(swish)
    n1 = tb.Model([t16(shape, 1e-3), t16(shape, 1e-3)], [tb.Op("RELU_N1_TO_1", [0], [1])], [0], [1])
    assert "RELU and RELU6" in _compile_error(n1)


def _graph16(op: str, attrs: dict, in_scale: float = 1e-3, out_scale: float = Q15) -> Graph:
    g = Graph(tensors={}, nodes=[], inputs=["x"], outputs=["y"], layout="NHWC")
    g.add_tensor(Tensor("x", (1, 4, 4, 2), "int16", qparams=QParams.per_tensor(in_scale, 0)))
    g.add_tensor(Tensor("y", (1, 4, 4, 2), "int16", qparams=QParams.per_tensor(out_scale, 0)))
    g.nodes.append(Node(op, f"{op}_0", ["x"], ["y"], attrs))
    return g


def test_the_16x8_lut_prepares_tflms_rules():
    from tinyaot.ref import lut_s16

    g = _graph16("lut", {"function": "no_such_function"})
    with pytest.raises(UnsupportedOpError, match=r"lut 'lut_0': function 'no_such_function' has no int16 kernel"):
        lut_s16.prepare(g.nodes[0], g)
    g = _graph16("lut", {"function": "tflm_tanh", "clamp": (0.0, 0.5)})
    p = lut_s16.prepare(g.nodes[0], g)
    assert (p.act_min, p.act_max, p.mode) == (0, 16384, lut_s16.TANH)
    assert lut_s16.input_rescaling("tflm_logistic", 2.0**-12) == (3, 0)  # TFLM's power-of-two case
    assert lut_s16.input_rescaling("tflm_tanh", 2.0**-11) == (6, 0)
    assert lut_s16.input_rescaling("tflm_logistic", 2.0**-11) == (24576, 12)  # not taken for logistic


@pytest.mark.parametrize("function", ["sigmoid", "tanh", "silu", "gelu", "hardswish"])
def test_the_16x8_lut_of_a_real_function_beats_int8(function):
    """A PyTorch model's lut (any function, any output scale) on int16 is TFLite's interpolated 513-entry table:
    over the int16 range its error stays below half an int8 step of the same range, and it is monotone where the
    function is."""
    from tinyaot.ref import lut_s8, lut_s16

    s_in = 8.0 / 32768
    x = np.arange(-32768, 32768, dtype=np.int16)
    s_out = float(np.float32(np.abs(lut_s8.FUNCTIONS[function](x * s_in)).max() * 1.01 / 32768))
    g = _graph16("lut", {"function": function}, s_in, s_out)
    p = lut_s16.prepare(g.nodes[0], g)
    assert p.mode == lut_s16.TABLE and p.table.shape == (513,)
    got = lut_s16.lut_s16(x, p).astype(np.float64) * s_out
    want = lut_s8.FUNCTIONS[function](x * s_in)
    assert np.abs(got - want).max() < 0.5 * (s_out * 256)
    if function in ("sigmoid", "tanh"):
        assert np.all(np.diff(got) >= 0)


def _pytorch_model_with_int16_layers():
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.pool, self.avg, self.fc = torch.nn.MaxPool2d(2), torch.nn.AvgPool2d(2), torch.nn.Linear(8, 5)

        def forward(self, x):
            x = torch.tanh(self.avg(self.pool(torch.relu(self.conv(x)))))
            return torch.softmax(self.fc(x.mean(dim=(2, 3))), dim=-1)

    torch.manual_seed(0)
    calibration = [torch.rand(1, 3, 8, 8) * 2 - 1 for _ in range(32)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)  # 32 random calibration samples
        cm = tinyaot.compile(Net().eval(), calibration[0], calibration=calibration, int16=PYTORCH_INT16)
    return cm, np.random.default_rng(7).integers(-128, 128, size=(6, 8, 8, 3)).astype(np.int8)


PYTORCH_INT16 = ["pool", "avg", "tanh", "mean", "fc", "softmax"]


@pytest.mark.host
def test_a_pytorch_model_with_int16_layers_runs_these_kernels_alike_on_reference_and_host():
    """int16= on pooling, tanh (the lut's interpolated table), mean and softmax (output 1/32768 from lowering): the
    16x8 kernels are chosen, and the host C equals the reference on every byte."""
    cm, x = _pytorch_model_with_int16_layers()
    dtypes = {n.name: (n.op, cm.graph.tensor(n.outputs[0]).dtype) for n in cm.graph.nodes}
    assert all(dtypes[name][1] == "int16" for name in PYTORCH_INT16), dtypes
    softmax = next(n for n in cm.graph.nodes if n.name == "softmax")
    assert cm.graph.tensor(softmax.outputs[0]).qparams.scale[0] == pytest.approx(1 / 32768)
    assert ".mode = TINYAOT_LUT16_TABLE," in "\n".join(cm.c_sources.files.values())
    np.testing.assert_array_equal(cm.run(x, engine="host"), cm.run(x, engine="reference"))


@pytest.mark.m33
def test_the_int16_table_lut_runs_on_the_m33():
    """The lut's table mode (a PyTorch tanh on int16), which no .tflite reaches, on the emulated Cortex-M33."""
    cm, x = _pytorch_model_with_int16_layers()
    np.testing.assert_array_equal(cm.run(x[:2], engine="m33"), cm.run(x[:2], engine="reference"))
