"""TFLite's operators that move values (STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK, PACK, SQUEEZE, EXPAND_DIMS,
DEPTH_TO_SPACE, SPACE_TO_DEPTH) against TFLite Micro: small graphs, every output byte equal to TFLM's on seeded
int8 (and, where TFLM has them, int16) inputs, on the reference and host C; a float model's graph equal to TFLM's
float kernels; and what TFLM refuses refused naming its rule (each such file also refused by TFLM).

They become the IR's slice (one per output of a split), concat and views, so each case also says which nodes the
import made: a slice of a whole tensor is a view, an unread split output gets no node.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from tflite_builder import Model, Op, T, build, run_tflm_outputs, tflm_refuses

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite import from_tflite, from_tflite_float
from tinyaot.quantize.float_eval import evaluate

SAMPLES = 6
QP = {"int8": (0.05, -7), "int16": (0.001, 0), "float32": (None, 0)}


def _tflm():
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")


def _act(shape, dtype: str, name: str = "") -> T:
    scale, zp = QP[dtype]
    return T(tuple(shape), dtype, scale=scale, zero_point=zp, name=name)


def _i32(values, dtype: str = "int32") -> T:
    values = np.asarray(values, dtype=dtype)
    return T(values.shape, dtype, data=values)


def strided_slice(dtype: str, shape, begin, end, strides, masks=(0, 0, 0), out=None, index_type="int32") -> Model:
    """x -> STRIDED_SLICE (begin, end, strides, begin_mask / end_mask / shrink_axis_mask) -> y."""
    out = out if out is not None else _shape_of(shape, begin, end, strides, masks)
    tensors = [_act(shape, dtype), _i32(begin, index_type), _i32(end, index_type), _i32(strides, index_type),
               _act(out, dtype)]
    opts = ("StridedSliceOptions", {"BeginMask": masks[0], "EndMask": masks[1], "ShrinkAxisMask": masks[2]})
    return Model(tensors, [Op("STRIDED_SLICE", [0, 1, 2, 3], [4], opts)], [0], [4])


def _shape_of(shape, begin, end, strides, masks) -> list[int]:
    """The output shape by NumPy's slicing (positive strides): what the masks mean."""
    index = []
    for k, size in enumerate(shape):
        b = None if masks[0] >> k & 1 else begin[k]
        e = None if masks[1] >> k & 1 else end[k]
        index.append(b if masks[2] >> k & 1 else slice(b, e, strides[k]))
    return list(np.zeros(shape)[tuple(index)].shape)


def on_rows(dtype: str) -> Model:
    """[1, 6, 4] -> RESHAPE [6, 4] -> STRIDED_SLICE of rows 1, 3, 5 (axis 0 cut: a [1, 6, 4] view inside)."""
    tensors = [_act((1, 6, 4), dtype), _i32([6, 4]), _act((6, 4), dtype), _i32([1, 0]), _i32([6, 4]), _i32([2, 1]),
               _act((3, 4), dtype)]
    return Model(tensors, [Op("RESHAPE", [0, 1], [2]), Op("STRIDED_SLICE", [2, 3, 4, 5], [6],
                                                            ("StridedSliceOptions", {}))], [0], [6])


def slice_op(dtype: str, index_type: str = "int32") -> Model:
    """[1, 5, 6, 4] -> SLICE begin [0, 1, 2, 0] size [1, 3, -1, 2] -> [1, 3, 4, 2]."""
    tensors = [_act((1, 5, 6, 4), dtype), _i32([0, 1, 2, 0], index_type), _i32([1, 3, -1, 2], index_type),
               _act((1, 3, 4, 2), dtype)]
    return Model(tensors, [Op("SLICE", [0, 1, 2], [3], ("SliceOptions", {}))], [0], [3])


