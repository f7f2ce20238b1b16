"""Broadcasting element-wise ops (add, sub, mul, minimum, maximum) and constant tensor operands.

- One-op .tflite graphs imported by tinyaot's front end: the reference equals TensorFlow Lite Micro on every byte,
  for random broadcast shapes up to 4-D, random qparams, fused activations and constant operands.
- PyTorch models (a squeeze-excite gate, learned per-channel scales and offsets, constant adds, sub, rsub,
  torch.maximum / minimum, [1, T, D] sequences): reference == host C == Cortex-M33 on every byte, optimize
  "speed" and "memory".
- Per-channel constants right after a conv / linear fold into its weights (passes/fold_affine.py); the others are
  int8 constants in flash, never in the arena.
- What stays refused says so.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import needs_m33
from kernel_suite import act, one_op_graph
from torch import nn

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite import from_tflite
from tinyaot.ir import QParams, Tensor
from tinyaot.ir.ops import RELU, RELU6
from tinyaot.ref.interpreter import KERNELS

tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")

CASES, SAMPLES = 50, 6
ACTIVATIONS = {0: None, 1: RELU, 2: (-1.0, 1.0), 3: RELU6}  # TFLite fused activation codes -> clamp
OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}


# ---- TFLite Micro --------------------------------------------------------------------------------------------

def _qp(rng) -> tuple[float, int]:
    return float(np.float32(10 ** rng.uniform(-2.5, 0.0))), int(rng.integers(-128, 128))


def _shapes(rng) -> tuple[list[int], list[int], tuple[int, ...]]:
    """(a, b, out): a random output of 2 to 4 dims (batch 1), each operand taking each axis whole or as 1 (never
    both 1 where the output is not)."""
    out = (1, *(int(d) for d in rng.integers(1, 6, size=int(rng.integers(1, 4)))))
    a, b = [], []
    for d in out:
        keep = rng.integers(3)  # 0: both whole, 1: a broadcasts, 2: b broadcasts
        a.append(1 if keep == 1 else d)
        b.append(1 if keep == 2 else d)
    return a, b, out


def _drop_leading(shape: list[int], other: list[int], out, rng) -> tuple[int, ...]:
    """Sometimes fewer leading axes (NumPy aligns the trailing ones), the other operand then whole along them."""
    if rng.random() < 0.4:
        n = int(rng.integers(1, len(shape) + 1))
        other[:n] = out[:n]
        shape = shape[n:]
    return tuple(shape)


def _tensor(shape, qp, data=None) -> tb.T:
    return tb.T(tuple(shape), "int8", data=data, scale=qp[0], zero_point=qp[1])


def _case(code: str, rng):
    """One random one-op model: (tflite bytes, shapes of its activation inputs in order)."""
    sa, sb, out = _shapes(rng)
    if code in ("MINIMUM", "MAXIMUM"):
        qa = qb = qo = _qp(rng)  # TFLite's converter gives all three one scale and zero point
    else:
        qa, qb, qo = _qp(rng), _qp(rng), _qp(rng)
        if code == "MUL":
            qo = (float(np.float32(qa[0] * qb[0] * rng.uniform(20, 200))), qo[1])
    const = int(rng.integers(3))  # 0: two activations, 1: a constant first operand, 2: a constant second one
    # a model input keeps all its axes (dim 0 is its batch); a constant may drop leading ones, down to a scalar
    if const == 1:
        sa = _drop_leading(sa, sb, out, rng)
    elif const == 2:
        sb = _drop_leading(sb, sa, out, rng)
    sa, sb = tuple(sa), tuple(sb)
    tensors = [_tensor(sa, qa), _tensor(sb, qb), _tensor(out, qo)]
    if const:
        k = const - 1
        tensors[k].data = rng.integers(-128, 128, size=tensors[k].shape).astype(np.int8)
    options = None
    if code in OPTIONS:
        options = (OPTIONS[code], {"FusedActivationFunction": int(rng.choice(list(ACTIVATIONS)))})
    inputs = [i for i in (0, 1) if tensors[i].data is None]
    model = tb.Model(tensors, [tb.Op(code, [0, 1], [2], options)], inputs, [2])
    return tb.build(model), [tensors[i].shape for i in inputs]


def _run_tflm(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=64 * 1024)
    outs = []
    for s in range(len(inputs[0])):
        for i, x in enumerate(inputs):
            interp.set_input(x[s], i)
        interp.invoke()
        outs.append(interp.get_output(0).copy())
    return np.stack(outs)


def _run_reference(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    """tinyaot's import of the model, its one node run by the reference kernel."""
    g = from_tflite(model)
    (node,) = g.nodes
    prepare, kernel = KERNELS[node.op]
    p = prepare(node, g)
    order = [g.inputs.index(t) for t in node.inputs if not g.tensor(t).is_const]
    return np.stack([kernel(*(inputs[k][s] for k in order), p) for s in range(len(inputs[0]))])


