"""The lstm op: TFLite's int8 UNIDIRECTIONAL_SEQUENCE_LSTM bit-exact with TensorFlow Lite Micro, the reference
equal to the C on the host and on the Cortex-M33, and PyTorch's nn.LSTM compiled to it with int8 agreement."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tinyaot.frontend.tflite import from_tflite
from tinyaot.ref.interpreter import prepare_all, run_unplanned
from tinyaot.ref.lstm_s8 import SIGMOID_Q16

tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")

TFLM_CASES = 50


def _lstm_model(rng, time_major: bool = False) -> tuple[bytes, tuple[int, ...]]:
    """A one-op int8 UNIDIRECTIONAL_SEQUENCE_LSTM with random sizes, weights and qparams."""
    steps, features, hidden = int(rng.integers(1, 9)), int(rng.integers(1, 17)), int(rng.integers(1, 17))
    x_scale = float(np.float32(10 ** rng.uniform(-2.5, -0.5)))
    x_zp, h_zp = int(rng.integers(-128, 128)), int(rng.integers(-20, 21))
    h_scale = float(np.float32(10 ** rng.uniform(-2.6, -1.9)))
    cell_scale = 2.0 ** -int(rng.integers(9, 16))
    tensors = [tb.T((steps, 1, features) if time_major else (1, steps, features), scale=x_scale, zero_point=x_zp)]
    if time_major:  # the model's input is [1, T, F] (batch one first); a RESHAPE makes the time-major view
        tensors = [tb.T((1, steps, features), scale=x_scale, zero_point=x_zp), tensors[0]]

    def weights(cols):
        scale = float(np.float32(10 ** rng.uniform(-3.0, -1.5)))
        tensors.append(tb.T((hidden, cols), data=rng.integers(-127, 128, size=(hidden, cols)).astype(np.int8),
                            scale=scale, zero_point=0))
        return len(tensors) - 1, scale

    w_in = [weights(features) for _ in range(4)]
    w_rec = [weights(hidden) for _ in range(4)]
    biases = []
    for _, w_scale in w_in:
        bias = rng.normal(0.0, 0.5, size=hidden) / (x_scale * w_scale)
        tensors.append(tb.T((hidden,), "int32", data=np.clip(np.round(bias), -2**31, 2**31 - 1).astype(np.int32),
                            scale=x_scale * w_scale, zero_point=0))
        biases.append(len(tensors) - 1)
    tensors.append(tb.T((1, hidden), scale=h_scale, zero_point=h_zp, variable=True, name="hidden_state"))
    tensors.append(tb.T((1, hidden), "int16", scale=cell_scale, zero_point=0, variable=True, name="cell_state"))
    tensors.append(tb.T((steps, 1, hidden) if time_major else (1, steps, hidden), scale=h_scale, zero_point=h_zp))
    h_state, c_state, out = len(tensors) - 3, len(tensors) - 2, len(tensors) - 1
    x = 1 if time_major else 0
    inputs = [x, *(k for k, _ in w_in), *(k for k, _ in w_rec), -1, -1, -1, *biases, -1, -1, h_state, c_state,
              -1, -1, -1, -1]
    clip = float(rng.choice([0.0, 0.0, 2.0]))
    opts = ("UnidirectionalSequenceLSTMOptions", {"FusedActivationFunction": 4, "CellClip": clip,
                                                  "TimeMajor": time_major})
    ops = [tb.Op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [out], opts)]
    if time_major:
        ops.insert(0, tb.Op("RESHAPE", [0], [1]))
    model = tb.Model(tensors, ops, [0], [out])
    return tb.build(model), tensors[0].shape


def _tflm(model: bytes, xs: np.ndarray, stream: bool = False) -> np.ndarray:
    """TFLM's output per input: each from a reset (as the reference kernel's one-invoke run starts), or one stream
    (TFLM's LSTM keeps its state in variable tensors across invokes, as the compiled model does)."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=256 * 1024)
    outs = []
    for x in xs:
        if not stream:
            interp.reset()
        interp.set_input(x, 0)
        interp.invoke()
        outs.append(interp.get_output(0).copy())
    return np.stack(outs)


def test_lstm_bit_exact_with_tflite_micro():
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    rng = np.random.default_rng(14)
    for case in range(TFLM_CASES):
        model, shape = _lstm_model(rng, time_major=case % 10 == 9)
        xs = rng.integers(-128, 128, size=(3, *shape)).astype(np.int8)
        want = _tflm(model, xs)
        g = from_tflite(model)
        params = prepare_all(g)
        got = np.stack([run_unplanned(g, params, x)[g.outputs[0]] for x in xs])
        assert got.shape == want.shape, case
        mismatch = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        assert mismatch.size == 0, f"case {case}: {mismatch.size} of {want.size} bytes differ from TFLM"


def test_sigmoid_table_in_c_matches_reference():
    """c/kernels/lstm_s8.c holds TFLM's sigmoid table too; both copies must be the same numbers."""
    import tinyaot

    src = (Path(tinyaot.__file__).parent / "c" / "kernels" / "lstm_s8.c").read_text()
    body = src[src.index("tinyaot_sigmoid_q16[256]"):]
    body = body[body.index("{") + 1 : body.index("}")]
    assert [int(v) for v in re.findall(r"\d+", body)] == SIGMOID_Q16.tolist()


# ---- PyTorch nn.LSTM ----

torch = pytest.importorskip("torch")


class SequenceLSTM(torch.nn.Module):
    """Two stacked layers, batch first, the whole output sequence out."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 7, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


class TimeMajorLSTM(torch.nn.Module):
    """batch_first=False over a view of the [1, T, F] input, classified from h_n[-1]."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 9)
        self.fc = torch.nn.Linear(9, 4)

    def forward(self, x):
        _, (h, _) = self.lstm(x.reshape(x.shape[1], 1, x.shape[2]))
        return self.fc(h[-1])


def _signals(n: int, steps: int = 6, features: int = 5, seed: int = 0) -> np.ndarray:
    """Smooth signals (random walks); seed 0 is the calibration set of `_compiled`."""
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(scale=0.4, size=(n, steps, features)), axis=1).astype(np.float32)


