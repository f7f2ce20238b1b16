"""A float SVDF model quantized by tinyaot's calibration, against TFLite Micro's float interpreter.

The model is shaped like TFLM's keyword benchmark (two stacked SVDF layers with RELU, then FULLY_CONNECTED), with
seeded weights (not trained) and seeded smooth frames (a few drifting sinusoids per feature, plus noise). An SVDF
keeps state from one invoke to the next, so its calibration samples are consecutive frames of one stream and the
test streams are run in order from a reset: TFLM's float interpreter over a stream is the reference, tinyaot's int8
model (reference interpreter, host C, Cortex-M33) runs the same stream. The int8 model, written back as a .tflite,
also runs on TFLM's integer kernels, bit-exact: what tinyaot chose passes TFLM's Prepare.
"""
from __future__ import annotations

import functools
import warnings
from unittest import mock

import numpy as np
import pytest
from tflite_builder import Model, Op, T, build, load

import tinyaot
from tinyaot.diagnostics import CalibrationWarning
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite import from_tflite_float
from tinyaot.quantize import calibrate
from tinyaot.quantize.calibrate import collect_ranges
from tinyaot.quantize.float_eval import evaluate
from tinyaot.quantize.svdf import weights_time_steps

FEATURES = 16
LAYERS = ((24, 2, 8), (16, 1, 4))  # (filters, rank, memory) of each SVDF
CLASSES = 5
RELU = 1


def float_svdf_model(seed: int = 0, activations=(RELU, RELU), every_layer: bool = False) -> bytes:
    """float32 [1, 16] -> SVDF (24 filters, rank 2, memory 8) -> SVDF (16 filters, rank 1, memory 4) ->
    FULLY_CONNECTED -> [1, 5]; each SVDF's state a float32 variable tensor. `every_layer`: each SVDF's output is
    a model output too (after the logits)."""
    rng = np.random.default_rng(seed)
    tensors = [T((1, FEATURES), "float32", name="input")]
    ops = []
    x, inputs = 0, FEATURES
    for k, ((filters, rank, memory), act) in enumerate(zip(LAYERS, activations)):
        units = filters // rank
        base = len(tensors)
        tensors += [
            T((filters, inputs), "float32", rng.normal(0, 1 / np.sqrt(inputs), (filters, inputs)), name=f"wf{k}"),
            T((filters, memory), "float32", rng.normal(0, 1 / np.sqrt(memory), (filters, memory)), name=f"wt{k}"),
            T((units,), "float32", rng.normal(0, 0.1, units), name=f"bias{k}"),
            T((1, filters * memory), "float32", variable=True, name=f"state{k}"),
            T((1, units), "float32", name=f"svdf{k}"),
        ]
        ops.append(Op("SVDF", [x, base, base + 1, base + 2, base + 3], [base + 4],
                      ("SVDFOptions", {"Rank": rank, "FusedActivationFunction": act})))
        x, inputs = base + 4, units
    base = len(tensors)
    tensors += [T((CLASSES, inputs), "float32", rng.normal(0, 1 / np.sqrt(inputs), (CLASSES, inputs)), name="fc_w"),
                T((CLASSES,), "float32", rng.normal(0, 0.1, CLASSES), name="fc_b"),
                T((1, CLASSES), "float32", name="logits")]
    ops.append(Op("FULLY_CONNECTED", [x, base, base + 1], [base + 2], ("FullyConnectedOptions", {})))
    svdf_outputs = [op.outputs[0] for op in ops if op.code == "SVDF"] if every_layer else []
    return build(Model(tensors, ops, [0], [base + 2, *svdf_outputs]))


