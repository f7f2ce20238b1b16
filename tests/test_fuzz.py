"""Bounded-time fuzzing: whatever bytes or arrays come in, tinyaot answers or raises a TinyAOTError.

(a) Mutated .tflite files (byte flips, word overwrites, truncations, splices, and field-level mutations of the
tensors' shapes, dtypes, data and qparams, the operators' codes, tensor indices and options, the model's inputs
and outputs), from small graphs built with tests/tflite_builder.py and, sparingly, the MLPerf KWS model: importing
and compiling either succeeds or raises TinyAOTError, never another exception and never a hang (a per-case alarm).
A mutant that compiles runs on the reference interpreter, and a bounded number of them on host C too, where the
outputs must be equal byte for byte.
(b) Bad arrays given to a small compiled model (run, run_float, quantize_input, float_reference): a correct result
or a TinyAOTError.

Everything is seeded: a failure names its case and reproduces.
"""
from __future__ import annotations

import copy
import faulthandler
import signal
import struct
import time
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from conftest import have_host_cc, random_int8, shared_file
from tflite_builder import TYPE_CODES, Model, Op, T, build, load

import tinyaot
from tinyaot.errors import TinyAOTError

CASE_SECONDS = 60  # one import + compile + reference run: the slowest seen takes 0.3 s; a hang never ends, and a
# bound far above any case keeps a loaded machine (two suites at once) from failing a case by chance
N_SMALL = 360  # mutants of the small graphs
N_REAL = 40  # mutants of the MLPerf KWS model
N_HOST = 10  # mutants that compile and run on host C (a build costs about a second)


class Hang(Exception):
    pass


