"""16x8 CONV_2D and DEPTHWISE_CONV_2D (int16 activations, int8 per-channel weights), TFLM's int16 ConvPerChannel
and DepthwiseConvPerChannel: random one-op .tflite graphs compiled by tinyaot equal TensorFlow Lite Micro on every
output byte, on the reference and the host C (the portable kernels) and, once per kernel, the Cortex-M33 (the
DSP path). Covers grouped convs, stride, dilation, SAME / VALID padding, fused activations in int16 units, int64
and int32 biases (TFLM sums in int64 or int32 and requantizes accordingly), no bias; and what TFLM
refuses or tinyaot cannot take."""
from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")
from s16_suite import assert_matches_tflm, int16_samples, scale16, t16  # noqa: E402

import tinyaot  # noqa: E402
from tinyaot.errors import ModelError, UnsupportedOpError  # noqa: E402
from tinyaot.frontend.tflite import compute_padding  # noqa: E402

CASES, SAMPLES = 50, 3
ACTIVATIONS = (0, 0, 1, 3, 2)  # TFLite's codes: NONE (twice as likely), RELU, RELU6, RELU_N1_TO_1
INT32, INT64 = 2, 4  # TensorType codes (quantized_bias_type)


def _f32(x: float) -> float:
    return float(np.float32(x))


def _window(rng, h: int, w: int):
    """Kernel, stride, dilation and padding of one random layer; the output size."""
    kh, kw = (int(v) for v in rng.choice([1, 2, 3, 3], size=2))
    sh, sw = (int(v) for v in rng.integers(1, 3, size=2))
    dh, dw = (int(rng.choice([1, 1, 2])) for _ in range(2))
    same = rng.random() < 0.6 or h < (kh - 1) * dh + 1 or w < (kw - 1) * dw + 1
    oh = compute_padding(0 if same else 1, h, kh, sh, dh)[0]
    ow = compute_padding(0 if same else 1, w, kw, sw, dw)[0]
    opts = {"Padding": 0 if same else 1, "StrideW": sw, "StrideH": sh, "DilationWFactor": dw, "DilationHFactor": dh,
            "FusedActivationFunction": int(rng.choice(ACTIVATIONS))}
    return (kh, kw), (oh, ow), opts


def _weights(rng, shape, c_out: int, axis: int):
    per_channel = rng.random() < 0.75
    scales = [_f32(10 ** rng.uniform(-3, -1.3)) for _ in range(c_out if per_channel else 1)]
    w = rng.integers(-127, 128, size=shape).astype(np.int8)
    return tb.T(shape, data=w, scale=scales if per_channel else scales[0], axis=axis), scales * (1 if per_channel
                                                                                                   else c_out)


def _out_scale(rng, s_in: float, w_scales, taps: int) -> float:
    """An output scale that puts typical sums near the int16 range (some clip, some are small)."""
    typical = math.sqrt(taps) * 19000 * 73 * s_in * float(np.mean(w_scales))
    return _f32(typical / 32768 * rng.uniform(0.4, 5))


def _bias(rng, s_in: float, w_scales, taps: int, dtype: str):
    c = len(w_scales)
    spread = math.sqrt(taps) * 19000 * 73 * rng.uniform(0.1, 3)
    if dtype == "int64" and rng.random() < 0.15:
        spread = 2.0 ** 38  # beyond int32: only an int64 bias holds it
    data = np.round(rng.normal(0, spread, c)).astype(dtype)
    return tb.T((c,), dtype, data=data, scale=[s_in * s for s in w_scales])


def gen_conv(rng, bias: str | None = None):
    """A random 16x8 CONV_2D (grouped in a quarter of the cases); bias int64, int32 or none (then
    quantized_bias_type says which arithmetic)."""
    groups = int(rng.choice([1, 1, 1, 2, 3]))
    group_in, group_out = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    c_in, c_out = groups * group_in, groups * group_out
    h, w = (int(v) for v in rng.integers(1, 8, size=2))
    (kh, kw), (oh, ow), opts = _window(rng, h, w)
    bias = bias or str(rng.choice(["int64", "int64", "int64", "int32", "none"]))
    s_in = scale16(rng)
    wt, w_scales = _weights(rng, (c_out, kh, kw, group_in), c_out, 0)
    taps = kh * kw * group_in
    s_out = _out_scale(rng, s_in, w_scales, taps)
    tensors = [t16((1, h, w, c_in), s_in), wt, t16((1, oh, ow, c_out), s_out)]
    inputs = [0, 1]
    if bias == "none":
        opts["QuantizedBiasType"] = int(rng.choice([INT32, INT64, 0]))
    else:
        tensors.append(_bias(rng, s_in, w_scales, taps, bias))
        inputs.append(3)
    m = tb.Model(tensors, [tb.Op("CONV_2D", inputs, [2], ("Conv2DOptions", opts), 8)], [0], [2])
    return m, int16_samples((1, h, w, c_in), SAMPLES, rng)