def frames(seed: int, n: int) -> np.ndarray:
    """n consecutive [1, 16] frames: per feature, three sinusoids of slowly drifting phase, plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None, None]
    freq = rng.uniform(0.02, 0.3, (1, 3, FEATURES))
    phase = rng.uniform(0, 2 * np.pi, (1, 3, FEATURES)) + np.cumsum(rng.normal(0, 0.05, (n, 3, 1)), axis=0)
    amp = rng.uniform(0.3, 1.5, (1, 3, FEATURES))
    x = (amp * np.sin(freq * t + phase)).sum(axis=1) + rng.normal(0, 0.1, (n, FEATURES))
    return x.reshape(n, 1, FEATURES).astype(np.float32)


def tflm_stream(model: bytes, xs: np.ndarray, each: bool = False) -> list[np.ndarray]:
    """TFLM invoked once per frame in order on one interpreter (its SVDF states carry over; with `each`, a Reset
    before every invoke): one array per model output, a row per frame."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=256 * 1024)
    outs: list[list[np.ndarray]] = [[] for _ in load(model).outputs]
    for x in xs:
        if each:
            interp.reset()
        interp.set_input(np.asarray(x), 0)
        interp.invoke()
        for k, o in enumerate(outs):
            o.append(interp.get_output(k).copy())
    return [np.stack(o).reshape(len(xs), -1) for o in outs]


def int8_tflite(cm) -> bytes:
    """The compiled int8 graph (svdf, fully_connected) written back as an int8 .tflite, constants and qparams as
    tinyaot chose them, each SVDF's state an int16 variable tensor at its state_qparams: what TFLM's integer
    kernels run (and its Prepare functions check)."""
    g = cm.graph
    index: dict[str, int] = {}
    tensors: list[T] = []

    def add(name: str, t: T) -> int:
        index[name] = len(tensors)
        tensors.append(t)
        return index[name]

    def tensor(name: str) -> int:
        if name not in index:
            t = g.tensor(name)
            qp = t.qparams
            scale = qp.scale[0] if qp.is_per_tensor else list(qp.scale)
            zp = qp.zero_point[0] if qp.is_per_tensor else list(qp.zero_point)
            add(name, T(t.shape, t.dtype, t.data, scale=scale, zero_point=zp, axis=qp.axis or 0, name=name))
        return index[name]

    ops = []
    for node in g.nodes:
        ins = [tensor(i) for i in node.inputs]
        out = tensor(node.outputs[0])
        if node.op == "svdf":
            filters, memory = g.tensor(node.inputs[2]).shape
            qp = node.attrs["state_qparams"]
            state = add(f"{node.name}_state", T((1, filters * memory), "int16", scale=qp.scale[0],
                                                 zero_point=qp.zero_point[0], variable=True))
            ops.append(Op("SVDF", [*ins, state], [out], ("SVDFOptions", {"Rank": node.attrs["rank"],
                                                                        "FusedActivationFunction": RELU})))
        else:
            assert node.op == "fully_connected"
            ops.append(Op("FULLY_CONNECTED", ins, [out], ("FullyConnectedOptions", {})))
    return build(Model(tensors, ops, [tensor(g.inputs[0])], [tensor(o) for o in g.outputs]))


CAL, TEST = frames(1, 400), frames(2, 300)  # a calibration stream and another one to test on


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - got) ** 2)))


@functools.lru_cache(maxsize=None)
def compiled():
    """The every-layer model, calibrated on the 400-frame stream."""
    return tinyaot.compile(float_svdf_model(every_layer=True), calibration=CAL.reshape(-1, FEATURES), name="fsvdf")


def test_the_float_graph_is_tflms_float_svdf_streamed_and_from_a_reset():
    """evaluate(stream={}) runs the frames as TFLM's stateful interpreter does; without it, each frame as the first
    invoke after a reset (real_svdf: the per-layer reports). float64 against TFLM's float32: within 1e-5 of the
    largest value."""
    model = float_svdf_model(every_layer=True)
    g = from_tflite_float(model)
    assert [n.op for n in g.nodes] == ["svdf", "svdf", "fully_connected"]
    for stream, each in (({}, False), (None, True)):
        values = evaluate(g, TEST.reshape(-1, FEATURES), stream=stream)
        for want, name in zip(tflm_stream(model, TEST, each=each), g.outputs):
            np.testing.assert_allclose(values[name], want, rtol=0, atol=1e-5 * np.abs(want).max())
    streamed = evaluate(g, TEST.reshape(-1, FEATURES), stream={})[g.outputs[1]]
    assert np.abs(streamed - values[g.outputs[1]]).max() > 1.0  # the state matters: a stream is not a reset


