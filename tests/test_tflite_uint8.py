"""A quantized .tflite with a legacy uint8 interface (issue 23): a uint8 input QUANTIZE'd to int8 and an int8 output
QUANTIZE'd to uint8, as older converters and `inference_input_type=tf.uint8` write them. TFLite Micro's QUANTIZE
converts uint8 only to or from int8 (PrepareQuantizeReference / EvalQuantizeReference), by its Requantize: a
multiplier of input_scale / output_scale, so a scale change too, not just the zero point moved by 128.

Every case equals TFLM on every output byte for every uint8 code, on the reference, the host C and (once) the
Cortex-M33; the compiled model publishes uint8 in its header, its accessors and cm.input_dtype / output_dtype.
"""
from __future__ import annotations

import numpy as np
import pytest
from tflite_builder import Model, Op, T, build, load

import tinyaot
from tinyaot.errors import UnsupportedOpError
from tinyaot.frontend.tflite import from_tflite

FEATURES, UNITS = 16, 6
# (input uint8 qparams, its int8 qparams, output int8 qparams, its uint8 qparams): what the converter writes
# (same scale, zero points 128 apart), and scale changes on either side (TFLM requantizes; values saturate).
CASES = {
    "shifted": ((0.04, 128), (0.04, 0), (0.05, -20), (0.05, 108)),
    "rescaled": ((0.05, 131), (0.03, -7), (0.05, -100), (0.07, 20)),
    "coarser": ((0.011, 0), (0.04, -128), (0.09, 3), (0.033, 255)),
}


def _fc(rng, x: int, y: int, tensors: list[T], x_scale: float) -> Op:
    w_scale = 0.02
    tensors.append(T((UNITS, FEATURES), data=rng.integers(-127, 128, (UNITS, FEATURES)).astype(np.int8),
                     scale=w_scale))
    tensors.append(T((UNITS,), "int32", data=rng.integers(-400, 400, UNITS).astype(np.int32),
                     scale=x_scale * w_scale))
    return Op("FULLY_CONNECTED", [x, len(tensors) - 2, len(tensors) - 1], [y], ("FullyConnectedOptions", {}), 4)


def uint8_model(case: str, uint8_in: bool = True, uint8_out: bool = True) -> bytes:
    """uint8 in -> QUANTIZE -> FULLY_CONNECTED -> QUANTIZE -> uint8 out (either end may stay int8)."""
    (us, uz), (qs, qz), (os_, oz), (vs, vz) = CASES[case]
    rng = np.random.default_rng(len(case))
    tensors = [T((1, FEATURES), "uint8", scale=us, zero_point=uz, name="x_u8"),
               T((1, FEATURES), scale=qs, zero_point=qz, name="x_q"),
               T((1, UNITS), scale=os_, zero_point=oz, name="y_q"),
               T((1, UNITS), "uint8", scale=vs, zero_point=vz, name="y_u8")]
    ops = [Op("QUANTIZE", [0], [1]), _fc(rng, 1, 2, tensors, qs), Op("QUANTIZE", [2], [3])]
    if not uint8_in:
        ops = ops[1:]
    if not uint8_out:
        ops = ops[:-1]
    return build(Model(tensors, ops, [0 if uint8_in else 1], [3 if uint8_out else 2]))