def gen_depthwise(rng, bias: str | None = None):
    """A random 16x8 DEPTHWISE_CONV_2D, depth multiplier 1 to 3; bias int64 or none (TFLM reads it as int64)."""
    c_in, mult = int(rng.integers(1, 7)), int(rng.choice([1, 1, 2, 3]))
    c_out = c_in * mult
    h, w = (int(v) for v in rng.integers(1, 8, size=2))
    (kh, kw), (oh, ow), opts = _window(rng, h, w)
    opts["DepthMultiplier"] = mult
    bias = bias or str(rng.choice(["int64", "int64", "int64", "none"]))
    s_in = scale16(rng)
    wt, w_scales = _weights(rng, (1, kh, kw, c_out), c_out, 3)
    s_out = _out_scale(rng, s_in, w_scales, kh * kw)
    tensors = [t16((1, h, w, c_in), s_in), wt, t16((1, oh, ow, c_out), s_out)]
    inputs = [0, 1]
    if bias != "none":
        tensors.append(_bias(rng, s_in, w_scales, kh * kw, bias))
        inputs.append(3)
    m = tb.Model(tensors, [tb.Op("DEPTHWISE_CONV_2D", inputs, [2], ("DepthwiseConv2DOptions", opts), 6)], [0], [2])
    return m, int16_samples((1, h, w, c_in), SAMPLES, rng)


@pytest.mark.host
@pytest.mark.parametrize("gen", [gen_conv, gen_depthwise], ids=["conv2d", "depthwise_conv2d"])
def test_random_16x8_layers_equal_tflm(gen):
    rng = np.random.default_rng(1600 if gen is gen_conv else 1700)
    for k in range(CASES):  # every case on the reference, every second through gcc too
        m, x = gen(rng)
        assert_matches_tflm(m, [x], engines=("reference", "host") if k % 2 == 0 else ("reference",))


