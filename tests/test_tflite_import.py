"""TFLite int8 import: every output byte equal to TensorFlow Lite Micro's reference kernels on the MLPerf Tiny
models, on every engine (NumPy reference, host C, emulated Cortex-M33); QUANTIZE / DEQUANTIZE folded at the
boundaries; clear errors for float models given to from_tflite, unsupported ops and malformed files."""
from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from conftest import have_host_cc, random_int8, shared_file
from mlperf_inputs import ad_inputs
from test_fuzz import CASE_SECONDS, time_guard
from tflite_builder import Model, Op, T, build, run_tflm

import tinyaot
from tinyaot.errors import CalibrationError, ModelError, TinyAOTError, UnsupportedOpError
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


@pytest.mark.host
@pytest.mark.parametrize("key", list(MODELS))
def test_host_c_equals_tflm(key):
    cm, x, want = _case(key)
    np.testing.assert_array_equal(cm.run(x, engine="host").reshape(len(x), -1), want)


@pytest.mark.m33
@pytest.mark.parametrize("key", list(MODELS))
def test_cortex_m33_equals_tflm(key):
    cm, x, want = _case(key)
    got = cm.run(x[:N_M33], engine="m33").reshape(N_M33, -1)
    np.testing.assert_array_equal(got, want[:N_M33])
    assert cm.last_m33.instructions > graph_macs(cm.graph) // 2  # two MACs per SMLAD at best


VWW = "models/mlperf_tiny/vww_96_int8.tflite"


@pytest.mark.host
@pytest.mark.parametrize("optimize", ["speed", "size"])
def test_vww_dead_channels_run_the_fast_kernels_bit_exact(optimize):
    """VWW's pointwise convs hold dead channels (all-zero weights, int32 biases near 2^30, shifts of 24-31 or a
    multiplier flushed to 0): all 14 convs run the pairs kernel (ref/per_channel.py: constant channels), 8 of them
    skipping those channels; the model equals TFLM on seeded inputs, and cut after conv2d_24 (224 of its 256
    channels dead), host C equals the reference on every byte of its output."""
    from tinyaot.backend import plan
    from tinyaot.model import CompiledModel
    from tinyaot.result import CompileResult

    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    path = shared_file(VWW)
    cm = tinyaot.compile(path, name="vww", optimize=optimize)
    kinds = {k.node: k.variant for k in cm.plan.kernels}
    g = cm.graph
    convs = [n.name for n in g.nodes if n.op == "conv2d"]  # a 3x3 stem, 13 pointwise
    assert len(convs) == 14 and {kinds[n] for n in convs} == {"pairs" if optimize == "speed" else "pairs_w8"}
    assert cm.c_sources.files["vww.c"].count("_pairs_sparse") == 8
    dws = [kinds[n.name] for n in g.nodes if n.op == "depthwise_conv2d"]  # rows: output rows of 6+ (stride 2: 12+)
    assert dws == (["rows"] * 5 + ["plain"] + ["rows"] * 5 + ["plain"] * 2 if optimize == "speed"
                   else ["plain"] * 13), dws
    x = random_int8((6,) + cm.input_shape[1:], seed=96)
    want = run_tflm(path.read_bytes(), x).reshape(len(x), -1)
    np.testing.assert_array_equal(cm.run(x, engine="reference").reshape(len(x), -1), want)
    np.testing.assert_array_equal(cm.run(x, engine="host").reshape(len(x), -1), want)
    last = next(i for i, n in enumerate(g.nodes) if n.name == "conv2d_24")
    cut = g.replace(nodes=g.nodes[: last + 1], outputs=[g.nodes[last].outputs[0]])
    cut.prune()
    memory = plan(cut, optimize=optimize)
    assert memory.kernel_of("conv2d_24").note.startswith("224 constant channels skipped")
    part = CompiledModel(CompileResult("vwwcut", cut, memory, memory))
    got = part.run(x, engine="host")
    np.testing.assert_array_equal(got, part.run(x, engine="reference"))
    assert got.shape[-1] == 256 and len(np.unique(got)) > 20


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


@pytest.mark.host
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


