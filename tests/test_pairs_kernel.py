"""The speed kernel of conv2d / conv2d_add (c/kernels/conv2d_pairs_s8.c, chosen by plan/kernels.py): every
geometry the pairs path meets (1x1, 3x3 with padding, strides, dilation, channels not a multiple of 4 that go
through the byte patch, odd pixel counts, out_c tails, batches), NumPy reference == host C == Cortex-M33 (DSP
and portable) on every byte; where the plan puts it; and the fast requantization it relies on."""
from __future__ import annotations

import numpy as np
import pytest
from kernel_suite import Case, act, fixedpoint_library, mismatches, one_op_graph, run_host, run_m33_suite

from tinyaot.codegen import generate_c
from tinyaot.ir import Node, QParams, Tensor
from tinyaot.ir.ops import RELU
from tinyaot.ref.conv2d_pairs_s8 import taps_padded

N_SAMPLES = 3


def _samples(shape, rng) -> np.ndarray:
    x = rng.integers(-128, 128, size=(N_SAMPLES, *shape))
    edge = rng.random(x.shape) < 0.1
    x[edge] = rng.choice([-128, 127], size=int(edge.sum()))
    return x.astype(np.int8)


def conv_case(k: int, residual: bool = False, optimize: str = "speed") -> Case:
    rng = np.random.default_rng(9700 + k + 100 * residual)
    n = 2 if k % 7 == 3 else 1
    kh, kw = [(1, 1), (3, 3), (3, 3), (5, 5), (3, 1), (10, 4), (2, 2), (3, 3)][k % 8]
    c_in = int(rng.choice([1, 3, 4, 8, 12, 16, 5]))
    c_out = c_in if residual else int(rng.choice([1, 4, 5, 7, 8, 16, 19]))
    sh, sw = (1, 1) if residual else (int(v) for v in rng.integers(1, 3, size=2))
    dh, dw = (2, 1) if k % 8 == 7 else (1, 1)
    h, w = (int(v) for v in rng.integers(max(kh * dh - 1, 1), max(kh * dh - 1, 1) + 7, size=2))
    th, tw = (kh - 1) * dh, (kw - 1) * dw
    pad = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    oh, ow = (h + pad[0] + pad[1] - (kh - 1) * dh - 1) // sh + 1, (w + pad[2] + pad[3] - (kw - 1) * dw - 1) // sw + 1
    s_in, z_in = float(np.float32(10 ** rng.uniform(-2.5, -0.5))), int(rng.integers(-128, 128))
    w_scales = [float(np.float32(10 ** rng.uniform(-3, -1.5))) for _ in range(c_out)]
    weights = rng.integers(-127, 128, size=(c_out, kh, kw, c_in)).astype(np.int8)
    bias = rng.integers(-20_000, 20_000, size=c_out).astype(np.int32)
    x = act("x", (n, h, w, c_in), s_in, z_in)
    wt = Tensor("w", weights.shape, "int8", data=weights, qparams=QParams(tuple(w_scales), (0,) * c_out, 0))
    bt = Tensor("b", (c_out,), "int32", data=bias, qparams=QParams(tuple(s_in * s for s in w_scales), (0,) * c_out, 0))
    taps = kh * kw * c_in
    out_scale = float(np.float32(s_in * np.mean(w_scales) * np.sqrt(taps) * 10 ** rng.uniform(0.5, 2.0)))
    y = act("y", (n, oh, ow, c_out), out_scale, int(rng.integers(-40, 40)))
    attrs = {"stride": (sh, sw), "padding": pad, "dilation": (dh, dw), "clamp": RELU if k % 3 == 0 else None}
    g = one_op_graph("conv2d", [x, wt, bt], y, attrs)
    if residual:
        from tinyaot.passes.fuse_residual import fuse_residual_adds

        s = act("s", y.shape, float(np.float32(out_scale * 1.3)), int(rng.integers(-20, 20)))
        z = act("z", y.shape, float(np.float32(out_scale * 1.7)), int(rng.integers(-20, 20)))
        g.add_tensor(s)
        g.add_tensor(z)
        g.inputs.append("s")
        g.nodes.append(Node("add", "add_0", ["s", "y"] if k % 2 else ["y", "s"], ["z"], {}))
        g.outputs = ["z"]
        g = fuse_residual_adds(g)
        assert g is not None and [nd.op for nd in g.nodes] == ["conv2d_add"]
        samples = [_samples(x.shape, rng), _samples(s.shape, rng)]
    else:
        samples = [_samples(x.shape, rng)]
    tag = ("_res" if residual else "") + ("_w8" if optimize == "size" else "")
    return Case(f"pairs{tag}{k}", g, samples, optimize=optimize)


