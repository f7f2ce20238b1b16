"""16x8 FULLY_CONNECTED, ADD, SUB and MUL (int16 activations, int8 weights): one-op .tflite graphs compiled by
tinyaot equal TensorFlow Lite Micro on every output byte, on the reference and the host C (random shapes,
scales, broadcasts, fused activations, int64 / int32 / no bias, constant operands), once per kernel on the
Cortex-M33 (the FC kernel's DSP path, and its portable C built without the DSP extension), under the sanitizers;
what TFLM refuses, or tinyaot does not take, is refused clearly."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")
from s16_suite import assert_matches_tflm, int16_samples, scale16, t8, t16  # noqa: E402

import tinyaot  # noqa: E402
from tinyaot.errors import ModelError, UnsupportedOpError  # noqa: E402

CASES, SAMPLES = 50, 3
ACTIVATIONS = (0, 1, 3)  # NONE, RELU, RELU6 (RELU6 clamps when the output scale puts 6 inside int16)


# ---- FULLY_CONNECTED ----------------------------------------------------------------------------------------

def _fc_case(rng, bias: str, in_f: int | None = None, out_f: int | None = None, batches: int | None = None):
    in_f = in_f or int(rng.integers(1, 40))
    out_f = out_f or int(rng.integers(1, 11))
    batches = batches or int(rng.integers(1, 4))
    s_in = scale16(rng)
    per_channel = bool(rng.integers(0, 2))
    w_scale = (10 ** rng.uniform(-3, -1, size=out_f)).astype(np.float32) if per_channel else \
        float(np.float32(10 ** rng.uniform(-3, -1)))
    w = rng.integers(-127, 128, size=(out_f, in_f)).astype(np.int8)
    # the output scale leaves the typical sum inside int16 (some saturate)
    typical = float(np.mean(w_scale)) * s_in * 32767 * np.sqrt(in_f) * 40
    s_out = float(np.float32(typical / 32767 * rng.uniform(0.2, 2)))
    wt = tb.T((out_f, in_f), "int8", data=w, scale=list(map(float, np.atleast_1d(w_scale))) if per_channel
              else w_scale, zero_point=[0] * out_f if per_channel else 0, axis=0)
    bias_scale = [float(np.float32(s_in * s)) for s in np.atleast_1d(w_scale)]
    tensors = [t16((1, batches, in_f), s_in), wt]
    inputs = [0, 1]
    options = {"FusedActivationFunction": int(rng.choice(ACTIVATIONS))}
    if bias != "none":
        dtype = np.int64 if bias == "int64" else np.int32
        data = rng.integers(-(2 ** 20), 2 ** 20, size=out_f).astype(dtype)
        tensors.append(tb.T((out_f,), bias, data=data, scale=bias_scale if per_channel else bias_scale[0],
                            zero_point=[0] * out_f if per_channel else 0))
        inputs.append(2)
    else:
        inputs.append(-1)
    tensors.append(t16((1, batches, out_f), s_out))
    y = len(tensors) - 1
    model = tb.Model(tensors, [tb.Op("FULLY_CONNECTED", inputs, [y], ("FullyConnectedOptions", options))], [0], [y])
    return model, int16_samples((1, batches, in_f), SAMPLES, rng)


@pytest.mark.host
@pytest.mark.parametrize("bias", ["int64", "int32", "none"])
def test_fully_connected_16x8_equals_tflm(bias):
    rng = np.random.default_rng(["int64", "int32", "none"].index(bias) + 160)
    for k in range(CASES if bias == "int64" else CASES // 5):  # every second case through gcc too
        model, x = _fc_case(rng, bias)
        assert_matches_tflm(model, [x], engines=("reference", "host") if k % 2 == 0 else ("reference",))


@pytest.mark.host
def test_fully_connected_16x8_long_rows_sum_exactly():
    """Rows longer than the DSP path's int32 chunk (508 inputs) and sums beyond int32: the int64 path is exact,
    the int32 path wraps as TFLM's int32 accumulator does."""
    rng = np.random.default_rng(7)
    for bias in ("int64", "int32"):
        model, _ = _fc_case(rng, bias, in_f=1100, out_f=6, batches=1)
        x = np.full((SAMPLES, 1, 1, 1100), 32767, np.int16) * np.sign(model.tensors[1].data[0]).astype(np.int16)
        assert_matches_tflm(model, [x], engines=("reference", "host"))