def run_tflm(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """TFLM's outputs, one array per model output, for each sample of the inputs (one array per model input)."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=64 * 1024)
    n_out = len(load(model).outputs)
    outs: list[list[np.ndarray]] = [[] for _ in range(n_out)]
    for s in range(len(inputs[0])):
        for i, x in enumerate(inputs):
            interp.set_input(x[s], i)
        interp.invoke()
        for k in range(n_out):
            outs[k].append(interp.get_output(k).copy())
    return [np.stack(o) for o in outs]


def _every_code(n: int = 48) -> np.ndarray:
    """Every uint8 code at every feature (a diagonal sweep), then seeded random rows: [n, 1, FEATURES]."""
    sweep = (np.arange(256)[:, None] + np.arange(FEATURES)[None, :] * 16) % 256
    rnd = np.random.default_rng(5).integers(0, 256, (n, FEATURES))
    return np.concatenate([sweep, rnd]).astype(np.uint8)[:, None]


def _tflm():
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")


@pytest.mark.parametrize("case", list(CASES))
def test_uint8_boundaries_import_as_quantize_nodes_and_publish_uint8(case):
    """Two quantize nodes (TFLM's Requantize) around the layer; uint8 in the graph, on cm and in the header."""
    g = from_tflite(uint8_model(case))
    assert [n.op for n in g.nodes] == ["quantize", "fully_connected", "quantize"]
    cm = tinyaot.compile(uint8_model(case), name=f"u8_{case}")
    assert (cm.input_dtype, cm.output_dtype) == ("uint8", "uint8")
    us, uz = CASES[case][0]
    assert cm.input_qparams == (float(np.float32(us)), uz)
    header = cm.c_sources.files[f"u8_{case}.h"]
    assert f"uint8_t *u8_{case}_input(void);" in header and f"const uint8_t *u8_{case}_output(void);" in header
    assert f"/* input: uint8 [1, {FEATURES}]" in header
    assert f"#define U8_{case.upper()}_INPUT_ZERO_POINT ({uz})" in header


@pytest.mark.parametrize("case", list(CASES))
def test_reference_equals_tflm_on_every_code(case):
    _tflm()
    model = uint8_model(case)
    x = _every_code()
    (want,) = run_tflm(model, [x])
    assert want.dtype == np.uint8 and len(np.unique(want)) > 20  # outputs spread over the uint8 range
    got = tinyaot.compile(model, name="u8").run(x)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_each_end_alone_equals_tflm():
    """A uint8 input with an int8 output, and an int8 input with a uint8 output."""
    _tflm()
    for uint8_in, uint8_out in ((True, False), (False, True)):
        model = uint8_model("rescaled", uint8_in, uint8_out)
        x = _every_code(0)
        x = x if uint8_in else (x.astype(np.int16) - 128).astype(np.int8)
        (want,) = run_tflm(model, [x])
        cm = tinyaot.compile(model, name="u8_end")
        assert cm.input_dtype == ("uint8" if uint8_in else "int8")
        assert cm.output_dtype == ("uint8" if uint8_out else "int8")
        np.testing.assert_array_equal(cm.run(x).reshape(want.shape), want)


@pytest.mark.host
@pytest.mark.parametrize("case", list(CASES))
def test_host_c_equals_tflm_on_every_code(case):
    _tflm()
    model = uint8_model(case)
    x = _every_code()
    (want,) = run_tflm(model, [x])
    np.testing.assert_array_equal(tinyaot.compile(model, name="u8").run(x, engine="host").reshape(want.shape), want)


@pytest.mark.m33
def test_m33_and_pico2_app_equal_tflm(tmp_path):
    """The shifting case (the kernel's one-add path) and the rescaling one (both conversions requantize) on the
    emulated Cortex-M33, 32 inputs each; the rescaling one's Pico 2 project (app.c reads the uint8 output as uint8:
    the predicted class is its unsigned argmax) on QEMU, 4 of them."""
    _tflm()
    from tinyaot.targets.pico2 import run_app_m33

    x = _every_code(0)[::8]
    for case in ("shifted", "rescaled"):
        model = uint8_model(case)
        (want,) = run_tflm(model, [x])
        cm = tinyaot.compile(model, name="u8_m33")
        np.testing.assert_array_equal(cm.run(x, engine="m33").reshape(want.shape), want)
        assert cm.last_m33.instructions > 0
    cm.export(tmp_path / "pico", target="pico2", inputs=x[-4:])
    app = run_app_m33(tmp_path / "pico")
    np.testing.assert_array_equal(app.outputs.view(np.uint8), want[-4:].reshape(4, -1))
    assert app.predictions == [int(np.argmax(w)) for w in want[-4:].reshape(4, -1)]


def test_run_float_quantizes_to_uint8_and_back():
    """Host-side helpers take the published uint8 qparams: real inputs on the uint8 grid quantize to their codes."""
    cm = tinyaot.compile(uint8_model("rescaled"), name="u8f")
    scale, zp = cm.input_qparams
    codes = _every_code(0)
    q = cm.quantize_input((codes.astype(np.float64) - zp) * scale)
    assert q.dtype == np.uint8
    np.testing.assert_array_equal(q, codes)
    np.testing.assert_array_equal(cm.run_float((codes.astype(np.float64) - zp) * scale),
                                  cm.dequantize_output(cm.run(codes)))


def _two_io_model() -> bytes:
    """A uint8 input and an int8 one, added; a uint8 output and an int8 one: mixed-type interfaces."""
    tensors = [T((1, 8), "uint8", scale=0.05, zero_point=120, name="a_u8"), T((1, 8), scale=0.04, zero_point=-3),
               T((1, 8), scale=0.03, zero_point=5, name="b"), T((1, 8), scale=0.06, zero_point=1, name="sum"),
               T((1, 8), "uint8", scale=0.06, zero_point=129, name="sum_u8")]
    ops = [Op("QUANTIZE", [0], [1]), Op("ADD", [1, 2], [3], ("AddOptions", {})), Op("QUANTIZE", [3], [4])]
    return build(Model(tensors, ops, [0, 2], [4, 3]))


@pytest.mark.host
def test_mixed_type_inputs_and_outputs_equal_tflm():
    """Inputs (and outputs) of different types: each keeps its own type in cm.run, the accessors return void * and
    each input's macros name its type."""
    _tflm()
    model = _two_io_model()
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (40, 1, 8)).astype(np.uint8)
    b = rng.integers(-128, 128, (40, 1, 8)).astype(np.int8)
    want = run_tflm(model, [a, b])
    cm = tinyaot.compile(model, name="mixed_io")
    assert cm.input_dtype == ["uint8", "int8"] and cm.output_dtype == ["uint8", "int8"]
    header = cm.c_sources.files["mixed_io.h"]
    assert "void *mixed_io_input(size_t index);" in header and "const void *mixed_io_output(size_t index);" in header
    assert "/* input0: uint8 [1, 8]" in header and "/* input1: int8 [1, 8]" in header
    for engine in ("reference", "host"):
        got = cm.run([a, b], engine=engine)
        for gv, w in zip(got, want):
            assert gv.dtype == w.dtype
            np.testing.assert_array_equal(gv.reshape(w.shape), w)


def _quantize_model(src: str, dst: str) -> bytes:
    zp = {"uint8": 128, "int8": 0, "int16": 0}
    tensors = [T((1, 8), src, scale=0.05, zero_point=zp[src]), T((1, 8), dst, scale=0.04, zero_point=zp[dst])]
    return build(Model(tensors, [Op("QUANTIZE", [0], [1])], [0], [1]))


def _tflm_refuses(model: bytes) -> bool:
    from tflite_micro.python.tflite_micro import runtime

    try:
        interp = runtime.Interpreter.from_bytes(model, arena_size=64 * 1024)
        interp.invoke()
    except RuntimeError:
        return True
    return False


@pytest.mark.parametrize("src, dst", [("uint8", "int16"), ("uint8", "uint8"), ("int16", "uint8")])
def test_quantize_tflm_does_not_run_is_refused_naming_its_rule(src, dst):
    _tflm()
    model = _quantize_model(src, dst)
    assert _tflm_refuses(model)
    with pytest.raises(UnsupportedOpError, match=f"converts {src} to {dst}; TFLite Micro's QUANTIZE converts uint8 "
                                                 "only to int8"):
        from_tflite(model)


def test_uint8_read_by_another_op_is_refused():
    """TFLM's integer kernels other than QUANTIZE take int8 / int16: a uint8 tensor feeding an FC is refused."""
    m = load(uint8_model("shifted"))
    m.ops[1].inputs[0] = 0  # the FC reads the uint8 input itself
    m.ops = m.ops[1:]
    with pytest.raises(UnsupportedOpError, match="uint8 tensor 'x_u8' outside a QUANTIZE"):
        from_tflite(build(m))
