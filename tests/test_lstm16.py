"""The 16x8 LSTM (issue 23): TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM with int16 input, hidden state and output, int8
weights and int64 gate biases, which TFLite Micro runs as EvalLstm<int16_t, int8_t, int16_t, int64_t>. The lstm op's
16x8 kernel (ref/lstm_s16.py, c/kernels/lstm_s16.c) equals TFLM on every output byte on the reference, the host C
and the Cortex-M33, over seeded random shapes, scales and inputs (time-major and cell clipping included).

What TFLM cannot compute is refused: its 16x8 LSTM reads the gate biases as int64 whatever the file says, so an int32
bias (read as other numbers) is refused, naming that. tinyaot's own PTQ keeps recurrent layers int8.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from tflite_builder import Model, Op, T, build

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite import from_tflite
from tinyaot.ref.interpreter import prepare_all, run_unplanned

TFLM_CASES = 30
TANH = 4


def lstm16_model(rng, steps: int | None = None, features: int | None = None, hidden: int | None = None,
                 time_major: bool = False, clip: float | None = None, bias_type: str = "int64") -> Model:
    """One int16 UNIDIRECTIONAL_SEQUENCE_LSTM with random sizes (unless given), scales and weights, as TFLite's 16x8
    quantization writes it: symmetric int16 activations, int8 weights per tensor, int64 biases at input x weight
    scale, variable states (the cell state's scale a power of two). The same rng state and sizes give the same
    weights whatever `steps` is."""
    steps = steps or int(rng.integers(1, 9))
    features = features or int(rng.integers(1, 17))
    hidden = hidden or int(rng.integers(1, 17))
    x_scale = float(np.float32(10 ** rng.uniform(-4.5, -3.0)))  # int16 spans about +-1 to +-33
    h_scale = float(np.float32(10 ** rng.uniform(-4.6, -4.2)))  # the hidden state's +-1 over 2/3 to 4/5 of int16
    cell_scale = 2.0 ** -int(rng.integers(9, 16))
    x_shape = (steps, 1, features) if time_major else (1, steps, features)
    tensors = [T((1, steps, features), "int16", scale=x_scale, name="x")]
    if time_major:  # the model's input is [1, T, F]; a RESHAPE makes the time-major view
        tensors.append(T(x_shape, "int16", scale=x_scale))
    x = len(tensors) - 1

    def weights(cols: int) -> tuple[int, float]:
        scale = float(np.float32(10 ** rng.uniform(-3.0, -1.5)))
        tensors.append(T((hidden, cols), data=rng.integers(-127, 128, size=(hidden, cols)).astype(np.int8),
                         scale=scale))
        return len(tensors) - 1, scale

    w_in = [weights(features) for _ in range(4)]
    w_rec = [weights(hidden) for _ in range(4)]
    biases = []
    for _, w_scale in w_in:
        bias = np.round(rng.normal(0.0, 0.5, size=hidden) / (x_scale * w_scale))
        tensors.append(T((hidden,), bias_type, data=bias.astype(bias_type), scale=x_scale * w_scale))
        biases.append(len(tensors) - 1)
    tensors.append(T((1, hidden), "int16", scale=h_scale, variable=True, name="hidden_state"))
    tensors.append(T((1, hidden), "int16", scale=cell_scale, variable=True, name="cell_state"))
    tensors.append(T((steps, 1, hidden) if time_major else (1, steps, hidden), "int16", scale=h_scale, name="y"))
    h_state, c_state, out = len(tensors) - 3, len(tensors) - 2, len(tensors) - 1
    inputs = [x, *(k for k, _ in w_in), *(k for k, _ in w_rec), -1, -1, -1, *biases, -1, -1, h_state, c_state,
              -1, -1, -1, -1]
    clip = float(rng.choice([0.0, 0.0, 2.0])) if clip is None else clip
    opts = ("UnidirectionalSequenceLSTMOptions", {"FusedActivationFunction": TANH, "CellClip": clip,
                                                  "TimeMajor": time_major})
    ops = [Op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [out], opts)]
    if time_major:
        ops.insert(0, Op("RESHAPE", [0], [1]))
    return Model(tensors, ops, [0], [out])


def _tflm():
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")


def run_tflm(model: bytes, xs: np.ndarray, stream: bool = True, resets=()) -> np.ndarray:
    """TFLM's output for each input on one interpreter: one stream (its LSTM keeps its state in variable tensors
    across invokes, as the compiled model does), reset before the invokes in `resets`, or before each (not
    `stream`: as the reference kernel's one-invoke run starts)."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=256 * 1024)
    outs = []
    for k, x in enumerate(xs):
        if not stream or k in resets:
            interp.reset()
        interp.set_input(x, 0)
        interp.invoke()
        outs.append(interp.get_output(0).copy())
    return np.stack(outs)


def _inputs(rng, shape, n: int) -> np.ndarray:
    """Uniform int16 codes with a tenth of them at the extremes."""
    x = rng.integers(-32768, 32768, size=(n, *shape))
    edge = rng.random(x.shape) < 0.1
    x[edge] = rng.choice([-32768, 32767], size=int(edge.sum()))
    return x.astype(np.int16)


def test_reference_equals_tflm_on_random_lstms():
    """30 seeded layers (1-8 steps, 1-16 features and units, every tenth time-major, a third with cell clip 2)."""
    _tflm()
    rng = np.random.default_rng(16)
    spread = []
    for case in range(TFLM_CASES):
        model = build(lstm16_model(rng, time_major=case % 10 == 9))
        g = from_tflite(model)
        (lstm,) = [n for n in g.nodes if n.op != "reshape"]
        assert lstm.op == "lstm" and g.tensor(lstm.inputs[3]).dtype == "int64"
        xs = _inputs(rng, g.tensor(g.inputs[0]).shape, 3)
        want = run_tflm(model, xs, stream=False)
        params = prepare_all(g)
        got = np.stack([run_unplanned(g, params, x)[g.outputs[0]] for x in xs])
        mismatch = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        assert mismatch.size == 0, f"case {case}: {mismatch.size} of {want.size} values differ from TFLM"
        spread.append(len(np.unique(want)))
    assert np.median(spread) > 20  # the hidden states use the int16 range, not a few codes


# Shapes for the compiled pipeline: gate rows a multiple of the C's 4-row blocks with word-aligned int16 rows, and
# odd sizes (unaligned input rows, units not a multiple of 4: single-row tails).
SHAPES = {"aligned": (5, 32, 16), "odd": (6, 13, 9), "tiny": (3, 7, 5)}


def _shaped(key: str, time_major: bool = False) -> bytes:
    steps, features, hidden = SHAPES[key]
    return build(lstm16_model(np.random.default_rng(len(key)), steps, features, hidden, time_major=time_major,
                              clip=2.0 if key == "odd" else 0.0))


@pytest.mark.host
@pytest.mark.parametrize("key", list(SHAPES))
def test_host_c_equals_tflm(key):
    """Speed mode (weights widened to int16 in flash) and size mode (the kernel widens them) alike, six invokes
    with the state carried over (a state region of c and h, int16); then on one stream, a reset and two more
    invokes give TFLM's after its Reset."""
    _tflm()
    model = _shaped(key, time_major=key == "tiny")
    xs = _inputs(np.random.default_rng(1), from_tflite(model).tensor("input").shape, 6)
    want = run_tflm(model, xs)
    for optimize in ("speed", "size"):
        cm = tinyaot.compile(model, name="lstm16", optimize=optimize)
        assert cm.input_dtype == cm.output_dtype == "int16" and cm.state_bytes == 2 * 2 * SHAPES[key][2]
        np.testing.assert_array_equal(cm.run(xs, engine="host").reshape(want.shape), want)
    frames = np.concatenate([xs[:4], xs[:2]])
    want = run_tflm(model, frames, resets=(4,))
    stream = cm.stream("host")
    got = np.concatenate([stream.step(frames[:4]), (stream.reset(), stream.step(frames[4:]))[1]])
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.host
def test_host_c_is_clean_under_asan_and_ubsan():
    """The odd shape (unaligned rows, single-row tails) in size mode and the aligned one in speed mode, built with
    -fsanitize=address,undefined in an arena of exactly the planned size, on inputs at the int16 extremes: no
    report, and the reference's values."""
    from tinyaot.targets import host
    from tinyaot.targets.base import ModelSources
    from tinyaot.targets.engines import raw_rows

    problem = host.sanitizer_problem()
    if problem is not None:
        pytest.skip(f"no sanitizer support on this machine: {problem}")
    for key, optimize in (("odd", "size"), ("aligned", "speed")):
        cm = tinyaot.compile(_shaped(key), name=f"lstm16_{key}", optimize=optimize)
        xs = _inputs(np.random.default_rng(3), cm.input_shape, 3)
        xs[0], xs[1] = -32768, 32767
        target = host.SanitizedHostTarget()
        got = target.run(target.build(ModelSources.of(cm)), raw_rows(xs)).outputs
        want = cm.run(xs, engine="reference").reshape(len(xs), -1)
        np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.int16), want)


