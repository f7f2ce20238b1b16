"""The speed kernel of depthwise_conv2d (c/kernels/depthwise_conv2d_rows_s8.c, chosen by plan/kernels.py): 3x3 and
5x5 kernels, strides 1 and 2 (and mixed), same and valid padding, odd channel counts, extreme zero points, clamps
at and above the output zero point and none, dead channels and zero / left shifts; NumPy reference == host C ==
Cortex-M33 (DSP and portable) on every byte, in one build each; where the plan puts it and why not elsewhere."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_file
from kernel_suite import Case, act, mismatches, one_op_graph, run_host, run_m33_suite
from test_pairs_kernel import _channel_quantization, _samples, _samples_near

from tinyaot.codegen import generate_c
from tinyaot.ir import QParams, Tensor
from tinyaot.ir.ops import RELU, RELU6
from tinyaot.ref.depthwise_conv2d_rows_s8 import paired as rows_paired
from tinyaot.ref.depthwise_conv2d_rows_s8 import work_bytes
from tinyaot.ref.depthwise_conv2d_s8 import prepare


def dw_case(k: int, mult: int = 1, quant: bool = False, kernel=(3, 3), narrow: bool = False,
            paired: bool = False) -> Case:
    """A seeded one-op depthwise conv, output rows of 12-15 pixels (narrow: fewer than the kernel takes; paired:
    4-11 at strides 1, two rows at a time); quant: channels of every fast-requantization form (dead channels with
    huge biases, multipliers that flush to 0, zero and left shifts under a ReLU)."""
    rng = np.random.default_rng(7100 + k + 100 * mult + 1000 * quant + 17 * kernel[0] + 7 * narrow + 3 * paired)
    kh, kw = kernel
    sh, sw = (1, 1) if paired else [(1, 1), (2, 2), (1, 2), (2, 1)][(k // 2) % 4]
    c = int(rng.choice([1, 3, 4, 5, 8, 12, 17]))
    h = int(rng.integers(max(kh - 2, 1), kh + 5))
    if narrow:
        w = kw if sw == 1 else int(rng.integers(kw, kw + 12))
    else:
        w = int(rng.integers(kw + 3, kw + 9)) if paired else int(rng.integers(12 * sw + kw, 12 * sw + kw + 4))
    same = k % 3 != 2 or h < kh or w < kw
    th, tw = (max((-(-h // sh) - 1) * sh + kh - h, 0), max((-(-w // sw) - 1) * sw + kw - w, 0)) if same else (0, 0)
    pad = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    oh, ow = (h + th - kh) // sh + 1, (w + tw - kw) // sw + 1
    z_in = [-128, 127, int(rng.integers(-128, 128))][k % 3]
    s_in = float(np.float32(10 ** rng.uniform(-2.5, -0.5)))
    c_out = c * mult
    relu = k % 4 in (0, 1)
    z_out = [-128, -10, int(rng.integers(-40, 40)), 127][k % 4] if relu or k % 4 != 3 else 127
    out_scale = float(np.float32(s_in * 10 ** rng.uniform(-0.5, 0.5)))
    if quant:
        scales, zero, small, bias = _channel_quantization(rng, c_out, s_in, out_scale, relu, 3)
        weights = rng.integers(-127, 128, size=(1, kh, kw, c_out))
        weights[..., small] = rng.integers(-2, 3, size=(1, kh, kw, int(small.sum())))
        weights[..., zero] = 0
    else:
        scales = [float(np.float32(10 ** rng.uniform(-3, -1.5))) for _ in range(c_out)]
        weights = rng.integers(-127, 128, size=(1, kh, kw, c_out))
        bias = rng.integers(-20_000, 20_000, size=c_out).astype(np.int32)
        out_scale = float(np.float32(s_in * np.mean(scales) * kh * kw * 10 ** rng.uniform(0.5, 1.5)))
    x = act("x", (2 if k % 5 == 4 else 1, h, w, c), s_in, z_in)
    wt = Tensor("w", weights.shape, "int8", data=weights.astype(np.int8),
                qparams=QParams(tuple(scales), (0,) * c_out, 3))
    bt = Tensor("b", (c_out,), "int32", data=bias, qparams=QParams(tuple(s_in * s for s in scales), (0,) * c_out, 0))
    y = act("y", (x.shape[0], oh, ow, c_out), out_scale, z_out)
    clamp = (RELU6 if k % 2 else RELU) if relu else None
    attrs = {"stride": (sh, sw), "padding": pad, "dilation": (1, 1), "clamp": clamp, "depth_multiplier": mult}
    g = one_op_graph("depthwise_conv2d", [x, wt, bt], y, attrs)
    samples = [_samples_near(x.shape, rng, z_in) if quant else _samples(x.shape, rng)]
    tag = "_q" * quant + "_m2" * (mult > 1) + f"_k{kh}" * (kernel != (3, 3)) + "_narrow" * narrow + "_p" * paired
    return Case(f"dw_rows{tag}{k}", g, samples, optimize="speed")


FAST = ([dw_case(k) for k in range(16)] + [dw_case(k, quant=True) for k in range(8)]
        + [dw_case(k, paired=True) for k in range(8)] + [dw_case(k, quant=True, paired=True) for k in range(4)])
PLAIN = [dw_case(k, mult=2) for k in range(2)] + [dw_case(k, kernel=(5, 5)) for k in range(2)] + [
    dw_case(k, narrow=True) for k in (0, 2)]
CASES = FAST + PLAIN


def test_the_speed_plan_gives_every_multiplier_1_case_the_rows_kernel():
    kinds, paired = set(), set()
    for case in FAST:
        (choice,) = case.plan.kernels
        assert choice.variant == "rows", (case.name, choice.rejected)
        node = case.graph.nodes[0]
        assert case.plan.buffer_of_name(choice.work).scratch and choice.work_bytes == work_bytes(node, case.graph)
        assert "tinyaot_depthwise_conv2d_rows_s8(" in generate_c(case.graph, case.plan, case.name).files[
            f"{case.name}.c"]
        p = node.attrs
        kinds.add(case.graph.tensor(node.inputs[1]).shape[1:3] + tuple(p["stride"]))
        y = case.graph.tensor("y").shape
        paired.add((rows_paired(prepare(node, case.graph)), y[1] % 2, y[2] % 2))
    assert {(3, 3, 1, 1), (3, 3, 2, 2), (3, 3, 1, 2), (3, 3, 2, 1)} <= kinds
    assert {(True, 0, 0), (True, 0, 1), (True, 1, 0), (True, 1, 1), (False, 0, 0)} <= paired  # odd rows / columns
    notes = {c.plan.kernels[0].note for c in FAST if "_q" in c.name}
    assert any("constant channels" in n for n in notes) and any("zero or left shift" in n for n in notes)


def test_multiplier_2_5x5_and_narrow_rows_fall_back_with_their_reasons():
    starts = ["depth multiplier 2"] * 2 + ["a 5x5 kernel"] * 2 + ["output rows of 3 pixels; below 4", "output rows of"]
    for case, start in zip(PLAIN, starts):
        (choice,) = case.plan.kernels
        assert choice.plain and dict(choice.rejected)["rows"].startswith(start), choice.rejected


@pytest.mark.host
def test_rows_reference_equals_host():
    got = run_host(CASES)
    bad = mismatches(CASES, got)
    assert not bad, "host C differs from the NumPy reference: " + "; ".join(bad[:5])


@pytest.mark.m33
def test_rows_reference_equals_m33_dsp_and_portable(tmp_path):
    for dsp in (True, False):
        got, _ = run_m33_suite(FAST, tmp_path / f"suite{int(dsp)}", dsp=dsp)
        bad = mismatches(FAST, got)
        assert not bad, f"Cortex-M33 ({'DSP' if dsp else 'portable'}) differs from the reference: " + "; ".join(bad[:5])


def test_kws_runs_its_depthwise_layers_on_the_rows_kernel_in_speed_mode_only():
    """KWS (DS-CNN): its four 3x3 depthwise layers of 5-wide rows take the rows kernel two rows at a time in speed
    mode; size and memory modes keep the plain kernel (VWW's choices: tests/test_tflite_import.py)."""
    import tinyaot
    from tinyaot.backend import plan

    cm = tinyaot.compile(shared_file("models/mlperf_tiny/kws_ref_model.tflite"), name="kws", optimize="speed")
    dws = [n for n in cm.graph.nodes if n.op == "depthwise_conv2d"]
    assert [cm.plan.kernel_of(n.name).variant for n in dws] == ["rows"] * 4
    assert all(rows_paired(prepare(n, cm.graph)) for n in dws)
    for optimize in ("size", "memory"):
        other = plan(cm.graph, optimize=optimize)
        assert {other.kernel_of(n.name).variant for n in dws} <= {"plain", "ring"}, optimize
