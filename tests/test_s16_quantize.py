"""QUANTIZE between int8 and int16 (16x8) tensors, TFLM's Requantize: where a mixed-precision graph changes
precision. One-op .tflite graphs compiled by tinyaot equal TensorFlow Lite Micro on every byte, on the reference,
the host C and (once) the Cortex-M33; the header publishes int16 input / output types."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")
from s16_suite import assert_matches_tflm, int16_samples, scale16, t8, t16  # noqa: E402

CASES, SAMPLES = 12, 8
KINDS = ("8->16", "16->8", "16->16")


def _case(kind: str, rng) -> tuple[tb.Model, np.ndarray]:
    shape = (1, int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 9)))
    s8, z8, s16 = float(10 ** rng.uniform(-2.5, 0)), int(rng.integers(-128, 128)), scale16(rng)
    if kind == "8->16":
        tensors = [t8(shape, s8, z8), t16(shape, s16 * rng.uniform(0.5, 300))]
        x = rng.integers(-128, 128, size=(SAMPLES, *shape)).astype(np.int8)
    elif kind == "16->8":
        tensors = [t16(shape, s16), t8(shape, s16 * 2 ** 15 / 128 * rng.uniform(0.3, 3), z8)]
        x = int16_samples(shape, SAMPLES, rng)
    else:
        tensors = [t16(shape, s16), t16(shape, s16 * rng.uniform(0.2, 5))]
        x = int16_samples(shape, SAMPLES, rng)
    return tb.Model(tensors, [tb.Op("QUANTIZE", [0], [1])], [0], [1]), x


@pytest.mark.host
@pytest.mark.parametrize("kind", KINDS)
def test_quantize_between_int8_and_int16_equals_tflm(kind):
    rng = np.random.default_rng(KINDS.index(kind) + 16)
    for _ in range(CASES):
        m, x = _case(kind, rng)
        assert_matches_tflm(m, [x], engines=("reference", "host"))


@pytest.mark.m33
def test_int16_model_runs_on_the_m33():
    rng = np.random.default_rng(3)
    m, x = _case("16->16", rng)
    cm = assert_matches_tflm(m, [x], engines=("reference", "m33"))
    assert cm.last_m33.instructions > 0


def test_header_publishes_int16_io():
    rng = np.random.default_rng(5)
    m, x = _case("16->8", rng)
    cm = assert_matches_tflm(m, [x])
    header = cm.c_sources.files[f"{cm.name}.h"]
    assert f"int16_t *{cm.name}_input(void);" in header
    assert f"const int8_t *{cm.name}_output(void);" in header
    m, x = _case("8->16", rng)
    header = assert_matches_tflm(m, [x]).c_sources.files[f"{cm.name}.h"]
    assert f"const int16_t *{cm.name}_output(void);" in header
    assert f"int8_t *{cm.name}_input(void);" in header


def test_int16_reaching_an_op_without_a_16x8_kernel_is_refused():
    from tinyaot.errors import UnsupportedOpError

    shape = (1, 2, 2, 4)
    m = tb.Model([t16(shape, 1e-4), t16((1, 4, 4, 4), 1e-4), tb.T((2,), "int32", data=np.array([4, 4], np.int32))],
                 [tb.Op("RESIZE_BILINEAR", [0, 2], [1])], [0], [1])
    import tinyaot

    with pytest.raises(UnsupportedOpError, match=r"operator 0 \(resize_bilinear\).*int16 activations.*no 16x8 kernel"):
        tinyaot.compile(tb.build(m))


def test_pico2_project_refuses_int16_io(tmp_path):
    from tinyaot.errors import ModelError

    rng = np.random.default_rng(7)
    m, x = _case("16->16", rng)
    cm = assert_matches_tflm(m, [x])
    with pytest.raises(ModelError, match="int16 or int32 input or output .*Export the C"):
        cm.export(tmp_path, target="pico2")
