"""Models nobody here wrote (issue 23): layers where the passes did not expect them compile, bit-exact on the host.

- A BatchNorm no conv or linear feeds (on the input, after an activation, a concat or a reshape; BatchNorm1d on
  (N, C) and (N, C, L)) is a per-channel affine: a 1x1 depthwise conv (passes/fold_batch_norm.py). DenseNet,
  pre-activation ResNets, RepGhost and MobileOne have them; they used to crash the float passes.
- A reshape that folds the batch dim into another (x.view(-1, H, W), x.reshape(B * C, H, W), SubSpectralNorm's
  view) is well defined at batch 1: the float evaluator runs such a graph one sample at a time
  (quantize/float_eval.py) instead of mixing samples, which used to end in a NumPy ValueError.
- BC-ResNet-1 (tests/bc_resnet.py), the keyword spotter built on both, compiles whole.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from bc_resnet import BCBlock, SubSpectralNorm, bc_resnet1, log_mel_like

import tinyaot
from tinyaot.ir.layout import model_to_torch_layout


def _randomize_norms(model: nn.Module, seed: int) -> nn.Module:
    """Non-trivial running statistics, so a wrong fold shows (an untrained BatchNorm is nearly the identity)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
                m.running_var.copy_(0.5 + 1.5 * torch.rand(m.num_features, generator=g))
                m.weight.copy_(0.5 + torch.rand(m.num_features, generator=g))
                m.bias.copy_(torch.rand(m.num_features, generator=g) - 0.5)
    return model.eval()


class BNOnInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)
        self.conv = nn.Conv2d(3, 6, 3, padding=1)

    def forward(self, x):
        return self.conv(self.bn(x))


class BNAfterReLU(nn.Module):
    """Pre-activation order (conv, ReLU, BN, ReLU): the BN's producer is the ReLU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3)
        self.bn = nn.BatchNorm2d(6)

    def forward(self, x):
        return F.relu(self.bn(F.relu(self.conv(x))))


class BNAfterReshape(nn.Module):
    """BatchNorm1d on (N, C, L) made by flattening a conv's map."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 5, 3)
        self.bn = nn.BatchNorm1d(5)

    def forward(self, x):
        return self.bn(self.conv(x).flatten(2))


class BN1dFeatures(nn.Module):
    """BatchNorm1d on (N, C) features that are the model's input and, again, its output."""

    def __init__(self):
        super().__init__()
        self.bn_in = nn.BatchNorm1d(10)
        self.fc = nn.Linear(10, 7)
        self.bn_out = nn.BatchNorm1d(7)

    def forward(self, x):
        return self.bn_out(F.relu(self.fc(self.bn_in(x))))


class BN1dSignal(nn.Module):
    """BatchNorm1d on a (N, C, L) input, then a ReLU it fuses with."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)
        self.conv = nn.Conv1d(4, 6, 3)

    def forward(self, x):
        return self.conv(F.relu(self.bn(x)))


class DenseNetLike(nn.Module):
    """DenseNet's pattern: each layer is BN-ReLU-conv on the concat of all maps before it (the first concat has
    one input), a transition BN-ReLU-conv-avgpool, and a last BN-ReLU before the pooled classifier."""

    def __init__(self, growth: int = 4):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.layers = nn.ModuleList(
            nn.Sequential(nn.BatchNorm2d(8 + k * growth), nn.ReLU(), nn.Conv2d(8 + k * growth, growth, 3, padding=1))
            for k in range(3))
        c = 8 + 3 * growth
        self.transition = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, 8, 1), nn.AvgPool2d(2))
        self.norm = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        features = [self.stem(x)]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        x = F.relu(self.norm(self.transition(torch.cat(features, 1))))
        return self.fc(x.mean((2, 3)))


class FoldedView(nn.Module):
    """x.view(-1, H, W): the conv's channels become dim 0."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        return F.relu(y.view(-1, y.shape[2], y.shape[3])).view(1, -1)


