"""Resize, nearest and bilinear: TFLite's RESIZE_NEAREST_NEIGHBOR and integer RESIZE_BILINEAR.

One-op .tflite graphs with random sizes and flags give the same bytes in TFLite Micro and in tinyaot's reference,
and the reference's bytes in host C and on the Cortex-M33; PyTorch's F.interpolate / nn.Upsample compile to them
(nearest x2, x3, size=, nearest-exact, bilinear with both align_corners), bit-exact on every engine, and the int8
model tracks the float one. What stays refused says so, naming the layer and its line.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from kernel_suite import Case, act, mismatches, one_op_graph, run_host, run_m33_suite

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ref.interpreter import KERNELS

tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")

CASES, SAMPLES = 50, 3
TFLITE_OPS = {"resize_nearest": ("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions"),
              "resize_bilinear": ("RESIZE_BILINEAR", "ResizeBilinearOptions")}


def _qp(rng) -> tuple[float, int]:
    return float(np.float32(10 ** rng.uniform(-2.5, 0.0))), int(rng.integers(-128, 128))


def _t(shape, qp) -> tb.T:
    return tb.T(tuple(int(d) for d in shape), "int8", scale=qp[0], zero_point=qp[1])


def _flags(op: str, rng) -> tuple[bool, bool]:
    """All four combinations for nearest (TFLM's kernel defines them all); bilinear forbids both at once."""
    corners, half = bool(rng.integers(2)), bool(rng.integers(2))
    if op == "resize_bilinear" and corners and half:
        corners = False
    return corners, half


def _case(op: str, rng):
    """A one-op model: random input and output sizes (up and down, 1 included) and flags."""
    n, h, w, c = 1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 6))
    oh, ow = int(rng.integers(1, 17)), int(rng.integers(1, 17))
    corners, half = _flags(op, rng)
    qp = _qp(rng)
    code, options = TFLITE_OPS[op]
    size = tb.T((2,), "int32", data=np.array([oh, ow], dtype=np.int32))
    model = tb.Model([_t((n, h, w, c), qp), size, _t((n, oh, ow, c), qp)],
                     [tb.Op(code, [0, 1], [2], (options, {"AlignCorners": corners, "HalfPixelCenters": half}))],
                     [0], [2])
    g = one_op_graph(op, [act("x", (n, h, w, c), *qp)], act("y", (n, oh, ow, c), *qp),
                     {"align_corners": corners, "half_pixel_centers": half})
    return model, g


def _cases(op: str):
    rng = np.random.default_rng(sum(map(ord, op)))
    out = []
    for _ in range(CASES):
        model, g = _case(op, rng)
        x = rng.integers(-128, 128, size=(SAMPLES, *g.tensor("x").shape)).astype(np.int8)
        out.append((model, g, x))
    return out


def _reference(g, x: np.ndarray) -> np.ndarray:
    node = g.nodes[0]
    prepare, kernel = KERNELS[node.op]
    p = prepare(node, g)
    return np.stack([kernel(s, p) for s in x])


@pytest.mark.parametrize("op", list(TFLITE_OPS))
def test_reference_equals_tflm_on_random_sizes_and_flags(op):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    flags, shapes = set(), set()
    for k, (model, g, x) in enumerate(_cases(op)):
        want = tb.run_tflm(tb.build(model), x)
        got = _reference(g, x)
        np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"{op} case {k}: {g.nodes[0].attrs} "
                                      f"{g.tensor('x').shape} -> {g.tensor('y').shape}")
        flags.add((bool(g.nodes[0].attrs.get("align_corners")), bool(g.nodes[0].attrs.get("half_pixel_centers"))))
        shapes.add(g.tensor("y").shape[1] > g.tensor("x").shape[1])
    assert len(flags) == (4 if op == "resize_nearest" else 3) and shapes == {True, False}


@pytest.mark.host
@pytest.mark.m33
@pytest.mark.parametrize("op", list(TFLITE_OPS))
def test_c_kernels_equal_the_reference_on_random_sizes_and_flags(op, tmp_path):
    """The same 50 graphs, as generated C, in one host build and one Cortex-M33 run."""
    cases = [Case(f"{op}_{k}", g, [x]) for k, (_, g, x) in enumerate(_cases(op))]
    assert mismatches(cases, run_host(cases)) == []
    got, result = run_m33_suite(cases, tmp_path / "m33")
    assert mismatches(cases, got) == [] and result.instructions > 0