def fc_case(k: int, c_in: int | None = None, optimize: str = "speed") -> Case:
    """Fully connected through the wide kernel: in_features a multiple of 8, out_features with tails, batches."""
    rng = np.random.default_rng(9900 + k)
    n = 2 if k % 5 == 2 else 1
    c_in, c_out = c_in or 8 * int(rng.integers(1, 12)), int(rng.choice([1, 3, 8, 9, 16, 21]))
    s_in, z_in = float(np.float32(10 ** rng.uniform(-2.5, -0.5))), int(rng.integers(-128, 128))
    w_scales = [float(np.float32(10 ** rng.uniform(-3, -1.5))) for _ in range(c_out)]
    weights = rng.integers(-127, 128, size=(c_out, c_in)).astype(np.int8)
    bias = rng.integers(-20_000, 20_000, size=c_out).astype(np.int32)
    x = act("x", (n, c_in), s_in, z_in)
    wt = Tensor("w", weights.shape, "int8", data=weights, qparams=QParams(tuple(w_scales), (0,) * c_out, 0))
    bt = Tensor("b", (c_out,), "int32", data=bias, qparams=QParams(tuple(s_in * s for s in w_scales), (0,) * c_out, 0))
    out_scale = float(np.float32(s_in * np.mean(w_scales) * np.sqrt(c_in) * 10 ** rng.uniform(0.5, 2.0)))
    y = act("y", (n, c_out), out_scale, int(rng.integers(-40, 40)))
    g = one_op_graph("fully_connected", [x, wt, bt], y, {"clamp": RELU if k % 3 == 0 else None})
    return Case(f"wide{'_w8' if optimize == 'size' else ''}{k}", g, [_samples(x.shape, rng)], optimize=optimize)


def shaped_case(k: int, kernel: tuple[int, int], c_in: int, c_out: int, hw: tuple[int, int],
                stride: tuple[int, int], pad: tuple[int, int, int, int], clamp=None, optimize: str = "speed") -> Case:
    """The geometries of the MLPerf Tiny layers, whose paths the random cases may miss: a first 3x3 conv on three
    channels (whole windows through the patch row by row), a 10x4 conv on one channel (rows of one quad straight
    from the image, unaligned), 32- and 64-channel pointwise and 3x3 convs (the most unrolled microkernel)."""
    rng = np.random.default_rng(9800 + k)
    (kh, kw), (h, w), (sh, sw) = kernel, hw, stride
    oh, ow = (h + pad[0] + pad[1] - kh) // sh + 1, (w + pad[2] + pad[3] - kw) // sw + 1
    s_in, z_in = float(np.float32(10 ** rng.uniform(-2.5, -0.5))), int(rng.integers(-128, 128))
    w_scales = [float(np.float32(10 ** rng.uniform(-3, -1.5))) for _ in range(c_out)]
    weights = rng.integers(-127, 128, size=(c_out, kh, kw, c_in)).astype(np.int8)
    bias = rng.integers(-20_000, 20_000, size=c_out).astype(np.int32)
    x = act("x", (1, h, w, c_in), s_in, z_in)
    wt = Tensor("w", weights.shape, "int8", data=weights, qparams=QParams(tuple(w_scales), (0,) * c_out, 0))
    bt = Tensor("b", (c_out,), "int32", data=bias, qparams=QParams(tuple(s_in * s for s in w_scales), (0,) * c_out, 0))
    out_scale = float(np.float32(s_in * np.mean(w_scales) * np.sqrt(kh * kw * c_in) * 10 ** rng.uniform(0.5, 2.0)))
    y = act("y", (1, oh, ow, c_out), out_scale, int(rng.integers(-40, 40)))
    attrs = {"stride": (sh, sw), "padding": pad, "dilation": (1, 1), "clamp": clamp}
    g = one_op_graph("conv2d", [x, wt, bt], y, attrs)
    return Case(f"pairs_shaped{k}{'_w8' if optimize == 'size' else ''}", g, [_samples(x.shape, rng)],
                optimize=optimize)