@contextmanager
def time_guard(seconds: float, what: str):
    """SIGALRM turns a hang into a failure that names the case (the main thread runs the tests); a hang inside C
    code, where no Python handler runs, ends the process after 3x as long with every thread's traceback."""
    def on_alarm(signum, frame):
        raise Hang(f"{what} took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(3 * seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---- seed graphs: every op family the importer converts ---------------------------------------------------------


def _w(rng, shape, axis=0, per_channel=True):
    n = shape[axis]
    scale = list(rng.uniform(0.004, 0.02, n)) if per_channel else float(rng.uniform(0.004, 0.02))
    return T(shape, data=rng.integers(-127, 128, shape).astype(np.int8), scale=scale, axis=axis)


def _b(rng, n, in_scale, w: T):
    ws = w.scale if isinstance(w.scale, list) else [w.scale]
    return T((n,), "int32", data=rng.integers(-300, 300, n).astype(np.int32),
             scale=[in_scale * s for s in ws] if len(ws) > 1 else in_scale * ws[0])


def seed_models() -> dict[str, Model]:
    rng = np.random.default_rng(123)
    fc_w = _w(rng, (4, 8), per_channel=False)
    fc = Model([T((1, 8), scale=0.05, zero_point=-3), fc_w, _b(rng, 4, 0.05, fc_w), T((1, 4), scale=0.1, zero_point=5)],
               [Op("FULLY_CONNECTED", [0, 1, 2], [3], ("FullyConnectedOptions", {"FusedActivationFunction": 1}), 4)],
               [0], [3])
    cw = _w(rng, (4, 3, 3, 2))
    fw = _w(rng, (5, 36), per_channel=False)
    conv = {"Padding": 0, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1,
            "FusedActivationFunction": 1}
    pool = {"Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 2}
    cnn = Model([T((1, 6, 6, 2), scale=0.04, zero_point=-10), cw, _b(rng, 4, 0.04, cw),
                 T((1, 6, 6, 4), scale=0.03, zero_point=-128), T((1, 3, 3, 4), scale=0.03, zero_point=-128),
                 T((1, 36), scale=0.03, zero_point=-128), fw, _b(rng, 5, 0.03, fw), T((1, 5), scale=0.1, zero_point=2),
                 T((1, 5), scale=1 / 256, zero_point=-128)],
                [Op("CONV_2D", [0, 1, 2], [3], ("Conv2DOptions", conv), 3),
                 Op("MAX_POOL_2D", [3], [4], ("Pool2DOptions", pool), 2),
                 Op("RESHAPE", [4], [5]),
                 Op("FULLY_CONNECTED", [5, 6, 7], [8], ("FullyConnectedOptions", {}), 4),
                 Op("SOFTMAX", [8], [9], ("SoftmaxOptions", {"Beta": 1.0}), 2)], [0], [9])
    dw_w = _w(rng, (1, 3, 3, 3), axis=3)
    dw = {"Padding": 0, "StrideW": 1, "StrideH": 1, "DepthMultiplier": 1, "DilationWFactor": 1,
          "DilationHFactor": 1}
    resid = Model([T((1, 5, 5, 3), scale=0.05, zero_point=1), dw_w, _b(rng, 3, 0.05, dw_w),
                   T((1, 5, 5, 3), scale=0.06, zero_point=-2), T((1, 5, 5, 3), scale=0.08, zero_point=0),
                   T((2,), "int32", data=np.array([1, 2], np.int32)), T((1, 3), scale=0.05, zero_point=-1),
                   T((1, 3), scale=1 / 256, zero_point=-128)],
                  [Op("DEPTHWISE_CONV_2D", [0, 1, 2], [3], ("DepthwiseConv2DOptions", dw), 3),
                   Op("ADD", [3, 0], [4], ("AddOptions", {"FusedActivationFunction": 0}), 2),
                   Op("MEAN", [4, 5], [6], ("ReducerOptions", {"KeepDims": False}), 2),
                   Op("LOGISTIC", [6], [7])], [0], [7])
    k = T((1, 1, 1, 4), data=rng.integers(-127, 128, (1, 1, 1, 4)).astype(np.int8), scale=0.02, zero_point=1)
    misc = Model([T((1, 4, 4, 4), scale=0.05, zero_point=0),
                  T((4, 2), "int32", data=np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32)),
                  T((1, 6, 6, 4), scale=0.05, zero_point=0), T((1, 3, 3, 4), scale=0.05, zero_point=0),
                  k, T((1, 3, 3, 4), scale=0.04, zero_point=-5), T((1, 3, 3, 4), scale=1 / 128, zero_point=0),
                  T((1, 3, 3, 8), scale=0.05, zero_point=0), T((4,), "int32", data=np.array([0, 2, 1, 3], np.int32)),
                  T((1, 3, 3, 8), scale=0.05, zero_point=0), T((1, 3, 3, 8), scale=0.03, zero_point=-60),
                  T((1, 3, 3, 8), scale=0.02, zero_point=-128)],
                 [Op("PAD", [0, 1], [2], None, 2),
                  Op("AVERAGE_POOL_2D", [2], [3], ("Pool2DOptions", pool), 2),
                  Op("MUL", [3, 4], [5], ("MulOptions", {}), 2),
                  Op("TANH", [5], [6]),
                  Op("CONCATENATION", [3, 3], [7], ("ConcatenationOptions", {"Axis": 3}), 2),
                  Op("TRANSPOSE", [7, 8], [9], None, 2),
                  Op("HARD_SWISH", [9], [10]),
                  Op("QUANTIZE", [10], [11], None, 2)], [0], [11])
    return {"fc": fc, "cnn": cnn, "resid": resid, "misc": misc}


# ---- mutations --------------------------------------------------------------------------------------------------

OP_CODES = ["ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "LOGISTIC",
            "MAX_POOL_2D", "MEAN", "MUL", "PAD", "QUANTIZE", "DEQUANTIZE", "RELU", "RELU6", "RESHAPE", "SOFTMAX",
            "TANH", "TRANSPOSE", "HARD_SWISH", "SQUARED_DIFFERENCE", "WHILE", "CUSTOM"]
OPTIONS = ["Conv2DOptions", "Pool2DOptions", "FullyConnectedOptions", "SoftmaxOptions", "AddOptions",
           "ConcatenationOptions", "ReducerOptions", "MulOptions", "DepthwiseConv2DOptions"]
DIMS = [0, -1, 1, 2, 3, 5, 7, 64, 65536, 2**31 - 1]
SCALES = [0.0, -0.05, float("nan"), float("inf"), 1e-38, 1e-19, 1e-12, 1e30, 1e11, 1.0, 1 / 256, 3.0]
ZERO_POINTS = [-129, 128, 255, 256, 300, -300, 2**40, -(2**40), -128, 127, 0, 7]
INTS = [0, 1, 2, 3, 4, 5, 6, -1, 7, 100, 2**31 - 1, -(2**31)]


def _mutate_tensor(m: Model, rng) -> str:
    i = int(rng.integers(len(m.tensors)))
    t = m.tensors[i]
    kind = rng.choice(["shape", "rank", "dtype", "scale", "zero_point", "axis", "per_channel", "data", "no_data",
                       "no_quant"])
    if kind == "shape" and t.shape:
        d = int(rng.integers(len(t.shape)))
        t.shape = tuple(int(rng.choice(DIMS)) if j == d else s for j, s in enumerate(t.shape))
    elif kind == "rank":
        t.shape = t.shape[:-1] if len(t.shape) > 1 and rng.random() < 0.5 else t.shape + (int(rng.choice(DIMS[2:6])),)
    elif kind == "dtype":
        t.dtype = str(rng.choice(sorted(TYPE_CODES)))
    elif kind == "scale":
        t.scale = float(rng.choice(SCALES)) if rng.random() < 0.8 else float(np.exp(rng.normal(-4, 4)))
    elif kind == "zero_point":
        t.zero_point = int(rng.choice(ZERO_POINTS))
        t.scale = t.scale if t.scale is not None else 0.05
    elif kind == "axis":
        t.axis = int(rng.choice([-1, 0, 1, 2, 3, 4, 100]))
    elif kind == "per_channel":
        t.scale = list(rng.uniform(0.001, 0.1, int(rng.integers(1, 9))))
    elif kind == "data":
        n = int(np.prod(t.shape)) if t.shape and min(t.shape) > 0 and np.prod(t.shape) < 10**5 else 4
        n = max(0, n + int(rng.choice([0, 0, -1, 1, -n])))
        t.data = rng.integers(-128, 128, n).astype(np.int8).astype(t.dtype if t.dtype != "float16" else "int8")
    elif kind == "no_data":
        t.data = None
    else:
        t.scale = None
    return f"tensor {i} {kind}"


def _mutate_op(m: Model, rng) -> str:
    if not m.ops:
        return "no ops"
    j = int(rng.integers(len(m.ops)))
    op = m.ops[j]
    kind = rng.choice(["code", "input", "output", "option", "options_type", "no_options", "drop", "duplicate",
                       "swap", "version", "extra_input"])
    if kind == "code":
        op.code = str(rng.choice(OP_CODES))
    elif kind == "input" and op.inputs:
        op.inputs[int(rng.integers(len(op.inputs)))] = int(rng.integers(-2, len(m.tensors) + 2))
    elif kind == "output":
        op.outputs = [int(rng.integers(-1, len(m.tensors) + 2))] * int(rng.choice([1, 1, 2, 0]))
    elif kind == "option" and op.options and op.options[1]:
        key = str(rng.choice(sorted(op.options[1])))
        value = op.options[1][key]
        op.options[1][key] = (float(rng.choice([0.0, -1.0, 1e30, float("nan"), 0.5])) if isinstance(value, float)
                              else bool(rng.random() < 0.5) if isinstance(value, bool)
                              else int(rng.choice(INTS)))
    elif kind == "options_type":
        op.options = (str(rng.choice(OPTIONS)), {})
    elif kind == "no_options":
        op.options = None
    elif kind == "drop":
        del m.ops[j]
    elif kind == "duplicate":
        m.ops.insert(j, copy.deepcopy(op))
    elif kind == "swap" and len(m.ops) > 1:
        k = int(rng.integers(len(m.ops)))
        m.ops[j], m.ops[k] = m.ops[k], m.ops[j]
    elif kind == "version":
        op.version = int(rng.choice([0, 1, 2, 7, 255]))
    else:
        op.inputs = op.inputs + [int(rng.integers(-1, len(m.tensors)))]
    return f"op {j} {kind}"


def _mutate_model(m: Model, rng) -> str:
    kind = rng.choice(["inputs", "outputs", "version", "no_inputs"])
    if kind == "inputs":
        m.inputs = [int(rng.integers(-1, len(m.tensors) + 1))]
    elif kind == "outputs":
        m.outputs = [int(rng.integers(-1, len(m.tensors) + 1))] * int(rng.choice([1, 2]))
    elif kind == "version":
        m.version = int(rng.choice([0, 2, 4]))
    else:
        m.inputs = []
    return f"model {kind}"


def field_mutant(seed: Model, rng) -> tuple[str, bytes]:
    """1-3 field mutations, written by the builder; a value the schema's field type cannot hold (2^31 into an
    int8 option) is drawn again."""
    while True:
        m = copy.deepcopy(seed)
        steps = []
        for _ in range(int(rng.choice([1, 1, 1, 2, 3]))):
            r = rng.random()
            steps.append(_mutate_tensor(m, rng) if r < 0.55 else _mutate_op(m, rng) if r < 0.9
                         else _mutate_model(m, rng))
        try:
            return ", ".join(steps), build(m)
        except (TypeError, ValueError, OverflowError, struct.error):
            continue


WORDS = [0, 1, 2, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 16, 100]


def byte_mutant(blob: bytes, rng) -> tuple[str, bytes]:
    arr = bytearray(blob)
    kind = rng.choice(["flip", "flip", "word", "word", "truncate", "splice"])
    if kind == "flip":
        idx = rng.integers(0, len(arr), int(rng.integers(1, 5)))
        for i in idx:
            arr[i] ^= int(rng.integers(1, 256))
        return f"flip {sorted(int(i) for i in idx)}", bytes(arr)
    if kind == "word":
        at = int(rng.integers(0, len(arr) // 4)) * 4
        value = int(rng.choice(WORDS)) if rng.random() < 0.8 else len(arr) + int(rng.integers(-8, 8))
        arr[at:at + 4] = (value & 0xFFFFFFFF).to_bytes(4, "little")
        return f"word {at} = {value:#x}", bytes(arr)
    if kind == "truncate":
        n = int(rng.integers(0, len(arr)))
        return f"truncate {n}", bytes(arr[:n])
    at, n = int(rng.integers(0, len(arr))), int(rng.integers(1, 64))
    if rng.random() < 0.5:
        return f"delete {n} at {at}", bytes(arr[:at] + arr[at + n:])
    return f"insert {n} at {at}", bytes(arr[:at] + bytes(rng.integers(0, 256, n, dtype=np.uint8)) + arr[at:])


def mutants(seeds: dict[str, Model], n: int, seed: int, field_share: float = 0.6):
    """(description, bytes) for n mutants, field-level for `field_share` of them, the rest byte-level."""
    rng = np.random.default_rng(seed)
    names = sorted(seeds)
    blobs = {k: build(v) for k, v in seeds.items()}
    for i in range(n):
        k = names[i % len(names)]
        desc, blob = field_mutant(seeds[k], rng) if rng.random() < field_share else byte_mutant(blobs[k], rng)
        yield f"#{i} {k}: {desc}", blob


def try_case(desc: str, blob: bytes, rng) -> tuple[str, object]:
    """('refused' | 'compiled' | 'crash', detail): compile, and run a compiled mutant on the reference."""
    try:
        with time_guard(CASE_SECONDS, desc), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cm = tinyaot.compile(blob, name="fz")
            x = random_int8((2,) + cm.input_shape[1:], int(rng.integers(1 << 30)))
            ref = cm.run(x, engine="reference")
        return "compiled", (cm, x, ref)
    except TinyAOTError as exc:
        assert str(exc), f"{desc}: an error without a message"
        return "refused", exc
    except Hang:
        raise
    except Exception as exc:  # noqa: BLE001 -- what the test is looking for
        return "crash", f"{desc}: {type(exc).__name__}: {exc}"


def fuzz(seeds: dict[str, Model], n: int, seed: int, field_share: float = 0.6) -> dict:
    rng = np.random.default_rng(seed + 1)
    out = {"refused": [], "compiled": [], "crash": []}
    for desc, blob in mutants(seeds, n, seed, field_share):
        kind, detail = try_case(desc, blob, rng)
        out[kind].append((desc, detail))
    return out


def _host_agrees(compiled: list, limit: int) -> int:
    """Reference == host C on the first `limit` compiled mutants whose C differs from every one checked."""
    seen, checked = set(), 0
    for desc, (cm, x, ref) in compiled:
        if checked == limit:
            break
        key = hash(tuple(sorted(cm.c_sources.files.items())))
        if key in seen:
            continue
        seen.add(key)
        with time_guard(60, f"host build of {desc}"):
            host = cm.run(x, engine="host")
        np.testing.assert_array_equal(host, ref, err_msg=desc)
        checked += 1
    return checked


@pytest.mark.host
def test_mutated_small_graphs_compile_or_raise_a_tinyaot_error():
    seeds = seed_models()
    for name, m in seeds.items():  # the seeds themselves are valid, or mutants would prove little
        assert tinyaot.compile(build(m), name=name).graph.nodes
    result = fuzz(seeds, N_SMALL, seed=2024)
    assert not result["crash"], "\n".join(d for _, d in result["crash"])
    # The mix exercises both sides: most mutants are refused, and a good number still compile.
    assert len(result["refused"]) > N_SMALL // 2 and len(result["compiled"]) > 20, {k: len(v) for k, v in
                                                                                   result.items()}
    if have_host_cc():
        assert _host_agrees(result["compiled"], N_HOST) >= min(N_HOST, 5)
    # Every mutant answered within its case's time guard (a hang fails there, naming the case): no wall-clock
    # budget for the whole run, which a loaded machine could exceed by chance.
    assert sum(map(len, result.values())) == N_SMALL


def test_mutated_mlperf_model_compiles_or_raises_a_tinyaot_error():
    blob = shared_file("models/mlperf_tiny/kws_ref_model.tflite").read_bytes()
    rng = np.random.default_rng(7)
    crashes, outcomes = [], {"refused": 0, "compiled": 0}
    real = load(blob)
    for i in range(N_REAL):
        if i % 2:
            desc, mutant = byte_mutant(blob, rng)
        else:
            desc, mutant = field_mutant(real, rng)
        kind, detail = try_case(f"kws #{i}: {desc}", mutant, rng)
        if kind == "crash":
            crashes.append(detail)
        else:
            outcomes[kind] += 1
    assert not crashes, "\n".join(crashes)
    assert outcomes["refused"] > 0 and outcomes["compiled"] > 0, outcomes
    assert outcomes["refused"] + outcomes["compiled"] == N_REAL  # each within its case's time guard


def test_the_time_guard_fires():
    with pytest.raises(Hang, match="took more than"):
        with time_guard(0.05, "a sleep"):
            time.sleep(1)


# ---- (b) bad arrays for a compiled model --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    """The CNN seed graph, compiled: int8 NHWC input (1, 6, 6, 2)."""
    return tinyaot.compile(build(seed_models()["cnn"]), name="fzarr")


S = (1, 6, 6, 2)
GOOD_INT8 = random_int8(S, 3)
BAD_ARRAYS = {
    "wrong shape": np.zeros((1, 6, 6, 3), np.int8),
    "flat": np.zeros(72, np.int8),
    "batch of wrong samples": np.zeros((4, 6, 6), np.int8),
    "0-d": np.array(3, np.int8),
    "python scalar": 3,
    "None": None,
    "a string": "input.npy",
    "empty 1-d": np.zeros((0,), np.int8),
    "empty batch": np.zeros((0, 6, 6, 2), np.int8),
    "empty batch of batches": np.zeros((0, 1, 6, 6, 2), np.int8),
    "float32": GOOD_INT8.astype(np.float32),
    "int64 in range": GOOD_INT8.astype(np.int64),
    "int64 out of range": np.full(S, 300),
    "uint8 in range": np.abs(GOOD_INT8).astype(np.uint8),
    "uint8 out of range": np.full(S, 200, np.uint8),
    "bool": np.zeros(S, bool),
    "complex": np.zeros(S, complex),
    "object": GOOD_INT8.astype(object),
    "text": np.full(S, "x"),
    "dates": np.zeros(S, "datetime64[s]"),
    "NaN": np.full(S, np.nan),
    "Inf": np.full(S, -np.inf),
    "huge": np.full(S, 1e300),
    "nested list": GOOD_INT8.tolist(),
    "non-contiguous batch": np.stack([GOOD_INT8[0]] * 3)[:, ::-1],
    "float16": GOOD_INT8.astype(np.float16),
}
METHODS = ["run", "run_host", "run_float", "quantize_input", "float_reference"]


def _call(cm, method: str, x):
    if method == "run_host":
        return cm.run(x, engine="host")
    return getattr(cm, method)(x)


def _expected(cm, method: str, x):
    """What a correct answer is, from the canonical input: int8 for run(), float64 for the float paths."""
    a = np.asarray(x)
    if method in ("run", "run_host"):
        return cm.run(a.astype(np.int8), engine="reference")
    if method == "run_float":
        return cm.run_float(a.astype(np.float64))
    if method == "quantize_input":
        return cm.quantize_input(a.astype(np.float64))
    return cm.float_reference(a.astype(np.float64))


def _params():
    for method in METHODS:
        for case in BAD_ARRAYS:
            marks = [pytest.mark.host] if method == "run_host" else []
            yield pytest.param(method, case, marks=marks, id=f"{method}-{case}")


@pytest.mark.parametrize("method,case", list(_params()))
def test_bad_arrays_give_a_correct_answer_or_a_tinyaot_error(small, method, case):
    x = BAD_ARRAYS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # saturating inputs warn; that is not what is tested here
        try:
            got = _call(small, method, x)
        except TinyAOTError as exc:
            assert str(exc)
            return
        want = _expected(small, method, x)
    np.testing.assert_array_equal(got, want)
    if np.asarray(got).size:
        assert np.isfinite(np.asarray(got, dtype=np.float64)).all() or method == "float_reference"


@pytest.mark.host
def test_random_arrays_never_raise_anything_but_a_tinyaot_error(small):
    """Random shapes (0 to 5 dims, sizes 1 to 7), dtypes and values (empty and text arrays are cases above):
    every method answers or raises a TinyAOTError."""
    rng = np.random.default_rng(11)
    dtypes = [np.int8, np.uint8, np.int16, np.int64, np.float32, np.float64, np.bool_]
    special = [0.0, np.nan, np.inf, -np.inf, 1e300, -1e300, 127.0, -128.0, 0.5]
    answered = refused = tried = 0
    for i in range(300):
        shape = S if rng.random() < 0.3 else tuple(int(d) for d in rng.integers(1, 8, int(rng.integers(0, 6))))
        if rng.random() < 0.2:
            shape = (int(rng.integers(1, 4)),) + S[1:]
        dtype = dtypes[int(rng.integers(len(dtypes)))]
        values = rng.normal(0, 10 ** rng.uniform(0, 6), shape)
        if rng.random() < 0.3:
            values.flat[rng.integers(0, values.size)] = special[int(rng.integers(len(special)))]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = values.astype(dtype) if dtype is not np.bool_ else values > 0
            method = METHODS[int(rng.integers(0, len(METHODS)))]
            if method == "run_host" and not have_host_cc():
                continue
            tried += 1
            try:
                with time_guard(CASE_SECONDS, f"case {i}: {method} of {dtype.__name__} {shape}"):
                    _call(small, method, x)
                answered += 1
            except TinyAOTError:
                refused += 1
            except Exception as exc:  # noqa: BLE001
                pytest.fail(f"case {i}: {method} of {dtype.__name__} {shape}: {type(exc).__name__}: {exc}")
    assert answered > 30
    assert answered + refused == tried  # every case answered or refused, each within its time guard