@pytest.mark.host
def test_tflite_models_import_and_run_bit_exact():
    """Through the .tflite front end: the compiled model equals TFLM, in the reference and in host C."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    for op in TFLITE_OPS:
        model, g, x = _cases(op)[3]
        buf = tb.build(model)
        cm = tinyaot.compile(buf, name=f"tfl_{op}")
        assert [n.op for n in cm.graph.nodes] == [op]
        want = tb.run_tflm(buf, x).reshape(x.shape[0], *g.tensor("y").shape[1:])
        np.testing.assert_array_equal(cm.run(x[:, 0], engine="reference"), want)
        np.testing.assert_array_equal(cm.run(x[:, 0], engine="host"), want)


@pytest.mark.host
def test_one_d_signals_resize_along_their_length():
    """F.interpolate of a Conv1d's output (nearest, linear): a resize of W with H = 1."""
    for kwargs in ({"scale_factor": 2}, {"scale_factor": 2, "mode": "linear"}):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv1d(2, 3, 3, padding=1), Interpolate(**kwargs)).eval()
        x = F.interpolate(torch.randn(40, 2, 4), size=10, mode="linear")
        cm = tinyaot.compile(model, x[:1], calibration=x.numpy(), name="resize1d")
        assert [n.op for n in cm.graph.nodes][1].startswith("resize_")
        xq = cm.quantize_input(cm.to_model_layout(x.numpy()))
        want = cm.run(xq)
        np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
        with torch.no_grad():
            ref = model(x).numpy().transpose(0, 2, 1)[:, None]
        step, zp = cm.output_qparams
        err = np.abs(cm.dequantize_output(want) - np.clip(ref, step * (-128 - zp), step * (127 - zp)))
        assert err.max() < 2 * step, (kwargs, err.max() / step)  # seeded: measured 1.2 and 1.4 steps


