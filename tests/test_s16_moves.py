"""16x8 (int16 activation) PAD / PADV2, CONCATENATION, TRANSPOSE and RESIZE_NEAREST_NEIGHBOR bit-exact with
TensorFlow Lite Micro (and int8 PADV2, imported alongside).

Random one-op .tflite graphs compiled by tinyaot equal TFLM's int16 kernels on every output byte, on the reference
and the host C; one chain of the four kernels runs on the emulated Cortex-M33. What TFLM refuses in int16 (MIRROR_PAD,
int16 inputs at another scale than the concatenation's output) is refused with the operator named. From PyTorch, a
mixed-precision model whose int16 layer feeds F.pad (zeros and reflect), nearest upsampling, a flatten's transpose
and torch.cat runs their 16x8 kernels, the same bytes on the reference, host C and the Cortex-M33.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")
from s16_suite import assert_matches_tflm, int16_samples, scale16, t8, t16  # noqa: E402

import tinyaot  # noqa: E402
from tinyaot.errors import TinyAOTError  # noqa: E402
from tinyaot.ir.ops import OPS, kernel_ref  # noqa: E402
from tinyaot.ref import concat_s16  # noqa: E402

CASES, SAMPLES = 50, 3
HOST_EVERY = 5  # every case on the reference, every fifth also through gcc (a C build per case is the slow part)


def _i32(values) -> tb.T:
    values = np.asarray(values, dtype=np.int32)
    return tb.T(values.shape, "int32", data=values)


def _samples(shape, rng) -> np.ndarray:
    return int16_samples(shape, SAMPLES, rng, spread=int(rng.choice([300, 32767])))


def pad_case(rng) -> tuple[tb.Model, list[np.ndarray]]:
    """PAD, or PADV2 with constant_values 0 (real 0 in int16, what PAD pads with)."""
    shape = (1, int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 6)))
    t, b, left, r = (int(v) for v in rng.integers(0, 4, size=4))
    out = (shape[0], shape[1] + t + b, shape[2] + left + r, shape[3])
    s = scale16(rng)
    tensors = [t16(shape, s), _i32([[0, 0], [t, b], [left, r], [0, 0]]), t16(out, s)]
    if rng.random() < 0.3:
        tensors.append(tb.T((1,), "int16", data=np.zeros(1, np.int16), scale=s, zero_point=0))
        op = tb.Op("PADV2", [0, 1, 3], [2])
    else:
        op = tb.Op("PAD", [0, 1], [2])
    return tb.Model(tensors, [op], [0], [2]), [_samples(shape, rng)]


def concat_case(rng) -> tuple[tb.Model, list[np.ndarray]]:
    """2 to 4 inputs of rank 2 to 4 at the output's scale, along any axis but the batch (sometimes written
    negative)."""
    rank = int(rng.integers(2, 5))
    base = [1, *(int(d) for d in rng.integers(1, 5, size=rank - 1))]
    axis = int(rng.integers(1, rank))
    shapes = []
    for _ in range(int(rng.integers(2, 5))):
        shape = list(base)
        shape[axis] = int(rng.integers(1, 5))
        shapes.append(tuple(shape))
    out = list(base)
    out[axis] = sum(sh[axis] for sh in shapes)
    k, s = len(shapes), scale16(rng)
    written = axis - rank if rng.random() < 0.3 else axis
    m = tb.Model([*(t16(sh, s) for sh in shapes), t16(out, s)],
                 [tb.Op("CONCATENATION", list(range(k)), [k], ("ConcatenationOptions", {"Axis": written}))],
                 list(range(k)), [k])
    return m, [_samples(sh, rng) for sh in shapes]


def transpose_case(rng) -> tuple[tb.Model, list[np.ndarray]]:
    rank = int(rng.integers(2, 5))
    shape = (1, *(int(d) for d in rng.integers(1, 6, size=rank - 1)))
    perm = tuple(int(a) for a in rng.permutation(rank))
    out = tuple(shape[a] for a in perm)
    s = scale16(rng)
    m = tb.Model([t16(shape, s), _i32(perm), t16(out, s)], [tb.Op("TRANSPOSE", [0, 1], [2])], [0], [2])
    return m, [_samples(shape, rng)]


def resize_case(rng) -> tuple[tb.Model, list[np.ndarray]]:
    """Up- and downsampling with TFLite's flags: none, align_corners or half_pixel_centers."""
    n, h, w, c = 1, int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 6))
    oh, ow = int(rng.integers(1, 13)), int(rng.integers(1, 13))
    corners, half = [(False, False), (True, False), (False, True)][int(rng.integers(0, 3))]
    s = scale16(rng)
    opts = ("ResizeNearestNeighborOptions", {"AlignCorners": corners, "HalfPixelCenters": half})
    m = tb.Model([t16((n, h, w, c), s), _i32([oh, ow]), t16((n, oh, ow, c), s)],
                 [tb.Op("RESIZE_NEAREST_NEIGHBOR", [0, 1], [2], opts)], [0], [2])
    return m, [_samples((n, h, w, c), rng)]