KINDS = ("right", "dead", "zero", "flush", "left", "dead_big", "dead_flush")


def _channel_quantization(rng, c_out: int, s_in: float, out_scale: float, relu: bool, max_left: int):
    """Per-channel weight scales and biases as trained models have them (ref/per_channel.py's three forms): right
    shifts; dead channels (zero weights, int32 biases near or past 2^30, shifts of 20-31 or a multiplier that
    flushes to 0); live channels whose multiplier flushes to 0; zero shifts and left shifts (multipliers 0.5-8,
    under a ReLU only). Returns the scales, which channels have zero weights, which small ones, and the biases."""
    scales, zero, small = [], np.zeros(c_out, bool), np.zeros(c_out, bool)
    bias = rng.integers(-3000, 3000, size=c_out)
    for c in range(c_out):
        kind = KINDS[c % len(KINDS)]
        if kind in ("zero", "left") and not relu:
            kind = "right"
        if kind == "left" and max_left == 0:
            kind = "zero"
        sign = 1 if rng.random() < 0.5 else -1
        if kind == "right":
            m = 10 ** rng.uniform(-4, -1.5)
        elif kind in ("zero", "left"):
            m = rng.uniform(0.5, 1.0) * (2 ** int(rng.integers(1, max_left + 1)) if kind == "left" else 1)
            small[c] = True
            bias[c] = rng.integers(-40, 40)
        elif kind == "dead":  # |bias| < 2^30, v = bias * m of 2-64, shift beyond 22
            m = 2.0 ** rng.uniform(-30, -24)
            bias[c] = sign * (2**30 - int(rng.integers(1, 5000)))
        elif kind == "dead_big":  # |bias| >= 2^30, v of 128-1024: saturates
            m = 2.0 ** rng.uniform(-23, -20)
            bias[c] = sign * (2**30 + int(rng.integers(0, 2**20))) if sign > 0 else -(2**31) + int(rng.integers(0, 99))
        else:  # dead_flush, flush: the multiplier flushes to 0
            m = 1e-14
            bias[c] = sign * int(rng.integers(0, 2**31 - 1))
        zero[c] = kind.startswith("dead")
        scales.append(float(np.float32(out_scale / s_in * m)))
    return scales, zero, small, bias.astype(np.int32)


