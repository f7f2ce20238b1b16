"""Padding modes: reflect, symmetric and replicate besides zero padding (the pad op's `mode`).

TFLite's MIRROR_PAD (REFLECT, SYMMETRIC) gives the same bytes in TFLite Micro and in tinyaot's reference on random
shapes; every mode's C kernel equals the reference on the host and the Cortex-M33; PyTorch's Conv2d / Conv1d
padding_mode='reflect' | 'replicate' and F.pad(mode=...) compile to a pad before a conv that pads nothing, bit-exact
on every engine and tracking float. Circular padding stays refused, naming the layer and its line.
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
from tinyaot.ir.ops import PAD_MODES
from tinyaot.ref.interpreter import KERNELS

tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")

CASES, SAMPLES = 50, 3
MIRROR_MODES = {"reflect": 0, "symmetric": 1}  # tflite.MirrorPadMode


def _pads(rng, mode: str, h: int, w: int) -> tuple[int, int, int, int]:
    """Random padding the mode allows: reflect < the size, symmetric <= it, replicate and constant anything."""
    limit = {"reflect": (h - 1, w - 1), "symmetric": (h, w)}.get(mode, (4, 4))
    return tuple(int(rng.integers(0, lim + 1)) for lim in (limit[0], limit[0], limit[1], limit[1]))


def _graph(mode: str, rng):
    n, h, w, c = int(rng.integers(1, 3)), int(rng.integers(1, 8)), int(rng.integers(1, 8)), int(rng.integers(1, 5))
    t, b, left, r = _pads(rng, mode, h, w)
    qp = (float(np.float32(10 ** rng.uniform(-2.5, 0.0))), int(rng.integers(-128, 128)))
    out = (n, h + t + b, w + left + r, c)
    g = one_op_graph("pad", [act("x", (n, h, w, c), *qp)], act("y", out, *qp),
                     {"padding": (t, b, left, r), "mode": None if mode == "constant" else mode})
    return g, qp


def _reference(g, x: np.ndarray) -> np.ndarray:
    prepare, kernel = KERNELS["pad"]
    p = prepare(g.nodes[0], g)
    return np.stack([kernel(s, p) for s in x])


@pytest.mark.parametrize("mode", list(MIRROR_MODES))
def test_reference_equals_tflm_mirror_pad(mode):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    rng = np.random.default_rng(sum(map(ord, mode)))
    widest = 0
    for k in range(CASES):
        g, qp = _graph(mode, rng)
        x_shape, y_shape = g.tensor("x").shape, g.tensor("y").shape
        x_shape, y_shape = (1, *x_shape[1:]), (1, *y_shape[1:])  # TFLM runs one sample at a time
        t, b, left, r = g.nodes[0].attrs["padding"]
        paddings = tb.T((4, 2), "int32", data=np.array([[0, 0], [t, b], [left, r], [0, 0]], dtype=np.int32))
        model = tb.Model([tb.T(x_shape, scale=qp[0], zero_point=qp[1]), paddings,
                          tb.T(y_shape, scale=qp[0], zero_point=qp[1])],
                         [tb.Op("MIRROR_PAD", [0, 1], [2], ("MirrorPadOptions", {"Mode": MIRROR_MODES[mode]}))],
                         [0], [2])
        g.tensors["x"] = act("x", x_shape, *qp)
        g.tensors["y"] = act("y", y_shape, *qp)
        x = rng.integers(-128, 128, size=(SAMPLES, *x_shape)).astype(np.int8)
        want = tb.run_tflm(tb.build(model), x)
        np.testing.assert_array_equal(_reference(g, x).reshape(want.shape), want,
                                      err_msg=f"{mode} case {k}: {x_shape} padding {(t, b, left, r)}")
        widest = max(widest, t, b, left, r)
    assert widest >= 5  # the cases reach paddings as wide as the input allows


@pytest.mark.host
def test_mirror_pad_tflite_model_imports_and_runs_bit_exact():
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    qp = (0.05, 3)
    paddings = tb.T((4, 2), "int32", data=np.array([[0, 0], [2, 1], [0, 3], [0, 0]], dtype=np.int32))
    for mode, code in MIRROR_MODES.items():
        model = tb.build(tb.Model([tb.T((1, 4, 5, 3), scale=qp[0], zero_point=qp[1]), paddings,
                                   tb.T((1, 7, 8, 3), scale=qp[0], zero_point=qp[1])],
                                  [tb.Op("MIRROR_PAD", [0, 1], [2], ("MirrorPadOptions", {"Mode": code}))], [0], [2]))
        cm = tinyaot.compile(model, name=f"mirror_{mode}")
        assert [(n.op, n.attrs["mode"]) for n in cm.graph.nodes] == [("pad", mode)]
        x = np.random.default_rng(code).integers(-128, 128, size=(4, 4, 5, 3)).astype(np.int8)
        want = tb.run_tflm(model, x[:, None]).reshape(4, 7, 8, 3)
        np.testing.assert_array_equal(cm.run(x, engine="reference"), want)
        np.testing.assert_array_equal(cm.run(x, engine="host"), want)


@pytest.mark.host
@pytest.mark.m33
def test_every_mode_c_kernel_equals_the_reference(tmp_path):
    """Random shapes and paddings in every mode (replicate wider than the input too), one host build and one
    Cortex-M33 run."""
    rng = np.random.default_rng(11)
    cases = []
    for mode in PAD_MODES:
        for k in range(8):
            g, _ = _graph(mode, rng)
            x = rng.integers(-128, 128, size=(SAMPLES, *g.tensor("x").shape)).astype(np.int8)
            cases.append(Case(f"pad_{mode}_{k}", g, [x]))
    assert mismatches(cases, run_host(cases)) == []
    got, result = run_m33_suite(cases, tmp_path / "m33")
    assert mismatches(cases, got) == [] and result.instructions > 0


def test_modes_pad_as_numpy_does():
    """The reference against NumPy's own modes (replicate is NumPy's 'edge'), so the definition is not only
    checked against itself."""
    x = np.arange(12, dtype=np.int8).reshape(1, 3, 4, 1)
    for mode, numpy_mode in (("reflect", "reflect"), ("symmetric", "symmetric"), ("replicate", "edge")):
        g = one_op_graph("pad", [act("x", x.shape, 0.1, 0)], act("y", (1, 6, 8, 1), 0.1, 0),
                         {"padding": (2, 1, 3, 1), "mode": mode})
        want = np.pad(x, ((0, 0), (2, 1), (3, 1), (0, 0)), mode=numpy_mode)
        np.testing.assert_array_equal(_reference(g, x[None])[0], want, err_msg=mode)


def test_mode_numbers_are_the_headers_and_the_c_names_them():
    from tinyaot.backend import plan
    from tinyaot.codegen import generate_c
    from tinyaot.codegen.kernel_header import kernel_header
    from tinyaot.ref.pad_s8 import MODE_CODES

    defines = kernel_header().defines
    assert {mode: defines[f"TINYAOT_PAD_{mode.upper()}"] for mode in PAD_MODES} == MODE_CODES
    g = one_op_graph("pad", [act("x", (1, 3, 3, 1), 0.1, 0)], act("y", (1, 5, 3, 1), 0.1, 0),
                     {"padding": (1, 1, 0, 0), "mode": "replicate"})
    assert ".mode = TINYAOT_PAD_REPLICATE," in generate_c(g, plan(g), "padded").files["padded.c"]


def test_mirror_padding_wider_than_the_input_is_refused():
    g = one_op_graph("pad", [act("x", (1, 3, 3, 1), 0.1, 0)], act("y", (1, 6, 3, 1), 0.1, 0),
                     {"padding": (3, 0, 0, 0), "mode": "reflect"})
    with pytest.raises(ModelError, match="reflect padding of 3 on the top of a size-3 axis"):
        KERNELS["pad"][0](g.nodes[0], g)
    with pytest.raises(ModelError, match="pad mode must be one of"):
        one_op_graph("pad", [act("x", (1, 3, 3, 1), 0.1, 0)], act("y", (1, 3, 3, 1), 0.1, 0),
                     {"padding": (0, 0, 0, 0), "mode": "circular"})


# ---- from PyTorch ------------------------------------------------------------------------------------------------


class PaddedNet(nn.Module):
    """Conv2d with reflect and replicate padding_mode, and F.pad in both modes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect")
        self.conv2 = nn.Conv2d(8, 8, 3, padding=(2, 1), padding_mode="replicate")
        self.conv3 = nn.Conv2d(8, 4, 3)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        x = F.pad(x, (1, 2, 0, 1), mode="reflect")
        return self.conv3(F.pad(x, (2, 0, 1, 1), mode="replicate"))