def _compiled(model, steps: int = 6, features: int = 5, seed: int = 0):
    """`model`: a module, or a class built here after seeding torch (the same weights, whatever ran before)."""
    import tinyaot

    torch.manual_seed(seed)
    model = (model() if isinstance(model, type) else model).eval()
    cal = _signals(64, steps, features, seed)
    cm = tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name="seq")
    xq = cm.quantize_input(cal[:6])
    return cm, xq


@pytest.mark.parametrize("model", [SequenceLSTM, TimeMajorLSTM], ids=["sequence", "time_major"])
def test_pytorch_lstm_compiles_one_node_per_layer_and_tracks_float(model):
    torch.manual_seed(0)  # the weights, whatever ran before
    m = model()
    cm, _ = _compiled(m)
    layers = [n for n in cm.graph.nodes if n.op == "lstm"]
    assert len(layers) == m.lstm.num_layers
    assert [bool(n.attrs.get("last_only")) for n in layers] == [False] * (len(layers) - 1) + [model is TimeMajorLSTM]
    x = _signals(20, seed=5)
    with torch.no_grad():
        want = m(torch.from_numpy(x)).numpy() if model is SequenceLSTM else np.concatenate(
            [m(torch.from_numpy(v[None])).numpy() for v in x])
    got = cm.run_float(x).reshape(want.shape)
    # seeded weights and inputs: the worst error measured is 4.4% (sequence) and 0.7% of max|float|
    assert np.abs(got - want).max() < 0.08 * np.abs(want).max()


def test_lstm_state_is_planned_arena_memory():
    """The kernel's int16 working memory is the node's second output: a plan buffer live at its step only, passed
    to the C kernel as an arena pointer; no static or stack buffer in the generated C."""
    cm, _ = _compiled(SequenceLSTM)
    step = {n.name: s for s, n in enumerate(cm.graph.nodes)}
    for node in (n for n in cm.graph.nodes if n.op == "lstm"):
        state = next(b for b in cm.plan.buffers if node.outputs[1] in b.tensors)
        assert state.nbytes == 6 * node.attrs["hidden"] * 2 and state.first == state.last == step[node.name]
    text = "\n".join(cm.c_sources.files.values())
    assert re.search(r"tinyaot_lstm_s8\([^;]*\(int16_t \*\)\(void \*\)\(arena \+", text)
    kernel = re.sub(r"/\*.*?\*/", "", cm.c_sources.files["lstm_s8.c"], flags=re.S)
    assert not re.search(r"\b(float|double|malloc)\b", kernel)
    assert not re.search(r"static\s+(int8_t|int16_t|int32_t)\s+\w+\[", kernel)  # only the const table


