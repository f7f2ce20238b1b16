"""Slicing from PyTorch (slice, narrow, select, split, chunk, tensor_split: every spelling one IR `slice`), ShuffleNet's
channel shuffle, and the pooling forms real models write (ceil_mode, adaptive windows, a mean over one axis).

Each model returns a base tensor and what the spelling makes of it, so the int8 answer can be held to PyTorch's own
definition: a slice, a shuffle or a max pool moves int8 values, so its output must equal PyTorch's op applied to
the int8 base (and keep its scale and zero point); an average must equal PyTorch's average of the base's integers
rounded half away from zero (its ceil_mode windows and divisors). The float graph must equal PyTorch (NumPy
semantics), and the reference must equal host C on every byte.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinyaot
from tinyaot.errors import UnsupportedOpError
from tinyaot.ir.layout import model_to_torch_layout

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional

SAMPLES = 48  # calibration samples (at least 32: no warning)
RUN = 4  # samples run on the reference and host C


def smooth(n: int, shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    """Image-like inputs: low-resolution noise upsampled (neighbouring values correlate, as in real data)."""
    g = torch.Generator().manual_seed(seed)
    lead, size = shape[:-1], shape[-1]
    if len(shape) == 3:
        c, h, w = shape
        x = torch.randn(n, c, max(h // 3, 2), max(w // 3, 2), generator=g)
        return F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False)
    x = torch.randn(n, *lead, max(size // 3, 2), generator=g)
    return F.interpolate(x, size=size, mode="linear", align_corners=False)


class Spellings(nn.Module):
    """base = layer(x); returns (base, *[fn(base) for fn in fns])."""

    def __init__(self, layer: nn.Module, fns):
        super().__init__()
        self.layer = layer
        self.fns = fns

    def forward(self, x):
        y = self.layer(x)
        return (y, *[fn(y) for fn in self.fns])


def _compile(model, x):
    return tinyaot.compile(model.eval(), x[:1], calibration=x, name="slicing")


def _torch_layout(cm, outs):
    """Each output in PyTorch's layout (the compiled model gives channels-last feature maps)."""
    g = cm.graph
    return [model_to_torch_layout(y, *g.io_layouts[t]) for y, t in zip(outs, g.outputs)]


def _listed(cm, v) -> list:
    return list(v) if cm.n_outputs > 1 else [v]


def _check(cm, model, x, expect, names):
    """Float graph == PyTorch; reference == host C on every byte; output k == expect(k, int8 base, qparams), which
    gives (the int8 values, the qparams they keep); no expect: the first two only."""
    with torch.no_grad():
        want = [t.numpy() for t in model(x[:RUN])]
    floats = _listed(cm, cm.float_reference(cm.to_model_layout(x[:RUN].numpy())))
    for k, (got, w) in enumerate(zip(_torch_layout(cm, floats), want)):
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4, err_msg=f"float graph, output {names[k]}")
    xq = cm.quantize_input(cm.to_model_layout(x[:RUN].numpy()))
    ref, host = (_listed(cm, cm.run(xq, engine=e)) for e in ("reference", "host"))
    for k, (r, h) in enumerate(zip(ref, host)):
        np.testing.assert_array_equal(r, h, err_msg=f"reference vs host C, output {names[k]}")
    outs = _torch_layout(cm, ref)
    qps = _listed(cm, cm.output_qparams)
    for k in range(1, len(outs) if expect else 0):
        wanted, qp = expect(k, outs[0], qps[0])
        if qp is None:  # an op with its own output qparams: real values, to within one output step
            scale, zp = qps[k]
            err = np.abs((outs[k].astype(np.float64) - zp) * scale - wanted).max()
            assert err <= scale, f"int8 output {names[k]} is {err / scale:.2f} steps off"
            continue
        assert qps[k] == qp, f"{names[k]} requantized: {qps[k]} vs {qp}"
        np.testing.assert_array_equal(outs[k], wanted, err_msg=f"int8 output {names[k]}")


def _moved(fns):
    """A spelling that moves values: PyTorch's op on the int8 base, the base's qparams kept."""
    def expect(k, base, qp):
        return fns[k - 1](torch.from_numpy(base)).numpy(), qp
    return expect