class FoldedBatchNorm(nn.Module):
    """x.reshape(B * C, H, W), a BatchNorm1d over H, and back."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x):
        y = self.conv(x)
        b, c, h, w = y.shape
        return self.bn(y.reshape(b * c, h, w)).reshape(b, c, h, w)


class FoldedRows(nn.Module):
    """A Linear over rows folded from the batch, and an output whose dim 0 is those rows."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        return self.fc(self.conv(x).reshape(-1, 8))


class SSN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.ssn = SubSpectralNorm(4)

    def forward(self, x):
        return F.relu(self.ssn(self.conv(x)))


class BCBlocks(nn.Module):
    """A BC-ResNet transition block (strided in frequency) and a normal block, on a small spectrogram."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 6, 3, padding=1)
        self.blocks = nn.Sequential(BCBlock(6, 8, stride=2, dilation=1), BCBlock(8, 8, dilation=2))

    def forward(self, x):
        return self.blocks(self.stem(x))


class StdConv(nn.Conv2d):
    """timm's StdConv2d: the weight standardized in forward() by F.batch_norm over it (folded at compile time)."""

    def forward(self, x):
        w = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None, training=True, momentum=0.0,
                         eps=1e-6).reshape_as(self.weight)
        return F.conv2d(x, w, self.bias, self.stride, self.padding)


class ComputedWeights(nn.Module):
    """Weights computed from parameters in forward(): weight standardization and ConvNeXt's layer scale
    (x * gamma.reshape(1, -1, 1, 1))."""

    def __init__(self):
        super().__init__()
        self.conv = StdConv(3, 6, 3, padding=1)
        self.gamma = nn.Parameter(torch.linspace(0.5, 1.5, 6))

    def forward(self, x):
        return F.relu(self.conv(x)).mul(self.gamma.reshape(1, -1, 1, 1))


class PositionTable(nn.Module):
    """Tables made in forward() from torch.arange and a bool mask (folded at compile time, each in its dtype),
    .to(torch.float32) and type_as (identities on float32; export adds an assertion node after each .to())."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        pos = torch.arange(1, 9, device=x.device).to(torch.float32).sin().unsqueeze(0)
        mask = ~torch.zeros(1, 8, dtype=torch.bool)  # EdgeNeXt's positional encoding starts from a bool mask
        return F.relu(self.fc(x).to(torch.float32) * pos * mask.cumsum(1).float()).type_as(x)


CASES = {  # name: (module, input shape without the batch)
    "bn_on_input": (BNOnInput, (3, 8, 8)),
    "bn_after_relu": (BNAfterReLU, (3, 8, 8)),
    "bn_after_reshape": (BNAfterReshape, (3, 7, 7)),
    "bn1d_features": (BN1dFeatures, (10,)),
    "bn1d_signal": (BN1dSignal, (4, 16)),
    "densenet_like": (DenseNetLike, (3, 8, 8)),
    "folded_view": (FoldedView, (3, 8, 8)),
    "folded_batch_norm": (FoldedBatchNorm, (3, 8, 8)),
    "folded_rows": (FoldedRows, (3, 4, 4)),
    "sub_spectral_norm": (SSN, (1, 10, 6)),
    "bc_blocks": (BCBlocks, (1, 20, 12)),
    "computed_weights": (ComputedWeights, (3, 6, 6)),
    "position_table": (PositionTable, (8,)),
}


def _inputs(shape, n: int, seed: int) -> torch.Tensor:
    """Smooth deterministic samples (running sums of seeded normals), as real signals are."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, *shape, generator=g).cumsum(-1) / 3


def _torch_per_sample(model, x: torch.Tensor) -> np.ndarray:
    """The float model one sample at a time (a folded batch dim makes a batched call mean something else)."""
    with torch.no_grad():
        return np.stack([model(x[i : i + 1]).numpy() for i in range(len(x))])


