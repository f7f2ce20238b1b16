"""The gru op: tinyaot's integer GRU (the LSTM's int16 building blocks) from PyTorch's nn.GRU; the reference equal
to the C on the host and on the Cortex-M33 byte for byte, int8 tracking float."""
from __future__ import annotations

import numpy as np
import pytest

import tinyaot
from tinyaot.errors import UnsupportedOpError
from tinyaot.ir import Graph, Node, QParams, Tensor

torch = pytest.importorskip("torch")


class StackedGRU(torch.nn.Module):
    """Two layers over a time-major view of the [1, T, F] input, the classifier on h_n[-1]."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(5, 8, num_layers=2)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        _, h = self.gru(x.reshape(x.shape[1], 1, x.shape[2]))
        return self.fc(h[-1])


class SequenceGRU(torch.nn.Module):
    """batch_first, the whole output sequence out."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(5, 6, batch_first=True)

    def forward(self, x):
        return self.gru(x)[0]


def _signals(n: int, seed: int) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).normal(scale=0.4, size=(n, 6, 5)), axis=1).astype(np.float32)


def _compiled(build):
    torch.manual_seed(0)  # the weights, whatever ran before
    model = build().eval()
    cal = _signals(64, 0)
    return model, tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name="gru_seq")


def _random_gru_graph(rng) -> Graph:
    """One quantized gru node with random sizes and qparams (what lowering makes, without a float model)."""
    steps, features, hidden = (int(v) for v in rng.integers(1, 10, size=3))
    x_qp = QParams.per_tensor(float(np.float32(10 ** rng.uniform(-2, -0.5))), int(rng.integers(-128, 128)))
    y_qp = QParams.per_tensor(float(np.float32(2 / 255 * rng.uniform(0.5, 1.0))), int(rng.integers(-10, 11)))
    g = Graph(tensors={}, nodes=[], inputs=["x"], outputs=["y"])
    g.add_tensor(Tensor("x", (1, steps, features), "int8", qparams=x_qp))
    for name, cols in (("w_ih", features), ("w_hh", hidden)):
        scales = tuple(float(np.float32(s)) for s in rng.uniform(0.002, 0.02, size=3 * hidden))
        g.add_tensor(Tensor(name, (3 * hidden, cols), "int8", data=rng.integers(-127, 128, size=(3 * hidden, cols))
                            .astype(np.int8), qparams=QParams(scales, (0,) * len(scales), 0)))
    for name in ("b_ih", "b_hh"):
        g.add_tensor(Tensor(name, (3 * hidden,), "int32", data=rng.integers(-3000, 3000, 3 * hidden).astype(np.int32)))
    g.add_tensor(Tensor("y", (1, hidden) if steps % 2 else (1, steps, hidden), "int8", qparams=y_qp))
    g.add_tensor(Tensor("state", (6, hidden), "int16", qparams=QParams.per_tensor(2.0 ** -int(rng.integers(13, 16)),
                                                                                   0)))
    g.nodes.append(Node("gru", "gru_0", ["x", "w_ih", "w_hh", "b_ih", "b_hh"], ["y", "state"],
                        {"hidden": hidden, "last_only": bool(steps % 2) or None}))
    return g


@pytest.mark.parametrize("model", [StackedGRU, SequenceGRU], ids=["stacked_time_major", "sequence"])
def test_pytorch_gru_compiles_one_node_per_layer_and_tracks_float(model):
    m, cm = _compiled(model)
    layers = [n for n in cm.graph.nodes if n.op == "gru"]
    assert len(layers) == m.gru.num_layers
    assert bool(layers[-1].attrs.get("last_only")) == (model is StackedGRU)
    x = _signals(20, 5)
    with torch.no_grad():
        want = np.concatenate([m(torch.from_numpy(v[None])).numpy() for v in x])
    got = cm.run_float(x).reshape(want.shape)
    # seeded weights and inputs: the worst error measured is 0.7% (stacked) and 1.3% of max|float|
    assert np.abs(got - want).max() < 0.08 * np.abs(want).max()


@pytest.mark.host
def test_random_gru_layers_host_equals_reference():
    from tinyaot.backend import plan
    from tinyaot.model import CompiledModel
    from tinyaot.result import CompileResult

    rng = np.random.default_rng(21)
    for case in range(8):
        g = _random_gru_graph(rng)
        memory = plan(g)
        cm = CompiledModel(CompileResult(f"gru_case{case}", g, memory, memory))
        x = rng.integers(-128, 128, size=(3, *g.tensor("x").shape)).astype(np.int8)
        np.testing.assert_array_equal(cm.run(x, engine="host"), cm.run(x, engine="reference"), err_msg=str(case))


@pytest.mark.host
@pytest.mark.parametrize("model", [StackedGRU, SequenceGRU], ids=["stacked_time_major", "sequence"])
def test_pytorch_gru_host_equals_reference(model):
    _, cm = _compiled(model)
    xq = cm.quantize_input(_signals(6, 3))
    np.testing.assert_array_equal(cm.run(xq, engine="host"), cm.run(xq, engine="reference"))


@pytest.mark.m33
def test_pytorch_gru_m33_equals_reference():
    _, cm = _compiled(StackedGRU)
    xq = cm.quantize_input(_signals(6, 3))
    np.testing.assert_array_equal(cm.run(xq, engine="m33"), cm.run(xq, engine="reference"))
    assert cm.last_m33.instructions > 0


class _Bidirectional(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True)

    def forward(self, x):
        return self.gru(x)[0]


@pytest.mark.parametrize("model, message", [
    (_Bidirectional, "bidirectional nn.GRU is not supported"),
    (lambda: torch.nn.Sequential(torch.nn.Flatten(), torch.nn.GRUCell(30, 4)),
     "this nn.GRUCell loop must read frame t of one sequence"),
], ids=["bidirectional", "gru_cell"])
def test_unsupported_gru_uses_are_refused_by_name(model, message):
    x = np.zeros((4, 6, 5), dtype=np.float32)
    with pytest.raises(UnsupportedOpError, match=message):
        tinyaot.compile(model().eval(), torch.from_numpy(x[:1]), calibration=x, name="bad")