def test_ptq_tracks_tflm_float_over_a_stream():
    """tinyaot's int8 model over a 300-frame stream (from a reset, as TFLM's interpreter starts) against TFLM's float
    model over the same stream: measured 33.4 dB on the logits, 36.5 and 36.1 dB on the two SVDF outputs, none
    saturated at int8's top."""
    cm = compiled()
    want = tflm_stream(float_svdf_model(every_layer=True), TEST)
    got = cm.run(cm.quantize_input(TEST.reshape(-1, FEATURES)))
    for k, (q, (scale, zp), w) in enumerate(zip(got, cm.output_qparams, want)):
        q = q.reshape(w.shape)
        assert sqnr_db(w, (q.astype(np.float64) - zp) * scale) > (30.0 if k == 0 else 33.0), f"output {k}"
        assert np.mean(q == 127) < 0.001, f"output {k} saturates"
    assert cm.state_bytes == 24 * 8 * 2 + 16 * 4 * 2  # two int16 states, filters x memory each


@pytest.mark.host
def test_reference_equals_host_c_on_every_byte_over_a_stream_and_a_reset():
    cm = compiled()
    xq = cm.quantize_input(TEST.reshape(-1, FEATURES))
    ref = cm.run(xq)
    for r, h in zip(ref, cm.run(xq, engine="host")):
        np.testing.assert_array_equal(h, r)
    stream = cm.stream("host")
    stream.step(xq[:50])
    stream.reset()
    for r, h in zip(ref, stream.step(xq[:20])):
        np.testing.assert_array_equal(np.asarray(h).reshape(20, -1), np.asarray(r)[:20].reshape(20, -1))
    assert len(np.unique(ref[1])) > 100  # the first SVDF's output spans int8


@pytest.mark.m33
def test_cortex_m33_equals_the_reference_over_a_stream():
    cm = compiled()
    xq = cm.quantize_input(TEST[:30].reshape(-1, FEATURES))
    for r, m in zip(cm.run(xq), cm.run(xq, engine="m33")):
        np.testing.assert_array_equal(m, r)
    assert cm.last_m33.instructions is not None


def test_constants_follow_tflites_converter_and_tflm_runs_them_bit_exact():
    """weights_feature int8 per tensor, weights_time int16 within +-512 (the converter's 10 bits), the state int16
    with zero point 0, the bias int32 at state scale x weights_time scale exactly. Written back as an int8 .tflite
    (the compiled constants and qparams, each state an int16 variable tensor), TFLite Micro's integer kernels
    accept it (its Prepare functions) and equal tinyaot on every byte over the stream; tinyaot's own import of that
    file (TFLM's checks, svdf.py) compiles to the same outputs."""
    cm = compiled()
    g = cm.graph
    for node in (n for n in g.nodes if n.op == "svdf"):
        wf, wt, b = (g.tensor(t) for t in node.inputs[1:])
        state = node.attrs["state_qparams"]
        assert wf.dtype == "int8" and wf.qparams.is_per_tensor and np.abs(wf.data).max() == 127
        assert wt.dtype == "int16" and wt.qparams.is_per_tensor and np.abs(wt.data).max() == 512
        assert state.zero_point == (0,) and b.dtype == "int32"
        assert g.tensor(node.outputs[0]).qparams.zero_point == (-128,)  # the RELU folded into the output's range
        assert b.qparams.scale[0] == float(np.float32(state.scale[0]) * np.float32(wt.qparams.scale[0]))
    exported = int8_tflite(cm)
    xq = cm.quantize_input(TEST.reshape(-1, FEATURES))
    got = cm.run(xq)
    for w, q in zip(tflm_stream(exported, xq.reshape(-1, 1, FEATURES)), got):
        np.testing.assert_array_equal(w, q.reshape(w.shape))
    for w, q in zip(tinyaot.compile(exported, name="exported").run(xq), got):
        np.testing.assert_array_equal(w, q)