def test_float_tflite_resizes_calibrate_and_track_tflm_float():
    """A float32 .tflite with both resizes, quantized by tinyaot: its int8 output is within a step of TFLM's
    float kernels on the same file (so the real definitions the calibration runs are TFLite's)."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    f32 = "float32"
    size_a, size_b = (np.array(v, dtype=np.int32) for v in ((9, 7), (5, 11)))
    model = tb.build(tb.Model(
        [tb.T((1, 4, 5, 3), f32), tb.T((2,), "int32", data=size_a), tb.T((1, 9, 7, 3), f32),
         tb.T((2,), "int32", data=size_b), tb.T((1, 5, 11, 3), f32)],
        [tb.Op("RESIZE_BILINEAR", [0, 1], [2], ("ResizeBilinearOptions", {"HalfPixelCenters": True})),
         tb.Op("RESIZE_NEAREST_NEIGHBOR", [2, 3], [4], ("ResizeNearestNeighborOptions", {"AlignCorners": True}))],
        [0], [4]))
    torch.manual_seed(1)
    x = np.transpose(_images(48, 3, (4, 5)).numpy(), (0, 2, 3, 1)).astype(np.float32)
    cm = tinyaot.compile(model, calibration=x[:32], name="float_resizes")
    assert [n.op for n in cm.graph.nodes] == ["resize_bilinear", "resize_nearest"]
    xq = cm.quantize_input(x[32:])
    (in_scale, in_zp), step = cm.input_qparams, cm.output_qparams[0]
    x_real = ((xq.astype(np.float32) - in_zp) * np.float32(in_scale)).astype(np.float32)  # what the int8 model sees
    want = tb.run_tflm(model, x_real[:, None]).reshape(16, 5, 11, 3)
    err = np.abs(cm.dequantize_output(cm.run(xq)) - want)
    assert err.max() <= step * 0.75, err.max() / step  # rounding the blend once, plus the 1/1024 coordinates


# ---- from PyTorch ------------------------------------------------------------------------------------------------


class Interpolate(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return F.interpolate(x, **self.kwargs)


class ResizeChain(nn.Module):
    """Every PyTorch spelling between convs, as in decoders: 3x4 -> x3 (9x12) -> size (7, 11) -> nearest-exact
    (9, 5) -> bilinear align_corners size (6, 7) -> nn.Upsample x2 (12, 14) -> bilinear x2 (24, 28)."""

    RESIZES = (Interpolate(scale_factor=3, mode="nearest"), Interpolate(size=(7, 11), mode="nearest"),
               Interpolate(size=(9, 5), mode="nearest-exact"),
               Interpolate(size=(6, 7), mode="bilinear", align_corners=True), nn.Upsample(scale_factor=2),
               nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False))

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 6, 3, padding=1)
        self.ups = nn.ModuleList(self.RESIZES)
        self.convs = nn.ModuleList(nn.Conv2d(6, 6 if i < len(self.RESIZES) - 1 else 4, 3, padding=1)
                                   for i in range(len(self.RESIZES)))

    def forward(self, x):
        x = F.relu(self.stem(x))
        for up, conv in zip(self.ups, self.convs):
            x = conv(up(x))
            x = F.relu(x) if conv is not self.convs[-1] else x
        return x


def _images(n: int, channels: int, hw) -> torch.Tensor:
    """Smooth random images (coarse patterns blown up, plus a little noise): data-like, so calibration holds."""
    coarse = torch.randn(n, channels, 3, 3)
    noise = 0.1 * torch.randn(n, channels, *hw)
    return F.interpolate(coarse, size=tuple(hw), mode="bilinear", align_corners=True) + noise


@pytest.mark.host
@pytest.mark.m33
def test_pytorch_resizes_are_bit_exact_everywhere_and_track_float():
    torch.manual_seed(5)
    model = ResizeChain().eval()
    x = _images(64, 3, (3, 4))
    cm = tinyaot.compile(model, x[:1], calibration=x[:48].numpy(), name="resize_chain")
    ops = [n.op for n in cm.graph.nodes]
    assert ops.count("resize_nearest") == 4 and ops.count("resize_bilinear") == 2 and "transpose" not in ops
    xq = cm.quantize_input(cm.to_model_layout(x[48:].numpy()))
    want = cm.run(xq, engine="reference")
    assert want.shape == (16, 24, 28, 4)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    np.testing.assert_array_equal(cm.run(xq[:4], engine="m33"), want[:4])
    assert cm.last_m33.instructions > 0
    with torch.no_grad():
        ref = cm.to_model_layout(model(x[48:]).numpy())
    got = cm.dequantize_output(want)
    step, zp = cm.output_qparams
    err = np.abs(got - np.clip(ref, step * (-128 - zp), step * (127 - zp)))  # past the calibrated range: saturates
    # int8 tracks float through 13 layers: the errors are rounding (a few output steps), not misplaced pixels
    print(f"resize chain: int8 vs float error mean {err.mean() / step:.2f}, max {err.max() / step:.2f} output steps")
    # seeded: measured mean 0.28, max 1.03 steps (43,008 outputs)
    assert err.mean() < step and err.max() < 8 * step, (err.mean() / step, err.max() / step)


def test_resize_reads_the_source_pixels_pytorch_reads():
    """A model that is only the resize keeps the input's qparams, so its int8 output is PyTorch's op applied to
    the int8 input itself: nearest copies exactly PyTorch's pixels; bilinear is within one step of PyTorch's."""
    torch.manual_seed(0)
    for name, kwargs in (("n2", {"scale_factor": 2}), ("n3", {"scale_factor": 3}),
                         ("nsize", {"size": (7, 11)}), ("ndown", {"size": (3, 2)}),
                         ("nexact", {"size": (9, 5), "mode": "nearest-exact"}),
                         ("b2", {"scale_factor": 2, "mode": "bilinear"}),
                         ("bac", {"size": (9, 7), "mode": "bilinear", "align_corners": True}),
                         ("bdown", {"size": (3, 2), "mode": "bilinear"})):
        model = Interpolate(**kwargs).eval()
        x = _images(40, 2, (5, 4))
        cm = tinyaot.compile(model, x[:1], calibration=x.numpy(), name=name)
        xq = cm.quantize_input(cm.to_model_layout(x.numpy()))
        got = cm.run(xq).astype(np.int32)
        with torch.no_grad():
            want = model(torch.from_numpy(xq.astype(np.float32)).permute(0, 3, 1, 2)).permute(0, 2, 3, 1).numpy()
        if kwargs.get("mode", "nearest").startswith("nearest"):
            np.testing.assert_array_equal(got, want.astype(np.int32), err_msg=name)
        else:
            err = np.abs(got - want)
            # Rounding the blend: mean 0.25 for evenly spread fractions; measured 0.24, 0.16 and 0.25 (bdown, 480
            # values: its mean's sd is 0.007, so 0.3 is 7 sd away).
            assert err.max() <= 1.0 and err.mean() < 0.3, (name, err.max(), err.mean())


@pytest.mark.host
def test_pt2e_graph_with_resizes_compiles_and_tracks_pt2e():
    """A PT2E-quantized graph (XNNPACK quantizer) holding both resizes: the resizes keep their input's qparams (a
    requantize follows where PT2E chose others), host C equals the reference, and the output is within a few
    steps of PT2E's own float-between-q/dq result."""
    pytest.importorskip("torchao", reason="torchao (the PT2E quantization flow) is not installed")
    import pt2e_models

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(1, 4, 3, padding=1), nn.Conv2d(4, 2, 3, padding=1)

        def forward(self, x):
            x = F.interpolate(F.relu(self.c1(x)), scale_factor=2, mode="bilinear")
            return self.c2(F.interpolate(x, scale_factor=2))

    torch.manual_seed(0)
    x = _images(24, 1, (6, 6))
    q = pt2e_models.quantize_pt2e(Net(), x[:1], x.numpy())
    cm = tinyaot.compile(q, x[:1], name="pt2e_resize")
    assert {"resize_bilinear", "resize_nearest"} <= {n.op for n in cm.graph.nodes}
    xq = cm.quantize_input(cm.to_model_layout(x.numpy()))
    want = cm.run(xq)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    with torch.no_grad():
        pt2e = np.concatenate([q(x[i:i + 1]).numpy() for i in range(len(x))]).transpose(0, 2, 3, 1)
    assert np.abs(cm.dequantize_output(want) - pt2e).max() <= 3 * cm.output_qparams[0]  # seeded: 2 steps