def _samples_near(shape, rng, zp: int) -> np.ndarray:
    """Half the samples within 6 of the zero point (accumulators small enough for a left shift's outputs not to
    saturate, exact halves), half anywhere in int8."""
    x = _samples(shape, rng).astype(np.int64)
    near = np.clip(zp + rng.integers(-6, 7, size=x.shape), -128, 127)
    x[: len(x) // 2 + 1] = near[: len(x) // 2 + 1]
    return x.astype(np.int8)


def quant_case(k: int, op: str = "conv2d", optimize: str = "speed") -> Case:
    """conv2d, conv2d_add (a residual add fused) or fully_connected whose channels take every fast-requantization
    form: ReLU layers (zero and left shifts) with the output zero point at -128 (the in-register requantization)
    or above it (the clamped scalar path), layers without a clamp (constant channels and right shifts only);
    out_c not a multiple of the kernels' groups."""
    rng = np.random.default_rng(9600 + k + 100 * (op != "conv2d") + 1000 * (optimize == "size"))
    relu = k % 2 == 0
    fc = op == "fully_connected"
    c_in = 8 * int(rng.integers(1, 4)) if fc else int(rng.choice([3, 4, 8]))
    c_out = c_in if op == "conv2d_add" else int(rng.choice([9, 14, 19]))
    if op == "conv2d_add":
        c_in = c_out = 12
    kh, kw = (1, 1) if fc else [(1, 1), (3, 3)][k % 2 if k < 4 else int(rng.integers(0, 2))]
    n, h, w = (2, 1, 1) if fc else (1, int(rng.integers(3, 6)), int(rng.integers(3, 6)))
    pad = (kh // 2,) * 4
    s_in, z_in = float(np.float32(10 ** rng.uniform(-2.5, -0.5))), int(rng.integers(-128, 100))
    out_scale = float(np.float32(s_in * 10 ** rng.uniform(-0.5, 0.5)))
    zp = -128 if k % 4 < 2 and relu else (-10 if relu else int(rng.integers(-40, 40)))
    max_left = 0 if optimize == "size" else 3
    scales, zero, small, bias = _channel_quantization(rng, c_out, s_in, out_scale, relu, max_left)
    shape = (c_out, c_in) if fc else (c_out, kh, kw, c_in)
    weights = rng.integers(-127, 128, size=shape)
    weights[small] = rng.integers(-2, 3, size=(int(small.sum()), *shape[1:]))
    weights[zero] = 0
    x = act("x", (n, c_in) if fc else (n, h, w, c_in), s_in, z_in)
    wt = Tensor("w", shape, "int8", data=weights.astype(np.int8), qparams=QParams(tuple(scales), (0,) * c_out, 0))
    bt = Tensor("b", (c_out,), "int32", data=bias, qparams=QParams(tuple(s_in * s for s in scales), (0,) * c_out, 0))
    y = act("y", (n, c_out) if fc else (n, h, w, c_out), out_scale, zp)
    clamp = RELU if relu else None
    attrs = {"clamp": clamp} if fc else {"stride": (1, 1), "padding": pad, "dilation": (1, 1), "clamp": clamp}
    g = one_op_graph("fully_connected" if fc else "conv2d", [x, wt, bt], y, attrs)
    samples = [_samples_near(x.shape, rng, z_in)]
    if op == "conv2d_add":
        from tinyaot.passes.fuse_residual import fuse_residual_adds

        sk = act("s", y.shape, float(np.float32(out_scale * 1.3)), int(rng.integers(-20, 20)))
        z = act("z", y.shape, float(np.float32(out_scale * 1.7)), int(rng.integers(-20, 20)))
        g.add_tensor(sk)
        g.add_tensor(z)
        g.inputs.append("s")
        g.nodes.append(Node("add", "add_0", ["s", "y"], ["z"], {}))
        g.outputs = ["z"]
        g = fuse_residual_adds(g)
        assert g is not None and [nd.op for nd in g.nodes] == ["conv2d_add"]
        samples.append(_samples(sk.shape, rng))
    return Case(f"quant_{op}_{optimize}{k}", g, samples, optimize=optimize)


SHAPED = [shaped_case(0, (3, 3), 3, 16, (6, 5), (1, 1), (1, 1, 1, 1)),
          shaped_case(1, (10, 4), 1, 8, (13, 6), (2, 2), (4, 5, 1, 1)),
          shaped_case(2, (1, 1), 32, 12, (3, 3), (1, 1), (0, 0, 0, 0)),
          shaped_case(3, (3, 3), 64, 8, (4, 3), (1, 1), (1, 1, 1, 1))]
# First convs of 1-3 channels (the stem window order: 3x3x3 in 28 taps where the microkernel is called straight,
# else 32; leftovers of 1, 2, 3 bytes a row; 7 rows of one leftover), and the 8- and 16-channel pointwise and 3x3
# convs of VWW and ResNet-8, in both modes, under a ReLU (the clamped path) and without.
STEMS = [shaped_case(10 + i, *geometry, clamp=clamp, optimize=mode)
         for i, (geometry, clamp, mode) in enumerate([
             (((3, 3), 3, 8, (9, 9), (2, 2), (0, 1, 0, 1)), None, "speed"),  # VWW conv2d_0
             (((3, 3), 3, 8, (9, 9), (2, 2), (0, 1, 0, 1)), None, "size"),
             (((3, 3), 3, 16, (7, 8), (1, 1), (1, 1, 1, 1)), RELU, "speed"),  # ResNet-8 conv2d_0, clamped
             (((3, 3), 3, 12, (7, 8), (1, 1), (1, 1, 1, 1)), None, "size"),
             (((3, 3), 3, 6, (6, 7), (1, 1), (1, 1, 1, 1)), None, "speed"),  # out_c a tail: 32 taps
             (((3, 3), 1, 8, (6, 7), (2, 1), (1, 1, 1, 1)), None, "speed"),  # no whole quad in a row
             (((3, 3), 2, 8, (7, 6), (1, 2), (1, 1, 0, 1)), None, "speed"),
             (((5, 5), 3, 8, (8, 9), (2, 2), (2, 2, 2, 2)), None, "speed"),
             (((7, 7), 3, 8, (11, 10), (2, 2), (3, 3, 3, 3)), None, "speed"),
             (((10, 4), 1, 16, (14, 7), (2, 1), (4, 5, 1, 2)), None, "size"),  # KWS conv2d_0
             (((1, 1), 8, 16, (5, 7), (1, 1), (0, 0, 0, 0)), None, "speed"),  # VWW conv2d_2
             (((1, 1), 8, 16, (5, 7), (1, 1), (0, 0, 0, 0)), None, "size"),
             (((1, 1), 16, 32, (4, 5), (1, 1), (0, 0, 0, 0)), RELU, "speed"),  # VWW conv2d_4
             (((3, 3), 16, 16, (6, 7), (1, 1), (1, 1, 1, 1)), None, "speed"),  # ResNet-8 conv2d_1
             (((3, 3), 16, 16, (6, 7), (1, 1), (1, 1, 1, 1)), RELU, "size"),
             (((3, 3), 8, 16, (7, 6), (2, 2), (0, 1, 0, 1)), None, "speed")])]
CONVS = [conv_case(k) for k in range(32)] + SHAPED + [c for c in STEMS if c.optimize == "speed"]
RESIDUAL = [conv_case(k, residual=True) for k in range(6)]
FCS = [fc_case(k) for k in range(12)] + [fc_case(k, optimize="size") for k in range(12, 20)]
SIZE = ([conv_case(k, optimize="size") for k in range(0, 32, 2)] + [conv_case(k, True, "size") for k in range(3)]
        + [c for c in STEMS if c.optimize == "size"])
QUANT = ([quant_case(k) for k in range(8)] + [quant_case(k, optimize="size") for k in range(4)]
         + [quant_case(k, "conv2d_add") for k in range(2)] + [quant_case(k, "conv2d_add", "size") for k in range(2)]
         + [quant_case(k, "fully_connected") for k in range(4)]
         + [quant_case(k, "fully_connected", "size") for k in range(2)])
CASES = CONVS + RESIDUAL + FCS + SIZE + QUANT


def test_the_speed_plan_gives_every_fully_connected_case_the_wide_kernel():
    for case in FCS:
        (choice,) = case.plan.kernels
        size = case.optimize == "size"
        assert choice.variant == ("wide_w8" if size else "wide") and choice.work == ""
        assert not any(b.scratch for b in case.plan.buffers)
        c = generate_c(case.graph, case.plan, case.name).files[f"{case.name}.c"]
        assert ("tinyaot_fully_connected_wide_w8_s8(" if size else "tinyaot_fully_connected_wide_s8(") in c
    (plain,) = fc_case(0, c_in=12).plan.kernels  # not a multiple of 8: the plain kernel, and the plan says why
    assert plain.plain and dict(plain.rejected)["wide"] == "12 input features; the wide kernels read whole groups of 8"


def test_the_speed_plan_gives_every_case_the_pairs_kernel_and_its_work_buffer():
    for case in CONVS + RESIDUAL + SIZE:
        (choice,) = case.plan.kernels
        size = any(case is c for c in SIZE)
        assert choice.variant == ("pairs_w8" if size else "pairs")
        work = case.plan.buffer_of_name(choice.work)
        _, kh, kw, in_c = case.graph.tensor(case.graph.nodes[0].inputs[1]).shape
        assert work.scratch and work.nbytes == choice.work_bytes and choice.work_bytes >= 5 * taps_padded(kh, kw, in_c)
        c = generate_c(case.graph, case.plan, case.name).files[f"{case.name}.c"]
        assert ("_pairs_w8_s8(" if size else "_pairs_s8(") in c, case.name
    shapes = {(c.graph.nodes[0].attrs["padding"] != (0, 0, 0, 0), c.graph.tensor(c.graph.inputs[0]).shape[3] % 4 == 0,
               c.graph.tensor(c.graph.outputs[0]).shape[1] * c.graph.tensor(c.graph.outputs[0]).shape[2] % 2)
              for c in CONVS + RESIDUAL}
    assert all({s[i] for s in shapes} == {0, 1} for i in range(3)) and len(shapes) >= 7  # padded or not, patch
    # or direct windows, even or odd pixel counts: each met, and nearly every combination


def test_stems_take_their_window_order_and_28_taps_where_the_microkernel_is_called_straight():
    """ref/conv2d_pairs_s8.py pairs_taps, which the C's pairs_taps mirrors: an RGB 3x3 stem in speed mode whose
    channels are whole groups in the full int8 range pads its 27 taps to 28; clamped, a channel tail or size mode
    keep 32; rows of whole quads have no stem order."""
    from tinyaot.ref.conv2d_pairs_s8 import pairs_taps, window_order
    from tinyaot.ref.conv2d_s8 import prepare

    taps = {}
    for case in STEMS:
        p = prepare(case.graph.nodes[0], case.graph)
        taps[case.name] = (pairs_taps(p, case.optimize == "size"), window_order(p) is not None)
    assert taps["pairs_shaped10"] == (28, True) and taps["pairs_shaped11_w8"] == (32, True)
    assert taps["pairs_shaped12"] == (32, True) and taps["pairs_shaped14"] == (32, True)  # ReLU; 6 channels
    assert taps["pairs_shaped15"] == (16, True) and taps["pairs_shaped18"] == (152, True)  # 3x3x1; 7x7x3
    assert taps["pairs_shaped19_w8"] == (40, False) and taps["pairs_shaped20"] == (8, False)  # 10x4x1; 1x1x8
    order = window_order(prepare(STEMS[0].graph.nodes[0], STEMS[0].graph))
    assert order.tolist() == [*range(8), *range(9, 17), *range(18, 26), 8, 17, 26]


def test_every_quantization_case_takes_the_fast_kernel_with_its_forms():
    """The QUANT cases' layers would all have run the plain kernel before (a shift out of 1-22 or an accumulator
    bound past 2^30 in some channel); now each takes its mode's fast kernel, and the record notes the forms."""
    from tinyaot.ref.conv2d_s8 import prepare as conv_prepare
    from tinyaot.ref.fully_connected_s8 import prepare as fc_prepare
    from tinyaot.ref.per_channel import FAST_MAX_RIGHT

    for case in QUANT:
        (choice,) = case.plan.kernels
        node = case.graph.nodes[0]
        fast = {"speed": ("pairs", "wide"), "size": ("pairs_w8", "wide_w8")}[case.optimize]
        assert choice.variant == fast[node.op == "fully_connected"], (case.name, choice.rejected)
        assert "constant channels" in choice.note, case.name
        relu = "zero or left shift" in choice.note
        assert relu == (node.attrs.get("clamp") is not None or node.attrs.get("conv_clamp") is not None), case.name
        if node.op == "conv2d_add":
            continue
        p = (fc_prepare if node.op == "fully_connected" else conv_prepare)(node, case.graph)
        assert (p.shift >= 0).any() if relu else (p.shift < -FAST_MAX_RIGHT).any()
    sparse = {(c.optimize, "_pairs_sparse" in generate_c(c.graph, c.plan, c.name).files[f"{c.name}.c"])
              for c in QUANT if c.graph.nodes[0].op == "conv2d"}
    assert sparse == {("speed", True), ("speed", False), ("size", True), ("size", False)}  # skipped or not


def test_constant_channels_are_skipped_where_that_pays():
    """conv2d_pairs_s8.skipped_channels: VWW's 4 dead channels of 64 (64 taps) stay (placing 60 live ones costs
    more than their MACs), 71 of 128 (128 taps) are skipped; the work buffer then holds the live channels' pair."""
    from dataclasses import replace

    from tinyaot.ref.conv2d_pairs_s8 import constant_outputs, skipped_channels, work_bytes
    from tinyaot.ref.conv2d_s8 import conv2d_s8, prepare

    for c_out, taps, dead, skipped in ((64, 64, 4, False), (128, 128, 71, True), (16, 8, 8, True), (8, 8, 8, False)):
        rng = np.random.default_rng(c_out + dead)
        x = act("x", (1, 2, 2, taps), 0.02, -128)
        weights = rng.integers(-127, 128, size=(c_out, 1, 1, taps)).astype(np.int8)
        weights[rng.permutation(c_out)[:dead]] = 0
        wt = Tensor("w", weights.shape, "int8", data=weights, qparams=QParams((0.01,) * c_out, (0,) * c_out, 0))
        bias = rng.integers(-(2**31), 2**31 - 1, size=c_out).astype(np.int32)
        bt = Tensor("b", (c_out,), "int32", data=bias, qparams=QParams((0.0002,) * c_out, (0,) * c_out, 0))
        g = one_op_graph("conv2d", [x, wt, bt], act("y", (1, 2, 2, c_out), 3.0, -128),
                         {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "clamp": RELU})
        skip = skipped_channels(g.nodes[0], g)
        assert skip.any() == skipped and (skip.sum() == dead if skipped else True), (c_out, dead)
        assert work_bytes(g.nodes[0], g) == 5 * taps + (2 * (c_out - dead) if skipped else 0)
        p = prepare(g.nodes[0], g)
        dead_rows = (weights.reshape(c_out, -1) == 0).all(axis=1)
        x0 = np.full((1, 1, 1, taps), -128, np.int8)  # every input at the zero point: the sum is the bias alone
        one = conv2d_s8(x0, replace(p, in_h=1, in_w=1, out_h=1, out_w=1)).reshape(-1)
        np.testing.assert_array_equal(constant_outputs(p)[dead_rows], one[dead_rows])


def test_memory_mode_keeps_the_plain_int8_kernels():
    from tinyaot.backend import plan

    case = CONVS[1]
    plain = plan(case.graph, optimize="memory")
    assert plain.chosen == () and "_pairs" not in generate_c(case.graph, plain, "m").files["m.c"]
    why = dict(plain.kernels[0].rejected)
    assert why["pairs"] == "optimize='memory' does not choose it (it is for speed)" and "ring" in why


def test_pairs_kernel_needs_right_shifts_and_word_alignment():
    from tinyaot.backend import plan

    case = conv_case(1)
    g = case.graph
    y = g.tensor("y")
    g.tensors["y"] = Tensor("y", y.shape, "int8", qparams=QParams.per_tensor(1e-6, 0))  # multiplier > 1: left shift
    left = plan(g, optimize="speed")
    assert left.chosen == () and "left shift" in dict(left.kernels[0].rejected)["pairs"]
    unaligned = plan(conv_case(1).graph, optimize="speed", alignment=2)
    assert unaligned.chosen == () and "2-byte aligned" in dict(unaligned.kernels[0].rejected)["pairs"]


def test_the_kernel_report_says_what_runs_each_layer_and_why_not_the_others():
    """The plan keeps every variant's reason (plan/choice.py), so a report states it rather than guessing."""
    from tinyaot.report.kernels import kernel_report

    case = CONVS[1]
    rep = kernel_report(case.graph, case.plan, case.name)
    (row,) = rep.rows
    assert (row.variant, row.c_kernel, row.weights) == ("pairs", "tinyaot_conv2d_pairs_s8", "int16")
    assert row.work_bytes == case.plan.kernels[0].work_bytes > 0
    assert dict(row.rejected) == {"pairs_w8": "optimize='speed' does not choose it (it is for size)",
                                  "ring": "a variant chosen before placement runs it"}
    assert "pairs_w8: optimize='speed' does not choose it" in str(rep)
    assert rep.to_dict()["layers"][0]["rejected"]["ring"] == "a variant chosen before placement runs it"


def test_the_plan_says_why_a_layer_runs_the_plain_kernel_and_what_a_fast_one_took():
    """report/kernels.py choice_reason, which `tinyaot profile` prints per op: the fast variant's reason for a
    plain layer (not the other mode's variant, not the ring), the fast variant's note otherwise."""
    from tinyaot.backend import plan
    from tinyaot.report.kernels import choice_reason, kernel_report
    from tinyaot.report.profile import OpProfile, ProfileReport

    case = QUANT[0]
    (choice,) = case.plan.kernels
    assert choice_reason("conv2d", choice) == choice.note
    assert choice.note == "10 constant channels (zero weights or multiplier 0); 6 channels with a zero or left shift"
    sparse = QUANT[1].plan.kernels[0].note  # a layer whose constant channels the kernel skips
    assert sparse.startswith("10 constant channels skipped (zero weights or multiplier 0)"), sparse
    rep = kernel_report(case.graph, case.plan, case.name)
    assert rep.rows[0].note == choice.note and rep.to_dict()["layers"][0]["note"] == choice.note
    g = conv_case(1).graph
    y = g.tensor("y")
    s_max = g.tensor("x").qparams.scale[0] * max(g.tensor("w").qparams.scale)
    g.tensors["y"] = Tensor("y", y.shape, "int8", qparams=QParams.per_tensor(1.5 * s_max, 0))  # multiplier 2/3
    refused = plan(g, optimize="speed").kernels[0]
    why = choice_reason("conv2d", refused)
    assert refused.plain and why.startswith("pairs: ") and "pairs_w8" not in why and "ring" not in why
    assert "cannot take the fast requantization" in why and "no clamp" not in why and "zero point" in why
    prof = ProfileReport("m", 10, (OpProfile(0, "conv2d_0", "conv2d", 8, 10, kernel="tinyaot_conv2d_s8", why=why),), 0)
    assert "why" in str(prof) and prof.to_dict()["ops"][0]["why"] == why
    assert "why" not in str(ProfileReport("m", 10, (OpProfile(0, "c", "conv2d", 8, 10),), 0))


@pytest.mark.host
def test_pairs_reference_equals_host():
    got = run_host(CASES)
    bad = mismatches(CASES, got)
    assert not bad, "host C differs from the NumPy reference: " + "; ".join(bad[:5])
    values = np.concatenate([o.reshape(-1) for o in got])
    assert len(np.unique(values)) > 200


@pytest.mark.m33
@pytest.mark.parametrize("dsp", [True, False], ids=["dsp", "portable"])
def test_pairs_reference_equals_m33(tmp_path, dsp):
    got, _ = run_m33_suite(CASES, tmp_path / "suite", dsp=dsp)
    bad = mismatches(CASES, got)
    assert not bad, f"Cortex-M33 ({'DSP' if dsp else 'portable'} path) differs from the NumPy reference: " + \
        "; ".join(bad[:5])


@pytest.mark.host
def test_fast_requantization_equals_tflm_double_rounding(tmp_path):
    """tinyaot_requantize_right == tinyaot_requantize_nonneg (tested against TFLM's definition in
    test_fixedpoint.py) for |x| < 2^30 and right shifts 1..31: random values plus exact halves and zeros."""
    import ctypes

    lib = fixedpoint_library(tmp_path, "int check(const int32_t *x, const int32_t *m, const int32_t *s, int n) {\n"
                             "    int i;\n    for (i = 0; i < n; ++i) {\n"
                             "        if (tinyaot_requantize_right(x[i], m[i], -s[i])\n"
                             "            != tinyaot_requantize_nonneg(x[i], m[i], s[i])) { return i; }\n"
                             "    }\n    return -1;\n}\n")
    rng = np.random.default_rng(5)
    n = 400_000
    s = -rng.integers(1, 32, size=n).astype(np.int32)
    m = rng.integers(2**30, 2**31, size=n).astype(np.int32)
    x = rng.integers(-(2**30) + 1, 2**30, size=n).astype(np.int32)
    small = rng.random(n) < 0.5
    x[small] = rng.integers(-3000, 3000, size=int(small.sum()))
    x[:1000] = 0
    half = rng.random(n) < 0.2  # x * m lands on an exact half of the final shift
    x[half] = np.sign(rng.standard_normal(int(half.sum()))).astype(np.int32) * (1 << (-s[half] - 1)).astype(np.int32)
    m[half] = 2**30
    ptr = ctypes.POINTER(ctypes.c_int32)
    lib.check.argtypes = [ptr, ptr, ptr, ctypes.c_int]
    lib.check.restype = ctypes.c_int
    arrays = [np.ascontiguousarray(a) for a in (x, m, s)]
    first = lib.check(*(a.ctypes.data_as(ptr) for a in arrays), n)
    assert first == -1, f"differs at x={x[first]}, multiplier={m[first]}, shift={s[first]}"
