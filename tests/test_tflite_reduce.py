"""TFLite's SUM (int8, int16) and REDUCE_MAX (int8, float32) against TFLite Micro: SUM is the IR's sum (TFLM's
QuantizedMeanOrSum without 1 / count), REDUCE_MAX a max pool over a view of the reduced axes; every output byte equal
to TFLM's on seeded inputs (reference and host C), and what TFLM refuses refused naming its rule."""
from __future__ import annotations

import numpy as np
import pytest
from tflite_builder import Model, Op, T, build, run_tflm_outputs, tflm_refuses

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite import from_tflite, from_tflite_float
from tinyaot.quantize.float_eval import evaluate

SAMPLES = 8
SHAPE = (1, 5, 6, 4)


def reducer(name: str, dtype: str, axes, keep: bool, out_scale: float | None = None, axes_type: str = "int32",
            shape=SHAPE) -> Model:
    """x -> SUM / REDUCE_MAX over `axes` (keep_dims) -> y; the output scale makes a sum span the output's type."""
    in_scale, zp = {"int8": (0.05, -3), "int16": (0.001, 0), "float32": (None, 0)}[dtype]
    reduced = [a % len(shape) for a in axes]
    out = [1 if a in reduced else d for a, d in enumerate(shape)] if keep else \
        [d for a, d in enumerate(shape) if a not in reduced]
    if out_scale is None and in_scale is not None:
        count = int(np.prod([shape[a] for a in set(reduced)]))
        steps = 127 if dtype == "int8" else 32767
        out_scale = in_scale if name == "REDUCE_MAX" else in_scale * steps * np.sqrt(count) * 0.8 / steps
    tensors = [T(shape, dtype, scale=in_scale, zero_point=zp),
               T((len(axes),), axes_type, data=np.array(axes, axes_type)),
               T(tuple(out), dtype, scale=out_scale, zero_point=zp if name == "REDUCE_MAX" else 5 * (dtype == "int8"))]
    return Model(tensors, [Op(name, [0, 1], [2], ("ReducerOptions", {"KeepDims": keep}))], [0], [2])


CASES = {
    "sum_hw_keep": ("SUM", "int8", [1, 2], True),
    "sum_last": ("SUM", "int8", [-1], False),
    "sum_all_but_batch": ("SUM", "int8", [3, 1, 2, 2], False),
    "sum16_hw": ("SUM", "int16", [1, 2], True),
    "sum16_rows": ("SUM", "int16", [2], False),
    "max_hw": ("REDUCE_MAX", "int8", [1, 2], False),
    "max_w_keep": ("REDUCE_MAX", "int8", [-2], True),
    "max_channels": ("REDUCE_MAX", "int8", [3], False),
}


def _inputs(dtype: str, shape=SHAPE) -> np.ndarray:
    rng = np.random.default_rng(42)
    if dtype == "float32":
        return rng.normal(0, 1, (SAMPLES, *shape)).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, (SAMPLES, *shape)).astype(dtype)


@pytest.mark.parametrize("engine", ["reference", pytest.param("host", marks=pytest.mark.host)])
@pytest.mark.parametrize("case", list(CASES))
def test_reducers_equal_tflm(case, engine):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    name, dtype, axes, keep = CASES[case]
    model = build(reducer(name, dtype, axes, keep))
    xs = _inputs(dtype)
    (want,) = run_tflm_outputs(model, xs)
    cm = tinyaot.compile(model, name="reduce")
    assert [n.op for n in cm.graph.nodes if n.op != "reshape"] == ["sum" if name == "SUM" else "max_pool2d"]
    got = cm.run(xs, engine=engine)
    np.testing.assert_array_equal(np.asarray(got).reshape(want.shape), want)
    assert len(np.unique(want)) >= min(want.size // 3, 100)  # a spread of values, not a saturated constant


def test_float_reduce_max_graph_equals_tflm_float():
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    model = build(reducer("REDUCE_MAX", "float32", [1, 2], False))
    xs = _inputs("float32")
    (want,) = run_tflm_outputs(model, xs)
    g = from_tflite_float(model)
    np.testing.assert_array_equal(evaluate(g, xs.reshape(SAMPLES, *SHAPE[1:]))[g.outputs[0]].reshape(want.shape),
                                  want)


REFUSED = {
    "max_rescales": (lambda: reducer("REDUCE_MAX", "int8", [1, 2], False, out_scale=0.1), True, UnsupportedOpError,
                     "changes scale/zero point"),
    "max_int16": (lambda: reducer("REDUCE_MAX", "int16", [1, 2], False), True, UnsupportedOpError,
                  "takes int8 and float32 only"),
    "int64_axes": (lambda: reducer("SUM", "int8", [1, 2], False, axes_type="int64"), True, UnsupportedOpError,
                   "take int32 axes"),
    "apart": (lambda: reducer("SUM", "int8", [1, 3], False), False, UnsupportedOpError,
              "reduces axes \\[1, 3\\] .* a run of consecutive axes"),
    "shape": (lambda: Model([T(SHAPE, scale=0.05), T((1,), "int32", data=np.array([1], np.int32)),
                             T((1, 6, 4), scale=0.5)], [Op("SUM", [0, 1], [2], ("ReducerOptions", {"KeepDims": True}))],
                            [0], [2]), None, ModelError, "does not match"),
}


@pytest.mark.parametrize("key", list(REFUSED))
def test_what_is_refused_says_why(key):
    """TFLM refuses the first three too (tflm: True); it runs a sum over axes apart, which tinyaot's kernel does not
    walk."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    make, tflm, error, message = REFUSED[key]
    model = build(make())
    if tflm is not None:
        assert tflm_refuses(model) == tflm
    with pytest.raises(error, match=message):
        from_tflite(model)