def split(dtype: str) -> Model:
    """[1, 4, 6] -> SPLIT along -1 into three [1, 4, 2], every one an output."""
    tensors = [_act((1, 4, 6), dtype), _i32([-1]), *(_act((1, 4, 2), dtype) for _ in range(3))]
    return Model(tensors, [Op("SPLIT", [1, 0], [2, 3, 4], ("SplitOptions", {"NumSplits": 3}))], [0], [2, 3, 4])


def split_v(dtype: str) -> Model:
    """[1, 8, 3] -> SPLIT_V along 1 into [3, 1, 4] rows (size_splits says [3, -1, 4]; TFLM reads the outputs'
    shapes); the middle part is read by nothing."""
    tensors = [_act((1, 8, 3), dtype), _i32([3, -1, 4]), _i32(1), _act((1, 3, 3), dtype), _act((1, 1, 3), dtype),
               _act((1, 4, 3), dtype)]
    return Model(tensors, [Op("SPLIT_V", [0, 1, 2], [3, 4, 5], ("SplitVOptions", {"NumSplits": 3}))], [0], [3, 5])


def unpack_pack(dtype: str) -> Model:
    """[1, 3, 8] -> UNPACK along 1 into three [1, 8] -> PACK along 2 -> [1, 8, 3] and along 0 -> [3, 1, 8]; the
    second unpacked row also an output."""
    tensors = [_act((1, 3, 8), dtype), *(_act((1, 8), dtype) for _ in range(3)), _act((1, 8, 3), dtype),
               _act((3, 1, 8), dtype)]
    ops = [Op("UNPACK", [0], [1, 2, 3], ("UnpackOptions", {"Num": 3, "Axis": 1})),
           Op("PACK", [1, 2, 3], [4], ("PackOptions", {"ValuesCount": 3, "Axis": 2})),
           Op("PACK", [3, 1, 2], [5], ("PackOptions", {"ValuesCount": 3, "Axis": -3}))]
    return Model(tensors, ops, [0], [4, 5, 2])


def squeeze_expand(dtype: str) -> Model:
    """[1, 1, 5, 1, 3] -> SQUEEZE [1, 3] -> [1, 5, 3] -> EXPAND_DIMS -1 -> [1, 5, 3, 1]; and SQUEEZE of every
    axis of 1 -> [5, 3]."""
    tensors = [_act((1, 1, 5, 1, 3), dtype), _act((1, 5, 3), dtype), _i32(-1), _act((1, 5, 3, 1), dtype),
               _act((5, 3), dtype)]
    ops = [Op("SQUEEZE", [0], [1], ("SqueezeOptions", {"SqueezeDims": [1, -2]})),
           Op("EXPAND_DIMS", [1, 2], [3], ("ExpandDimsOptions", {})), Op("SQUEEZE", [0], [4])]
    return Model(tensors, ops, [0], [3, 4])


def depth_space(dtype: str) -> Model:
    """[1, 4, 4, 8] -> DEPTH_TO_SPACE 2 -> [1, 8, 8, 2] -> SPACE_TO_DEPTH 2 -> [1, 4, 4, 8] (the input again) and
    SPACE_TO_DEPTH 4 -> [1, 2, 2, 32] (another grouping of the same values): every one an output."""
    tensors = [_act((1, 4, 4, 8), dtype), _act((1, 8, 8, 2), dtype), _act((1, 4, 4, 8), dtype),
               _act((1, 2, 2, 32), dtype)]
    ops = [Op("DEPTH_TO_SPACE", [0], [1], ("DepthToSpaceOptions", {"BlockSize": 2})),
           Op("SPACE_TO_DEPTH", [1], [2], ("SpaceToDepthOptions", {"BlockSize": 2})),
           Op("SPACE_TO_DEPTH", [1], [3], ("SpaceToDepthOptions", {"BlockSize": 4}))]
    return Model(tensors, ops, [0], [1, 2, 3])


