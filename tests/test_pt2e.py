"""PT2E import: graphs quantized with torchao's prepare_pt2e / convert_pt2e compile with their own qparams to
integer kernels (int8 I/O, no float in the C), run bit-exactly on every engine, and agree with the PT2E
graph's own float-between-q/dq reference up to a measured rounding difference.

Quantizer: torchao's XNNPACKQuantizer test copy (the one the seed's script uses), symmetric int8 weights per
tensor or per channel, int8 per-tensor activations from a histogram observer (tests/pt2e_models.py).

What holds, and is asserted here: each tinyaot kernel fed the PT2E graph's own int8 inputs is never more than one
step from PT2E's output and equals it on >= 98% of values (measured 98.9-100%; int32 bias and TFLM's fixed-point
rounding vs PT2E's float bias and round half to even). What does not hold in general is whole-model byte
agreement: a one-step difference in a layer's input moves every output whose window covers it, so differences
compound with depth. The shallow models here agree on 92-99.7% of output bytes (max 2 steps); the trained DS-CNN
of benchmarks/pt2e.py on 50-75% (max 4 steps), its MobileNetV1-0.25 on 55-57% (max 14 steps), while argmax
agreement stays >= 99% and int8 accuracy within 0.25 points of PT2E's. The deep-net tests below therefore bound
each kernel, argmax agreement and accuracy, not whole-model bytes.
"""
from __future__ import annotations

import re
import warnings
from functools import cache, reduce

import numpy as np
import pytest
from conftest import have_host_cc, random_int8, shared_file

torch = pytest.importorskip("torch")
pytest.importorskip("torchao", reason="torchao (the PT2E quantization flow) is not installed")

import pt2e_models
import torch.nn.functional as F
from pt2e_models import quantize_pt2e, quantizer
from torch import nn

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits, demo_digits
from tinyaot.diagnostics import CalibrationWarning
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.report.pt2e_agreement import agreement_of, pt2e_agreement, pt2e_layer_agreement, pt2e_reference

# Whole-model agreement with the PT2E float reference on these shallow models (2-3 weighted layers), measured:
# seed MLP 99.6% of output bytes equal (8 of 2,000 differ, 40 allowed; max 2 steps), SmallCNN 94.5% (per-tensor
# weights: 83 of 1,500 differ, 105 allowed) / 96.3% (per-channel), max 1 step. Deeper models agree on far fewer
# bytes (see the module docstring): these bounds are for these models.
MIN_EQUAL = {"mlp": 0.98, "cnn": 0.93}
MAX_STEPS = 2
PER = ("per_tensor", "per_channel")
# Every kernel on PT2E's own inputs: at most one step off (the arithmetic: int32 bias and fixed-point requantization
# against PT2E's float, each off by a small fraction of a step), and equal on at least this share of its outputs.
# A layer's share is a rate, measured 98.9-100% on every layer here: a classifier's few outputs are therefore
# compared on enough samples for 2% to be many values (at least 12 here) away from what is measured.
ISOLATED_MIN_EQUAL = 0.98


def assert_each_kernel_within_one_step(cm, gm, x) -> list:
    """Per-layer check on PT2E's own int8 inputs; every weighted layer of the compiled graph must be compared."""
    rows = pt2e_layer_agreement(cm, gm, x)
    weighted = {n.name for n in cm.graph.nodes if n.op in ("fully_connected", "conv2d", "depthwise_conv2d")}
    assert weighted <= {r.layer for r in rows}, "a weighted layer was not compared with PT2E"
    for r in rows:
        assert r.isolated_max_steps <= 1, r
        assert r.isolated_equal >= ISOLATED_MIN_EQUAL, r
    return rows