SLICES_4D = {
    "chunk(2, 1)[1]": lambda y: y.chunk(2, dim=1)[1],
    "chunk(3, 2)[2] (uneven)": lambda y: torch.chunk(y, 3, dim=2)[2],
    "split(4, 1)[1]": lambda y: y.split(4, dim=1)[1],
    "split([1, 3, 2], 1)[1]": lambda y: torch.split(y, [1, 3, 2], 1)[1],
    "tensor_split([2, 5], 1)[1]": lambda y: torch.tensor_split(y, [2, 5], dim=1)[1],
    "narrow(3, 2, 5)": lambda y: y.narrow(3, 2, 5),
    "[:, :4]": lambda y: y[:, :4],
    "[..., 1:8:3]": lambda y: y[..., 1:8:3],
    "[:, 1::2]": lambda y: y[:, 1::2],
    "[:, :, 2:-1]": lambda y: y[:, :, 2:-1],
    "[:, 2] (select C)": lambda y: y[:, 2],
    "[:, :, 3] (select H)": lambda y: y[:, :, 3],
    "[..., -1] (select W)": lambda y: y[..., -1],
    "[:, :, 1:5][..., 2:6] (folds)": lambda y: y[:, :, 1:5][..., 2:6],
}


@pytest.mark.host
@pytest.mark.parametrize("part", [0, 1])
def test_every_slicing_spelling_of_a_feature_map_moves_int8_bytes_exactly(part):
    """NCHW feature maps (channels-last inside): channel and spatial slices, steps, selects, split pieces (in two
    models: a dozen outputs live to the end keep the exact placement solver long at work)."""
    names = list(SLICES_4D)[part::2]
    fns = [SLICES_4D[k] for k in names]
    model = Spellings(nn.Conv2d(3, 6, 3, padding=1), fns)
    x = smooth(SAMPLES, (3, 7, 9))
    cm = _compile(model, x)
    slices = [n for n in cm.graph.nodes if n.op == "slice"]
    assert len(slices) == len(fns)  # one slice each (the chained one folded); the pieces not read none
    assert not any(n.op == "transpose" for n in cm.graph.nodes)  # sliced in the channels-last layout as it is
    _check(cm, model, x, _moved(fns), ["base", *names])


@pytest.mark.host
def test_a_slice_read_again_elsewhere_is_not_folded_into_the_next():
    """y = conv(x)[:, :6]; y.clone()[:, 1:] and y + 1: the second slice cannot take over the first one's bytes."""
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 1)

        def forward(self, x):
            y = self.conv(x)[:, :6]
            return y.clone()[:, 1:], y + 1

    model = Twice()
    x = smooth(SAMPLES, (3, 5, 5), seed=14)
    cm = _compile(model, x)
    assert [n.op for n in cm.graph.nodes].count("slice") == 2
    _check(cm, model, x, None, ["a", "b"])


@pytest.mark.host
def test_split_pieces_feed_layers_and_meet_again():
    """MixNet's MixedConv2d: torch.split by sizes, a conv per piece, torch.cat; the float graph equals PyTorch and
    the reference equals host C."""
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 1)
            self.convs = nn.ModuleList([nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(5, 4, 5, padding=2)])
            self.mix = nn.Conv2d(4, 4, 1)

        def forward(self, x):
            y = self.stem(x)
            pieces = torch.split(y, [3, 5], 1)
            z = torch.cat([c(p) for c, p in zip(self.convs, pieces)], 1)
            a, b = z.chunk(2, dim=1)
            return (torch.cat([a, self.mix(b)], 1),)

    model = Mixed()
    x = smooth(SAMPLES, (3, 8, 8), seed=1)
    cm = _compile(model, x)
    assert [n.op for n in cm.graph.nodes].count("slice") == 4
    _check(cm, model, x, None, ["z"])