CASE_BUILDERS = {"PAD": pad_case, "CONCATENATION": concat_case, "TRANSPOSE": transpose_case,
                 "RESIZE_NEAREST_NEIGHBOR": resize_case}


@pytest.mark.host
@pytest.mark.parametrize("code", sorted(CASE_BUILDERS))
def test_random_int16_moves_equal_tflm(code):
    rng = np.random.default_rng(190 + sorted(CASE_BUILDERS).index(code))
    for k in range(CASES):
        m, xs = CASE_BUILDERS[code](rng)
        cm = assert_matches_tflm(m, xs, engines=("reference", "host") if k % HOST_EVERY == 0 else ("reference",))
        (node,) = cm.graph.nodes  # one op, run by its 16x8 kernel
        assert OPS[node.op].s16 and kernel_ref(node, cm.graph) == OPS[node.op].s16


@pytest.mark.m33
def test_a_chain_of_the_int16_moves_runs_on_the_m33():
    """PAD -> RESIZE_NEAREST_NEIGHBOR -> CONCATENATION (with the padded tensor, resized back to its size) ->
    TRANSPOSE on the emulated Cortex-M33: odd channel counts, so rows are not word multiples."""
    s = 3e-4
    tensors = [t16((1, 3, 4, 3), s), _i32([[0, 0], [1, 0], [0, 2], [0, 0]]), t16((1, 4, 6, 3), s),
               _i32([8, 12]), t16((1, 8, 12, 3), s), _i32([4, 6]), t16((1, 4, 6, 3), s), t16((1, 4, 6, 6), s),
               _i32([0, 3, 1, 2]), t16((1, 6, 4, 6), s)]
    ops = [tb.Op("PAD", [0, 1], [2]),
           tb.Op("RESIZE_NEAREST_NEIGHBOR", [2, 3], [4], ("ResizeNearestNeighborOptions", {"HalfPixelCenters": True})),
           tb.Op("RESIZE_NEAREST_NEIGHBOR", [4, 5], [6], ("ResizeNearestNeighborOptions", {"AlignCorners": True})),
           tb.Op("CONCATENATION", [2, 6], [7], ("ConcatenationOptions", {"Axis": 3})),
           tb.Op("TRANSPOSE", [7, 8], [9])]
    x = int16_samples((1, 3, 4, 3), 3, np.random.default_rng(195))
    cm = assert_matches_tflm(tb.Model(tensors, ops, [0], [9]), [x], engines=("reference", "m33"))
    assert cm.last_m33.instructions > 0
    assert {n.op for n in cm.graph.nodes} == {"pad", "resize_nearest", "concat", "transpose"}


def _compile_error(m: tb.Model) -> str:
    with pytest.raises(TinyAOTError) as exc:
        tinyaot.compile(tb.build(m))
    return str(exc.value)


def test_int16_mirror_pad_is_refused():
    """TFLM's MIRROR_PAD takes float32 and int8 only."""
    m = tb.Model([t16((1, 3, 3, 2), 1e-3), _i32([[0, 0], [1, 1], [1, 1], [0, 0]]), t16((1, 5, 5, 2), 1e-3)],
                 [tb.Op("MIRROR_PAD", [0, 1], [2], ("MirrorPadOptions", {"Mode": 0}))], [0], [2])
    assert "operator 0 (MIRROR_PAD) on int16" in _compile_error(m)


def test_int16_concatenation_at_another_scale_is_refused():
    """TFLM copies int16 inputs without rescaling: an input at another scale than the output's is refused."""
    m = tb.Model([t16((1, 2, 3), 1e-3), t16((1, 2, 3), 2e-3), t16((1, 2, 6), 1e-3)],
                 [tb.Op("CONCATENATION", [0, 1], [2], ("ConcatenationOptions", {"Axis": 2}))], [0, 1], [2])
    msg = _compile_error(m)
    assert "operator 0 (CONCATENATION)" in msg and "copies values without rescaling" in msg