def _layer(depthwise: bool, bias: str, c_in: int = 8, c_out: int = 6, size: int = 7, groups: int = 1,
           dilation: int = 1, seed: int = 0):
    """A fixed mid-size layer: 3x3, SAME, stride 1, RELU6; depthwise keeps c_in channels (multiplier 1)."""
    rng = np.random.default_rng(seed)
    s_in = _f32(2e-4)
    c_out = c_in if depthwise else c_out
    shape = (1, 3, 3, c_out) if depthwise else (c_out, 3, 3, c_in // groups)
    wt, w_scales = _weights(rng, shape, c_out, 3 if depthwise else 0)
    taps = 9 if depthwise else 9 * c_in // groups
    opts = {"Padding": 0, "StrideW": 1, "StrideH": 1, "DilationWFactor": dilation, "DilationHFactor": dilation,
            "FusedActivationFunction": 3}
    tensors = [t16((1, size, size, c_in), s_in), wt, t16((1, size, size, c_out), _out_scale(rng, s_in, w_scales,
                                                                                           taps)),
               _bias(rng, s_in, w_scales, taps, bias)]
    if depthwise:
        opts["DepthMultiplier"] = 1
    code, options = ("DEPTHWISE_CONV_2D", "DepthwiseConv2DOptions") if depthwise else ("CONV_2D", "Conv2DOptions")
    m = tb.Model(tensors, [tb.Op(code, [0, 1, 3], [2], (options, opts), 6)], [0], [2])
    return m, int16_samples((1, size, size, c_in), 2, rng)


@pytest.mark.m33
@pytest.mark.parametrize("bias, groups, dilation", [("int64", 1, 1), ("int32", 1, 1), ("int64", 2, 2)],
                         ids=["int64", "int32", "grouped-dilated"])
def test_conv2d_s16_dsp_path_on_the_m33(bias, groups, dilation):
    """The M33 build takes the SMLAD path: PKHBT-paired inputs, four output channels a piece and the two left
    over, windows of 30 values (a tail of two); grouped and dilated convs sum one run per tap."""
    m, x = _layer(False, bias, c_in=10, c_out=6 if groups == 1 else 12, groups=groups, dilation=dilation)
    cm = assert_matches_tflm(m, [x], engines=("reference", "m33"))
    assert cm.last_m33.instructions > 0


@pytest.mark.m33
def test_depthwise_conv2d_s16_on_the_m33():
    """The M33 build sums four channels at once (SMLABB / SMLATB / SMLABT / SMLATT), the two left over alone."""
    m, x = _layer(True, "int64", c_in=14)
    cm = assert_matches_tflm(m, [x], engines=("reference", "m33"))
    assert cm.last_m33.instructions > 0


@pytest.mark.parametrize("engine", [pytest.param("host", marks=pytest.mark.host),
                                    pytest.param("m33", marks=pytest.mark.m33)])
def test_long_window_sums_exactly_in_pieces(engine):
    """Window rows of 3 x 200 = 600 values, longer than one exact int32 piece (the C's CHUNK, 508), weights and
    inputs at their extremes so that the first piece nears its bound; int64 biases beyond int32."""
    rng = np.random.default_rng(9)
    w = np.where(rng.random((5, 2, 3, 200)) < 0.5, -127, 127).astype(np.int8)
    s_in, w_scale = _f32(1e-4), _f32(0.01)
    opts = {"Padding": 1, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1,
            "FusedActivationFunction": 0}
    bias = np.array([0, 1 << 33, -(1 << 33), 12345, -7], np.int64)
    tensors = [t16((1, 2, 3, 200), s_in), tb.T(w.shape, data=w, scale=w_scale), t16((1, 1, 1, 5), _f32(20.0)),
               tb.T((5,), "int64", data=bias, scale=s_in * w_scale)]
    m = tb.Model(tensors, [tb.Op("CONV_2D", [0, 1, 3], [2], ("Conv2DOptions", opts), 8)], [0], [2])
    peak = np.where(w[0] > 0, 32767, -32768).astype(np.int16)[None, None]  # [1, 1, 2, 3, 200]: channel 0 peaks
    x = np.concatenate([peak, int16_samples((1, 2, 3, 200), 2, rng)])
    assert_matches_tflm(m, [x], engines=("reference", engine))


@pytest.mark.host
def test_clean_under_asan_and_ubsan():
    """Both kernels under AddressSanitizer and UndefinedBehaviorSanitizer (an arena of exactly the planned size:
    no read past a window, no signed overflow in the int32 pieces); outputs equal the reference."""
    from tinyaot.targets import host
    from tinyaot.targets.base import ModelSources

    if host.sanitizer_problem() is not None:
        pytest.skip(f"no sanitizer support on this machine: {host.sanitizer_problem()}")
    target = host.SanitizedHostTarget()
    for gen, seed in ((gen_conv, 31), (gen_depthwise, 32)):
        rng = np.random.default_rng(seed)
        for _ in range(3):
            m, x = gen(rng)
            cm = tinyaot.compile(tb.build(m), name="s16_asan")
            got = target.run(target.build(ModelSources.of(cm)), x.reshape(len(x), -1).view(np.int8)).outputs
            want = np.asarray(cm.run(x, engine="reference")).reshape(len(x), -1)
            np.testing.assert_array_equal(np.asarray(got).view(np.int16).reshape(want.shape), want)


def test_depthwise_int32_bias_is_refused():
    """TFLM's 16x8 DEPTHWISE_CONV_2D reads its bias as int64 whatever its type: an int32 one is refused."""
    m, _ = gen_depthwise(np.random.default_rng(3), bias="int64")
    m.tensors[3] = tb.T(m.tensors[3].shape, "int32", data=m.tensors[3].data.astype(np.int32),
                        scale=m.tensors[3].scale)
    with pytest.raises(UnsupportedOpError, match=r"operator 0 \(DEPTHWISE_CONV_2D\).*reads its bias as int64"):
        tinyaot.compile(tb.build(m))


def test_int16_input_with_int8_output_is_refused():
    """16x8 means int16 in and out (TFLM: input and output types match); the mixed layer names its tensor."""
    m, _ = gen_conv(np.random.default_rng(4), bias="int64")
    y = m.tensors[2]
    m.tensors[2] = tb.T(y.shape, "int8", scale=y.scale, zero_point=0)
    with pytest.raises(UnsupportedOpError, match=r"conv2d 'conv2d_0'.*is int8.*16x8 kernels need int16"):
        tinyaot.compile(tb.build(m))


def test_multiplier_beyond_the_64_bit_requantization_is_refused():
    """TFLite's 64-bit MultiplyByQuantizedMultiplier takes shifts up to 7 (multipliers below 2^7)."""
    m, _ = gen_conv(np.random.default_rng(5), bias="int64")
    m.tensors[2] = t16(m.tensors[2].shape, m.tensors[0].scale * 1e-4)
    with pytest.raises(ModelError, match=r"conv2d 'conv2d_0'.*multipliers below 2\^7"):
        tinyaot.compile(tb.build(m))


def test_no_bias_follows_quantized_bias_type():
    """Without a bias, TFLM's conv sums in int32 when quantized_bias_type is int32, else in int64: the zero bias
    the importer makes has that type, and both equal TFLM."""
    for kind, dtype in ((INT32, "int32"), (INT64, "int64")):
        m, x = gen_conv(np.random.default_rng(6), bias="none")
        m.ops[0].options[1]["QuantizedBiasType"] = kind
        cm = assert_matches_tflm(m, [x])
        assert cm.graph.tensor("conv2d_0_bias").dtype == dtype