@pytest.mark.m33
def test_m33_equals_tflm():
    """Two QEMU runs: the aligned shape in speed mode, the odd one in size mode (the DSP kernel's paths)."""
    _tflm()
    for key, optimize in (("aligned", "speed"), ("odd", "size")):
        model = _shaped(key)
        xs = _inputs(np.random.default_rng(2), from_tflite(model).tensor("input").shape, 3)
        want = run_tflm(model, xs)
        cm = tinyaot.compile(model, name=f"lstm16_{key}", optimize=optimize)
        np.testing.assert_array_equal(cm.run(xs, engine="m33").reshape(want.shape), want)
        assert cm.last_m33.instructions > 0


def test_kernel_works_in_the_arena_and_the_state_is_planned():
    """The 16x8 kernel's int16 working memory is the node's second output (six rows of H, as the int8 LSTM's), an
    arena buffer live at its step; the C has no float, no malloc and no stack or static buffer."""
    cm = tinyaot.compile(_shaped("odd"), name="lstm16")
    (node,) = [n for n in cm.graph.nodes if n.op == "lstm"]
    work = next(b for b in cm.plan.buffers if node.outputs[1] in b.tensors)
    assert work.nbytes == 6 * 9 * 2
    c = cm.c_sources.files["lstm16.c"]
    assert re.search(r"tinyaot_lstm_s16_stateful\(\(const int16_t \*\)\(arena \+", c)  # TFLM keeps its state
    assert "lstm16_lstm_0_weights_ih16" in c  # speed mode: the widened weights in flash
    size = tinyaot.compile(_shaped("odd"), name="l", optimize="size").c_sources.files["l.c"]
    assert ".weights_ih16 = 0," in size and "_weights_ih16[" not in size  # size mode: NULL, the kernel widens
    kernel = re.sub(r"/\*.*?\*/", "", cm.c_sources.files["lstm_s16.c"], flags=re.S)
    assert not re.search(r"\b(float|double|malloc)\b", kernel)
    assert not re.search(r"static\s+(int8_t|int16_t|int32_t|int64_t)\s+\w+\[", kernel)