def _compile_case(name: str):
    build, shape = CASES[name]
    torch.manual_seed(7)
    model = _randomize_norms(build(), seed=11)
    x = _inputs(shape, 48, seed=5)
    return model, tinyaot.compile(model, x[:1], calibration=x, name=name), x


@pytest.mark.host
@pytest.mark.parametrize("name", list(CASES))
def test_unexpected_layers_compile_bit_exact_and_track_float(name):
    model, cm, x = _compile_case(name)
    ops = [n.op for n in cm.graph.nodes]
    assert "batch_norm" not in ops
    test = x[32:]  # held out from the compile's own example
    xq = cm.quantize_input(cm.to_model_layout(test.numpy()))
    want = cm.run(xq)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    got = model_to_torch_layout(cm.dequantize_output(want), *cm.graph.io_layout_of(cm.graph.outputs[0]))
    ref = _torch_per_sample(model, test)
    # int8 tracks float: worst error measured 0.5-1.5 % of the largest output over these cases; bound 10 %
    assert np.abs(got.reshape(ref.shape) - ref).max() < 0.1 * np.abs(ref).max()


def test_a_standalone_batch_norm_is_a_1x1_depthwise_conv_with_the_relu_fused():
    _, cm, _ = _compile_case("bn_after_relu")
    bn = next(n for n in cm.graph.nodes if n.name == "bn")
    assert bn.op == "depthwise_conv2d" and cm.graph.tensor(bn.inputs[1]).shape == (1, 1, 1, 6)
    assert bn.attrs["clamp"] == (0.0, float("inf"))  # the ReLU after it runs in its kernel
    assert "relu" not in [n.op for n in cm.graph.nodes]


def test_a_batch_norm_on_features_runs_on_a_view_of_them():
    _, cm, _ = _compile_case("bn1d_features")
    g = cm.graph
    for name in ("bn_in", "bn_out"):
        bn = next(n for n in g.nodes if n.name == name)
        assert bn.op == "depthwise_conv2d" and len(g.tensor(bn.inputs[0]).shape) == 4
        assert g.producer(bn.inputs[0]).op == "reshape"  # a view: no bytes move
    assert g.tensor(g.outputs[0]).shape == (1, 7)


def test_weights_computed_from_parameters_are_folded_at_compile_time():
    model, cm, _ = _compile_case("computed_weights")
    # no batch_norm or reshape of weights on the device; the positive layer scale folds through the ReLU too
    assert [n.op for n in cm.graph.nodes] == ["conv2d"]
    w = cm.float_graph.tensor(cm.float_graph.nodes[0].inputs[1]).data  # OHWI
    raw = model.conv.weight.detach().reshape(6, -1).double()
    standardized = (raw - raw.mean(1, keepdim=True)) / (raw.var(1, unbiased=False, keepdim=True) + 1e-6).sqrt()
    want = standardized * model.gamma.detach().double()[:, None]  # the layer scale, folded into the rows
    np.testing.assert_allclose(w.transpose(0, 3, 1, 2).reshape(6, -1), want.numpy(), rtol=1e-5, atol=1e-5)


def test_a_folded_batch_dim_calibrates_one_sample_at_a_time():
    from tinyaot.quantize.float_eval import evaluate, folds_batch

    model, cm, x = _compile_case("folded_batch_norm")
    g = cm.float_graph
    assert folds_batch(g)
    bn = next(n for n in g.nodes if n.name == "bn")
    assert g.tensor(bn.outputs[0]).shape[0] == 4  # the conv's 4 channels, as the batch of the BatchNorm
    values = evaluate(g, cm.to_model_layout(x[:3].numpy()))
    assert values[bn.outputs[0]].shape == (3,) + g.tensor(bn.outputs[0]).shape  # samples first, each whole
    out = model_to_torch_layout(values[g.outputs[0]], *g.io_layout_of(g.outputs[0]))
    np.testing.assert_allclose(out, _torch_per_sample(model, x[:3])[:, 0], atol=1e-4)