# ---- ADD / SUB / MUL ------------------------------------------------------------------------------------------

_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}


def _shapes(rng, low_rank: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast, up to 4-D with batch 1: equal, a channel vector, a single number, or 1s along
    some axes; `low_rank`: the second may have fewer dims (a constant; a model input has the batch dim)."""
    rank = int(rng.integers(2, 5))
    full = (1,) + tuple(int(rng.integers(1, 5)) for _ in range(rank - 1))
    kind = int(rng.integers(0, 4))
    if kind == 0:
        other = full
    elif kind == 1:
        other = full[-1:] if low_rank else (1,) * (rank - 1) + full[-1:]
    elif kind == 2:
        other = (1,) if low_rank else (1,) * rank
    else:
        other = tuple(d if rng.integers(0, 2) else 1 for d in full)
    return full, other


def _binary_case(code: str, rng, constant: int | None = None, pot: bool = False):
    """`pot`: power-of-two scales, where TFLite's int16 ADD / SUB could take its shift-only path (TFLM does not)."""
    sa, sb = scale16(rng), scale16(rng)
    if code == "MUL":
        so = float(np.float32(sa * sb * 2 ** 15 * rng.uniform(0.3, 3)))
    else:
        so = float(np.float32(max(sa, sb) * rng.uniform(0.6, 3)))
    if pot:
        sa, sb, so = (float(2.0 ** np.round(np.log2(s))) for s in (sa, sb, so))
    a_shape, b_shape = _shapes(rng, constant is not None)
    if rng.integers(0, 2):
        a_shape, b_shape = b_shape, a_shape
    if constant is not None and len(a_shape if constant == 1 else b_shape) < 2:
        a_shape, b_shape = b_shape, a_shape  # the constant is the low-rank one
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    tensors = [t16(a_shape, sa), t16(b_shape, sb), t16(out_shape, so)]
    inputs = [0, 1]
    if constant is not None:
        tensors[constant].data = int16_samples(tensors[constant].shape, 1, rng)[0]
        inputs = [1 - constant]
    options = {"FusedActivationFunction": int(rng.choice(ACTIVATIONS))}
    model = tb.Model(tensors, [tb.Op(code, [0, 1], [2], (_OPTIONS[code], options))], inputs, [2])
    return model, [int16_samples(tensors[i].shape, SAMPLES, rng) for i in inputs]


@pytest.mark.host
@pytest.mark.parametrize("code", ["ADD", "SUB", "MUL"])
def test_binary_16x8_equals_tflm(code):
    rng = np.random.default_rng(["ADD", "SUB", "MUL"].index(code) + 1600)
    for k in range(CASES):  # every case on the reference, every second through gcc too
        model, xs = _binary_case(code, rng, pot=k % 10 == 0)
        assert_matches_tflm(model, xs, engines=("reference", "host") if k % 2 == 0 else ("reference",))


@pytest.mark.host
def test_sub_16x8_multipliers_equal_tflms_on_many_elements():
    """TFLM's int16 SUB derives its multipliers in double: float32 quotients differ on about 1 output in 6000,
    which the small random cases rarely reach."""
    rng = np.random.default_rng(61)
    for _ in range(4):
        sa, sb = scale16(rng), scale16(rng)
        so = float(np.float32(max(sa, sb) * rng.uniform(0.6, 3)))
        shape = (1, 16, 256)  # 16 rows: the interpreter emulates an in-place add row by row
        m = tb.Model([t16(shape, sa), t16(shape, sb), t16(shape, so)],
                     [tb.Op("SUB", [0, 1], [2], ("SubOptions", {}))], [0, 1], [2])
        assert_matches_tflm(m, [int16_samples(shape, 2, rng) for _ in range(2)], engines=("reference", "host"))


@pytest.mark.host
@pytest.mark.parametrize("code", ["ADD", "SUB", "MUL"])
def test_binary_16x8_with_a_constant_operand_equals_tflm(code):
    rng = np.random.default_rng(["ADD", "SUB", "MUL"].index(code) + 16000)
    for k in range(6):
        model, xs = _binary_case(code, rng, constant=k % 2)
        assert_matches_tflm(model, xs, engines=("reference", "host"))


def _block(rng):
    """int8 in -> QUANTIZE -> int16 FC -> ADD (residual) -> MUL (gate) -> SUB -> FC -> QUANTIZE -> int8 out: the
    planner may place an int16 element-wise output over a dying input."""
    d, s8, s16 = 16, 0.05, 6e-5
    w = [tb.T((d, d), "int8", data=rng.integers(-127, 128, size=(d, d)).astype(np.int8), scale=0.004)
         for _ in range(2)]
    bias = [tb.T((d,), "int64", data=rng.integers(-5000, 5000, size=d).astype(np.int64),
                 scale=float(np.float32(s_in * 0.004))) for s_in in (s16, 1.2e-3)]
    t = [t8((1, d), s8, 3), t16((1, d), s16), w[0], bias[0], t16((1, d), 8e-4), t16((1, d), 9e-4),
         t16((1, d), 4e-4), t16((1, d), 1.2e-3), w[1], bias[1], t16((1, d), 2e-2), t8((1, d), 0.2, -5)]
    ops = [tb.Op("QUANTIZE", [0], [1]),
           tb.Op("FULLY_CONNECTED", [1, 2, 3], [4], ("FullyConnectedOptions", {"FusedActivationFunction": 1})),
           tb.Op("ADD", [1, 4], [5], ("AddOptions", {})),
           tb.Op("MUL", [5, 4], [6], ("MulOptions", {})),
           tb.Op("SUB", [6, 5], [7], ("SubOptions", {})),
           tb.Op("FULLY_CONNECTED", [7, 8, 9], [10], ("FullyConnectedOptions", {})),
           tb.Op("QUANTIZE", [10], [11])]
    return tb.Model(t, ops, [0], [11]), rng.integers(-128, 128, size=(SAMPLES, 1, d)).astype(np.int8)


@pytest.mark.host
def test_a_16x8_block_between_int8_ends_equals_tflm():
    model, x = _block(np.random.default_rng(5))
    assert_matches_tflm(model, [x], engines=("reference", "host"))


@pytest.mark.host
def test_16x8_kernels_clean_under_asan_and_ubsan():
    """The FC (int32 sums wrapping, int64 ones), ADD, SUB and MUL kernels under AddressSanitizer and
    UndefinedBehaviorSanitizer (an arena of exactly the planned size) on extreme inputs; outputs equal the
    reference."""
    from tinyaot.targets import host
    from tinyaot.targets.base import ModelSources

    if host.sanitizer_problem() is not None:
        pytest.skip(f"no sanitizer support on this machine: {host.sanitizer_problem()}")
    rng = np.random.default_rng(11)
    model, _ = _block(rng)
    x = np.stack([np.full((1, 16), -128, np.int8), np.full((1, 16), 127, np.int8)])
    fc32, _ = _fc_case(rng, "int32", in_f=600, out_f=5, batches=2)
    x16 = np.stack([np.full((1, 2, 600), v, np.int16) for v in (-32768, 32767)])
    target = host.SanitizedHostTarget()
    for m, xs in ((model, x), (fc32, x16)):
        cm = tinyaot.compile(tb.build(m), name="s16_asan")
        got = target.run(target.build(ModelSources.of(cm)), xs.reshape(len(xs), -1).view(np.int8)).outputs
        want = cm.run(xs, engine="reference")
        np.testing.assert_array_equal(got.reshape(-1).view(want.dtype), want.reshape(-1))


# ---- Cortex-M33 -------------------------------------------------------------------------------------------------

@pytest.mark.m33
def test_16x8_kernels_run_on_the_m33(tmp_path):
    """The DSP build (the FC's SMLAD path) equals TFLM, and so does the same C built without the DSP extension."""
    from tinyaot.targets.m33 import run_m33

    rng = np.random.default_rng(33)
    model, x = _fc_case(rng, "int64", in_f=1030, out_f=7, batches=2)  # 4-row groups, a tail row, chunked sums
    cm = assert_matches_tflm(model, [x], engines=("reference", "m33"))
    cm.export(tmp_path / "c")
    portable = run_m33(tmp_path / "c", cm.name, x.reshape(len(x), -1).view(np.int8), 2 * 2 * 7, dsp=False,
                       build_dir=tmp_path / "b")
    np.testing.assert_array_equal(portable.outputs.reshape(-1).view(np.int16),
                                  cm.run(x, engine="reference").reshape(-1))
    model, x = _fc_case(rng, "int32", in_f=37, out_f=9, batches=2)  # the second row not word aligned
    assert_matches_tflm(model, [x], engines=("m33",))
    for code in ("ADD", "SUB", "MUL"):
        model, xs = _binary_case(code, rng)
        assert_matches_tflm(model, xs, engines=("m33",))
    model, x = _block(rng)
    assert_matches_tflm(model, [x], engines=("m33",))


# ---- refusals ---------------------------------------------------------------------------------------------------

def test_fully_connected_16x8_refuses_an_int8_output():
    w = tb.T((3, 4), "int8", data=np.ones((3, 4), np.int8), scale=0.01)
    m = tb.Model([t16((1, 4), 1e-4), w, tb.T((3,), "int64", data=np.zeros(3, np.int64), scale=1e-6),
                  t8((1, 3), 0.05, 0)], [tb.Op("FULLY_CONNECTED", [0, 1, 2], [3], ("FullyConnectedOptions", {}))],
                 [0], [3])
    with pytest.raises(UnsupportedOpError, match=r"operator 0 \(FULLY_CONNECTED\) mixes int8 and int16.*QUANTIZE"):
        tinyaot.compile(tb.build(m))


def test_add_16x8_refuses_mixed_int8_and_int16_operands():
    m = tb.Model([t16((1, 4), 1e-4), t8((1, 4), 0.05, 3), t16((1, 4), 1e-4)],
                 [tb.Op("ADD", [0, 1], [2], ("AddOptions", {}))], [0, 1], [2])
    with pytest.raises(UnsupportedOpError, match=r"operator 0 \(ADD\) mixes int8 and int16.*QUANTIZE"):
        tinyaot.compile(tb.build(m))


def test_mul_16x8_refuses_an_int8_constant_operand():
    m = tb.Model([t16((1, 4), 1e-4), t8((4,), 0.05, 0), t16((1, 4), 1e-4)],
                 [tb.Op("MUL", [0, 1], [2], ("MulOptions", {}))], [0], [2])
    m.tensors[1].data = np.arange(4, dtype=np.int8)
    with pytest.raises(UnsupportedOpError, match=r"operator 0 \(MUL\) mixes int8 and int16"):
        tinyaot.compile(tb.build(m))


def test_fully_connected_16x8_refuses_a_multiplier_beyond_the_int64_rescale():
    """TFLite's int64 MultiplyByQuantizedMultiplier takes shifts up to 7 (multipliers below 128)."""
    w = tb.T((3, 4), "int8", data=np.ones((3, 4), np.int8), scale=0.5)
    m = tb.Model([t16((1, 4), 1e-2), w, tb.T((3,), "int64", data=np.zeros(3, np.int64), scale=5e-3),
                  t16((1, 3), 1e-6)], [tb.Op("FULLY_CONNECTED", [0, 1, 2], [3], ("FullyConnectedOptions", {}))],
                 [0], [3])
    with pytest.raises(ModelError, match=r"fully_connected_0.*beyond TFLite's int64 rescale"):
        tinyaot.compile(tb.build(m))


def test_add_16x8_refuses_an_output_scale_tflm_cannot_rescale_to():
    m = tb.Model([t16((1, 4), 1e-2), t16((1, 4), 1e-2), t16((1, 4), 1e-8)],
                 [tb.Op("ADD", [0, 1], [2], ("AddOptions", {}))], [0, 1], [2])
    with pytest.raises(ModelError, match=r"2 \* max\(input scales\) / \(2\^15 \* output_scale\).*must be below 1"):
        tinyaot.compile(tb.build(m))
