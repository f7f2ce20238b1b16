"""Recurrent step functions (stream=True on nn.GRU / nn.LSTM models) and loops over nn.LSTMCell / nn.GRUCell.

Streamed, each invoke takes one frame and every recurrent layer keeps its state in the state region (a GRU its
int16 h, an LSTM its int16 c and its int8 h less the zero point, widened: 2 and 4 bytes per unit). What a step
means (passes/streaming.py): step t after a reset outputs the full model's output at frame t of the sequence
that starts at the reset; a model that outputs only the last step outputs at step t what it outputs for the
sequence of frames 0..t. So for t < T the want is the full-sequence model's frame t (for a last-step model: the
same int8 graph with its head on every step, whose last step is the full model's output).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn as nn

import tinyaot
from tinyaot.errors import UnsupportedOpError
from tinyaot.ir import Node, Tensor
from tinyaot.ir.ops import OPS, RecurrentAttrs, state_family

FEATURES, FRAMES, CLASSES = 5, 10, 3


class SequenceGRU(nn.Module):
    """A per-frame Linear, two GRU layers, a Linear head on every frame."""

    def __init__(self):
        super().__init__()
        self.pre = nn.Linear(FEATURES, 7)
        self.gru = nn.GRU(7, 8, num_layers=2, batch_first=True)
        self.head = nn.Linear(8, CLASSES)

    def forward(self, x):
        return self.head(self.gru(torch.relu(self.pre(x)))[0])


class LastStepLSTM(nn.Module):
    """Time-major nn.LSTM, the classifier on h_n[-1]: only the last step is output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(FEATURES, 6)
        self.head = nn.Linear(6, CLASSES)

    def forward(self, x):
        _, (h, _) = self.lstm(x.reshape(x.shape[1], 1, x.shape[2]))
        return self.head(h[-1])


