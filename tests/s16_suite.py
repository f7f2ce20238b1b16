"""Shared parts of the 16x8 tests: int16 tensors for tests/tflite_builder.py, random int16 inputs, and the one
check they all make, a .tflite graph compiled by tinyaot against TensorFlow Lite Micro on every output byte."""
from __future__ import annotations

import numpy as np
import tflite_builder as tb

import tinyaot


def t16(shape, scale: float, name: str = "") -> tb.T:
    """An int16 activation: symmetric (zero point 0), one scale, as TFLite's 16x8 scheme has them."""
    return tb.T(tuple(int(d) for d in shape), "int16", scale=float(np.float32(scale)), zero_point=0, name=name)


def t8(shape, scale: float, zero_point: int, name: str = "") -> tb.T:
    return tb.T(tuple(int(d) for d in shape), "int8", scale=float(np.float32(scale)), zero_point=int(zero_point),
                name=name)


def scale16(rng) -> float:
    """A scale an int16 activation of a trained model might have (its range 2^15 * scale about 0.05 to 50)."""
    return float(np.float32(10 ** rng.uniform(-5.8, -2.8)))


def int16_samples(shape, n: int, rng, spread: int = 32767) -> np.ndarray:
    return rng.integers(-spread, spread + 1, size=(n, *shape)).astype(np.int16)


def run_tflm(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    """TFLM's reference kernels, one invoke per sample; `inputs`: one batch per model input."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=256 * 1024)
    outs = []
    for s in range(len(inputs[0])):
        for i, x in enumerate(inputs):
            interp.set_input(x[s], i)
        interp.invoke()
        outs.append(interp.get_output(0).copy())
    return np.stack(outs)


def assert_matches_tflm(m: tb.Model, inputs: list[np.ndarray], engines=("reference",), name: str = "s16"):
    """Compile the one-op graph and compare every engine's output bytes with TFLM's; returns the compiled model."""
    buf = tb.build(m)
    want = run_tflm(buf, inputs)
    cm = tinyaot.compile(buf, name=name)
    for engine in engines:
        got = cm.run(inputs if len(inputs) > 1 else inputs[0], engine=engine)
        got = np.asarray(got).reshape(want.shape)
        assert got.dtype == want.dtype, (engine, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{engine} != TFLM")
    return cm
