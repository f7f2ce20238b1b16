"""A whole 16x8 .tflite model, as TFLite's converter writes one with int16 activations: a keyword-spotting-like
CONV_2D -> DEPTHWISE_CONV_2D -> ADD (residual) -> AVERAGE_POOL_2D -> RESHAPE -> FULLY_CONNECTED -> SOFTMAX, int16
activations throughout, int8 per-channel weights, int64 biases. tinyaot's compiled model equals TensorFlow Lite
Micro on every output byte on the reference, the host C and the Cortex-M33; the same model with a float interface
(QUANTIZE in, DEQUANTIZE out) imports as the int16 model with those ops dropped.

The qparams come from a float run of the same weights on the test inputs, so every layer uses most of its int16
range, as a calibrated model's would.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")
from s16_suite import assert_matches_tflm, run_tflm, t16  # noqa: E402

import tinyaot  # noqa: E402

H, W, C_IN, C, CLASSES, SAMPLES = 12, 6, 1, 8, 5, 6


def _conv_same(x, w, b, groups=1):
    """NHWC 3x3 SAME conv in float; w [out, 3, 3, in/groups]."""
    n, h, wd, _ = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((n, h, wd, w.shape[0]))
    per = w.shape[0] // groups
    for o in range(w.shape[0]):
        g = o // per
        cin = w.shape[3]
        for i in range(3):
            for j in range(3):
                out[..., o] += np.tensordot(xp[:, i:i + h, j:j + wd, g * cin:(g + 1) * cin], w[o, i, j], axes=1)
    return out + b


def _quantized(w_float, axis):
    scales = np.abs(w_float).reshape(w_float.shape[axis], -1).max(1) / 127 if axis == 0 else \
        np.abs(w_float).reshape(-1, w_float.shape[axis]).max(0) / 127
    scales = scales.astype(np.float32).astype(np.float64)
    shape = [1] * w_float.ndim
    shape[axis] = -1
    q = np.clip(np.round(w_float / scales.reshape(shape)), -127, 127).astype(np.int8)
    return q, scales


def _model(float_interface: bool = False, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.standard_normal((SAMPLES, H, W, C_IN)), axis=1) / 3  # smooth, spectrogram-like
    w1 = rng.standard_normal((C, 3, 3, C_IN)) * 0.4
    b1 = rng.standard_normal(C) * 0.1
    w2 = rng.standard_normal((1, 3, 3, C)) * 0.3
    b2 = rng.standard_normal(C) * 0.1
    w3 = rng.standard_normal((CLASSES, C)) * 0.8
    b3 = rng.standard_normal(CLASSES) * 0.1
    q1, s1 = _quantized(w1, 0)
    q2, s2 = _quantized(w2, 3)
    q3, s3 = _quantized(w3, 0)
    w1, w2, w3 = q1 * s1.reshape(-1, 1, 1, 1), q2 * s2.reshape(1, 1, 1, -1), q3 * s3.reshape(-1, 1)
    a1 = np.maximum(_conv_same(x, w1, b1), 0)
    a2 = np.maximum(_conv_same(a1, np.transpose(w2, (3, 1, 2, 0)), b2, groups=C), 0)
    a3 = a1 + a2
    a4 = a3.mean(axis=(1, 2))
    a5 = a4 @ w3.T + b3

    def scale(a):
        return float(np.float32(np.abs(a).max() * 1.05 / 32767))

    sx, sa1, sa2, sa3, sa5 = (scale(a) for a in (x, a1, a2, a3, a5))
    sa4 = sa3  # pooling keeps its input's scale (TFLM requires it)
    xq = np.clip(np.round(x / sx), -32768, 32767).astype(np.int16)[:, None]  # (samples, 1, H, W, C)

    def bias(b, s_in, s_w):
        return tb.T(b.shape, "int64", data=np.round(b / (s_in * s_w)).astype(np.int64))

    tensors = [
        t16((1, H, W, C_IN), sx, "input"),  # 0
        tb.T(q1.shape, data=q1, scale=list(s1), axis=0), bias(b1, sx, s1), t16((1, H, W, C), sa1),  # 1-3
        tb.T(q2.shape, data=q2, scale=list(s2), axis=3), bias(b2, sa1, s2), t16((1, H, W, C), sa2),  # 4-6
        t16((1, H, W, C), sa3),  # 7 add
        t16((1, 1, 1, C), sa4),  # 8 avg pool
        tb.T((2,), "int32", data=np.array([1, C], np.int32)), t16((1, C), sa4),  # 9-10 reshape
        tb.T(q3.shape, data=q3, scale=list(s3), axis=0), bias(b3, sa4, s3), t16((1, CLASSES), sa5),  # 11-13
        t16((1, CLASSES), 1 / 32768),  # 14 softmax
    ]
    conv = {"Padding": 0, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1,
            "FusedActivationFunction": 1}
    ops = [
        tb.Op("CONV_2D", [0, 1, 2], [3], ("Conv2DOptions", conv), version=4),
        tb.Op("DEPTHWISE_CONV_2D", [3, 4, 5], [6], ("DepthwiseConv2DOptions", conv | {"DepthMultiplier": 1}),
              version=5),
        tb.Op("ADD", [3, 6], [7], ("AddOptions", {"FusedActivationFunction": 0}), version=3),
        tb.Op("AVERAGE_POOL_2D", [7], [8], ("Pool2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1,
                                                              "FilterWidth": W, "FilterHeight": H,
                                                              "FusedActivationFunction": 0}), version=3),
        tb.Op("RESHAPE", [8, 9], [10]),
        tb.Op("FULLY_CONNECTED", [10, 11, 12], [13], ("FullyConnectedOptions", {"FusedActivationFunction": 0}),
              version=7),
        tb.Op("SOFTMAX", [13], [14], ("SoftmaxOptions", {"Beta": 1.0}), version=3),
    ]
    inputs, outputs = [0], [14]
    if float_interface:
        tensors += [tb.T((1, H, W, C_IN), "float32", name="input_f"), tb.T((1, CLASSES), "float32", name="out_f")]
        ops = [tb.Op("QUANTIZE", [15], [0]), *ops, tb.Op("DEQUANTIZE", [14], [16])]
        inputs, outputs = [15], [16]
    return tb.Model(tensors, ops, inputs, outputs), xq, a5


@pytest.mark.host
def test_16x8_model_equals_tflm_on_reference_and_host():
    m, xq, logits = _model()
    cm = assert_matches_tflm(m, [xq], engines=("reference", "host"), name="kws16")
    assert cm.input_dtype == "int16" and cm.graph.tensor(cm.graph.outputs[0]).dtype == "int16"
    scale, zp = cm.output_qparams
    probs = ((cm.run(xq).astype(np.float64) - zp) * scale).reshape(len(xq), CLASSES)
    want = np.exp(logits - logits.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    # 16 bits end to end: within 1/500 of a probability (seeded weights and inputs: measured 6e-5)
    assert np.abs(probs - want).max() < 0.002
    # every activation is 2 bytes: the arena holds at least the biggest layer's input and output at once
    assert cm.arena_bytes >= 2 * 2 * H * W * C
    assert "int16_t *kws16_input(void);" in cm.c_sources.files["kws16.h"]


@pytest.mark.m33
def test_16x8_model_equals_tflm_on_the_m33():
    m, xq, _ = _model()
    cm = assert_matches_tflm(m, [xq[:2]], engines=("reference", "m33"), name="kws16")
    assert cm.last_m33.instructions > 0


def test_float_interface_16x8_model_imports_as_the_int16_model():
    m, xq, _ = _model(float_interface=True)
    cm = tinyaot.compile(tb.build(m), name="kws16f")
    assert [n.op for n in cm.graph.nodes] == ["conv2d", "depthwise_conv2d", "add", "avg_pool2d", "reshape",
                                              "fully_connected", "softmax"]
    plain, _, _ = _model()
    np.testing.assert_array_equal(cm.run(xq).reshape(len(xq), -1), run_tflm(tb.build(plain), [xq]).reshape(len(xq), -1))


@pytest.mark.m33
def test_profile_of_a_16x8_model_takes_int16_input():
    m, xq, _ = _model()
    cm = tinyaot.compile(tb.build(m), name="kws16")
    prof = cm.profile(xq[0])
    cm.run(xq[:1], engine="m33")
    assert prof.total_instructions == cm.last_m33.instructions > 0
    assert [o.op for o in prof.ops][:2] == ["conv2d", "depthwise_conv2d"]
