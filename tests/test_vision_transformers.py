"""The PyTorch spellings of timm's vision transformers, each in a small module: ViT's class token and position
embedding, the qkv permute that moves the batch axis, MobileViT's patch unfold / fold (the transformer on
[patch_area, N, C]), MobileViTv2's 6-D unfold, GroupNorm with one group and linear attention. Each compiles;
reference == host C on every byte; int8 tracks float on seeded smooth inputs."""
from __future__ import annotations

import numpy as np
import pytest

import tinyaot
from tinyaot.errors import UnsupportedOpError
from tinyaot.ref.transpose_s8 import reduced_permutation

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional


class ClassToken(nn.Module):
    """ViT's embedding: patches as tokens, cat(cls_token.expand(B, -1, -1), tokens) + pos_embed."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 8, 4, stride=4)
        self.cls_token = nn.Parameter(torch.randn(1, 1, 8))
        self.pos_embed = nn.Parameter(torch.randn(1, 5, 8) * 0.5)
        self.norm, self.head = nn.LayerNorm(8), nn.Linear(8, 4)

    def forward(self, x):  # [1, 3, 8, 8]
        t = self.patch(x).flatten(2).transpose(1, 2)  # [1, 4, 8]
        t = torch.cat((self.cls_token.expand(t.shape[0], -1, -1), t), dim=1) + self.pos_embed
        return self.head(self.norm(t))


class BatchAxisPermute(nn.Module):
    """timm's Attention layout: qkv.reshape(B, N, 3, H, d).permute(2, 0, 3, 1, 4) moves the batch axis; the
    [3, 1, H, N, d] result read back through reshapes and a permute of its leading 3, element-wise ops between."""

    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(12, 24), nn.Linear(24, 6)

    def forward(self, x):  # [1, 8, 12]
        qkv = self.qkv(x).reshape(1, 8, 3, 2, 4).permute(2, 0, 3, 1, 4)  # [3, 1, 2, 8, 4]
        y = qkv.reshape(3, 2, 8, 4).permute(1, 0, 2, 3)  # [2, 3, 8, 4]
        y = F.gelu(y) + y * 0.5
        return self.out(y.permute(2, 0, 1, 3).reshape(1, 8, 24))


class PatchTransformer(nn.Module):
    """MobileViT's block: unfold a conv map into [B * patch_area, N, C] (the batch of 1 folded into the first
    axis), pre-norm attention (SDPA on [P, heads, N, d]) and MLP with residual adds, fold back, conv."""

    def __init__(self):
        super().__init__()
        self.conv_in, self.conv_out = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 1)
        self.norm1, self.norm2 = nn.LayerNorm(8), nn.LayerNorm(8)
        self.q, self.k, self.v, self.proj = (nn.Linear(8, 8) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 8)

    def forward(self, x):  # [1, 3, 8, 8]
        x = self.conv_in(x)
        b, c, h, w = x.shape
        nh, nw, n, p = h // 2, w // 2, h * w // 4, 4
        x = x.reshape(b * c * nh, 2, nw, 2).transpose(1, 2)
        x = x.reshape(b, c, n, p).transpose(1, 3).reshape(b * p, n, c)
        t = self.norm1(x)
        q, k, v = (f(t).reshape(b * p, n, 2, 4).transpose(1, 2) for f in (self.q, self.k, self.v))
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b * p, n, c))
        x = x + self.fc2(F.silu(self.fc1(self.norm2(x))))
        x = x.contiguous().view(b, p, n, -1)
        x = x.transpose(1, 3).reshape(b * c * nh, nw, 2, 2)
        x = x.transpose(1, 2).reshape(b, c, nh * 2, nw * 2)
        return self.conv_out(x)


class LinearAttention(nn.Module):
    """MobileViTv2's block: a 6-D permute unfolds [B, C, P, N], GroupNorm with one group, separable attention
    (softmax over the patches, key * scores summed over them, relu(value) * context.expand_as(value)), a 6-D
    permute folds back."""

    def __init__(self):
        super().__init__()
        self.conv_in, self.conv_out = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 1)
        self.norm = nn.GroupNorm(1, 8)
        self.query, self.key, self.value, self.out = nn.Conv2d(8, 1, 1), nn.Conv2d(8, 8, 1), nn.Conv2d(8, 8, 1), \
            nn.Conv2d(8, 8, 1)

    def forward(self, x):  # [1, 3, 8, 8]
        x = self.conv_in(x)
        b, c, h, w = x.shape
        x = x.reshape(b, c, 4, 2, 4, 2).permute(0, 1, 3, 5, 2, 4).reshape(b, c, 4, 16)
        t = self.norm(x)
        scores = F.softmax(self.query(t), dim=-1)
        context = (self.key(t) * scores).sum(dim=-1, keepdim=True)
        x = x + self.out(F.relu(self.value(t)) * context.expand_as(t))
        x = x.reshape(b, c, 2, 2, 4, 4).permute(0, 1, 4, 2, 5, 3).reshape(b, c, h, w)
        return self.conv_out(x)


class GroupsAndSoftmax(nn.Module):
    """GroupNorm with four groups on a conv map, softmax over its height (not the last IR axis)."""

    def __init__(self):
        super().__init__()
        self.conv, self.norm = nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(4, 8)

    def forward(self, x):  # [1, 3, 6, 6]
        return F.softmax(self.norm(self.conv(x)) * 2.0, dim=2)


def _smooth(n: int, shape, seed: int) -> np.ndarray:
    """Image-like inputs: low-frequency noise upsampled, as the probe of real models uses."""
    g = torch.Generator().manual_seed(seed)
    if len(shape) == 3:
        c, h, w = shape
        x = torch.randn(n, c, max(h // 4, 2), max(w // 4, 2), generator=g)
        return F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False).numpy()
    t, d = shape
    x = torch.randn(n, 1, max(t // 4, 2), max(d // 4, 2), generator=g)
    return F.interpolate(x, size=(t, d), mode="bilinear", align_corners=False)[:, 0].numpy()


def _compile(model, shape, name: str, seed: int):
    torch.manual_seed(seed)
    x = _smooth(80, shape, seed)
    cm = tinyaot.compile(model.eval(), torch.from_numpy(x[:1]), calibration=x[:64], name=name)
    return cm, x[64:]


def _ref_equals_host_and_tracks_float(model, cm, x, tol: float) -> float:
    """Every byte of 16 outputs equal on the reference and the host C; the int8 model's relative error against
    float below `tol`. Returns that error."""
    xq = cm.quantize_input(cm.to_model_layout(x))
    want = cm.run(xq, engine="reference")
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    assert len(np.unique(want)) > 20  # the outputs vary
    with torch.no_grad():  # one sample at a time: the models are written for a batch of 1, as tinyaot runs them
        real = np.concatenate([model(torch.from_numpy(x[s : s + 1])).numpy() for s in range(len(x))])
    got = cm.run_float(cm.to_model_layout(x), engine="reference")
    got = got.reshape(len(x), *cm.graph.tensor(cm.graph.outputs[0]).shape[1:])
    if cm.graph.output_layout == "NHWC":  # back to torch's channels-first order
        got = got.transpose(0, 3, 1, 2)
    got = got.reshape(real.shape)
    rel = float(np.abs(got - real).mean() / np.abs(real).mean())
    print(f"{cm.name}: int8 vs float relative error {rel:.4f}")
    assert rel < tol, f"int8 vs float relative error {rel:.3f}"
    return rel


def _ops(cm) -> list[str]:
    return [n.op for n in cm.graph.nodes]


@pytest.mark.host
def test_class_token_is_a_constant_input_of_the_concat():
    model = ClassToken()
    cm, x = _compile(model, (3, 8, 8), "cls_token", 1)
    concat = next(n for n in cm.graph.nodes if n.op == "concat")
    assert cm.graph.tensor(concat.inputs[0]).is_const  # the expanded class token, int8 in flash
    assert "add" in _ops(cm)  # the position embedding, a constant operand
    _ref_equals_host_and_tracks_float(model, cm, x, 0.05)  # seeded: measured 1.4%


@pytest.mark.host
def test_a_permutation_moving_the_batch_axis_keeps_the_batch_leading():
    model = BatchAxisPermute()
    cm, x = _compile(model, (8, 12), "batch_perm", 2)
    transposes = [n for n in cm.graph.nodes if n.op == "transpose"]
    assert transposes and all(n.attrs["perm"][0] == 0 for n in transposes)
    for n in cm.graph.nodes:  # every activation's first axis is the batch of 1
        assert cm.graph.tensor(n.outputs[0]).shape[0] == 1, n.name
    _ref_equals_host_and_tracks_float(model, cm, x, 0.06)  # seeded: measured 2.0%


@pytest.mark.host
def test_mobilevit_patch_unfold_transformer_and_fold():
    model = PatchTransformer()
    cm, x = _compile(model, (3, 8, 8), "patch_tf", 3)
    ops = _ops(cm)
    assert ops.count("batch_matmul") == 2 and ops.count("layer_norm") == 2
    _ref_equals_host_and_tracks_float(model, cm, x, 0.06)  # seeded: measured 1.8%


@pytest.mark.host
def test_mobilevitv2_group_norm_and_linear_attention():
    model = LinearAttention()
    cm, x = _compile(model, (3, 8, 8), "linear_attn", 4)
    ops = _ops(cm)
    assert {"group_norm", "sum", "softmax", "mul"} <= set(ops)
    assert next(n for n in cm.graph.nodes if n.op == "group_norm").attrs["groups"] == 1
    _ref_equals_host_and_tracks_float(model, cm, x, 0.05)  # seeded: measured 1.6%


@pytest.mark.host
def test_group_norm_with_groups_and_softmax_over_a_middle_axis():
    model = GroupsAndSoftmax()
    cm, x = _compile(model, (3, 6, 6), "gn_softmax", 5)
    assert _ops(cm).count("transpose") == 2  # softmax over H: moved to the last axis and back
    _ref_equals_host_and_tracks_float(model, cm, x, 0.08)  # seeded: measured 2.5%


def test_reduced_permutation_drops_unit_axes_and_merges_runs():
    assert reduced_permutation((1, 17, 3, 3, 64), (2, 0, 3, 1, 4)) == ((17, 9, 64), (1, 0, 2))  # ViT's qkv
    assert reduced_permutation((1, 8, 4, 2, 4, 2), (0, 1, 3, 5, 2, 4)) == ((8, 4, 2, 4, 2), (0, 2, 4, 1, 3))
    assert reduced_permutation((2, 3, 4, 5), (0, 2, 3, 1)) == ((2, 3, 20), (0, 2, 1))  # 4 and 5 stay together
    assert reduced_permutation((1, 4, 1, 5), (0, 2, 1, 3)) == ((20,), (0,))  # only a unit axis moves
    assert reduced_permutation((2, 3), (1, 0)) == ((2, 3), (1, 0))


def test_expanding_an_activation_for_a_non_broadcasting_reader_is_refused_clearly():
    class Expand(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):  # [1, 1, 4]
            return self.fc(self.fc(x).expand(1, 3, 4))

    with pytest.raises(UnsupportedOpError, match=r"(?s)expand of an activation to \[1, 3, 4\] read by "
                                                 r"aten.linear.default is not supported"):
        tinyaot.compile(Expand().eval(), torch.zeros(1, 1, 4), calibration=np.zeros((4, 1, 4), np.float32))


@pytest.mark.host
def test_timm_vision_transformer_reference_equals_host_and_tracks_float():
    """timm's VisionTransformer as timm builds it (random init, eval mode), at a test's size: 32x32 input, two
    blocks of width 48 and 3 heads, 10 classes. Reference == host C on every byte of 16 smooth inputs; the int8
    logits point where the float ones do (cosine, seeded: measured min 0.934, mean 0.970)."""
    try:
        from vision_models import import_timm

        timm = import_timm()
    except ImportError as e:
        pytest.skip(f"timm cannot be imported: {e}")
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, depth=2, embed_dim=48,
                              num_heads=3, num_classes=10).eval()
    assert type(model).__name__ == "VisionTransformer"
    x = _smooth(48, (3, 32, 32), 7)
    cm = tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x[:32], name="vit")
    xq = cm.quantize_input(cm.to_model_layout(x[32:]))
    want = cm.run(xq, engine="reference")
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    with torch.no_grad():
        real = model(torch.from_numpy(x[32:])).numpy()
    got = cm.dequantize_output(want).reshape(real.shape)
    cosine = (got * real).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(real, axis=1)
    print(f"timm ViT: int8 vs float logits cosine min {cosine.min():.4f} mean {cosine.mean():.4f}")
    assert cosine.min() > 0.9