@pytest.mark.arm
def test_compiled_tflite_model_degrades_gracefully_without_a_float_graph():
    cm, _, _ = _case("ad")
    assert cm.float_graph is None
    assert cm.float_arena_bytes >= 4 * cm.lower_bound_bytes
    assert cm.arena_bytes >= cm.lower_bound_bytes > 0
    assert cm.input_qparams == (float(np.float32(0.39101523)), 89)
    # No float original, but the float model its integers stand for (quantize/dequantize.py) is the reference.
    x = ad_inputs(3, seed=4)  # log-mel-like frames (tests/mlperf_inputs.py); uniform int8 noise saturates inside
    y = cm.float_reference(x)
    assert y.shape == (3, 640) and np.corrcoef(y.ravel(), cm.run_float(x).ravel())[0, 1] > 0.97  # measured 0.991
    report = cm.report().to_dict()
    assert report["arena_bytes"] == cm.arena_bytes


def test_bytes_and_path_compile_alike_and_calibration_is_ignored(tmp_path):
    path = shared_file(MODELS["ad"])
    with pytest.warns(UserWarning, match="calibration is ignored"):
        cm_path = tinyaot.compile(str(path), calibration=np.zeros((4, 640)), name="ad_path")
    cm_bytes = tinyaot.compile(path.read_bytes(), name="ad_bytes")
    x = random_int8((5, 640), seed=3)
    np.testing.assert_array_equal(cm_path.run(x), cm_bytes.run(x))