def test_concatenation_of_int8_and_int16_is_refused():
    m = tb.Model([t16((1, 2, 3), 1e-3), t8((1, 2, 3), 0.1, 0), t16((1, 2, 6), 1e-3)],
                 [tb.Op("CONCATENATION", [0, 1], [2], ("ConcatenationOptions", {"Axis": 2}))], [0, 1], [2])
    assert "operator 0 (CONCATENATION) mixes int8 and int16" in _compile_error(m)


def test_int8_padv2_with_the_zero_point_equals_tflm():
    """PADV2 is imported for int8 too: its constant_values, at the input's qparams, is the zero point."""
    qp = (0.05, -7)
    m = tb.Model([t8((1, 2, 3, 2), *qp), _i32([[0, 0], [2, 0], [1, 3], [0, 0]]), t8((1, 4, 7, 2), *qp),
                  tb.T((1,), "int8", data=np.array([qp[1]], np.int8), scale=qp[0], zero_point=qp[1])],
                 [tb.Op("PADV2", [0, 1, 3], [2])], [0], [2])
    x = np.random.default_rng(196).integers(-128, 128, size=(3, 1, 2, 3, 2)).astype(np.int8)
    assert_matches_tflm(m, [x])


def test_padv2_with_another_pad_value_is_refused():
    m = tb.Model([t16((1, 2, 2, 1), 1e-3), _i32([[0, 0], [1, 1], [1, 1], [0, 0]]), t16((1, 4, 4, 1), 1e-3),
                  tb.T((1,), "int16", data=np.array([7], np.int16), scale=1e-3, zero_point=0)],
                 [tb.Op("PADV2", [0, 1, 3], [2])], [0], [2])
    assert "operator 0 (PADV2) pads with [7]" in _compile_error(m)


def test_int16_transpose_that_rescales_is_refused():
    m = tb.Model([t16((1, 2, 3), 1e-3), _i32([0, 2, 1]), t16((1, 3, 2), 2e-3)], [tb.Op("TRANSPOSE", [0, 1], [2])],
                 [0], [2])
    assert "operator 0 (TRANSPOSE) changes scale" in _compile_error(m)


@pytest.fixture(scope="module")
def mixed():
    """An int16 conv (chosen) feeds F.pad (zeros and reflect), nearest upsampling, a flatten (a transpose to NCHW
    order) and torch.cat, which also reads an int8 conv's output (its exact int16 twin, at another scale). The
    compiled model and six int8 inputs."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Moves(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 5, 3)
            self.side = nn.Conv2d(3, 2, 3)
            self.head = nn.Linear(2 * 5 * 8 * 8 + 2 * 2 * 2, 4)

        def forward(self, x):
            y = self.conv(x)
            a = F.interpolate(F.pad(y, (1, 1, 1, 1)), scale_factor=2, mode="nearest")
            b = F.interpolate(F.pad(y, (1, 1, 1, 1), mode="reflect"), scale_factor=2, mode="nearest")
            return self.head(torch.cat([a.flatten(1), b.flatten(1), self.side(x).flatten(1)], 1))

    torch.manual_seed(0)
    smooth = F.interpolate(torch.randn(70, 3, 2, 2), size=(4, 4), mode="bilinear")  # image-like, not noise
    cal, test = smooth[:64], smooth[64:]
    cm = tinyaot.compile(Moves().eval(), cal[:1], calibration=cal, int16=["conv"])
    return cm, cm.quantize_input(cm.to_model_layout(test.numpy()))


@pytest.mark.host
def test_mixed_precision_moves_run_their_16x8_kernels(mixed):
    """Each of the moves reads int16 and runs its 16x8 kernel; the cat copies the int16 branches and requantizes
    the int8 conv's twin; host C equals the reference on every byte."""
    cm, xq = mixed
    g = cm.graph
    ran16 = {n.op for n in g.nodes if OPS[n.op].s16 and kernel_ref(n, g) == OPS[n.op].s16}
    assert {"pad", "resize_nearest", "transpose", "concat"} <= ran16
    modes = {n.attrs.get("mode") or "constant" for n in g.nodes if n.op == "pad"}
    assert modes == {"constant", "reflect"}
    (cat,) = (n for n in g.nodes if n.op == "concat")
    p = concat_s16.prepare(cat, g)
    assert p.copies(0) and p.copies(1) and not p.copies(2)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), cm.run(xq, engine="reference"))


@pytest.mark.m33
def test_mixed_precision_moves_run_on_the_m33(mixed):
    """The same model on the emulated Cortex-M33: the reflect pad and the concat's requantized input too."""
    cm, xq = mixed
    np.testing.assert_array_equal(cm.run(xq[:2], engine="m33"), cm.run(xq[:2], engine="reference"))
    assert cm.last_m33.instructions > 0