@pytest.mark.host
def test_a_slice_that_is_one_run_of_its_input_is_read_in_place():
    """A range of rows of a feature map: no copy where that does not raise the layer-by-layer bound (the plan reads
    it at its offset); a class token read after a larger tensor than its input is copied (reading it in place
    would keep the input's bytes alive then). The add over two in-place halves may write over them (its overlap
    distance counts their offsets)."""
    class Rows(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)

        def forward(self, x):
            top, bottom = self.a(x).split(4, dim=2)
            return (self.b(top + bottom),)

    class Tokens(nn.Module):  # the class token is read last, after a larger tensor than its input
        def __init__(self):
            super().__init__()
            self.embed, self.mid, self.proj = nn.Linear(6, 16), nn.Linear(16, 64), nn.Linear(64, 16)

        def forward(self, x):
            y = self.embed(x)
            return (y[:, 0] + self.proj(self.mid(y).mean(1)),)

    for model, x, in_place, copied in ((Rows(), smooth(SAMPLES, (3, 8, 6)), ["split_0", "split_1"], []),
                                       (Tokens(), smooth(SAMPLES, (5, 6), seed=1), [], ["select"])):
        cm = _compile(model, x)
        slices = [n for n in cm.graph.nodes if n.op == "slice"]
        assert sorted(n.name for n in slices if cm.plan.reads_in_place(n)) == in_place
        assert sorted(n.name for n in slices if not cm.plan.reads_in_place(n)) == copied
        calls = cm.c_sources.files["slicing.c"].count("tinyaot_slice_s8(")
        assert calls == len(copied)
        _check(cm, model, x, None, ["y"])


def _seq_spellings():
    return {
        "[:, 0] (class token)": lambda y: y[:, 0],
        "[:, 1:] (patch tokens)": lambda y: y[:, 1:],
        "chunk(2, -1)[0]": lambda y: y.chunk(2, dim=-1)[0],
        "[:, :, ::3]": lambda y: y[:, :, ::3],
        "select(1, -1)": lambda y: y.select(1, -1),
        "unbind(1)[2]": lambda y: y.unbind(1)[2],
        "unbind(-1)[0] (a feature)": lambda y: torch.unbind(y, -1)[0],
    }


@pytest.mark.host
def test_slicing_tokens_and_features():
    """[1, T, D] tokens (a Linear's output) and [1, F] features, in torch order."""
    spell = _seq_spellings()
    tokens = Spellings(nn.Linear(6, 10), list(spell.values()))
    x = smooth(SAMPLES, (5, 6), seed=2)
    cm = _compile(tokens, x)
    _check(cm, tokens, x, _moved(list(spell.values())), ["base", *spell])
    flat = {"[:, 3:10]": lambda y: y[:, 3:10], "split(5, 1)[2]": lambda y: y.split(5, 1)[2]}
    features = Spellings(nn.Linear(12, 13), list(flat.values()))
    x = smooth(SAMPLES, (1, 12), seed=3).reshape(SAMPLES, 12)
    cm = _compile(features, x)
    _check(cm, features, x, _moved(list(flat.values())), ["base", *flat])