class PaddedNet1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(2, 6, 5, padding=2, padding_mode="reflect")
        self.conv2 = nn.Conv1d(6, 4, 3, padding=1, padding_mode="replicate")

    def forward(self, x):
        return self.conv2(F.relu(self.conv1(x)))


def _smooth(n: int, shape) -> torch.Tensor:
    coarse = torch.randn(n, shape[0], *(3,) * (len(shape) - 1))
    mode = "bilinear" if len(shape) == 3 else "linear"
    return F.interpolate(coarse, size=tuple(shape[1:]), mode=mode, align_corners=True) + 0.1 * torch.randn(n, *shape)


@pytest.mark.host
@pytest.mark.m33
@pytest.mark.parametrize("build, shape, modes", [(PaddedNet, (3, 7, 6), ["reflect", "replicate", "reflect",
                                                                        "replicate"]),
                                                 (PaddedNet1d, (2, 20), ["reflect", "replicate"])],
                         ids=["conv2d", "conv1d"])
def test_pytorch_padding_modes_are_bit_exact_everywhere_and_track_float(build, shape, modes):
    torch.manual_seed(2)
    model = build().eval()
    x = _smooth(56, shape)
    cm = tinyaot.compile(model, x[:1], calibration=x[:40].numpy(), name=f"pad_{build.__name__.lower()}")
    pads = [n for n in cm.graph.nodes if n.op == "pad"]
    assert [n.attrs["mode"] for n in pads] == modes
    convs = [n for n in cm.graph.nodes if n.op == "conv2d"]
    assert all(n.attrs["padding"] == (0, 0, 0, 0) for n in convs)  # the conv itself pads nothing
    xq = cm.quantize_input(cm.to_model_layout(x[40:].numpy()))
    want = cm.run(xq, engine="reference")
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    np.testing.assert_array_equal(cm.run(xq[:4], engine="m33"), want[:4])
    with torch.no_grad():
        ref = model(x[40:]).numpy()
    ref = ref.transpose(0, 2, 1)[:, None] if ref.ndim == 3 else ref.transpose(0, 2, 3, 1)  # NHWC, as the output
    got = cm.dequantize_output(want)
    step, zp = cm.output_qparams
    err = np.abs(got - np.clip(ref, step * (-128 - zp), step * (127 - zp)))
    print(f"{build.__name__}: int8 vs float error mean {err.mean() / step:.2f}, max {err.max() / step:.2f} steps")
    # Seeded weights and inputs, nothing saturates: mean 0.44 / 0.40 steps, max 2.5 / 5.1 (conv1d's two convs carry
    # the input's and conv1's rounding onto a finer output step). A float's last bits could move that max only
    # through an exact rounding tie among the few values it reads.
    assert err.mean() < step and err.max() < 6 * step