@pytest.mark.parametrize("code", ["ADD", "SUB", "MUL", "MINIMUM", "MAXIMUM"])
def test_reference_equals_tflm_with_broadcasting(code):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    rng = np.random.default_rng(sum(map(ord, code)))
    varied, broadcast, constant = set(), 0, 0
    for k in range(CASES):
        model, shapes = _case(code, rng)
        inputs = [rng.integers(-128, 128, size=(SAMPLES, *s)).astype(np.int8) for s in shapes]
        want = _run_tflm(model, inputs)
        got = _run_reference(model, inputs)
        np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"{code} case {k}: {shapes}")
        varied.update(np.unique(want).tolist())
        broadcast += len({tuple(s) for s in shapes}) > 1 or len(shapes) == 1
        constant += len(shapes) == 1
    assert len(varied) > 64 and broadcast > CASES // 3 and constant > CASES // 5  # the cases reach what they claim


def test_tflite_minimum_with_other_qparams_is_refused():
    """TFLM compares the bytes without reading qparams: with different ones that result means nothing."""
    model = tb.build(tb.Model([_tensor((1, 4), (0.1, 0)), _tensor((1, 4), (0.2, 0)), _tensor((1, 4), (0.1, 0))],
                              [tb.Op("MINIMUM", [0, 1], [2])], [0, 1], [2]))
    with pytest.raises(UnsupportedOpError, match=r"MINIMUM.*changes scale/zero point"):
        from_tflite(model)


def test_tflite_broadcast_beyond_4d_is_refused():
    model = tb.build(tb.Model([_tensor((1, 2, 1, 2, 3), (0.1, 0)), _tensor((3,), (0.1, 0), np.ones(3, np.int8)),
                               _tensor((1, 2, 1, 2, 3), (0.1, 0))],
                              [tb.Op("ADD", [0, 1], [2], ("AddOptions", {}))], [0], [2]))
    with pytest.raises(UnsupportedOpError, match=r"ADD.*up to 4-D"):
        from_tflite(model)


# ---- PyTorch models: reference == host C == Cortex-M33 ----------------------------------------------------

class SqueezeExcite(nn.Module):
    """x * s[:, :, None, None], s from the pooled features (MobileNetV3's gate)."""

    def __init__(self, c: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(c, 4), nn.Linear(4, c)

    def forward(self, x):
        y = F.relu(self.conv(x))
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(y.mean((2, 3))))))
        return y * s[:, :, None, None]


class ChannelConstants(nn.Module):
    """A learned per-channel scale and offset where they cannot fold (after a ReLU, mixed signs), a constant
    feature map added, sub / rsub of constants and of a broadcast activation, torch.maximum / minimum."""

    def __init__(self, c: int = 6):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.conv = nn.Conv2d(3, c, 3, padding=1)
        self.scale = nn.Parameter(torch.rand(1, c, 1, 1, generator=g) * 2 - 0.5)
        self.offset = nn.Parameter(torch.randn(c, 1, 1, generator=g))
        self.register_buffer("bias_map", torch.randn(1, c, 5, 5, generator=g) * 0.5)

    def forward(self, x):
        y = F.relu(self.conv(x))
        y = y * self.scale + self.offset
        y = y + self.bias_map
        m = y.mean((2, 3), keepdim=True)  # [1, C, 1, 1]
        d = (y - m) - (1.0 - self.offset)  # rsub of a number, a broadcast activation sub, a constant sub
        e = torch.maximum(d, m) - torch.minimum(y, self.offset * 0.5)
        return torch.clamp_min(e, self.offset)


class Sequence(nn.Module):
    """[1, T, D] activations: a constant [T, D] added, a [1, T, 1] gate, clamp with a [D] tensor bound, torch.max /
    torch.min of two tensors."""

    def __init__(self, t: int = 6, d: int = 8):
        super().__init__()
        g = torch.Generator().manual_seed(5)
        self.fc = nn.Linear(d, d)
        self.pos = nn.Parameter(torch.randn(t, d, generator=g))
        self.floor = nn.Parameter(torch.randn(d, generator=g) * 0.3)

    def forward(self, x):
        h = self.fc(x) + self.pos
        gate = torch.sigmoid(h.mean(-1, keepdim=True))
        y = torch.clamp(h * gate, min=self.floor)
        return torch.max(y, x) - torch.min(x, self.floor)