# ---- what stays refused ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, match", [
    ({"scale_factor": 2, "mode": "bicubic"}, "bicubic interpolation has no integer kernel"),
    ({"scale_factor": 1.3, "mode": "nearest"}, "picks other pixels than TFLite's nearest resize"),
    ({"scale_factor": 1.5, "mode": "bilinear"}, "PyTorch samples at 1 / 1.5"),
])
def test_unsupported_resizes_are_refused_naming_the_layer_and_line(kwargs, match):
    model = nn.Sequential(nn.Conv2d(3, 3, 1), Interpolate(**kwargs)).eval()
    x = _images(4, 3, (5, 5))
    with pytest.raises(UnsupportedOpError, match=rf"(?s)layer '1'.*test_resize\.py:\d+.*{match}"):
        tinyaot.compile(model, x[:1], calibration=x.numpy())


def test_bilinear_refuses_both_flags_and_keeps_qparams():
    g = one_op_graph("resize_bilinear", [act("x", (1, 2, 2, 1), 0.1, 0)], act("y", (1, 4, 4, 1), 0.1, 0),
                     {"align_corners": True, "half_pixel_centers": True})
    with pytest.raises(ModelError, match="cannot both be set"):
        KERNELS["resize_bilinear"][0](g.nodes[0], g)
    g = one_op_graph("resize_nearest", [act("x", (1, 2, 2, 1), 0.1, 0)], act("y", (1, 4, 4, 1), 0.2, 0), {})
    with pytest.raises(ModelError, match="must keep the input's qparams"):
        KERNELS["resize_nearest"][0](g.nodes[0], g)


@pytest.mark.host
def test_clean_under_asan_and_ubsan():
    """The kernels under AddressSanitizer and UndefinedBehaviorSanitizer (an arena of exactly the planned size), on
    random int8 inputs and the all -128 / all 127 ones; the outputs equal the reference."""
    from tinyaot.targets import host
    from tinyaot.targets.base import ModelSources

    if host.sanitizer_problem() is not None:
        pytest.skip(f"no sanitizer support on this machine: {host.sanitizer_problem()}")
    torch.manual_seed(0)
    x = _images(40, 3, (3, 4))
    cm = tinyaot.compile(ResizeChain().eval(), x[:1], calibration=x.numpy(), name="resize_chain_asan")
    xq = np.random.default_rng(0).integers(-128, 128, size=(3, *cm.input_shape[1:])).astype(np.int8)
    xq[0], xq[1] = -128, 127
    target = host.SanitizedHostTarget()
    got = target.run(target.build(ModelSources.of(cm)), xq).outputs
    np.testing.assert_array_equal(got, cm.run(xq, engine="reference").reshape(len(xq), -1))
