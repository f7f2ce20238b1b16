"""TFLite int8 import: every output byte equal to TensorFlow Lite Micro's reference kernels on the MLPerf Tiny
models, on every engine (NumPy reference, host C, emulated Cortex-M33); QUANTIZE / DEQUANTIZE folded at the
boundaries; clear errors for float models, unsupported ops and malformed files."""
from __future__ import annotations

import json
import time
from functools import cache

import numpy as np
import pytest
from conftest import have_host_cc, needs_host, needs_m33, random_int8, shared_file
from tflite_builder import Model, Op, T, build, run_tflm

import tinyaot
from tinyaot.errors import ModelError, TinyAOTError, UnsupportedOpError
from tinyaot.frontend.tflite import from_tflite
from tinyaot.plan import buffers_of, plan_memory
from tinyaot.ref.interpreter import Interpreter
from tinyaot.report.macs import graph_macs

MODELS = {
    "kws": "models/mlperf_tiny/kws_ref_model.tflite",
    "resnet": "models/mlperf_tiny/pretrainedResnet_quant.tflite",
    "ad": "models/mlperf_tiny/ad01_int8.tflite",
}
N_RANDOM = 100
N_M33 = 20
KWS_INPUT = "models/mlperf_tiny/kws_input_int8_1x49x10x1.npy"
KWS_ON = 5  # labels: down go left no off on right stop up yes silence unknown


@cache
def _case(key: str):
    """(compiled model, inputs, TFLM outputs): 100 seeded random inputs, plus the real KWS input first."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    path = shared_file(MODELS[key])
    cm = tinyaot.compile(path, name=key)
    x = random_int8((N_RANDOM,) + cm.input_shape[1:], seed=len(key))
    if key == "kws":
        x = np.concatenate([np.load(shared_file(KWS_INPUT)).reshape((1,) + cm.input_shape[1:]), x])
    want = run_tflm(path.read_bytes(), x).reshape(len(x), -1)
    return cm, x, want


@pytest.mark.parametrize("key", list(MODELS))
def test_reference_equals_tflm(key):
    """All inputs through the kernels on a disjoint plan, the first ten on the compiled (in-place) plan too.

    The compiled plan may put an add over its input; the reference then emulates the C's write order
    unit by unit, which costs a kernel call per unit. Host C and the M33 run that plan for real below.
    """
    cm, x, want = _case(key)
    disjoint = plan_memory(buffers_of(cm.graph), len(cm.graph.nodes), alignment=cm.plan.alignment)
    got = Interpreter(cm.graph, disjoint).run(x).reshape(len(x), -1)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(cm.run(x[:10], engine="reference").reshape(10, -1), want[:10])
    assert len(np.unique(want)) > 5  # outputs vary: a constant output would hide a broken kernel


@needs_host
@pytest.mark.host
@pytest.mark.parametrize("key", list(MODELS))
def test_host_c_equals_tflm(key):
    cm, x, want = _case(key)
    np.testing.assert_array_equal(cm.run(x, engine="host").reshape(len(x), -1), want)


@needs_m33
@pytest.mark.m33
@pytest.mark.parametrize("key", list(MODELS))
def test_cortex_m33_equals_tflm(key):
    cm, x, want = _case(key)
    got = cm.run(x[:N_M33], engine="m33").reshape(N_M33, -1)
    np.testing.assert_array_equal(got, want[:N_M33])
    assert cm.last_m33.instructions > graph_macs(cm.graph) // 2  # two MACs per SMLAD at best


def test_ad_fully_connected_multipliers_match_tflm_on_many_inputs():
    """AD's per-tensor FC multipliers come out of double-precision scale products, as in TFLM; a float32
    product changes 9 of its 10 multipliers and about 0.5% of the outputs (so 100 inputs could miss it)."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    path = shared_file(MODELS["ad"])
    cm = tinyaot.compile(path, name="ad_many")
    x = random_int8((2000, 640), seed=7)
    want = run_tflm(path.read_bytes(), x).reshape(len(x), -1)
    disjoint = plan_memory(buffers_of(cm.graph), len(cm.graph.nodes), alignment=cm.plan.alignment)
    np.testing.assert_array_equal(Interpreter(cm.graph, disjoint).run(x).reshape(len(x), -1), want)


