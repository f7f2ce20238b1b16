"""A float SVDF model quantized by tinyaot's calibration, against TFLite Micro's float interpreter.

The model is shaped like TFLM's keyword benchmark (two stacked SVDF layers with RELU, then FULLY_CONNECTED), with
seeded weights (not trained) and seeded smooth frames (a few drifting sinusoids per feature, plus noise). An SVDF
keeps state from one invoke to the next, so its calibration samples are consecutive frames of one stream and the
test streams are run in order from a reset: TFLM's float interpreter over a stream is the reference, tinyaot's int8
model (reference interpreter and host C) runs the same stream.
"""
from __future__ import annotations

import numpy as np
from tflite_builder import Model, Op, T, build

import tinyaot
from tinyaot.frontend.tflite import from_tflite_float
from tinyaot.quantize.float_eval import evaluate

FEATURES = 16
LAYERS = ((24, 2, 8), (16, 1, 4))  # (filters, rank, memory) of each SVDF
CLASSES = 5
RELU = 1


def float_svdf_model(seed: int = 0, activations=(RELU, RELU)) -> bytes:
    """float32 [1, 16] -> SVDF (24 filters, rank 2, memory 8) -> SVDF (16 filters, rank 1, memory 4) ->
    FULLY_CONNECTED -> [1, 5]; each SVDF's state a float32 variable tensor."""
    rng = np.random.default_rng(seed)
    tensors = [T((1, FEATURES), "float32", name="input")]
    ops = []
    x, inputs = 0, FEATURES
    for k, ((filters, rank, memory), act) in enumerate(zip(LAYERS, activations)):
        units = filters // rank
        base = len(tensors)
        tensors += [
            T((filters, inputs), "float32", rng.normal(0, 1 / np.sqrt(inputs), (filters, inputs)), name=f"wf{k}"),
            T((filters, memory), "float32", rng.normal(0, 1 / np.sqrt(memory), (filters, memory)), name=f"wt{k}"),
            T((units,), "float32", rng.normal(0, 0.1, units), name=f"bias{k}"),
            T((1, filters * memory), "float32", variable=True, name=f"state{k}"),
            T((1, units), "float32", name=f"svdf{k}"),
        ]
        ops.append(Op("SVDF", [x, base, base + 1, base + 2, base + 3], [base + 4],
                      ("SVDFOptions", {"Rank": rank, "FusedActivationFunction": act})))
        x, inputs = base + 4, units
    base = len(tensors)
    tensors += [T((CLASSES, inputs), "float32", rng.normal(0, 1 / np.sqrt(inputs), (CLASSES, inputs)), name="fc_w"),
                T((CLASSES,), "float32", rng.normal(0, 0.1, CLASSES), name="fc_b"),
                T((1, CLASSES), "float32", name="logits")]
    ops.append(Op("FULLY_CONNECTED", [x, base, base + 1], [base + 2], ("FullyConnectedOptions", {})))
    return build(Model(tensors, ops, [0], [base + 2]))


def frames(seed: int, n: int) -> np.ndarray:
    """n consecutive [1, 16] frames: per feature, three sinusoids of slowly drifting phase, plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None, None]
    freq = rng.uniform(0.02, 0.3, (1, 3, FEATURES))
    phase = rng.uniform(0, 2 * np.pi, (1, 3, FEATURES)) + np.cumsum(rng.normal(0, 0.05, (n, 3, 1)), axis=0)
    amp = rng.uniform(0.3, 1.5, (1, 3, FEATURES))
    x = (amp * np.sin(freq * t + phase)).sum(axis=1) + rng.normal(0, 0.1, (n, FEATURES))
    return x.reshape(n, 1, FEATURES).astype(np.float32)


def tflm_stream(model: bytes, xs: np.ndarray) -> np.ndarray:
    """TFLM's float interpreter invoked once per frame in order (its SVDF states carry over): output rows."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=256 * 1024)
    outs = []
    for x in xs:
        interp.set_input(np.asarray(x, np.float32), 0)
        interp.invoke()
        outs.append(interp.get_output(0).copy())
    return np.stack(outs).reshape(len(xs), -1)


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - got) ** 2)))


def test_smoke():
    model = float_svdf_model()
    cal, test = frames(1, 400), frames(2, 300)
    cm = tinyaot.compile(model, calibration=cal.reshape(-1, FEATURES), name="fsvdf")
    want = tflm_stream(model, test)
    got = cm.run_float(test).reshape(want.shape)
    print(sqnr_db(want, got), cm.arena_bytes, cm.state_bytes)
    g = from_tflite_float(model)
    f = evaluate(g, test.reshape(-1, FEATURES), stream={})[g.outputs[0]]
    print(np.abs(f - want).max())