CASES = {
    "strided_slice": (lambda dt: strided_slice(dt, (1, 6, 8, 5), [0, 1, 0, 1], [1, 6, 8, 5], [1, 2, 3, 2]),
                      ["slice"]),
    "strided_slice_masks": (lambda dt: strided_slice(dt, (1, 7, 9), [0, -5, -2], [0, 100, 0], [1, 1, 1],
                                                     masks=(0b001, 0b001, 0b100)), ["slice", "reshape"]),
    "strided_slice_end_mask": (lambda dt: strided_slice(dt, (1, 7, 9, 4), [0, 2, -9, 3], [1, 0, 7, 4], [1, 3, 2, 1],
                                                        masks=(0b0000, 0b0010, 0b1000)), ["slice", "reshape"]),
    "strided_slice_whole": (lambda dt: strided_slice(dt, (1, 4, 3), [0, 0, 0], [1, 4, 3], [1, 1, 1]),
                            ["reshape"]),
    "strided_slice_rows": (on_rows, ["reshape", "reshape", "slice", "reshape"]),
    "slice": (slice_op, ["slice"]),
    "split": (split, ["slice"] * 3),
    "split_v": (split_v, ["slice"] * 2),
    "unpack_pack": (unpack_pack, ["slice", "reshape"] * 3 + ["reshape"] * 3 + ["concat"]
                    + ["reshape"] * 3 + ["concat", "reshape"]),
    "squeeze_expand_dims": (squeeze_expand, ["reshape"] * 3),
    "depth_to_space": (depth_space, ["reshape", "transpose", "reshape"] * 3),
}
INT16 = ["strided_slice_masks", "strided_slice_rows", "slice", "split", "split_v", "unpack_pack",
         "squeeze_expand_dims"]  # TFLM's int16 kernels of these ops (DEPTH_TO_SPACE / SPACE_TO_DEPTH have none)
PARAMS = [(c, "int8") for c in CASES] + [(c, "int16") for c in INT16]


@cache
def _model(case: str, dtype: str) -> bytes:
    return build(CASES[case][0](dtype))


def _inputs(model: bytes, dtype: str) -> np.ndarray:
    g = from_tflite(model) if dtype != "float32" else from_tflite_float(model)
    shape = g.tensor(g.inputs[0]).shape
    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    if dtype == "float32":
        return rng.normal(0, 1, (SAMPLES, *shape)).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, (SAMPLES, *shape)).astype(dtype)