def _lstm_fc_model() -> bytes:
    """int8 in -> QUANTIZE to int16 -> the 16x8 LSTM -> RESHAPE -> 16x8 FULLY_CONNECTED -> QUANTIZE to int8: the
    LSTM inside a 16x8 model with an int8 interface."""
    m = lstm16_model(np.random.default_rng(9), 6, 5, 8, clip=0.0)
    x_scale, y_scale = m.tensors[0].scale, m.tensors[-1].scale
    n = len(m.tensors)
    rng = np.random.default_rng(10)
    m.tensors += [T((1, 6, 5), scale=x_scale * 200, zero_point=-3, name="x_int8"),
                  T((1, 48), "int16", scale=y_scale), T((4, 48), data=rng.integers(-127, 128, (4, 48)).astype(np.int8),
                                                        scale=0.004),
                  T((4,), "int64", data=rng.integers(-3000, 3000, 4).astype(np.int64), scale=y_scale * 0.004),
                  T((1, 4), "int16", scale=2e-4), T((1, 4), scale=0.03, zero_point=2, name="logits")]
    m.tensors += [T((2,), "int32", data=np.array([1, 48], np.int32))]
    lstm_out = m.outputs[0]
    m.ops = [Op("QUANTIZE", [n], [0]), *m.ops, Op("RESHAPE", [lstm_out, n + 6], [n + 1]),
             Op("FULLY_CONNECTED", [n + 1, n + 2, n + 3], [n + 4], ("FullyConnectedOptions", {}), 11),
             Op("QUANTIZE", [n + 4], [n + 5])]
    m.inputs, m.outputs = [n], [n + 5, lstm_out]
    return build(m)