def test_weights_time_keeps_the_int32_sum_from_wrapping():
    """The converter's 512 steps while rank x memory <= 64; beyond, fewer, so that rank x memory products of an int16
    state (|s| <= 32768) and weights_time stay within 2^30 (the bias has the other half of int32)."""
    assert weights_time_steps(1, 8) == weights_time_steps(2, 32) == weights_time_steps(1, 64) == 512
    assert weights_time_steps(2, 64) == 256 and weights_time_steps(1, 100) == 327
    for rank, memory in ((1, 64), (3, 50), (4, 999)):
        assert 32768 * weights_time_steps(rank, memory) * rank * memory <= 2**30


def test_calibration_reads_the_samples_as_one_stream():
    """An SVDF's output sums its whole memory: from a reset per sample, calibration would see only the newest frame's
    share and choose output ranges 5x to 10x too narrow (measured 1.47 and 0.63 against 7.59 and 7.17)."""
    g = compiled().float_graph
    batch = CAL.reshape(-1, FEATURES).astype(np.float64)
    stream = collect_ranges(g, batch).ranges
    with mock.patch.object(calibrate, "streamed", lambda g: False):
        reset = collect_ranges(g, batch).ranges
    for node in (n for n in g.nodes if n.op == "svdf"):
        assert stream[node.outputs[0]].hi > 4 * reset[node.outputs[0]].hi, node.name


def test_a_short_calibration_stream_is_said():
    """The output depends on 1 + 7 + 3 = 11 frames: fewer than 44 consecutive frames are too short a stream."""
    model = float_svdf_model()
    with pytest.warns(CalibrationWarning, match="consecutive frames of one stream: 40 of them give 30 invokes with "
                                                "every state full.*pass at least 44 consecutive frames"):
        tinyaot.compile(model, calibration=CAL[:40].reshape(-1, FEATURES), name="short")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        tinyaot.compile(model, calibration=CAL[:44].reshape(-1, FEATURES), name="enough")


def test_layer_errors_run_each_sample_from_a_reset_on_both_sides():
    """cm.layer_errors (the per-layer report) compares the int8 kernels with the float model frame by frame, each
    the first invoke after a reset on both sides (real_svdf), where an SVDF's output is its newest frame's share
    only, a few of its int8 steps: measured 35.0 and 25.4 dB, nothing clipped."""
    report = compiled().layer_errors(TEST[:40].reshape(-1, FEATURES))
    rows = {r.layer: r for r in report.layers}
    assert rows["svdf_0"].sqnr_db > 30 and rows["svdf_1"].sqnr_db > 20
    assert all(r.saturated == 0 for r in rows.values())


def _edit(model: bytes, tensor: int | None = None, op: int = 0, **changes) -> bytes:
    m = load(model)
    if tensor is not None:
        for k, v in changes.items():
            setattr(m.tensors[tensor], k, v)
    else:
        m.ops[op].options[1].update(changes)
    return build(m)


def test_what_tflm_refuses_in_a_float_svdf_is_refused():
    model = float_svdf_model()
    for bad, error, words in ((_edit(model, 4, variable=False), UnsupportedOpError, "must be a variable tensor"),
                              (_edit(model, 4, dtype="int16"), UnsupportedOpError, "keeps a float32 one"),
                              (_edit(model, FusedActivationFunction=4), UnsupportedOpError, "fused activation TANH"),
                              (_edit(model, Rank=5), ModelError, "not a multiple of the rank 5")):
        with pytest.raises(error, match=words):
            tinyaot.compile(bad, calibration=CAL.reshape(-1, FEATURES))