class GRUCellLoop(nn.Module):
    """nn.GRUCell over the frames, the classifier on the last h."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(FEATURES, 8)
        self.head = nn.Linear(8, CLASSES)

    def forward(self, x):
        h = torch.zeros(1, 8)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return self.head(h)


class LSTMCellStack(nn.Module):
    """Two stacked nn.LSTMCell loops (the second reads the first's h at each step), every step's h out."""

    def __init__(self):
        super().__init__()
        self.cell1 = nn.LSTMCell(FEATURES, 6)
        self.cell2 = nn.LSTMCell(6, 4)

    def forward(self, x):
        h1 = c1 = torch.zeros(1, 6)
        h2 = c2 = torch.zeros(1, 4)
        hs = []
        for t in range(x.shape[1]):
            h1, c1 = self.cell1(x[:, t], (h1, c1))
            h2, c2 = self.cell2(h1, (h2, c2))
            hs.append(h2)
        return torch.stack(hs, 1)


def _signals(n: int, seed: int, frames: int = FRAMES) -> np.ndarray:
    """Random walks [n, frames, features]: smooth sequences the recurrent layers integrate."""
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(scale=0.4, size=(n, frames, FEATURES)), axis=1).astype(np.float32)


def _compile(model, name: str, **options):
    cal = _signals(48, 1)
    return tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name=name, **options)


MODELS = {"gru_sequence": SequenceGRU, "lstm_last_step": LastStepLSTM, "gru_cell_loop": GRUCellLoop,
          "lstm_cell_stack": LSTMCellStack}


@pytest.fixture(scope="module", params=list(MODELS))
def streamed(request):
    torch.manual_seed(0)
    return request.param, _compile(MODELS[request.param]().eval(), "rnn", stream=True)


def _every_step(cm):
    """The full-sequence int8 graph with everything after a last-step layer run on every step (same weights and
    qparams): its frame t is what the full model outputs for the sequence ending at frame t."""
    g = cm.window.graph.replace()
    per_step: set[str] = set()
    for k, node in enumerate(g.nodes):
        if OPS[node.op].attrs is RecurrentAttrs and node.attrs.get("last_only"):
            g.nodes[k] = Node(node.op, node.name, node.inputs, node.outputs,
                              dict(node.attrs.replace(last_only=False).items()), source=node.source)
        elif not per_step & set(node.inputs):
            continue
        y = g.tensor(node.outputs[0])
        g.tensors[y.name] = Tensor(y.name, (1, FRAMES) + tuple(y.shape[1:]), y.dtype, qparams=y.qparams)
        per_step.add(y.name)
    return g


@pytest.fixture(scope="module")
def frames_and_want(streamed):
    """FRAMES int8 frames ([1, 1, F] each) and, for every step, the full-sequence model's output."""
    from tinyaot.ref.interpreter import prepare_all, run_unplanned

    _, cm = streamed
    window = cm.window_model()
    x = cm.quantize_input(_signals(1, 2))[0]  # [FRAMES, F]: the frames share the sequence's qparams
    frames = x[:, None, :]
    full = np.asarray(window.run(x))
    g = _every_step(cm)
    want = run_unplanned(g, prepare_all(g), x[None])[g.outputs[0]].reshape(FRAMES, -1)
    assert np.array_equal(want[-1], full.reshape(-1, want.shape[1])[-1])  # the rewrite's last step is the model's
    if full.size == want.size:  # a sequence model: the rewrite changed nothing
        assert np.array_equal(want, full.reshape(want.shape))
    return frames, want


def _steps(y, want) -> np.ndarray:
    return np.asarray(y).reshape(want.shape)


def test_each_recurrent_layer_streams_stateful_with_its_state_in_the_state_region(streamed):
    name, cm = streamed
    window = cm.window_model()
    assert cm.input_shape == (1, 1, FEATURES) and window.input_shape == (1, FRAMES, FEATURES)
    layers = [n for n in cm.graph.nodes if OPS[n.op].attrs is RecurrentAttrs]
    assert layers and all(n.attrs["stateful"] and state_family(n) for n in layers)
    assert not any(state_family(n) for n in window.graph.nodes)  # the full model keeps nothing between invokes
    per_unit = {"gru": 2, "lstm": 4}  # h16; c16 and h - zero point as int16
    want = [per_unit[n.op] * n.attrs["hidden"] for n in layers]
    assert [s.nbytes for s in cm.plan.state] == want
    assert cm.state_bytes == sum(-(-b // 4) * 4 for b in want)
    assert cm.state_bytes == {"gru_sequence": 32, "lstm_last_step": 24, "gru_cell_loop": 16,
                              "lstm_cell_stack": 40}[name]  # from the layer sizes above
    header = cm.c_sources.files["rnn.h"]
    assert f"#define RNN_STATE_SIZE {cm.state_bytes}\n" in header
    assert "Each recurrent layer keeps its hidden (and cell) state in the state region" in header
    assert cm.stream_info.receptive_field is None and cm.stream_info.window_frames == FRAMES
    assert cm.ram_bytes == cm.arena_bytes + cm.state_bytes
    text = cm.c_sources.files["rnn.c"]
    for n in layers:
        assert re.search(rf"tinyaot_{n.op}_s8_stateful\([^;]*state \+ RNN_STATE_OFFSET_{n.name.upper()}\)", text)


def test_reference_steps_equal_the_full_sequence_model(streamed, frames_and_want):
    _, cm = streamed
    frames, want = frames_and_want
    got = _steps(cm.run(frames), want)  # consecutive invokes of one interpreter, from a reset
    assert [t for t in range(FRAMES) if not np.array_equal(got[t], want[t])] == []
    assert len({tuple(w) for w in want}) > 3  # the outputs do change from step to step


def test_only_the_state_region_carries_the_past(streamed, frames_and_want):
    """Between invokes the arena is overwritten with noise, and a reset brings back the first stream."""
    from tinyaot.ref.interpreter import Interpreter

    _, cm = streamed
    frames, want = frames_and_want
    interp, rng = Interpreter(cm.graph, cm.plan), np.random.default_rng(3)
    for t in range(FRAMES):
        interp.arena[:] = rng.integers(0, 256, interp.arena.size, dtype=np.uint8)
        assert np.array_equal(_steps(interp.invoke(frames[t]), want[:1])[0], want[t]), t
    assert interp.state.any()
    interp.reset()
    assert not interp.state.any()  # zero bytes: the zero state
    s = cm.stream("reference")
    first = _steps(s.step(frames), want)
    again = _steps(s.step(frames), want)  # the state still holds the end of the first pass
    assert not np.array_equal(again, first)
    s.reset()
    assert np.array_equal(_steps(s.step(frames), want), first)


@pytest.mark.host
def test_host_c_steps_equal_the_full_sequence_model_and_reset(streamed, frames_and_want):
    _, cm = streamed
    frames, want = frames_and_want
    assert np.array_equal(_steps(cm.run(frames, engine="host"), want), want)
    s = cm.stream("host")
    first = _steps(s.step(frames[:4]), want[:4])
    assert not np.array_equal(_steps(s.step(frames[:4]), want[:4]), first)
    s.reset()  # rnn_reset()
    assert np.array_equal(_steps(s.step(frames), want), want)


@pytest.mark.host
def test_the_stream_is_clean_under_address_and_undefined_behaviour_sanitizers():
    """The standalone runner (a heap arena of exactly the planned size): every frame one invoke, no report."""
    from tinyaot.targets.base import ModelSources
    from tinyaot.targets.engines import raw_rows
    from tinyaot.targets.host import SanitizedHostTarget

    torch.manual_seed(0)
    cm = _compile(MODELS["lstm_cell_stack"]().eval(), "rnn", stream=True)
    frames = cm.quantize_input(_signals(1, 2))[0][:, None, :]
    target = SanitizedHostTarget()
    got = target.run(target.build(ModelSources.of(cm)), raw_rows(frames)).outputs
    assert np.array_equal(np.asarray(got).reshape(FRAMES, -1), np.asarray(cm.run(frames)).reshape(FRAMES, -1))


def _stateful(g):
    """The graph with its recurrent layers stateful (as the streaming pass makes them), any T."""
    g = g.replace()
    g.nodes[:] = [Node(n.op, n.name, n.inputs, n.outputs, dict(n.attrs.replace(stateful=True).items()), source=n.source)
                  if OPS[n.op].attrs is RecurrentAttrs else n for n in g.nodes]
    return g


@pytest.mark.host
def test_random_stateful_layers_host_equals_reference_across_invokes():
    """Random sizes and qparams (a GRU graph as lowering makes it, a TFLite LSTM with or without cell clip), T
    frames per invoke: each invoke's C starts from the state the last one left, byte for byte the reference."""
    from test_gru import _random_gru_graph
    from test_lstm import _lstm_model

    from tinyaot.backend import plan
    from tinyaot.frontend.tflite import from_tflite
    from tinyaot.model import CompiledModel
    from tinyaot.result import CompileResult

    rng = np.random.default_rng(31)
    graphs = [_random_gru_graph(rng) for _ in range(3)] + [from_tflite(_lstm_model(rng)[0]) for _ in range(3)]
    for case, g in enumerate(map(_stateful, graphs)):
        memory = plan(g)
        assert memory.state_bytes > 0
        cm = CompiledModel(CompileResult(f"stateful{case}", g, memory, memory))
        x = rng.integers(-128, 128, size=(4, *g.tensor(g.inputs[0]).shape)).astype(np.int8)
        ref = cm.run(x)  # four invokes of one stream from a reset
        np.testing.assert_array_equal(cm.run(x, engine="host"), ref, err_msg=str(case))
        fresh = np.stack([cm.run(v[None])[0] for v in x])  # each invoke from a reset: the first one only agrees
        assert np.array_equal(fresh[0], ref[0])


@pytest.mark.m33
@pytest.mark.parametrize("name", ["lstm_cell_stack", "gru_sequence"])  # each stateful kernel once
def test_m33_steps_equal_the_full_sequence_model(name):
    torch.manual_seed(0)
    cm = _compile(MODELS[name]().eval(), "rnn", stream=True)
    x = cm.quantize_input(_signals(1, 2))[0]
    want = np.asarray(cm.window_model().run(x)).reshape(FRAMES, -1)
    assert np.array_equal(np.asarray(cm.run(x[:, None, :], engine="m33")).reshape(FRAMES, -1), want)
    assert cm.last_m33.instructions > 0


def test_the_whole_sequence_kernels_are_unchanged_when_not_streaming():
    torch.manual_seed(0)
    cm = _compile(SequenceGRU().eval(), "seq")
    assert not cm.plan.state and cm.state_bytes == 0
    assert "_stateful" not in cm.c_sources.files["seq.c"] and "STATE" not in cm.c_sources.files["seq.h"]
    assert re.search(r"tinyaot_gru_s8\(", cm.c_sources.files["seq.c"])


# ---- nn.LSTMCell / nn.GRUCell loops ----------------------------------------------------------------------------

def _as_layer(cells: list[nn.Module], kind, batch_first: bool = True) -> nn.Module:
    """nn.LSTM / nn.GRU with the cells' weights, one layer per cell."""
    first = cells[0]
    layer = kind(first.input_size, first.hidden_size, num_layers=len(cells), batch_first=batch_first)
    with torch.no_grad():
        for k, cell in enumerate(cells):
            for part in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(layer, f"{part}_l{k}").copy_(getattr(cell, part))
    return layer


class _LayerTwin(nn.Module):
    """The cell model written with nn.GRU / nn.LSTM (same weights)."""

    def __init__(self, cell_model):
        super().__init__()
        if isinstance(cell_model, GRUCellLoop):
            self.layers, self.head = nn.ModuleList([_as_layer([cell_model.cell], nn.GRU)]), cell_model.head
        else:  # two sizes of hidden state: two nn.LSTM
            self.layers = nn.ModuleList(_as_layer([c], nn.LSTM) for c in (cell_model.cell1, cell_model.cell2))
            self.head = None

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)[0]
        return self.head(x[:, -1]) if self.head is not None else x


def _constants(cm) -> list[bytes]:
    """The int8 / int32 constants of the recurrent layers, in order."""
    g = cm.graph
    return [g.tensor(i).data.tobytes() for n in g.nodes if OPS[n.op].attrs is RecurrentAttrs for i in n.inputs[1:]]


@pytest.mark.parametrize("model", [GRUCellLoop, LSTMCellStack], ids=["gru_cell", "lstm_cell_stack"])
def test_a_cell_loop_compiles_to_the_layer_with_the_same_weights(model):
    torch.manual_seed(0)
    cells = model().eval()
    twin = _LayerTwin(cells).eval()
    cm, cm_twin = _compile(cells, "cells"), _compile(twin, "layer")
    ops = [n.op for n in cm.graph.nodes]
    assert ops == [n.op for n in cm_twin.graph.nodes]
    assert ops.count("gru" if model is GRUCellLoop else "lstm") == (1 if model is GRUCellLoop else 2)
    assert _constants(cm) == _constants(cm_twin)  # the same int8 weights, biases
    x = cm.quantize_input(_signals(8, 4))
    assert np.array_equal(cm.run(x), cm_twin.run(x))  # the same int8 bytes
    v = _signals(12, 5)
    with torch.no_grad():
        want = np.concatenate([cells(torch.from_numpy(s[None])).numpy() for s in v])
        assert np.allclose(want, np.concatenate([twin(torch.from_numpy(s[None])).numpy() for s in v]), atol=1e-5)
    got = cm.run_float(v).reshape(want.shape)
    # seeded weights and inputs: the worst error measured is 0.9% (gru_cell) and 1.1% of max|float|
    assert np.abs(got - want).max() < 0.08 * np.abs(want).max()


def test_a_time_major_cell_loop_reads_the_input_in_place():
    class TimeMajor(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(FEATURES, 6)

        def forward(self, x):
            x = x.reshape(FRAMES, 1, FEATURES)
            h = c = None
            hs = []
            for t in range(FRAMES):
                h, c = self.cell(x[t]) if h is None else self.cell(x[t], (h, c))
                hs.append(h)
            return torch.stack(hs, 0)

    torch.manual_seed(0)
    m = TimeMajor().eval()
    cm = _compile(m, "tm")
    assert [n.op for n in cm.graph.nodes] == ["lstm"] and cm.output_shape == (1, FRAMES, 6)
    v = _signals(12, 5)
    with torch.no_grad():
        want = np.concatenate([m(torch.from_numpy(s[None])).numpy().reshape(1, FRAMES, 6) for s in v])
    got = cm.run_float(v).reshape(want.shape)
    assert np.abs(got - want).max() < 0.08 * np.abs(want).max()  # seeded: measured 3.5% of max|float|


class _StepFunction(nn.Module):
    """What users write for a step function: the state in and out of forward()."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(FEATURES, 8)

    def forward(self, x, h):
        h = self.cell(x, h)
        return h, h


class _HeadInsideTheLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(FEATURES, 8)
        self.head = nn.Linear(8, CLASSES)

    def forward(self, x):
        h, ys = torch.zeros(1, 8), []
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
            ys.append(self.head(h))
        return torch.stack(ys, 1)


class _CellStateOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(FEATURES, 6)

    def forward(self, x):
        h = c = torch.zeros(1, 6)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return c


class _SomeFrames(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(FEATURES, 8)

    def forward(self, x):
        h = torch.zeros(1, 8)
        for t in range(0, x.shape[1], 2):
            h = self.cell(x[:, t], h)
        return h


class _GivenState(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(FEATURES, 8)
        self.h0 = nn.Parameter(torch.ones(1, 8))

    def forward(self, x):
        h = self.h0
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return h


@pytest.mark.parametrize("model, message", [
    (_StepFunction, r"layer 'cell' \(GRUCell\) at .*test_recurrent_step.py:\d+: h = self.cell\(x, h\).*takes its "
                    r"state from the model's input 'h'.*with stream=True"),
    (_HeadInsideTheLoop, r"layer 'cell' .*step 0 of this nn.GRUCell loop is read by aten.linear.default inside "
                         r"the loop.*torch.stack\(hs, 1\)"),
    (_CellStateOut, r"layer 'cell' .*the cell state c of step 9 of this nn.LSTMCell loop is read outside"),
    (_SomeFrames, r"layer 'cell' .*this nn.GRUCell loop runs over 5 step\(s\) reading x\[:, t\] of a tensor of "
                  r"shape \[1, 10, 5\]; tinyaot compiles a loop over every frame in order"),
    (_GivenState, r"layer 'cell' .*starts from a state other than zero"),
], ids=["step_function", "head_inside_the_loop", "cell_state_out", "some_frames", "given_state"])
def test_unsupported_cell_uses_are_refused_with_the_layer_and_line(model, message):
    cal = _signals(4, 1)
    example = (torch.from_numpy(cal[:1, 0]), torch.zeros(1, 8)) if model is _StepFunction else \
        torch.from_numpy(cal[:1])
    calibration = [cal[:, 0], np.zeros((4, 8), np.float32)] if model is _StepFunction else cal
    with pytest.raises(UnsupportedOpError, match=message):
        tinyaot.compile(model().eval(), example, calibration=calibration, name="bad")


def test_a_recurrent_model_that_summarizes_time_is_refused_when_streamed():
    class MeanOverTime(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(FEATURES, 8, batch_first=True)

        def forward(self, x):
            return self.gru(x)[0].mean(1)

    with pytest.raises(UnsupportedOpError, match=r"stream=True: layer 'mean' .* averages over time"):
        _compile(MeanOverTime().eval(), "bad", stream=True)