MODELS = {"se": (SqueezeExcite, (3, 5, 5)), "constants": (ChannelConstants, (3, 5, 5)), "sequence": (Sequence, (6, 8))}
_compiled: dict = {}


def _model(name: str, optimize: str):
    if (name, optimize) not in _compiled:
        cls, shape = MODELS[name]
        torch.manual_seed(0)
        m = cls().eval()
        _compiled[name, optimize] = tinyaot.compile(m, _smooth(1, shape), calibration=_smooth(64, shape), name=name,
                                                    optimize=optimize), m
    return _compiled[name, optimize]


def _smooth(n: int, shape, seed: int = 0) -> torch.Tensor:
    """Samples with neighbouring values alike (what the calibration's noise check wants of data), in [-1, 1]."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, *shape, generator=g).cumsum(-1)
    return (x / x.amax(-1, keepdim=True)) * 2 - 1


def _ir_layout(t: torch.Tensor) -> np.ndarray:
    """A torch tensor in the compiled model's layout (NHWC for feature maps)."""
    return (t.permute(0, 2, 3, 1) if t.dim() == 4 else t).detach().numpy()


def _inputs(cm, n: int = 5) -> np.ndarray:
    shape = cm.graph.tensor(cm.graph.inputs[0]).shape
    return np.random.default_rng(11).integers(-128, 128, size=(n, *shape)).astype(np.int8)