class FoldedConvOut(nn.Module):
    """A conv over a batch a reshape made of channels, as the model's output: its dim 0 is those channels."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.per_channel = nn.Conv2d(1, 2, 3, padding=1)

    def forward(self, x):
        return self.per_channel(self.conv(x).reshape(4, 1, 8, 8))


@pytest.mark.host
def test_an_output_whose_dim_0_a_reshape_filled_keeps_it_per_sample():
    torch.manual_seed(7)
    model = FoldedConvOut().eval()
    x = _inputs((3, 8, 8), 40, seed=5)
    cm = tinyaot.compile(model, x[:1], calibration=x, name="folded_out")
    assert cm.graph.tensor(cm.graph.outputs[0]).shape == (4, 8, 8, 2)  # the per-channel conv's batch of 4
    xq = cm.quantize_input(cm.to_model_layout(x[:3].numpy()))
    want = cm.run(xq)
    assert want.shape == (3, 4, 8, 8, 2) and cm.run(xq[0]).shape == (4, 8, 8, 2)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    got = cm.dequantize_output(want).transpose(0, 1, 4, 2, 3)  # each sample's NHWC -> torch's NCHW
    ref = _torch_per_sample(model, x[:3])
    assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max()  # measured 1.1 %


class FreshlyInitialised(nn.Module):
    """What a random init leaves and training does not: a residual branch whose last BatchNorm starts at zero
    (timm's EfficientViT), a zero attention bias added to scores of 1e-9 (LeViT), a layer scale of ones."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.branch = nn.Sequential(nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8))
        nn.init.zeros_(self.branch[0].bias)
        nn.init.zeros_(self.branch[1].weight)  # BatchNorm's bias and running mean start at zero too
        self.q = nn.Linear(8, 8)
        self.bias = nn.Parameter(torch.zeros(8))
        self.layer_scale = nn.Parameter(torch.ones(8))

    def forward(self, x):
        y = F.relu(self.conv(x))
        y = y + self.branch(y)
        scores = self.q(y.mean((2, 3))) * 1e-7 + self.bias
        return torch.softmax(scores * self.layer_scale, -1)


@pytest.mark.host
def test_what_a_random_init_leaves_compiles():
    """x + 0 and x * 1 are x (an add with a zero-range operand broke the add kernel's multiplier rule), and the
    scores of 1e-9 reach the softmax at the kernel's finest input step (they round to one value: uniform)."""
    torch.manual_seed(7)
    model = FreshlyInitialised().eval()
    x = _inputs((3, 6, 6), 40, seed=5)
    cm = tinyaot.compile(model, x[:1], calibration=x, name="fresh")
    assert [n.op for n in cm.graph.nodes] == ["conv2d", "mean", "fully_connected", "lut", "softmax"]
    xq = cm.quantize_input(cm.to_model_layout(x[32:].numpy()))
    want = cm.run(xq)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    np.testing.assert_array_equal(cm.dequantize_output(want), np.full((8, 8), 0.125))  # float: 0.125 +- 1e-8


@pytest.mark.slow
@pytest.mark.host
def test_bc_resnet1_compiles_whole_and_is_bit_exact():
    """The paper's model at 40 mel x 101 frames; its parts run fast in the cases above (sub_spectral_norm,
    bc_blocks), so this is slow-only."""
    model = bc_resnet1()
    x = log_mel_like(40)
    assert sum(p.numel() for p in model.parameters()) == 9160  # the paper's 9.2 k
    cm = tinyaot.compile(model, x[:1], calibration=x, name="bc_resnet1")
    xq = cm.quantize_input(cm.to_model_layout(x[:4].numpy()))
    want = cm.run(xq)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    with torch.no_grad():
        ref = model(x[:4]).numpy()
    got = cm.dequantize_output(want)
    assert (got.argmax(1) == ref.argmax(1)).all()
    # measured: worst error 1.1 % of the logits' range on these inputs; bound 10 %
    assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max()