def _check(case: str, dtype: str, engine: str) -> None:
    model = _model(case, dtype)
    xs = _inputs(model, dtype)
    want = run_tflm_outputs(model, xs)
    cm = tinyaot.compile(model, name="moves")
    got = cm.run(xs, engine=engine)
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(g).reshape(w.shape), w, err_msg=f"{case} {dtype}: output {k}")
    for w in want:  # outputs that could not match by chance: most values distinct
        assert len(np.unique(w)) >= min(w.size // 2, 100)


@pytest.mark.parametrize(("case", "dtype"), PARAMS)
def test_reference_equals_tflm(case, dtype):
    _tflm()
    _check(case, dtype, "reference")
    assert [n.op for n in from_tflite(_model(case, dtype)).nodes] == CASES[case][1]


@pytest.mark.host
@pytest.mark.parametrize(("case", "dtype"), PARAMS)
def test_host_c_equals_tflm(case, dtype):
    _tflm()
    _check(case, dtype, "host")


INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def _tflm_prepare_shape(shape, begin, end, strides, masks) -> list[int]:
    """The output shape TFLM's StridedSlicePrepare (CheckOutputSize) accepts, written out here from its source
    (StartForAxis / StopForAxis, positive strides), so the sweep below writes models TFLM takes."""
    out = []
    for k, n in enumerate(shape):
        start = INT_MIN if masks[0] >> k & 1 else begin[k]
        start = min(max(start + n if start < 0 else start, 0), n)
        if masks[2] >> k & 1:
            continue
        stop = INT_MAX if masks[1] >> k & 1 else end[k]
        stop = min(max(stop + n if stop < 0 else stop, 0), n)
        out.append(max(-(-(stop - start) // strides[k]), 0))
    return out


def test_strided_slice_sweep_equals_tflm():
    """300 seeded STRIDED_SLICEs TFLM's Prepare takes (1-D to 4-D, any axis 0, begins and ends past either end,
    strides 1-3, every mask bit, int8 and int16; 125 with a nonempty output): each imported one gives TFLM's bytes
    (109); the other 16 shrink an axis at a begin past its end, which TFLM's Prepare sizes 1 and its Eval never
    writes (TensorFlow refuses such a slice), and tinyaot refuses naming that."""
    _tflm()
    from tinyaot.errors import TinyAOTError
    from tinyaot.ref.interpreter import prepare_all, run_unplanned

    rng = np.random.default_rng(0)
    equal = 0
    for _ in range(300):
        rank = int(rng.integers(1, 5))
        shape = [int(v) for v in rng.integers(1, 7, rank)]
        begin, end = [int(v) for v in rng.integers(-8, 8, rank)], [int(v) for v in rng.integers(-8, 9, rank)]
        strides = [int(v) for v in rng.integers(1, 4, rank)]
        masks = tuple(int(v) for v in rng.integers(0, 1 << rank, 3))
        out = _tflm_prepare_shape(shape, begin, end, strides, masks)
        if not out or 0 in out:
            continue
        dtype = "int8" if rng.random() < 0.7 else "int16"
        m = strided_slice(dtype, shape, begin, end, strides, masks, out=out)  # behind a RESHAPE of [1, *shape]:
        m.tensors[0] = _act([1, *shape], dtype)  # any axis 0, as a model's inner tensors have
        m.tensors += [_act(shape, dtype), _i32(shape)]
        m.ops = [Op("RESHAPE", [0, 6], [5]), Op("STRIDED_SLICE", [5, 1, 2, 3], [4], m.ops[0].options)]
        model = build(m)
        try:
            g = from_tflite(model)
        except TinyAOTError as exc:
            assert "a shrunk axis whose begin is past the end" in str(exc), str(exc)
            continue
        info = np.iinfo(dtype)
        xs = rng.integers(info.min, info.max + 1, (2, 1, *shape)).astype(dtype)
        (want,) = run_tflm_outputs(model, xs)
        params = prepare_all(g)
        got = np.stack([run_unplanned(g, params, x)[g.outputs[0]] for x in xs])
        np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"{shape} {begin} {end} {strides} {masks}")
        equal += 1
    assert equal >= 100


@pytest.mark.parametrize("case", ["strided_slice_masks", "strided_slice_rows", "split_v", "unpack_pack",
                                  "squeeze_expand_dims", "depth_to_space"])
def test_float_graph_equals_tflm_float(case):
    """A float model's graph (what tinyaot's calibration runs) moves the values as TFLM's float kernels do."""
    _tflm()
    model = _model(case, "float32")
    xs = _inputs(model, "float32")
    want = run_tflm_outputs(model, xs)
    g = from_tflite_float(model)
    values = evaluate(g, xs.reshape(SAMPLES, *xs.shape[2:]))  # a batch of samples along axis 0
    for name, w in zip(g.outputs, want):
        np.testing.assert_array_equal(np.asarray(values[name]).reshape(w.shape), w, err_msg=case)


TFLM_REFUSES = {
    "strided_slice_5d": (lambda: strided_slice("int8", (1, 2, 3, 4, 5), [0] * 5, [1, 2, 3, 4, 5], [1, 1, 1, 1, 2]),
                         UnsupportedOpError, "at most 4 dimensions"),
    "strided_slice_stride_0": (lambda: strided_slice("int8", (1, 4, 6), [0, 0, 0], [1, 4, 6], [1, 0, 1],
                                                     out=[1, 4, 6]), ModelError, "stride value has to be non-zero"),
    "strided_slice_shape": (lambda: strided_slice("int8", (1, 4, 6), [0, 0, 0], [1, 4, 6], [1, 2, 1], out=[1, 4, 6]),
                            ModelError, r"give \[1, 2, 6\] .*CheckOutputSize"),
    "depth_to_space_int16": (lambda: Model([_act((1, 2, 2, 4), "int16"), _act((1, 4, 4, 1), "int16")],
                                           [Op("DEPTH_TO_SPACE", [0], [1], ("DepthToSpaceOptions", {"BlockSize": 2}))],
                                           [0], [1]), UnsupportedOpError, "takes int8 and float32 only"),
    "squeeze_not_one": (lambda: Model([_act((1, 3, 1), "int8"), _act((1, 1), "int8")],
                                      [Op("SQUEEZE", [0], [1], ("SqueezeOptions", {"SqueezeDims": [1]}))], [0], [1]),
                        ModelError, "dimension 1 of .* is 3, not 1"),
    "expand_dims_int64_axis": (lambda: Model([_act((1, 4), "int8"), _i32(1, "int64"), _act((1, 1, 4), "int8")],
                                             [Op("EXPAND_DIMS", [0, 1], [2], ("ExpandDimsOptions", {}))], [0], [2]),
                               UnsupportedOpError, "takes one int32 value"),
}


@pytest.mark.parametrize("key", list(TFLM_REFUSES))
def test_what_tflm_refuses_is_refused_naming_its_rule(key):
    _tflm()
    make, error, message = TFLM_REFUSES[key]
    model = build(make())
    assert tflm_refuses(model)
    with pytest.raises(error, match=message):
        from_tflite(model)


def test_what_tinyaot_cannot_copy_as_tflm_does_is_refused_with_the_reason():
    """TFLM runs these; tinyaot says why it does not: a reversed axis (its slice walks forward), int64 indices TFLM
    reads as int32 (other numbers), and an output at other qparams than the input's (TFLM reinterprets the values)."""
    with pytest.raises(UnsupportedOpError, match=r"negative strides \[1, -1, 1\] .* walks forward"):
        from_tflite(build(strided_slice("int8", (1, 4, 6), [0, 3, 0], [1, 0, 6], [1, -1, 1], out=[1, 3, 6])))
    with pytest.raises(UnsupportedOpError, match="begin is int64; TFLite Micro reads it as int32"):
        from_tflite(build(strided_slice("int8", (1, 4, 6), [0, 1, 0], [1, 4, 6], [1, 1, 1], index_type="int64")))
    m = split("int8")
    m.tensors[3].scale = 0.1
    with pytest.raises(UnsupportedOpError, match="copies the stored values without rescaling"):
        from_tflite(build(m))


def test_int64_slice_indices_are_taken_as_tflm_takes_them():
    """SLICE reads int32 or int64 begin / size (TFLM's GetBeginAndSizeVectors of either type)."""
    _tflm()
    model = build(slice_op("int8", "int64"))
    xs = _inputs(model, "int8")
    np.testing.assert_array_equal(tinyaot.compile(model, name="s").run(xs).reshape(SAMPLES, -1),
                                  run_tflm_outputs(model, xs)[0].reshape(SAMPLES, -1))


def test_common_builtins_tinyaot_does_not_import_say_why_and_what_to_do():
    """An int8 model ending in ARG_MAX, and a REVERSE_V2: the refusal names the operator, why, and the way forward."""
    arg_max = Model([_act((1, 10), "int8"), _i32([1]), T((1,), "int32")],
                    [Op("ARG_MAX", [0, 1], [2], ("ArgMaxOptions", {"OutputType": 2}))], [0], [2])
    with pytest.raises(UnsupportedOpError, match=r"operator 0 \(ARG_MAX\) is not supported: its output is an int32 "
                                                 r"index.*take their argmax on the host.* tinyaot imports ADD, "):
        from_tflite(build(arg_max))
    reverse = Model([_act((1, 4, 3), "int8"), _i32([1]), _act((1, 4, 3), "int8")],
                    [Op("REVERSE_V2", [0, 1], [2])], [0], [2])
    with pytest.raises(UnsupportedOpError, match=r"\(REVERSE_V2\) is not supported: a reversed axis"):
        from_tflite(build(reverse))