def test_kws_real_input_is_the_word_on():
    cm, x, want = _case("kws")
    assert int(np.argmax(want[0])) == KWS_ON
    assert int(np.argmax(cm.run(x[0], engine="reference"))) == KWS_ON
    if have_host_cc():
        assert int(np.argmax(cm.run(x[0], engine="host"))) == KWS_ON


def test_kws_graph_is_int8_nhwc_with_tflm_padding():
    g = from_tflite(shared_file(MODELS["kws"]))
    assert g.layout == "NHWC"
    assert [n.op for n in g.nodes] == ["conv2d"] + ["depthwise_conv2d", "conv2d"] * 4 + [
        "avg_pool2d", "reshape", "fully_connected", "softmax"]
    x = g.tensor(g.inputs[0])
    assert x.shape == (1, 49, 10, 1) and x.dtype == "int8"
    assert x.qparams.scale == (float(np.float32(0.5847029)),) and x.qparams.zero_point == (83,)
    conv = g.nodes[0]
    w, b = g.tensor(conv.inputs[1]), g.tensor(conv.inputs[2])
    assert w.shape == (64, 10, 4, 1) and w.dtype == "int8" and w.qparams.axis == 0 and len(w.qparams.scale) == 64
    assert b.dtype == "int32" and b.shape == (64,)
    # SAME on 49x10 with a 10x4 kernel, stride 2 -> 25x5: 9 rows of padding (4 above, 5 below), 2 columns.
    assert conv.attrs["stride"] == (2, 2) and conv.attrs["padding"] == (4, 5, 1, 1)
    assert conv.attrs["clamp"] == (0.0, float("inf"))
    dw = g.nodes[1]
    assert dw.attrs["depth_multiplier"] == 1 and dw.attrs["padding"] == (1, 1, 1, 1)
    assert g.tensor(dw.inputs[1]).qparams.axis == 3
    pool = g.nodes[9]
    assert pool.attrs["kernel"] == (25, 5) and pool.attrs["count_include_pad"] is False
    assert g.nodes[-1].attrs["beta"] == 1.0
    y = g.tensor(g.outputs[0])
    assert y.qparams.scale == (1 / 256,) and y.qparams.zero_point == (-128,)


def test_compiled_tflite_model_degrades_gracefully_without_a_float_graph():
    cm, _, _ = _case("ad")
    assert cm.float_graph is None
    assert cm.float_arena_bytes >= 4 * cm.lower_bound_bytes
    assert cm.arena_bytes >= cm.lower_bound_bytes > 0
    assert cm.input_qparams == (float(np.float32(0.39101523)), 89)
    with pytest.raises(ModelError, match="already quantized"):
        cm.float_reference(np.zeros(cm.input_shape))
    report = cm.report().to_dict()
    assert report["arena_bytes"] == cm.arena_bytes


def test_bytes_and_path_compile_alike_and_calibration_is_ignored(tmp_path):
    path = shared_file(MODELS["ad"])
    with pytest.warns(UserWarning, match="calibration is ignored"):
        cm_path = tinyaot.compile(str(path), calibration=np.zeros((4, 640)), name="ad_path")
    cm_bytes = tinyaot.compile(path.read_bytes(), name="ad_bytes")
    x = random_int8((5, 640), seed=3)
    np.testing.assert_array_equal(cm_path.run(x), cm_bytes.run(x))