class SmallCNN(nn.Module):
    """conv-bn-relu, max pool, depthwise-relu, pointwise + residual add-relu, 2x2 avg pool, flatten, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = F.relu(self.pw(F.relu(self.dw(x))) + x)
        x = F.avg_pool2d(x, 2)
        return self.fc(torch.flatten(x, 1))


class GlobalPoolCNN(nn.Module):
    """conv-relu, then global average pooling (adaptive_avg_pool2d) and a linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 6, 3, stride=2)
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(F.relu(self.conv(x)), 1), 1))


def _cnn(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    model = SmallCNN()
    with torch.no_grad():  # a trained-looking batch norm, so folding it changes the weights
        model.bn.running_mean.uniform_(-0.3, 0.3)
        model.bn.running_var.uniform_(0.5, 2.0)
        model.bn.weight.uniform_(0.5, 1.5)
        model.bn.bias.uniform_(-0.2, 0.2)
    return model.eval()


@cache
def case(kind: str, per: str):
    """(PT2E GraphModule, compiled model, int8 test inputs in the model's layout)."""
    per_channel = per == "per_channel"
    if kind == "mlp":
        example = torch.zeros(1, 28, 28)
        gm = quantize_pt2e(build_seed_mlp(), example, calibration_digits(16, seed=0), per_channel)
        cm = tinyaot.compile(gm, example, name=f"pt2e_mlp_{per}")
        x = np.concatenate([cm.quantize_input(calibration_digits(25, seed=1)), random_int8((100, 28, 28), seed=3)])
        return gm, cm, x
    example = torch.zeros(1, 3, 16, 16)
    calibration = np.random.default_rng(1).standard_normal((32, 3, 16, 16)).astype(np.float32)
    gm = quantize_pt2e(_cnn(), example, calibration, per_channel)
    cm = tinyaot.compile(gm, example, name=f"pt2e_cnn_{per}")
    x = cm.to_model_layout(random_int8((150, 3, 16, 16), seed=5))
    return gm, cm, x


def _qdq_args(gm, which: str):
    nodes = [n for n in gm.graph.nodes if str(n.target).startswith(f"quantized_decomposed.{which}_per_tensor")]
    return nodes


# ---- the compiled graph is int8 with the PT2E graph's own numbers -----------------------------------------------
@pytest.mark.parametrize("per", PER)
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_int8_graph_with_pt2e_qparams(kind, per):
    gm, cm, _ = case(kind, per)
    g = cm.graph
    assert {n.op for n in g.nodes} <= {"fully_connected", "conv2d", "depthwise_conv2d", "max_pool2d", "add",
                                       "reshape"}
    assert all(t.dtype == "int8" for t in g.activations())
    first_q = _qdq_args(gm, "quantize")[0]
    last_dq = next(n for n in gm.graph.nodes if n.op == "output").args[0][0]
    assert cm.input_qparams == (pytest.approx(first_q.args[1], rel=1e-7), first_q.args[2])
    assert cm.output_qparams == (pytest.approx(last_dq.args[1], rel=1e-7), last_dq.args[2])
    for node in g.nodes:
        if node.op in ("fully_connected", "conv2d", "depthwise_conv2d"):
            w, b = g.tensor(node.inputs[1]), g.tensor(node.inputs[2])
            assert w.dtype == "int8" and b.dtype == "int32"
            if node.name != "avg_pool2d":  # the 2x2 average pool's constant window is per tensor
                channels = w.shape[3] if node.op == "depthwise_conv2d" else w.shape[0]
                assert len(w.qparams.scale) == (channels if per == "per_channel" else 1)
    if kind == "cnn":  # BN folded by prepare_pt2e, relu fused: one kernel per dq -> op(-> relu) -> q
        ops = [n.op for n in g.nodes]
        assert ops.count("conv2d") == 2 and ops.count("depthwise_conv2d") == 2  # dw + the 2x2 average pool
        assert [n.attrs.get("clamp") for n in g.nodes if n.op == "add"] == [(0.0, float("inf"))]


@pytest.mark.parametrize("per", PER)
def test_weights_are_exactly_the_pt2e_int8_values(per):
    """The int8 weights in the C are the PT2E graph's frozen int8 tensors, permuted once to the IR layout."""
    gm, cm, _ = case("cnn", per)
    attrs = (reduce(getattr, n.target.split("."), gm) for n in gm.graph.nodes if n.op == "get_attr")
    frozen = {tuple(t.shape): t.numpy() for t in attrs if isinstance(t, torch.Tensor) and t.dtype == torch.int8}
    weight = {n.name: cm.graph.tensor(n.inputs[1]).data for n in cm.graph.nodes if n.name in ("conv", "dw", "pw", "fc")}
    np.testing.assert_array_equal(weight["conv"], frozen[(8, 3, 3, 3)].transpose(0, 2, 3, 1))  # OIHW -> OHWI
    np.testing.assert_array_equal(weight["dw"], frozen[(8, 1, 3, 3)].transpose(1, 2, 3, 0))  # -> [1, kh, kw, C]
    np.testing.assert_array_equal(weight["pw"], frozen[(8, 8, 1, 1)].transpose(0, 2, 3, 1))
    # flatten of (C, H, W) folded into the linear's columns: (H, W, C) order, no transpose on the device
    fc = frozen[(10, 128)].reshape(10, 8, 4, 4).transpose(0, 2, 3, 1).reshape(10, 128)
    np.testing.assert_array_equal(weight["fc"], fc)


def test_unfolded_weights_quantize_as_torch_does():
    """fold_quantize=False leaves float weights + quantize_per_channel in the graph: tinyaot evaluates that
    quantize with torch (round half to even) and gets the same int8 weights as the folded graph."""
    example = torch.zeros(1, 3, 16, 16)
    calibration = np.random.default_rng(1).standard_normal((8, 3, 16, 16)).astype(np.float32)
    folded = tinyaot.compile(quantize_pt2e(_cnn(), example, calibration), example, name="folded")
    unfolded = tinyaot.compile(quantize_pt2e(_cnn(), example, calibration, fold_quantize=False), example,
                               name="unfolded")
    for a, b in zip(folded.graph.constants(), unfolded.graph.constants()):
        np.testing.assert_array_equal(a.data, b.data)
    x = random_int8((8, 16, 16, 3), seed=2)
    np.testing.assert_array_equal(folded.run(x), unfolded.run(x))


# ---- agreement with the PT2E reference ---------------------------------------------------------------------------
@pytest.mark.parametrize("per", PER)
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_agrees_with_pt2e_reference(kind, per):
    gm, cm, x = case(kind, per)
    a = pt2e_agreement(cm, gm, x)
    print(f"{kind} {per}: {a}")
    assert len(np.unique(pt2e_reference(cm, gm, x))) > 20  # outputs vary: a constant output proves nothing
    assert a.equal_fraction >= MIN_EQUAL[kind]
    assert a.max_abs_steps <= MAX_STEPS
    assert a.argmax_agreement >= 0.9


@pytest.mark.parametrize("per", PER)
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_each_kernel_is_within_one_step_of_pt2e(kind, per):
    """Fed PT2E's own int8 inputs, every kernel rounds to PT2E's value or one step from it; the chained run's last
    tensor is the compiled model's output, so its agreement is pt2e_agreement's."""
    gm, cm, x = case(kind, per)
    rows = assert_each_kernel_within_one_step(cm, gm, x)  # the classifier: 1,500-2,000 values, 0 differ
    for r in rows:
        print(f"{kind} {per} {r.layer:>12} {r.op:>16}: isolated {r.isolated_equal:.2%} (max {r.isolated_max_steps}), "
              f"chained {r.chained_equal:.2%} (max {r.chained_max_steps})")
    assert rows[-1].tensor == cm.graph.outputs[0]
    assert rows[-1].chained_equal == pytest.approx(pt2e_agreement(cm, gm, x).equal_fraction)
    assert rows[0].chained_equal == rows[0].isolated_equal  # the first layer sees the same input either way


def test_seed_mlp_predicts_its_digits():
    _, cm, _ = case("mlp", "per_channel")
    images, labels = demo_digits()
    np.testing.assert_array_equal(cm.run(cm.quantize_input(images)).argmax(-1), labels)


def test_global_average_pool_rounds_once():
    """adaptive_avg_pool2d with shared qparams becomes TFLM's avg_pool2d over the whole map (one rounding: the
    per-kernel check finds it equal to PT2E's on every value).

    Seeded model and inputs. The whole model on 1,000 samples: 92 of 4,000 output bytes differ (120 allowed), at
    most 2 steps: a conv's one-step difference moves the pool's input, and the linear carries that on (on the first
    200 samples the largest difference happened to be 1 step). Per kernel on 200 samples: the linear's 4 outputs
    give 800 values, 4 differ (16 allowed)."""
    example = torch.zeros(1, 1, 12, 12)
    calibration = np.random.default_rng(4).standard_normal((16, 1, 12, 12)).astype(np.float32)
    torch.manual_seed(2)
    gm = quantize_pt2e(GlobalPoolCNN(), example, calibration)
    cm = tinyaot.compile(gm, example, name="gap")
    assert [n.op for n in cm.graph.nodes if n.op != "reshape"] == ["conv2d", "avg_pool2d", "fully_connected"]
    x = cm.to_model_layout(cm.quantize_input(np.random.default_rng(6).standard_normal((1000, 1, 12, 12))))
    a = pt2e_agreement(cm, gm, x)
    print(f"global pool: {a}")
    assert a.equal_fraction >= 0.97 and a.max_abs_steps <= MAX_STEPS
    assert pt2e_agreement(cm, gm, x[:200]).max_abs_steps <= 1  # as measured before: these 200 never differ by 2
    rows = assert_each_kernel_within_one_step(cm, gm, x[:200])
    # One rounding of a sum of 25 int8 values over 25: never a tie, and 0.02 step from one, so PT2E's float mean
    # rounds to the same value every time.
    assert next(r for r in rows if r.op == "avg_pool2d").isolated_equal == 1.0


@pytest.fixture(scope="module")
def mnist_dscnn():
    """A DS-CNN (stride-2 conv + 4 depthwise-separable blocks, width 16: 9 convs deep) trained for one epoch on real
    MNIST digits, PT2E-quantized with per-channel weights; the 2,000 held-out digits."""
    images, labels = pt2e_models.mnist(shared_file("data/mnist10k.npz"))
    model = pt2e_models.trained_dscnn16()  # trained once, committed: the same weights on every machine
    x_test, y_test = images[pt2e_models.HELD_OUT], labels[pt2e_models.HELD_OUT]
    example = torch.zeros(1, 1, 28, 28)
    gm = quantize_pt2e(model, example, images[:128], per_channel=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        cm = tinyaot.compile(gm, example, name="pt2e_dscnn")
    return gm, cm, cm.to_model_layout(cm.quantize_input(x_test)), y_test, pt2e_models.predict(model, x_test)


def test_deep_dscnn_each_kernel_within_one_step(mnist_dscnn):
    """Nine convs deep, every kernel on PT2E's own inputs is still within one step of PT2E (the differences of the
    whole-model run come from compounding, not from any one kernel).

    256 digits (about 4 s): the linear's 10 outputs give 2,560 values, of which 23 differ (51 allowed); the global
    pool's 4,096, 7 (81 allowed). 16 digits gave the linear 160 values, 2 differing, one value from the bound."""
    gm, cm, x, _, _ = mnist_dscnn
    rows = assert_each_kernel_within_one_step(cm, gm, x[:256])
    assert [r.op for r in rows].count("depthwise_conv2d") == 4 and len(rows) == 11  # 9 convs, the pool, the linear
    for r in rows:
        print(f"dscnn {r.layer:>20} {r.op:>16}: isolated {r.isolated_equal:.2%} (max {r.isolated_max_steps}), "
              f"chained {r.chained_equal:.2%} (max {r.chained_max_steps})")


@pytest.mark.host
def test_deep_dscnn_keeps_pt2e_predictions_and_accuracy(mnist_dscnn):
    gm, cm, x, labels, float_pred = mnist_dscnn
    want = pt2e_reference(cm, gm, x)
    got = cm.run(x, engine="host")
    a = agreement_of(got, want)
    float_acc, pt2e_acc, tinyaot_acc = ((p == labels).mean() for p in (float_pred, want.argmax(1), got.argmax(1)))
    print(f"dscnn: {a}; accuracy float {float_acc:.2%}, PT2E {pt2e_acc:.2%}, tinyaot {tinyaot_acc:.2%}")
    # Committed weights, fixed digits, all 2,000 held out (400 left 6 and 2 digits of margin below): float 83.05%,
    # tinyaot and PT2E differ on 10 predictions (40 allowed) and score 81.55% / 81.60% (20 digits allowed).
    assert float_acc >= 0.75  # it learned: agreement between near-tied untrained logits would prove little
    assert a.argmax_agreement >= 0.98
    assert abs(tinyaot_acc - pt2e_acc) <= 0.01
    assert a.mean_abs_steps < 1.0  # most bytes equal or one step off, though not the 92%+ of shallow models


class Branchy(nn.Module):
    """Two branches: conv -> relu6 (PT2E quantizes the conv, then the relu6 on its own) and a conv gated by its
    own sigmoid (x * sigmoid(x)); concatenated on channels, averaged over H and W, classified."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(2, 6, 3, padding=1)
        self.b = nn.Conv2d(2, 4, 1)
        self.fc = nn.Linear(10, 5)

    def forward(self, x):
        b = self.b(x)
        y = torch.cat([F.relu6(self.a(x)), b * torch.sigmoid(b)], 1)
        return self.fc(y.mean((2, 3)))


@pytest.mark.host
def test_branches_gates_concat_and_mean():
    example = torch.zeros(1, 2, 8, 8)
    torch.manual_seed(0)
    gm = quantize_pt2e(Branchy(), example, np.random.default_rng(1).standard_normal((32, 2, 8, 8)))
    cm = tinyaot.compile(gm, example, name="branchy")
    ops = [n.op for n in cm.graph.nodes if n.op != "reshape"]
    assert sorted(ops) == sorted(["conv2d", "relu", "conv2d", "lut", "mul", "concat", "avg_pool2d",
                                  "fully_connected"])
    relu6 = next(n for n in cm.graph.nodes if n.op == "relu")
    assert relu6.attrs["clamp"] == (0.0, 6.0)  # standalone: it rescales conv a's output to its own qparams
    # 500 seeded samples: 172 of 2,500 output bytes differ (300 allowed), 3 predictions (15 allowed); per kernel,
    # the linear differs on 26 of 2,500 values (50 allowed), the mean on 48 of 5,000. On the first 200 the linear
    # happened to differ on 1.7%, 3 values from the bound: its rate is small only over many values.
    x = cm.to_model_layout(cm.quantize_input(np.random.default_rng(2).standard_normal((500, 2, 8, 8))))
    a = pt2e_agreement(cm, gm, x)
    print(f"branchy: {a}")
    assert a.equal_fraction >= 0.88 and a.max_abs_steps <= MAX_STEPS and a.argmax_agreement >= 0.97
    rows = assert_each_kernel_within_one_step(cm, gm, x)
    assert {"lut", "mul", "concat", "relu"} <= {r.op for r in rows}
    np.testing.assert_array_equal(cm.run(x[:30], engine="host"), cm.run(x[:30]))


# ---- every engine gives the same bytes ---------------------------------------------------------------------------
@pytest.mark.host
@pytest.mark.parametrize("per", PER)
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_host_c_equals_reference(kind, per):
    _, cm, x = case(kind, per)
    np.testing.assert_array_equal(cm.run(x[:60], engine="host"), cm.run(x[:60], engine="reference"))


@pytest.mark.m33
@pytest.mark.parametrize("kind, per", [("mlp", "per_tensor"), ("cnn", "per_channel")])
def test_m33_equals_reference(kind, per):
    _, cm, x = case(kind, per)
    np.testing.assert_array_equal(cm.run(x[:4], engine="m33"), cm.run(x[:4], engine="reference"))


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_int8_io_and_no_float_in_the_c(kind):
    gm, cm, _ = case(kind, "per_channel")
    files = cm.c_sources.files
    header = files[f"{cm.name}.h"]
    macro = cm.name.upper()
    first_q = _qdq_args(gm, "quantize")[0]
    last_dq = next(n for n in gm.graph.nodes if n.op == "output").args[0][0]
    assert f"#define {macro}_INPUT_ZERO_POINT ({first_q.args[2]})" in header
    assert f"#define {macro}_OUTPUT_ZERO_POINT ({last_dq.args[2]})" in header
    assert re.search(rf"int8_t \*{cm.name}_input\(void\)", header)
    c_files = {k: v for k, v in files.items() if k.endswith(".c")}
    assert f"{cm.name}.c" in c_files
    for path, text in c_files.items():
        code = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL))  # code only, no comments
        assert not re.search(r"\b(float|double)\b", code), f"{path} uses floating point"
        assert not re.search(r"\d\.\d*f?\b", code), f"float literal in {path}"


# ---- uint8 and narrow ranges ---------------------------------------------------------------------------------------
def _config(act_dtype, act_qmin: int, act_qmax: int):
    from torchao.quantization.pt2e import HistogramObserver, PerChannelMinMaxObserver
    from torchao.quantization.pt2e.quantizer import QuantizationSpec
    from torchao.testing.pt2e._xnnpack_quantizer_utils import QuantizationConfig

    act = QuantizationSpec(dtype=act_dtype, quant_min=act_qmin, quant_max=act_qmax, qscheme=torch.per_tensor_affine,
                           observer_or_fake_quant_ctr=HistogramObserver.with_args(eps=2**-12))
    weight = QuantizationSpec(dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric,
                              ch_axis=0, observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=2**-12))
    return QuantizationConfig(act, act, weight, None, False)


def test_uint8_activations_become_int8_with_shifted_zero_points():
    example = torch.zeros(1, 28, 28)
    gm = quantize_pt2e(build_seed_mlp(), example, calibration_digits(8), config=_config(torch.uint8, 0, 255))
    u8_zp = _qdq_args(gm, "quantize")[0].args[2]
    cm = tinyaot.compile(gm, example, name="mlp_u8")
    assert cm.input_qparams[1] == u8_zp - 128
    assert all(t.dtype == "int8" for t in cm.graph.activations())
    x = np.concatenate([cm.quantize_input(calibration_digits(25, seed=2)), random_int8((100, 28, 28), seed=8)])
    a = pt2e_agreement(cm, gm, x)
    assert a.equal_fraction >= MIN_EQUAL["mlp"] and a.max_abs_steps <= MAX_STEPS  # 3 of 2,000 bytes differ, 40 could
    images, labels = demo_digits()
    np.testing.assert_array_equal(cm.run(cm.quantize_input(images)).argmax(-1), labels)


@pytest.mark.host
def test_narrow_activation_range_clamps_like_pt2e():
    """quant_min = -127: PT2E's quantize never emits -128, so neither may the kernels."""
    example = torch.zeros(1, 28, 28)
    gm = quantize_pt2e(build_seed_mlp(), example, calibration_digits(8), config=_config(torch.int8, -127, 127))
    cm = tinyaot.compile(gm, example, name="mlp_narrow")
    x = random_int8((200, 28, 28), seed=9)
    nodes = {n.name: n for n in cm.graph.nodes}
    assert nodes["fc3"].attrs["clamp"] is not None  # no ReLU there: the clamp is quant_min -127
    assert nodes["input_range"].op == "relu"  # the input's quantize clamps too
    assert cm.run(x).min() >= -127 and (x == -128).any()
    if have_host_cc():
        np.testing.assert_array_equal(cm.run(x[:40], engine="host"), cm.run(x[:40]))
    a = pt2e_agreement(cm, gm, x)
    assert a.equal_fraction >= MIN_EQUAL["mlp"] and a.max_abs_steps <= MAX_STEPS  # 8 of 2,000 bytes differ, 40 could


# ---- other ways in, and clear errors ---------------------------------------------------------------------------------
def test_exported_program_and_nchw_input():
    gm, cm, x = case("cnn", "per_channel")
    example = torch.zeros(1, 3, 16, 16)
    from_ep = tinyaot.compile(torch.export.export(gm, (example,)), example, name="from_ep")
    np.testing.assert_array_equal(from_ep.run(x[:5]), cm.run(x[:5]))
    nchw = tinyaot.compile(gm, example, name="nchw", input_layout="NCHW")
    assert nchw.input_shape == (1, 3, 16, 16)
    np.testing.assert_array_equal(nchw.run(x[:5].transpose(0, 3, 1, 2)), cm.run(x[:5]))


def test_calibration_is_ignored_with_a_warning():
    gm, _, _ = case("mlp", "per_tensor")
    with pytest.warns(UserWarning, match="already quantized"):
        tinyaot.compile(gm, torch.zeros(1, 28, 28), calibration=np.zeros((4, 28, 28)), name="warn")


class _Cumsum(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.cumsum(self.fc(x), 1)


class _FloatTail(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


def test_unsupported_op_names_op_location_and_where_the_supported_list_is():
    example = torch.zeros(1, 8)
    gm = quantize_pt2e(_Cumsum(), example, np.random.default_rng(0).standard_normal((4, 8)))
    with pytest.raises(UnsupportedOpError) as err:
        tinyaot.compile(gm, example, name="bad")
    msg = str(err.value)
    assert "aten.cumsum" in msg and "test_pt2e.py" in msg and "`tinyaot ops`" in msg
    assert "aten.linear.default" not in msg and len(msg) < 600  # the list is one command away, not in the way


def test_float_math_between_quantize_pairs_is_refused():
    example = torch.zeros(1, 8)
    gm = quantize_pt2e(_FloatTail(), example, np.random.default_rng(0).standard_normal((4, 8)))
    with pytest.raises(UnsupportedOpError, match="float math") as err:
        tinyaot.compile(gm, example, name="bad")
    assert "sigmoid" in str(err.value) and "quantize" in str(err.value)


def test_prepared_but_not_converted_graph():
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

    example = torch.zeros(1, 8)
    exported = torch.export.export(_FloatTail().eval(), (example,)).module()
    prepared = prepare_pt2e(exported, quantizer(True))
    with pytest.raises(ModelError, match="convert_pt2e"):
        tinyaot.compile(prepared, example, name="bad")


def test_example_input_of_the_wrong_shape():
    gm, _, _ = case("mlp", "per_tensor")
    with pytest.raises(ModelError, match="exported for"):
        tinyaot.compile(gm, torch.zeros(1, 784), name="bad")


def test_int16_activations_are_refused_clearly():
    example = torch.zeros(1, 28, 28)
    gm = quantize_pt2e(build_seed_mlp(), example, calibration_digits(2), config=_config(torch.int16, -32768, 32767))
    with pytest.raises(UnsupportedOpError, match=r"torch\.int16 quantization.*int8"):
        tinyaot.compile(gm, example, name="bad")