@pytest.mark.host
def test_slices_of_parameters_fold_at_compile_time():
    """A position embedding's tokens, a table's row, a parameter's chunk: constants, sliced now (no kernel)."""
    class Embedded(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos, self.table = nn.Parameter(torch.randn(1, 6, 16)), nn.Parameter(torch.randn(3, 8))
            self.lin = nn.Linear(4, 8)

        def forward(self, x):
            y = self.lin(x) + torch.chunk(self.pos, 2, 2)[1][:, 1:]
            return (y * self.table[1] + self.pos.narrow(1, 0, 1)[..., ::2],)

    model = Embedded()
    x = smooth(SAMPLES, (5, 4), seed=12)
    cm = _compile(model, x)
    assert "slice" not in [n.op for n in cm.graph.nodes]
    _check(cm, model, x, None, ["y"])


@pytest.mark.host
def test_slicing_a_1d_signal():
    """[N, C, L] after a Conv1d (channels-last inside, as [N, 1, L, C])."""
    spell = {"[:, 1:3]": lambda y: y[:, 1:3], "[..., ::2]": lambda y: y[..., ::2], "[:, :, -1]": lambda y: y[:, :, -1],
             "[:, 0]": lambda y: y[:, 0]}
    model = Spellings(nn.Conv1d(2, 5, 3, padding=1), list(spell.values()))
    x = smooth(SAMPLES, (2, 16), seed=4)
    cm = _compile(model, x)
    _check(cm, model, x, _moved(list(spell.values())), ["base", *spell])


class GatedTCN(nn.Module):
    """A WaveNet-style gate: a causal conv's channels split in two, tanh(a) * sigmoid(b), a 1x1 head."""

    def __init__(self):
        super().__init__()
        self.conv, self.head = nn.Conv1d(3, 8, 3, dilation=2), nn.Conv1d(4, 2, 1)

    def forward(self, x):
        a, b = self.conv(F.pad(x, (4, 0))).chunk(2, dim=1)
        return self.head(torch.tanh(a) * torch.sigmoid(b))


@pytest.mark.host
def test_a_channel_split_streams_frame_by_frame():
    """stream=True: the split of each frame's channels runs per frame; step t equals the full window's frame t."""
    frames = 24
    x = smooth(SAMPLES, (3, frames), seed=10)
    cm = tinyaot.compile(GatedTCN().eval(), x[:1], calibration=x, name="gated", stream=True)
    assert [n.op for n in cm.graph.nodes].count("slice") == 2
    window = cm.window_model()
    xq = window.quantize_input(x[:1].numpy())[0]  # [3, frames]
    want = window.run(xq).reshape(frames, 2)  # channels-last: [1, 1, frames, 2]
    steps = np.stack([xq[:, t : t + 1] for t in range(frames)])
    for engine in ("reference", "host"):
        np.testing.assert_array_equal(np.asarray(cm.run(steps, engine=engine)).reshape(frames, 2), want)


def channel_shuffle(x, groups: int):
    """torchvision's ShuffleNetV2 channel_shuffle, as written there."""
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(n, -1, h, w)


@pytest.mark.host
def test_channel_shuffle_is_one_transpose_of_the_channel_groups():
    fns = [lambda y: channel_shuffle(y, 2), lambda y: channel_shuffle(y, 3)]
    model = Spellings(nn.Conv2d(3, 12, 3, padding=1), fns)
    x = smooth(SAMPLES, (3, 6, 5), seed=5)
    cm = _compile(model, x)
    moves = [n for n in cm.graph.nodes if n.op not in ("reshape", "conv2d")]
    assert [n.op for n in moves] == ["transpose", "transpose"]  # no layout change: one transpose per shuffle
    assert all(cm.graph.tensor(n.inputs[0]).shape[:3] == (1, 6, 5) for n in moves)  # [1, H, W, g, C / g]
    _check(cm, model, x, _moved(fns), ["base", "shuffle 2", "shuffle 3"])


@pytest.mark.host
def test_a_5d_permute_moves_as_one_transpose_of_merged_axes():
    """[1, 5, 2, 3, 2] permuted (0, 3, 1, 2, 4): one transpose (axes 1, 2 stay neighbours: the kernel moves 3)."""
    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 12)

        def forward(self, x):
            y = self.lin(x)
            return (y.reshape(y.shape[0], 5, 2, 3, 2).permute(0, 3, 1, 2, 4).reshape(y.shape[0], 3, 20),)

    model = Heads()
    x = smooth(SAMPLES, (5, 4), seed=13)
    cm = _compile(model, x)
    moves = [n for n in cm.graph.nodes if n.op == "transpose"]
    assert len(moves) == 1
    _check(cm, model, x, None, ["y"])


def _round_half_away(v: np.ndarray) -> np.ndarray:
    return np.where(v >= 0, np.floor(v + 0.5), -np.floor(-v + 0.5))


def _pooled(fns):
    """A pool keeps the base's qparams: max pooling moves values; an average is PyTorch's average of the integers
    (padding holds the zero point, real 0), rounded half away from zero as TFLM rounds the integer sum."""
    def expect(k, base, qp):
        zp = qp[1]
        v = fns[k - 1](torch.from_numpy(base.astype(np.float64) - zp)).numpy() + zp
        return np.clip(_round_half_away(v), -128, 127).astype(np.int8), qp
    return expect