@pytest.mark.parametrize("optimize", ["speed", "memory"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_float_model_int8_tracks_float(name, optimize):
    """The int8 program computes what the float model does (a wrong broadcast or layout would not)."""
    cm, m = _model(name, optimize)
    x = _smooth(8, MODELS[name][1], seed=1)
    want = _ir_layout(m(x))
    got = cm.run_float(_ir_layout(x))
    # Seeded weights and inputs; the worst error measured is 1.5% of max|float| (constants), 1.0% and 0.9%: a bound
    # 5x away, which a float's last bits cannot cross.
    assert np.abs(got - want).max() < 0.08 * np.abs(want).max()


@pytest.mark.host
@pytest.mark.parametrize("optimize", ["speed", "memory"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_reference_equals_host_c(name, optimize):
    cm, _ = _model(name, optimize)
    x = _inputs(cm)
    np.testing.assert_array_equal(cm.run(x, engine="host"), cm.run(x, engine="reference"))


@needs_m33
@pytest.mark.parametrize("optimize", ["speed", "memory"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_reference_equals_cortex_m33(name, optimize):
    cm, _ = _model(name, optimize)
    x = _inputs(cm, 3)
    np.testing.assert_array_equal(cm.run(x, engine="m33"), cm.run(x, engine="reference"))


def test_the_models_use_the_broadcast_kernels_and_keep_constants_in_flash():
    cm, _ = _model("constants", "memory")
    ops = [n.op for n in cm.graph.nodes]
    assert {"mul", "add", "sub", "maximum", "minimum"} <= set(ops)
    consts = [t for n in cm.graph.nodes for t in n.inputs if cm.graph.tensor(t).is_const and n.op != "conv2d"]
    assert consts and all(cm.graph.tensor(t).dtype == "int8" and cm.graph.tensor(t).qparams for t in consts)
    assert not set(consts) & set(cm.plan.offsets)  # the planner gives constants no arena bytes
    src = cm.c_sources.files["constants.c"]
    assert "tinyaot_mul_broadcast_s8(" in src and "tinyaot_add_broadcast_s8(" in src
    assert "tinyaot_minmax_broadcast_s8(" in src and "_operand2[" in src
    se, _ = _model("se", "speed")
    assert "tinyaot_mul_broadcast_s8(" in se.c_sources.files["se.c"]


# ---- folding into the layer before ------------------------------------------------------------------------

class Foldable(nn.Module):
    def __init__(self, relu: bool, sign: float = 1.0):
        super().__init__()
        self.relu, self.conv, self.fc = relu, nn.Conv2d(2, 4, 3, padding=1), nn.Linear(16, 3)
        self.scale = nn.Parameter(torch.tensor([0.5, 1.5, 2.0, 0.25]).reshape(1, 4, 1, 1) * sign)
        self.shift = nn.Parameter(torch.tensor([0.1, -0.2, 0.3, 0.0]).reshape(4, 1, 1))
        self.fc_scale = nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))

    def forward(self, x):
        y = self.conv(x)
        y = F.relu(y) * self.scale if self.relu else y * self.scale + self.shift
        return (self.fc(y.flatten(1)) - self.fc_scale) * self.fc_scale


@pytest.mark.parametrize("relu, sign, folded", [(False, 1.0, True), (True, 1.0, True), (True, -1.0, False)])
def test_per_channel_constants_fold_into_the_layer_before(relu, sign, folded):
    """conv * s + t and linear - c, * c fold into the weights; relu(conv) * s only when s >= 0."""
    torch.manual_seed(1)
    m = Foldable(relu, sign).eval()
    cal = _smooth(64, (2, 2, 2))
    cm = tinyaot.compile(m, cal[:1], calibration=cal)
    ops = [n.op for n in cm.graph.nodes]
    assert ("mul" in ops) == (not folded) and "sub" not in ops and "add" not in ops
    want = m(cal[:8]).detach().numpy()
    # seeded weights and inputs; measured 0.2-0.3% of max|float|, a bound 15x away
    assert np.abs(cm.run_float(_ir_layout(cal[:8])) - want).max() < 0.05 * np.abs(want).max()


# ---- what stays refused -------------------------------------------------------------------------------------

class FiveD(nn.Module):
    """Broadcast along every other axis of five: no merging of neighbouring axes makes it 4-D (merging does for
    timm's split attention, tests/test_pytorch_timm_ops.py)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.rand(2, 1, 2, 1))

    def forward(self, x):
        return x.reshape(1, 2, 2, 2, 2) * self.w


class TwoConstants(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Parameter(torch.ones(4)), nn.Parameter(torch.full((4,), 2.0))

    def forward(self, x):
        return x * (self.a + self.b)  # folded by the front end: one constant operand


def test_broadcast_beyond_4d_is_refused_with_the_layer():
    with pytest.raises(UnsupportedOpError, match=r"layer .mul.*test_broadcast_ops.py:.*up to 4-D"):
        tinyaot.compile(FiveD(), torch.zeros(1, 16), calibration=_smooth(8, (16,)))


def test_two_constant_operands_fold_in_the_front_end():
    cm = tinyaot.compile(TwoConstants(), torch.zeros(1, 4), calibration=_smooth(64, (4,)))
    assert [n.op for n in cm.graph.nodes] == ["mul"]
    x = np.array([[-0.9, -0.3, 0.3, 0.9]], dtype=np.float32)
    np.testing.assert_allclose(cm.run_float(x), 3 * x, atol=0.03)


def test_int8_kernels_refuse_what_the_front_ends_never_make():
    two = one_op_graph("add", [Tensor("a", (1, 4), "int8", data=np.zeros((1, 4), np.int8),
                                      qparams=QParams.per_tensor(0.1, 0)),
                               Tensor("b", (1, 4), "int8", data=np.ones((1, 4), np.int8),
                                      qparams=QParams.per_tensor(0.1, 0))], act("y", (1, 4), 0.1, 0))
    with pytest.raises(UnsupportedOpError, match="two constant operands"):
        KERNELS["add"][0](two.nodes[0], two)
    bad = one_op_graph("maximum", [act("a", (1, 3), 0.1, 0), act("b", (1, 4), 0.1, 0)], act("y", (1, 4), 0.1, 0))
    with pytest.raises(ModelError, match=r"shapes \[1, 3\] and \[1, 4\] do not broadcast"):
        KERNELS["maximum"][0](bad.nodes[0], bad)


def test_float_tflite_constant_operands_are_quantized_by_tinyaot(tmp_path):
    """A float .tflite whose SUB and MAXIMUM read constant tensors: tinyaot calibrates it and gives each constant
    its own int8 qparams (quantize/lower.py)."""
    c = np.array([0.5, -0.25, 1.0], np.float32)
    floor = np.array([-0.5, 0.0, 0.25], np.float32).reshape(1, 1, 1, 3)
    tensors = [tb.T((1, 4, 4, 3), "float32"), tb.T((3,), "float32", data=c), tb.T((1, 4, 4, 3), "float32"),
               tb.T((1, 1, 1, 3), "float32", data=floor), tb.T((1, 4, 4, 3), "float32")]
    ops = [tb.Op("SUB", [0, 1], [2], ("SubOptions", {})), tb.Op("MAXIMUM", [2, 3], [4])]
    path = tmp_path / "float_constants.tflite"
    path.write_bytes(tb.build(tb.Model(tensors, ops, [0], [4])))
    cal = _smooth(64, (4, 4, 3)).numpy()
    cm = tinyaot.compile(str(path), calibration=cal)
    assert [n.op for n in cm.graph.nodes] == ["sub", "maximum"]
    assert all(cm.graph.tensor(t).dtype == "int8" for n in cm.graph.nodes for t in n.inputs)
    x = cal[:8]
    want = np.maximum(x - c, floor)
    assert np.abs(cm.run_float(x) - want).max() < 0.03  # measured 0.011: three half-step roundings add to <= 0.013