@pytest.mark.host
@pytest.mark.parametrize("model", [SequenceLSTM, TimeMajorLSTM], ids=["sequence", "time_major"])
def test_pytorch_lstm_host_equals_reference(model):
    cm, xq = _compiled(model)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), cm.run(xq, engine="reference"))


@pytest.mark.m33
def test_pytorch_lstm_m33_equals_reference():
    cm, xq = _compiled(SequenceLSTM)
    np.testing.assert_array_equal(cm.run(xq, engine="m33"), cm.run(xq, engine="reference"))
    assert cm.last_m33.instructions > 0


@pytest.mark.host
def test_tflite_lstm_host_equals_tflm():
    """An imported one-op LSTM through the whole pipeline: the host C gives TFLM's bytes, invoke after invoke with
    the state carried over."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    import tinyaot

    rng = np.random.default_rng(3)
    for _ in range(3):
        model, shape = _lstm_model(rng)
        xs = rng.integers(-128, 128, size=(4, *shape)).astype(np.int8)
        cm = tinyaot.compile(model, name="tfl_lstm")
        np.testing.assert_array_equal(cm.run(xs, engine="host").reshape(-1), _tflm(model, xs, True).reshape(-1))


class _Bidirectional(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 4, batch_first=True, **kw)

    def forward(self, x):
        return self.lstm(x)[0]


class _GivenState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 4, batch_first=True)
        self.register_buffer("h0", torch.ones(1, 1, 4))

    def forward(self, x):
        return self.lstm(x, (self.h0, self.h0))[0]


class _CellState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 4, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[1][1]


class _WholeHn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 4, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[1][0].reshape(1, -1)  # both layers' final states


@pytest.mark.parametrize("model, message", [
    (lambda: _Bidirectional(bidirectional=True), "bidirectional nn.LSTM is not supported"),
    (lambda: _Bidirectional(proj_size=2), "proj_size is not supported"),
    (_GivenState, "initial state is not supported"),
    (_CellState, "c_n is not supported"),
    (_WholeHn, "read h_n\\[-1\\]"),
    (lambda: torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LSTMCell(30, 4)),
     "this nn.LSTMCell loop must read frame t of one sequence"),
], ids=["bidirectional", "proj_size", "initial_state", "c_n", "whole_h_n", "lstm_cell"])
def test_unsupported_lstm_uses_are_refused_by_name(model, message):
    import tinyaot
    from tinyaot.errors import UnsupportedOpError

    x = np.zeros((4, 6, 5), dtype=np.float32)
    with pytest.raises(UnsupportedOpError, match=message):
        tinyaot.compile(model().eval(), torch.from_numpy(x[:1]), calibration=x, name="bad")


def test_trust_report_covers_the_cell_state():
    """layer_errors has a row per layer's int16 cell state: its range, what it clips, its grid's rounding; inputs
    that drive the cell far past the calibrated range make it clip, and the diagnosis names that state.

    The in-range inputs are calibration samples, so no state clips by construction (new random walks would clip
    whenever one went further than all 64 calibration walks: 3 of 13 weight seeds tried did); the int16 grid's
    rounding then sits far below the signal (local SQNR measured 87 and 88 dB, bound 40)."""
    cm, _ = _compiled(SequenceLSTM)
    x = _signals(64)[:20]  # the first 20 calibration samples
    rows = {r.layer: r for r in cm.layer_errors(x).layers}
    states = [r for r in rows.values() if r.state]
    assert [r.layer for r in states] == ["lstm_l0 state", "lstm_l1 state"] and all(r.op == "lstm cell" for r in states)
    assert all(r.saturated == 0 and r.local_sqnr_db > 40 for r in states)
    assert states[0].int8_hi == pytest.approx(32767 * cm.graph.tensor(states[0].tensor).qparams.scale[0])
    with pytest.warns(UserWarning, match="outside the calibrated range"):
        report = cm.layer_errors(x * 40)  # far beyond the calibration: the cells run away
    loud = report.layers
    first = next(r for r in loud if r.state)
    assert first.saturated > 0.01  # measured 12%
    assert report.diagnosis.layer in {r.layer for r in loud[:loud.index(first) + 1]}