@pytest.mark.arm
def test_cli_compiles_a_tflite_file(tmp_path, capsys):
    from tinyaot.cli import main

    path = shared_file(MODELS["kws"])
    assert main(["compile", str(path), "--name", "kws", "-o", str(tmp_path / "kws"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert 0 < info["arena_bytes"] <= info["lower_bound_bytes"]  # streamed convs overlap: below layer-by-layer
    assert info["input"]["shape"] == [1, 49, 10, 1] and info["input"]["zero_point"] == 83
    assert (tmp_path / "kws" / "kws.c").is_file() and (tmp_path / "kws" / "conv2d_pairs_s8.c").is_file()


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


def test_the_float_mlperf_model_asks_for_calibration():
    """A float .tflite goes through tinyaot's own PTQ (tests/test_tflite_float.py), so it needs samples."""
    with pytest.raises(CalibrationError, match="float .tflite model needs calibration samples"):
        tinyaot.compile(shared_file("models/mlperf_tiny/kws_ref_model_float32.tflite"), name="kws_f")


def test_an_unsupported_op_is_named_with_its_index_and_the_supported_list():
    m = _fc_model()
    m.tensors.append(T((1, 4), scale=0.2, zero_point=3))
    m.ops.append(Op("SQUARED_DIFFERENCE", [3, 3], [4]))
    m.outputs = [4]
    with pytest.raises(UnsupportedOpError, match=r"operator 1 \(SQUARED_DIFFERENCE\).*CONV_2D.*SOFTMAX"):
        from_tflite(build(m))


def test_unsupported_activation_is_explained_and_broadcast_add_imports():
    m = _fc_model()
    m.ops[0].options = ("FullyConnectedOptions", {"FusedActivationFunction": 4})
    with pytest.raises(UnsupportedOpError, match="fused activation TANH"):
        from_tflite(build(m))
    tensors = [T((1, 4, 4, 2), scale=0.1), T((1, 1, 1, 2), scale=0.1), T((1, 4, 4, 2), scale=0.2)]
    pool = ("Pool2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1, "FilterWidth": 4, "FilterHeight": 4})
    ops = [Op("AVERAGE_POOL_2D", [0], [1], pool), Op("ADD", [0, 1], [2], ("AddOptions", {}))]
    model = build(Model(tensors, ops, [0], [2]))
    g = from_tflite(model)  # broadcasting ADD (tests/test_broadcast_ops.py checks it against TFLM)
    assert [n.op for n in g.nodes] == ["avg_pool2d", "add"]


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
    answered = 0
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
            with time_guard(CASE_SECONDS, f"case {i}"):  # a hang fails here, naming the case
                g = from_tflite(blob)
        except TinyAOTError as exc:
            assert str(exc)  # says what is wrong
        else:
            assert g.inputs and g.outputs  # a flip that left the model valid
        answered += 1
    assert answered == 300  # every blob refused or read, none hung: no wall-clock budget a loaded machine could miss


# ---- the other int8 ops a TFLite CNN uses --------------------------------------------------------------------


def _conv_w(rng, shape, axis):
    n = shape[axis]
    return T(shape, data=rng.integers(-127, 128, shape).astype(np.int8), scale=list(rng.uniform(0.002, 0.02, n)),
             axis=axis)


def _many_ops_model() -> bytes:
    """CONV_2D, MAX_POOL_2D, PAD, DEPTHWISE_CONV_2D, MUL by a constant, RELU, CONCATENATION, TRANSPOSE, MEAN,
    QUANTIZE (int8 -> int8), FULLY_CONNECTED, SOFTMAX: every op TFLM runs with its reference kernels."""
    rng = np.random.default_rng(21)
    a, b, c, d = (0.05, -10), (0.04, -128), (0.03, -5), (0.02, 3)
    w0, w3 = _conv_w(rng, (8, 3, 3, 4), 0), _conv_w(rng, (1, 3, 3, 8), 3)
    bias0 = T((8,), "int32", data=rng.integers(-500, 500, 8).astype(np.int32),
              scale=[a[0] * s for s in w0.scale])
    bias3 = T((8,), "int32", data=rng.integers(-500, 500, 8).astype(np.int32),
              scale=[b[0] * s for s in w3.scale])
    k = T((1, 1, 1, 8), data=rng.integers(-127, 128, (1, 1, 1, 8)).astype(np.int8), scale=0.01, zero_point=2)
    wf = T((10, 16), data=rng.integers(-127, 128, (10, 16)).astype(np.int8), scale=0.01)
    bf = T((10,), "int32", data=rng.integers(-500, 500, 10).astype(np.int32), scale=0.02 * 0.01)
    tensors = [
        T((1, 8, 8, 4), scale=a[0], zero_point=a[1]),  # 0
        w0, bias0,  # 1, 2
        T((1, 8, 8, 8), scale=b[0], zero_point=b[1]),  # 3 conv out
        T((1, 4, 4, 8), scale=b[0], zero_point=b[1]),  # 4 max pool
        T((4, 2), "int32", data=np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32)),  # 5
        T((1, 6, 6, 8), scale=b[0], zero_point=b[1]),  # 6 pad
        w3, bias3,  # 7, 8
        T((1, 4, 4, 8), scale=c[0], zero_point=c[1]),  # 9 depthwise
        k,  # 10
        T((1, 4, 4, 8), scale=d[0], zero_point=d[1]),  # 11 mul
        T((1, 4, 4, 8), scale=b[0], zero_point=b[1]),  # 12 relu (rescales)
        T((1, 4, 4, 16), scale=b[0], zero_point=b[1]),  # 13 concat
        T((4,), "int32", data=np.array([0, 2, 1, 3], np.int32)),  # 14
        T((1, 4, 4, 16), scale=b[0], zero_point=b[1]),  # 15 transpose
        T((2,), "int32", data=np.array([1, 2], np.int32)),  # 16
        T((1, 16), scale=0.015, zero_point=-100),  # 17 mean
        T((1, 16), scale=0.02, zero_point=0),  # 18 requantize
        wf, bf,  # 19, 20
        T((1, 10), scale=0.1, zero_point=0),  # 21
        T((1, 10), scale=1 / 256, zero_point=-128),  # 22
    ]
    conv = {"Padding": 0, "StrideW": 1, "StrideH": 1, "FusedActivationFunction": 1, "DilationWFactor": 1,
            "DilationHFactor": 1}
    pool = {"Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 2}
    dw = {"Padding": 1, "StrideW": 1, "StrideH": 1, "DepthMultiplier": 1, "DilationWFactor": 1, "DilationHFactor": 1}
    ops = [
        Op("CONV_2D", [0, 1, 2], [3], ("Conv2DOptions", conv), 3),
        Op("MAX_POOL_2D", [3], [4], ("Pool2DOptions", pool), 2),
        Op("PAD", [4, 5], [6], None, 2),
        Op("DEPTHWISE_CONV_2D", [6, 7, 8], [9], ("DepthwiseConv2DOptions", dw), 3),
        Op("MUL", [9, 10], [11], ("MulOptions", {}), 2),
        Op("RELU", [11], [12], None, 2),
        Op("CONCATENATION", [12, 4], [13], ("ConcatenationOptions", {"Axis": 3}), 2),
        Op("TRANSPOSE", [13, 14], [15], None, 2),
        Op("MEAN", [15, 16], [17], ("ReducerOptions", {"KeepDims": False}), 2),
        Op("QUANTIZE", [17], [18], None, 2),
        Op("FULLY_CONNECTED", [18, 19, 20], [21], ("FullyConnectedOptions", {}), 4),
        Op("SOFTMAX", [21], [22], ("SoftmaxOptions", {"Beta": 0.25}), 2),
    ]
    return build(Model(tensors, ops, [0], [22]))


@pytest.mark.host
def test_a_model_with_every_imported_op_matches_tflm_on_every_engine():
    model = _many_ops_model()
    g = from_tflite(model)
    assert [n.op for n in g.nodes] == ["conv2d", "max_pool2d", "pad", "depthwise_conv2d", "mul", "relu", "concat",
                                       "transpose", "mean", "quantize", "fully_connected", "softmax"]
    cm = tinyaot.compile(model, name="many")
    x = random_int8((60, 1, 8, 8, 4), seed=9)
    ref = cm.run(x).reshape(60, -1)
    assert len(np.unique(ref)) > 20
    pytest.importorskip("tflite_micro")
    np.testing.assert_array_equal(ref, run_tflm(model, x).reshape(60, -1))
    if have_host_cc():
        np.testing.assert_array_equal(cm.run(x, engine="host").reshape(60, -1), ref)


def test_relu6_that_would_rescale_is_refused():
    tensors = [T((1, 8), scale=0.05, zero_point=0), T((1, 8), scale=0.03, zero_point=-100)]
    with pytest.raises(UnsupportedOpError, match=r"operator 0 \(RELU6\) changes scale/zero point"):
        from_tflite(build(Model(tensors, [Op("RELU6", [0], [1])], [0], [1])))


@pytest.mark.parametrize("code,function,out_qp", [("LOGISTIC", "tflm_logistic", (1 / 256, -128)),
                                                  ("TANH", "tflm_tanh", (1 / 128, 0)),
                                                  ("HARD_SWISH", "tflm_hard_swish", (0.03, -60))])
def test_lut_activations_equal_tflm(code, function, out_qp):
    """LOGISTIC / TANH / HARD_SWISH become 256-entry tables filled by TFLM's integer kernels: bit-exact
    (tests/test_tflite_activations.py covers many more qparams)."""
    tensors = [T((1, 4, 4, 8), scale=0.04, zero_point=-3), T((1, 4, 4, 8), scale=out_qp[0], zero_point=out_qp[1])]
    model = build(Model(tensors, [Op(code, [0], [1])], [0], [1]))
    g = from_tflite(model)
    assert g.nodes[0].op == "lut" and g.nodes[0].attrs["function"] == function
    x = np.arange(-128, 128, dtype=np.int8).reshape(2, 1, 4, 4, 8)
    cm = tinyaot.compile(model, name=f"lut_{function}")
    pytest.importorskip("tflite_micro")
    want = run_tflm(model, x).astype(np.int64)
    np.testing.assert_array_equal(cm.run(x).astype(np.int64), want.reshape(2, 1, 4, 4, 8))


# ---- quantization parameters checked at the edge (TFLite's rules) ---------------------------------------------


def _with(tensor: int, **changes) -> Model:
    m = _fc_model()
    for k, v in changes.items():
        setattr(m.tensors[tensor], k, v)
    return m


def _fc_scales(x: float, w: float, y: float) -> Model:
    """The FC model with other scales and a consistent bias scale (x * w)."""
    m = _fc_model()
    m.tensors[0].scale, m.tensors[1].scale, m.tensors[2].scale, m.tensors[3].scale = x, w, x * w, y
    return m


BAD_QPARAMS = {
    # Each was imported before, and the reference and the host C computed garbage (or gcc failed) on it.
    "input zero point 300": (_with(0, zero_point=300), r"tensor 0 \('t0', int8\) has zero point 300.*\[-128, 127\]"),
    "output zero point -200": (_with(3, zero_point=-200), r"tensor 3 \('t3', int8\) has zero point -200"),
    "output zero point 2^40": (_with(3, zero_point=2**40), r"zero point 1099511627776.*\[-128, 127\]"),
    "input scale 1e-38": (_with(0, scale=1e-38), r"tensor 0 \('t0', int8\) has scale 1e-38, outside"),
    "output scale 1e30": (_with(3, scale=1e30), r"tensor 3 \('t3', int8\) has scale 1e\+30, outside"),
    "weight scale 1e30": (_with(1, scale=1e30), r"tensor 1 \('t1', int8\) has scale 1e\+30"),
    "bias zero point 5": (_with(2, zero_point=5), r"tensor 2 \('t2', int32\) has zero point 5; an int32 bias is "
                                                  "symmetric"),
    "bias scale 500x off": (_with(2, scale=0.5), r"the bias 't2' has scale 0.5, but input_scale \* weight_scale "
                                                 r"is 0.001 \('t0' 0.1 \* 't1' 0.01\)"),
    "multiplier 1e10": (_fc_scales(1.0, 1.0, 1e-10), r"multiplier .* = 1e\+10 is 2\^30 or more.*shift 34 > 30"),
    "multiplier 1e-16": (_fc_scales(1e-6, 1e-6, 1e4), r"is at most 1e-16, below 2\^-32.*flushes it to zero"),
    "batch size 2": (_with(0, shape=(2, 8)), r"model input 't0' has shape \[2, 8\] \(batch size 2\).*batch size 1"),
}


@pytest.mark.parametrize("case", list(BAD_QPARAMS))
def test_bad_quantization_parameters_are_refused_at_import(case):
    """The error names the tensor or operator, says what is wrong and what to do, and comes from the importer,
    before the reference interpreter or gcc ever see the numbers."""
    model, match = BAD_QPARAMS[case]
    with pytest.raises(ModelError, match=match) as err:
        from_tflite(build(model))
    assert "re-convert" in str(err.value).lower()
    assert err.traceback[-1].path.parent.name == "tflite"  # raised in the front end, not deep inside


def test_a_uint8_zero_point_is_checked_against_uint8s_range():
    """TFLite allows uint8 at the boundaries: its zero point lies in [0, 255] (tinyaot then refuses the dtype)."""
    m = _fc_model()
    m.tensors[0] = T((1, 8), "uint8", scale=0.1, zero_point=300)
    with pytest.raises(ModelError, match=r"\('t0', uint8\) has zero point 300.*\[0, 255\]"):
        from_tflite(build(m))
    m.tensors[0] = T((1, 8), "uint8", scale=0.1, zero_point=255)
    with pytest.raises(UnsupportedOpError, match="uint8 tensor"):  # a valid zero point: the dtype is what's refused
        from_tflite(build(m))


def _conv_model(n_scales: int = 4, bias_scales=None, out_scale: float = 0.05, bias_axis: int = 0) -> Model:
    rng = np.random.default_rng(5)
    ws = list(rng.uniform(0.005, 0.02, n_scales))
    bs = [0.03 * s for s in ws] if bias_scales is None else bias_scales
    tensors = [T((1, 5, 5, 3), scale=0.03, zero_point=-4),
               T((4, 3, 3, 3), data=rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), scale=ws, axis=0),
               T((4,), "int32", data=rng.integers(-100, 100, 4).astype(np.int32), scale=bs, axis=bias_axis),
               T((1, 3, 3, 4), scale=out_scale, zero_point=2)]
    conv = {"Padding": 1, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1}
    return Model(tensors, [Op("CONV_2D", [0, 1, 2], [3], ("Conv2DOptions", conv), 3)], [0], [3])


def test_per_channel_scales_are_checked_channel_by_channel():
    g = from_tflite(build(_conv_model()))  # consistent: imports
    assert len(g.tensor(g.nodes[0].inputs[1]).qparams.scale) == 4
    with pytest.raises(ModelError, match=r"3 per-channel scales along dimension 0.*\[4, 3, 3, 3\]"):
        from_tflite(build(_conv_model(n_scales=3)))
    good = [0.03 * s for s in _conv_model().tensors[1].scale]
    with pytest.raises(ModelError, match=r"bias 't2' has scale .* \(output channel 2\), but input_scale"):
        from_tflite(build(_conv_model(bias_scales=good[:2] + [good[2] * 1.5] + good[3:])))
    # One channel whose multiplier flushes is exact (its accumulator is below half a step); all of them is not.
    with pytest.raises(ModelError, match="every output channel's multiplier .* flushes it to zero"):
        from_tflite(build(_conv_model(out_scale=1e9)))


def test_a_bias_whose_quantized_dimension_names_the_convs_channel_axis_imports():
    """TFLite Micro's example models carry 1-D per-channel biases with quantized_dimension 3 (the conv's channel
    axis); TFLM ignores it for a 1-D tensor, and so does tinyaot: the same model, the same bytes as TFLM's."""
    blob = build(_conv_model(bias_axis=3))
    cm, plain = tinyaot.compile(blob, name="bias_axis"), tinyaot.compile(build(_conv_model()), name="bias_axis")
    x = random_int8((20, 1, 5, 5, 3), seed=12)
    np.testing.assert_array_equal(cm.run(x.reshape(20, 1, 5, 5, 3)), plain.run(x.reshape(20, 1, 5, 5, 3)))
    np.testing.assert_array_equal(cm.run(x[:5].reshape(5, 1, 5, 5, 3)).reshape(5, -1),
                                  np.concatenate([run_tflm(blob, [xi]).reshape(1, -1) for xi in x[:5]]))


def test_add_and_quantize_multipliers_follow_tflms_rules():
    add = [T((1, 8), scale=0.5), T((1, 8), scale=1e-7)]
    with pytest.raises(ModelError, match=r"ADD\): the output multiplier .* must be below 1"):
        from_tflite(build(Model(add, [Op("ADD", [0, 0], [1], ("AddOptions", {}))], [0], [1])))
    # x (1e-4) + x^4 (1e-16): every MUL multiplier is 1, but the ADD's second input is 1e-12 of the first.
    add = [T((1, 8), scale=1e-4), T((1, 8), scale=1e-8), T((1, 8), scale=1e-16), T((1, 8), scale=1e-4)]
    ops = [Op("MUL", [0, 0], [1], ("MulOptions", {})), Op("MUL", [1, 1], [2], ("MulOptions", {})),
           Op("ADD", [0, 2], [3], ("AddOptions", {}))]
    with pytest.raises(ModelError, match=r"operator 2 \(ADD\): the second input multiplier .* below 2\^-32.*ignored"):
        from_tflite(build(Model(add, ops, [0], [3])))
    requant = [T((1, 8), scale=1e3), T((1, 8), scale=1e-7)]
    with pytest.raises(ModelError, match=r"QUANTIZE\): the requantization multiplier .* 2\^30 or more"):
        from_tflite(build(Model(requant, [Op("QUANTIZE", [0], [1])], [0], [1])))


def test_mlperf_models_are_within_every_bound():
    """The bounds leave real models alone (by a wide margin): every MLPerf Tiny model imports, batch 1."""
    for key in MODELS:
        g = from_tflite(shared_file(MODELS[key]))
        assert g.tensor(g.inputs[0]).shape[0] == 1
        scales = [s for t in g.tensors.values() if t.qparams is not None for s in t.qparams.scale]
        assert 1e-9 < min(scales) and max(scales) < 10


def test_what_the_fuzzer_found_is_a_model_error():
    """tests/test_fuzz.py found these two crashing deep inside: a NaN or negative SOFTMAX beta (ValueError in
    quantize_multiplier) and SAME padding of a hugely dilated kernel (a 672 GiB padded array in the reference)."""
    tensors = [T((1, 10), scale=0.1), T((1, 10), scale=1 / 256, zero_point=-128)]
    for beta in (float("nan"), -1.0, 0.0):
        model = build(Model(tensors, [Op("SOFTMAX", [0], [1], ("SoftmaxOptions", {"Beta": beta}), 2)], [0], [1]))
        with pytest.raises(ModelError, match=r"SOFTMAX\) has beta .*positive, finite beta"):
            from_tflite(model)
    m = _conv_model()
    m.ops[0].options[1].update(Padding=0, DilationHFactor=2**31 - 1)
    m.tensors[3].shape = (1, 5, 5, 4)  # SAME keeps the output size whatever the dilation
    with pytest.raises(ModelError, match=r"CONV_2D\): a 3x3 kernel .* dilation \(2147483647, 1\) pads"):
        from_tflite(build(m))