def test_cli_compiles_a_tflite_file(tmp_path, capsys):
    from tinyaot.cli import main

    path = shared_file(MODELS["kws"])
    assert main(["compile", str(path), "--name", "kws", "-o", str(tmp_path / "kws"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert 0 < info["arena_bytes"] <= info["lower_bound_bytes"]  # streamed convs overlap: below layer-by-layer
    assert info["input"]["shape"] == [1, 49, 10, 1] and info["input"]["zero_point"] == 83
    assert (tmp_path / "kws" / "kws.c").is_file() and (tmp_path / "kws" / "conv2d_s8.c").is_file()


# ---- boundaries: a float-interface model becomes an int8-interface model -----------------------------


def _float_io_model() -> bytes:
    """float32 in -> QUANTIZE -> FULLY_CONNECTED + RELU -> DEQUANTIZE -> float32 out."""
    rng = np.random.default_rng(11)
    w = rng.integers(-127, 128, (6, 10)).astype(np.int8)
    b = rng.integers(-300, 300, 6).astype(np.int32)
    tensors = [
        T((1, 10), "float32", name="x_float"),
        T((1, 10), scale=0.03, zero_point=-7, name="x_q"),
        T((6, 10), data=w, scale=0.02),
        T((6,), "int32", data=b, scale=0.03 * 0.02),
        T((1, 6), scale=0.05, zero_point=-128, name="y_q"),
        T((1, 6), "float32", name="y_float"),
    ]
    ops = [
        Op("QUANTIZE", [0], [1]),
        Op("FULLY_CONNECTED", [1, 2, 3], [4], ("FullyConnectedOptions", {"FusedActivationFunction": 1}), 4),
        Op("DEQUANTIZE", [4], [5]),
    ]
    return build(Model(tensors, ops, [0], [5]))


def test_quantize_and_dequantize_at_the_boundaries_become_int8_io():
    model = _float_io_model()
    g = from_tflite(model)
    assert [n.op for n in g.nodes] == ["fully_connected"]
    assert g.tensor(g.inputs[0]).dtype == "int8" and g.tensor(g.inputs[0]).qparams.zero_point == (-7,)
    assert g.tensor(g.outputs[0]).qparams.scale == (float(np.float32(0.05)),)
    cm = tinyaot.compile(model, name="fio")
    assert cm.input_qparams == (float(np.float32(0.03)), -7) and cm.output_qparams[1] == -128
    pytest.importorskip("tflite_micro")
    q = random_int8((50, 1, 10), seed=5)
    # Float inputs that sit exactly on the int8 grid quantize to q in TFLM as on the host.
    xf = (np.float32(0.03) * (q.astype(np.float32) + np.float32(7))).astype(np.float32)
    yf = run_tflm(model, xf).reshape(50, 6)
    want = np.rint(yf / np.float32(0.05)).astype(np.int64) - 128
    np.testing.assert_array_equal(cm.run(q).reshape(50, 6), want)
    assert len(np.unique(want)) > 5


# ---- clear errors ------------------------------------------------------------------------------------


def _fc_model(**changes) -> Model:
    rng = np.random.default_rng(2)
    tensors = [
        T((1, 8), scale=0.1, zero_point=0),
        T((4, 8), data=rng.integers(-127, 128, (4, 8)).astype(np.int8), scale=0.01),
        T((4,), "int32", data=np.arange(4, dtype=np.int32), scale=0.001),
        T((1, 4), scale=0.2, zero_point=3),
    ]
    m = Model(tensors, [Op("FULLY_CONNECTED", [0, 1, 2], [3], ("FullyConnectedOptions", {}), 4)], [0], [3])
    for k, v in changes.items():
        setattr(m, k, v)
    return m


def test_a_float_model_is_refused_with_a_way_forward():
    tensors = [T((1, 8), "float32"), T((4, 8), "float32", data=np.ones((4, 8), np.float32)),
               T((4,), "float32", data=np.zeros(4, np.float32)), T((1, 4), "float32")]
    model = build(Model(tensors, [Op("FULLY_CONNECTED", [0, 1, 2], [3], ("FullyConnectedOptions", {}))], [0], [3]))
    with pytest.raises(ModelError, match="float model.*full-integer quantization"):
        from_tflite(model)


def test_the_float_mlperf_model_is_refused():
    with pytest.raises(ModelError, match="float model"):
        tinyaot.compile(shared_file("models/mlperf_tiny/kws_ref_model_float32.tflite"), name="kws_f")


def test_an_unsupported_op_is_named_with_its_index_and_the_supported_list():
    m = _fc_model()
    m.tensors.append(T((1, 4), scale=0.2, zero_point=3))
    m.ops.append(Op("SQUARED_DIFFERENCE", [3, 3], [4]))
    m.outputs = [4]
    with pytest.raises(UnsupportedOpError, match=r"operator 1 \(SQUARED_DIFFERENCE\).*CONV_2D.*SOFTMAX"):
        from_tflite(build(m))


def test_unsupported_activation_and_broadcast_add_are_explained():
    m = _fc_model()
    m.ops[0].options = ("FullyConnectedOptions", {"FusedActivationFunction": 4})
    with pytest.raises(UnsupportedOpError, match="fused activation TANH"):
        from_tflite(build(m))
    tensors = [T((1, 4, 4, 2), scale=0.1), T((1, 1, 1, 2), scale=0.1), T((1, 4, 4, 2), scale=0.2)]
    pool = ("Pool2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1, "FilterWidth": 4, "FilterHeight": 4})
    ops = [Op("AVERAGE_POOL_2D", [0], [1], pool), Op("ADD", [0, 1], [2], ("AddOptions", {}))]
    model = build(Model(tensors, ops, [0], [2]))
    with pytest.raises(TinyAOTError, match="broadcast"):
        from_tflite(model)


def test_wrong_schema_version():
    with pytest.raises(ModelError, match="schema version 2.*version 3"):
        from_tflite(build(_fc_model(version=2)))


def test_tensor_index_out_of_range():
    m = _fc_model()
    m.ops[0].inputs = [0, 1, 99]
    with pytest.raises(ModelError, match="refers to tensor 99.*4 tensors"):
        from_tflite(build(m))
    m = _fc_model(outputs=[7])
    with pytest.raises(ModelError, match="model output is tensor 7"):
        from_tflite(build(m))


def test_missing_file_and_not_a_tflite_file(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        tinyaot.compile(tmp_path / "nope.tflite")
    with pytest.raises(ModelError, match="TFL3"):
        from_tflite(b"\x00" * 64)


def test_truncated_files_raise_cleanly():
    """Every cut that removes content raises (the last bytes of a flatbuffer can be alignment padding)."""
    data = build(_fc_model())
    big = shared_file(MODELS["kws"]).read_bytes()
    cuts = [(data, n) for n in range(0, len(data) - 16, 5)]
    cuts += [(big, n) for n in (0, 3, 8, 100, 5000, len(big) // 2, len(big) - 100)]
    for blob, n in cuts:
        with pytest.raises(TinyAOTError):
            from_tflite(blob[:n])


def test_random_bytes_and_bit_flips_never_crash_or_hang():
    rng = np.random.default_rng(0)
    valid = build(_fc_model())
    start = time.monotonic()
    for i in range(300):
        if i < 100:
            blob = rng.integers(0, 256, int(rng.integers(1, 600)), dtype=np.uint8).tobytes()
            if i % 2:
                blob = blob[:4] + b"TFL3" + blob[8:]  # get past the identifier check
        else:
            arr = np.frombuffer(valid, dtype=np.uint8).copy()
            idx = rng.integers(0, arr.size, int(rng.integers(1, 4)))
            arr[idx] ^= rng.integers(1, 256, idx.size, dtype=np.uint8)
            blob = arr.tobytes()
        try:
            g = from_tflite(blob)
        except TinyAOTError as exc:
            assert str(exc)  # says what is wrong
        else:
            assert g.inputs and g.outputs  # a flip that left the model valid
    assert time.monotonic() - start < 30