def test_padded_pixels_are_the_ones_pytorch_copies():
    """A model that is only the pad keeps the input's qparams: its int8 output is F.pad of the int8 input."""
    for mode in ("reflect", "replicate"):
        model = nn.Sequential(nn.ReflectionPad2d((2, 1, 1, 3)) if mode == "reflect"
                              else nn.ReplicationPad2d((2, 1, 1, 3))).eval()
        x = _smooth(40, (2, 5, 4))
        cm = tinyaot.compile(model, x[:1], calibration=x.numpy(), name=f"only_{mode}")
        xq = cm.quantize_input(cm.to_model_layout(x.numpy()))
        with torch.no_grad():
            want = model(torch.from_numpy(xq.astype(np.float32)).permute(0, 3, 1, 2)).permute(0, 2, 3, 1).numpy()
        np.testing.assert_array_equal(cm.run(xq), want.astype(np.int8), err_msg=mode)


@pytest.mark.parametrize("make", [lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular"),
                                  lambda: _Pad(mode="circular"), lambda: _Pad(mode="constant", value=1.0)],
                         ids=["conv_circular", "pad_circular", "pad_constant_value"])
def test_what_stays_refused_names_the_layer_and_line(make):
    model = _Then(make()).eval()
    x = _smooth(4, (3, 6, 6))
    with pytest.raises(UnsupportedOpError, match=r"(?s)layer 'layer'.*test_pad_modes\.py:\d+.*is not supported; "
                                                 r"supported: zero padding, mode='reflect' and mode='replicate'"):
        tinyaot.compile(model, x[:1], calibration=x.numpy())


class _Pad(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return F.pad(x, (1, 1, 1, 1), **self.kwargs)


class _Then(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.stem = nn.Conv2d(3, 3, 1)
        self.layer = layer

    def forward(self, x):
        return self.layer(self.stem(x))


@pytest.mark.host
def test_clean_under_asan_and_ubsan():
    """The kernels under AddressSanitizer and UndefinedBehaviorSanitizer (an arena of exactly the planned size), on
    random int8 inputs and the all -128 / all 127 ones; the outputs equal the reference."""
    from tinyaot.targets import host
    from tinyaot.targets.base import ModelSources

    if host.sanitizer_problem() is not None:
        pytest.skip(f"no sanitizer support on this machine: {host.sanitizer_problem()}")
    torch.manual_seed(0)
    x = _smooth(40, (3, 7, 6))
    cm = tinyaot.compile(PaddedNet().eval(), x[:1], calibration=x.numpy(), name="pad_asan")
    xq = np.random.default_rng(0).integers(-128, 128, size=(3, *cm.input_shape[1:])).astype(np.int8)
    xq[0], xq[1] = -128, 127
    target = host.SanitizedHostTarget()
    got = target.run(target.build(ModelSources.of(cm)), xq).outputs
    np.testing.assert_array_equal(got, cm.run(xq, engine="reference").reshape(len(xq), -1))