@pytest.mark.host
def test_lstm_inside_a_16x8_model_equals_tflm_and_tracks_its_float_model():
    """Every byte of the LSTM's int16 sequence and of the int8 output equals TFLM on 20 seeded inputs (reference and
    host C); its dequantized float model (cm.layer_errors) gives the LSTM 58.1 dB local SQNR on 40 seeded random
    walks (measured; bound 40): the int64 biases are read at input x weight scale."""
    _tflm()
    from tflite_micro.python.tflite_micro import runtime

    model = _lstm_fc_model()
    cm = tinyaot.compile(model, name="lstm16_fc")
    assert [n.op for n in cm.graph.nodes][:2] == ["quantize", "lstm"] and cm.output_dtype == ["int8", "int16"]
    xs = np.random.default_rng(3).integers(-128, 128, (20, 1, 6, 5)).astype(np.int8)
    interp = runtime.Interpreter.from_bytes(model, arena_size=256 * 1024)
    want = [[], []]
    for x in xs:  # one stream: the LSTM's state carries over, in TFLM as in the compiled model
        interp.set_input(x, 0)
        interp.invoke()
        for k in range(2):
            want[k].append(interp.get_output(k).copy())
    for engine in ("reference", "host"):
        for got, w in zip(cm.run(xs, engine=engine), want):
            np.testing.assert_array_equal(got.reshape(np.shape(w)), np.stack(w))
    walks = np.clip(np.cumsum(np.random.default_rng(8).normal(0, 0.3, (40, 6, 5)), axis=1), -2.5, 2.5)
    real = walks / 2.5 * 100 * cm.input_qparams[0]  # within +-100 of the int8 input's steps
    (lstm,) = [r for r in cm.layer_errors(real).layers if r.layer == "lstm_1"]
    assert lstm.local_sqnr_db > 40.0


def _tflm_output(model: bytes, xs: np.ndarray) -> np.ndarray:
    return run_tflm(model, xs).reshape(len(xs), -1)


def test_an_int32_bias_tflm_would_misread_is_refused():
    """TFLM runs the file without complaint but reads each int32 bias pair as one int64 (and past the data): its
    output differs from the same LSTM with int64 biases on most values. tinyaot refuses it, naming the rule."""
    _tflm()
    as_int64 = build(lstm16_model(np.random.default_rng(4), 4, 6, 8, clip=0.0))
    as_int32 = build(lstm16_model(np.random.default_rng(4), 4, 6, 8, clip=0.0, bias_type="int32"))
    xs = _inputs(np.random.default_rng(5), (1, 4, 6), 4)
    assert np.mean(_tflm_output(as_int32, xs) != _tflm_output(as_int64, xs)) > 0.5
    with pytest.raises(UnsupportedOpError, match=r"biases of this 16x8 LSTM are int32; TFLite Micro's 16x8 LSTM "
                                                 r"reads them as int64"):
        from_tflite(as_int32)


def _stateful(steps: int = 7):
    """A 1-step 16x8 LSTM as imported (stateful as TFLM's: the state region's slot holds c, then h), one frame per
    invoke; the same layer over the whole sequence as TFLM runs it, and a sequence."""
    full = build(lstm16_model(np.random.default_rng(12), steps, 6, 5, clip=0.0))
    cm = tinyaot.compile(build(lstm16_model(np.random.default_rng(12), 1, 6, 5, clip=0.0)), name="lstm16_step")
    x = _inputs(np.random.default_rng(6), (1, steps, 6), 1)[0]
    return cm, x.reshape(steps, 1, 1, 6), run_tflm(full, x[None])[0].reshape(steps, 5)


def test_a_stateful_16x8_lstm_carries_its_state_across_invokes():
    """The imported layer keeps its state across invokes: one step per invoke gives TFLM's whole-sequence output
    row by row."""
    _tflm()
    cm, frames, want = _stateful()
    assert cm.state_bytes == 2 * 2 * 5
    np.testing.assert_array_equal(cm.run(frames).reshape(want.shape), want)


@pytest.mark.host
def test_a_stateful_16x8_lstm_on_the_host():
    _tflm()
    cm, frames, want = _stateful()
    np.testing.assert_array_equal(cm.run(frames, engine="host").reshape(want.shape), want)


def test_tinyaots_ptq_keeps_recurrent_layers_int8():
    """int16= cannot choose an LSTM (its 16x8 kernel is for imported 16x8 models): a clear error."""
    torch = pytest.importorskip("torch")

    class Seq(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(4, 6, batch_first=True)

        def forward(self, x):
            return self.lstm(x)[0]

    torch.manual_seed(0)
    cal = np.cumsum(np.random.default_rng(0).normal(0, 0.4, (32, 5, 4)), axis=1).astype(np.float32)
    model = Seq().eval()
    name = next(n.name for n in tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal).graph.nodes
                if n.op == "lstm")
    with pytest.raises(ModelError, match=f"layer '{name}' is a lstm, which tinyaot quantizes int8"):
        tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, int16=[name])