POOLS = {  # name: (op, arguments); the ceil_mode cases are ones where ceil_mode adds an output
    "max_pool2d(3, 2, ceil_mode)": (F.max_pool2d, {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
    "max_pool2d(3, 2, 1, ceil_mode)": (F.max_pool2d, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    "avg_pool2d(2, 2, ceil_mode, exclude pad) (timm's avg_down)": (F.avg_pool2d, {
        "kernel_size": 2, "stride": 2, "ceil_mode": True, "count_include_pad": False}),
    "avg_pool2d(3, 2, 1, ceil_mode) (divisor: the padded input)": (F.avg_pool2d, {
        "kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    "avg_pool2d(3, 2, 1, ceil_mode, exclude pad)": (F.avg_pool2d, {
        "kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}),
    "adaptive_avg_pool2d((3, 2))": (F.adaptive_avg_pool2d, {"output_size": (3, 2)}),
    "adaptive_avg_pool2d((1, 4))": (F.adaptive_avg_pool2d, {"output_size": (1, 4)}),
    "adaptive_max_pool2d((3, 4)) (9 -> 3, 8 -> 4)": (F.adaptive_max_pool2d, {"output_size": (3, 4)}),
    "adaptive_max_pool2d((3, 16)) (8 -> 16: copies)": (F.adaptive_max_pool2d, {"output_size": (3, 16)}),
}


def _call(op, kwargs):
    return lambda y: op(y, **kwargs)


@pytest.mark.host
def test_pooling_with_ceil_mode_and_adaptive_windows_follows_pytorch():
    """ceil_mode's last window hangs over the edge (count_include_pad counts the padding, not the overhang);
    adaptive windows pool with their uniform kernel and stride (7 -> 3 too: windows of 3 every 2), or are single
    pixels copied (an output a multiple of the input)."""
    fns = [_call(op, kw) for op, kw in POOLS.values()] + [lambda y: F.adaptive_max_pool2d(y[..., :7, :7], 3),
                                                          lambda y: F.adaptive_avg_pool2d(y[..., :2, :3], 6)]
    names = ["base", *POOLS, "adaptive_max_pool2d(3) of 7 x 7", "adaptive_avg_pool2d(6) of 2 x 3 (AlexNet's at 96)"]
    shape = (1, 4, 9, 8)
    for op, kw in POOLS.values():
        if kw.get("ceil_mode"):
            assert op(torch.zeros(shape), **kw).shape != op(torch.zeros(shape), **{**kw, "ceil_mode": False}).shape
    model = Spellings(nn.Conv2d(3, 4, 3, padding=1), fns)
    x = smooth(SAMPLES, (3, *shape[2:]), seed=6)
    cm = _compile(model, x)
    _check(cm, model, x, _pooled(fns), names)


@pytest.mark.host
def test_adaptive_pooling_of_a_1d_signal_and_a_mean_over_one_axis():
    """adaptive_{avg,max}_pool1d, 1-D pools with ceil_mode; x.mean(-1), mean(2, keepdim=True) (BC-ResNet's
    frequency mean), mean(1)."""
    sig = {"adaptive_avg_pool1d(4)": lambda y: F.adaptive_avg_pool1d(y, 4),
           "adaptive_max_pool1d(3)": lambda y: F.adaptive_max_pool1d(y, 3),
           "max_pool1d(3, 2, ceil_mode)": lambda y: F.max_pool1d(y, 3, 2, ceil_mode=True),
           "avg_pool1d(3, 2, 1, ceil_mode)": lambda y: F.avg_pool1d(y, 3, 2, 1, ceil_mode=True)}
    model = Spellings(nn.Conv1d(2, 5, 3, padding=1), list(sig.values()))
    x = smooth(SAMPLES, (2, 12), seed=7)
    cm = _compile(model, x)
    _check(cm, model, x, _pooled(list(sig.values())), ["base", *sig])

    means = [lambda y: y.mean(-1), lambda y: y.mean(2, keepdim=True), lambda y: y.mean(1),
             lambda y: y.mean(1, keepdim=True), lambda y: y.mean(3, keepdim=True)]
    model = Spellings(nn.Conv2d(1, 6, 3, padding=1), means)
    x = smooth(SAMPLES, (1, 8, 10), seed=8)
    cm = _compile(model, x)
    assert not any(n.op == "transpose" for n in cm.graph.nodes)  # every axis averaged where it lies
    _check(cm, model, x, _averaged(means), ["base", "mean(-1)", "mean(2, keepdim)", "mean(1)", "mean(1, keepdim)",
                                            "mean(3, keepdim)"])


def _averaged(fns):
    """A mean requantizes to its own qparams (TFLM's MEAN): PyTorch's mean of the int8 base's real values."""
    def expect(k, base, qp):
        scale, zp = qp
        return fns[k - 1](torch.from_numpy((base.astype(np.float64) - zp) * scale)).numpy(), None
    return expect


@pytest.mark.host
def test_slices_and_ceil_mode_pools_of_int16_activations():
    """A layer chosen int16 (16x8): its slices (copied or read in place) and ceil_mode pools run their 16x8 kernels;
    the reference equals host C."""
    fns = [lambda y: y[:, 1:5], lambda y: y[:, :, 2:6], lambda y: y.chunk(2, 1)[1],
           lambda y: F.avg_pool2d(y, 3, 2, 1, ceil_mode=True), lambda y: F.max_pool2d(y, 3, 2, ceil_mode=True)]
    model = Spellings(nn.Conv2d(3, 6, 3, padding=1), fns)
    x = smooth(SAMPLES, (3, 8, 9), seed=11)
    cm = tinyaot.compile(model.eval(), x[:1], calibration=x, int16=["layer"], name="slicing")
    moves = [n for n in cm.graph.nodes if n.op in ("slice", "avg_pool2d", "max_pool2d")]
    assert len(moves) == 5 and all(cm.graph.tensor(n.inputs[0]).dtype == "int16" for n in moves)
    assert "tinyaot_slice_s16(" in cm.c_sources.files["slicing.c"]
    _check(cm, model, x, None, ["base", "[:, 1:5]", "[:, :, 2:6]", "chunk", "avg ceil", "max ceil"])


@pytest.mark.m33
def test_slices_and_pools_on_the_cortex_m33():
    """The slice kernel (unit-stride runs and strided walks), a slice read in place, ceil_mode and adaptive pools
    and a mean over one axis, built for the Cortex-M33 (DSP): the emulated core equals the reference."""
    fns = [lambda y: y.chunk(2, 1)[1], lambda y: y[..., 1::3], lambda y: y[:, :, 2:5] + 1,
           lambda y: F.avg_pool2d(y, 3, 2, 1, ceil_mode=True), lambda y: F.adaptive_max_pool2d(y, (4, 3)),
           lambda y: y.mean(-1)]
    model = Spellings(nn.Conv2d(3, 6, 3, padding=1), fns)
    x = smooth(SAMPLES, (3, 8, 9), seed=15)
    cm = _compile(model, x)
    slices = [n for n in cm.graph.nodes if n.op == "slice"]
    assert sorted(cm.plan.reads_in_place(n) for n in slices) == [False, False, True]
    xq = cm.quantize_input(cm.to_model_layout(x[:2].numpy()))
    for r, q in zip(cm.run(xq, engine="reference"), cm.run(xq, engine="m33")):
        np.testing.assert_array_equal(r, q)


def test_what_is_not_compiled_is_refused_clearly():
    x = smooth(SAMPLES, (3, 6, 6))
    # 6 -> 9: windows of 1 and 2, 7 runs along each axis: 49 pooling kernels (6 -> 4, 2 x 2 of them, compiles:
    # test_pytorch_timm_ops.py)
    with pytest.raises(UnsupportedOpError, match="differ in size or spacing and need 49 pooling kernels"):
        _compile(Spellings(nn.Conv2d(3, 4, 1), [lambda y: F.adaptive_max_pool2d(y, 9)]), x)
    with pytest.raises(UnsupportedOpError, match="an empty slice"):
        _compile(Spellings(nn.Conv2d(3, 4, 1), [lambda y: y[:, 3:1] + 1]), x)


@pytest.mark.host
@pytest.mark.slow
def test_torchvision_shufflenet_v2_compiles_bit_exact():
    """torchvision's shufflenet_v2_x0_5 as the library builds it (random init, eval mode), 96 x 96: the channel split
    (x.chunk(2, dim=1)), the channel shuffle, the ceil-free max pool; the reference equals host C on every byte."""
    import vision_models

    try:
        tv = vision_models.import_torchvision()
    except ImportError as exc:
        pytest.skip(f"torchvision cannot be imported ({exc})")
    torch.manual_seed(0)
    model = tv.models.shufflenet_v2_x0_5().eval()
    x = smooth(32, (3, 96, 96), seed=9)
    cm = tinyaot.compile(model, x[:1], calibration=x, name="shufflenet")
    ops = [n.op for n in cm.graph.nodes]
    assert ops.count("slice") == 26 and ops.count("transpose") == 16  # 13 splits; 16 shuffles, one move each
    xq = cm.quantize_input(cm.to_model_layout(x[:3].numpy()))
    np.testing.assert_array_equal(cm.run(xq, engine="reference"), cm.run(xq, engine="host"))
