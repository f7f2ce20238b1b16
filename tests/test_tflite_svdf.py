"""TFLite's SVDF, the int8 -> int16 softmax and QUANTIZE between integer types, each against TFLite Micro; and TFLM's
keyword benchmark model (keyword_scrambled.tflite: QUANTIZE x2, SVDF x7, FULLY_CONNECTED x5, SOFTMAX), bit-exact
over sequences of invokes, since an SVDF's activation state carries over from one invoke to the next in TFLM (a
variable tensor, reset by Reset) and in tinyaot (the state region, reset by <name>_reset()).

The scrambled keyword model saturates: its output is 0.5 / 0.5 whatever the input, and most of its int8 layers
write -128 or 127. So its tests compare every intermediate tensor (rewritten as model outputs) and every SVDF's
state, where the feature activations are unsaturated, and the built one-op graphs below pick their scales so that
the SVDF's values span their types.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_file
from tflite_builder import Model, Op, T, build, load

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError

KEYWORD = "models/tflm_examples/keyword_scrambled.tflite"
# keyword_scrambled.tflite: the output of each operator (its tensors have no names) and each SVDF's state
KEYWORD_OUTPUTS = [53, 0, 5, 8, 13, 16, 21, 24, 29, 32, 37, 42, 47, 50, 51]
KEYWORD_STATES = {"svdf_1": 4, "svdf_3": 12, "svdf_5": 20, "svdf_7": 28, "svdf_9": 36, "svdf_10": 41, "svdf_11": 46}


def f32(v: float) -> float:
    return float(np.float32(v))


def tflm_sequence(model: bytes, xs, tensors=(), reset_at=()) -> tuple[list[list[np.ndarray]], list[list]]:
    """TFLite Micro invoked once per input on one interpreter (its variable tensors carry over), Reset before the
    invokes listed in `reset_at`: every output, and the listed tensors, after each invoke."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=256 * 1024,
                                            intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    n_out = len(load(model).outputs)
    outs, states = [], []
    for k, x in enumerate(xs):
        if k in reset_at:
            interp.reset()
        interp.set_input(np.asarray(x), 0)
        interp.invoke()
        outs.append([interp.get_output(i).copy() for i in range(n_out)])
        states.append([interp.GetTensor(t, 0)["tensor_data"].copy() for t in tensors])
    return outs, states


def per_output(outs: list[list[np.ndarray]], k: int, steps: int) -> np.ndarray:
    return np.stack([o[k] for o in outs]).reshape(steps, -1)


# ---- one SVDF against TFLM -------------------------------------------------------------------------------------


def svdf_model(seed: int, batches: int, inputs: int, filters: int, rank: int, memory: int, state: str = "int16",
               state_zp: int = 0, saturate: bool = False, activation: int = 0) -> bytes:
    """int8 [1, batches * inputs] -> (RESHAPE to [batches, inputs]) -> SVDF -> int8 [batches, filters / rank], with
    scales that make the feature activations span the state's type (or overflow it: `saturate`) and the output
    span int8. Tensor 4 is the state."""
    rng = np.random.default_rng(seed)
    units = filters // rank
    x_s, wf_s = f32(0.05), f32(0.01)
    feature = np.sqrt(inputs) * 60 * x_s * 60 * wf_s  # a typical |feature activation|, real
    steps = 32767 if state == "int16" else 127
    state_s = f32(feature / (steps * (4.0 if saturate else 0.4)))
    wt_s = f32(0.002)
    wt = rng.integers(-steps, steps + 1, size=(filters, memory)).astype(state)
    bias_s = f32(np.float32(state_s) * np.float32(wt_s))
    out_real = np.sqrt(memory * rank) * min(feature, steps * state_s) * 0.5 * steps * wt_s
    y_s = f32(out_real / 60)
    bias = rng.integers(-2, 3, size=units) * int(out_real / bias_s / 8)
    tensors = [
        T((1, batches * inputs), "int8", scale=x_s, zero_point=-3),
        T((filters, inputs), "int8", rng.integers(-127, 128, size=(filters, inputs)), scale=wf_s),
        T((filters, memory), state, wt, scale=wt_s),
        T((units,), "int32", bias.astype(np.int32), scale=bias_s),
        T((batches, filters * memory), state, scale=state_s, zero_point=state_zp, variable=True),
        T((batches, units), "int8", scale=y_s, zero_point=5),
        T((batches, inputs), "int8", scale=x_s, zero_point=-3),
        T((2,), "int32", np.array([batches, inputs], np.int32)),
    ]
    ops = [Op("RESHAPE", [0, 7], [6]),
           Op("SVDF", [6, 1, 2, 3, 4], [5], ("SVDFOptions", {"Rank": rank, "FusedActivationFunction": activation}))]
    return build(Model(tensors, ops, [0], [5]))


SVDF_CASES = {
    "rank1": dict(batches=1, inputs=8, filters=6, rank=1, memory=4),
    "rank2": dict(batches=1, inputs=12, filters=8, rank=2, memory=5),
    "rank3_batches2": dict(batches=2, inputs=5, filters=6, rank=3, memory=3),
    "memory1": dict(batches=1, inputs=7, filters=4, rank=2, memory=1),
    "int8_state": dict(batches=1, inputs=9, filters=8, rank=2, memory=6, state="int8", state_zp=5),
    "int16_saturating": dict(batches=1, inputs=16, filters=5, rank=1, memory=7, saturate=True),
    "int8_saturating_relu": dict(batches=1, inputs=10, filters=6, rank=3, memory=4, state="int8", state_zp=-20,
                                 saturate=True, activation=1),
}
STEPS = 8


def _svdf_run(case: str):
    model = svdf_model(len(case), **SVDF_CASES[case])
    xs = np.random.default_rng(3).integers(-128, 128, size=(STEPS, 1, model_inputs(case))).astype(np.int8)
    outs, states = tflm_sequence(model, xs, tensors=(4,))
    return model, xs, per_output(outs, 0, STEPS), [s[0] for s in states]


def model_inputs(case: str) -> int:
    c = SVDF_CASES[case]
    return c["batches"] * c["inputs"]


@pytest.mark.parametrize("case", sorted(SVDF_CASES))
def test_svdf_reference_equals_tflm_over_a_sequence_state_included(case):
    model, xs, want, want_states = _svdf_run(case)
    assert np.mean((want > -128) & (want < 127)) >= 0.5  # the scales make the outputs span int8, half unclamped
    cm = tinyaot.compile(model, name="svdf")
    assert cm.state_bytes >= want_states[0].nbytes
    stream = cm.stream("reference")
    for k, x in enumerate(xs):
        np.testing.assert_array_equal(stream.step(x).reshape(-1), want[k], err_msg=f"{case}, invoke {k}")
        state = stream.interp.state_view("svdf_1").view(want_states[k].dtype)
        np.testing.assert_array_equal(state, want_states[k].reshape(-1), err_msg=f"{case}: state after invoke {k}")
    np.testing.assert_array_equal(cm.run(xs).reshape(STEPS, -1), want)  # run(): one stream from a reset


@pytest.mark.host
def test_svdf_host_c_equals_tflm_over_a_sequence_with_a_reset():
    """Every case's 8 invokes on host C, then (one case) a reset: the stream starts again as TFLM's after Reset."""
    for case in sorted(SVDF_CASES):
        model, xs, want, _ = _svdf_run(case)
        cm = tinyaot.compile(model, name="svdf")
        np.testing.assert_array_equal(cm.run(xs, engine="host").reshape(STEPS, -1), want, err_msg=case)
    outs, _ = tflm_sequence(model, np.concatenate([xs, xs[:3]]), reset_at=(STEPS,))
    stream = cm.stream("host")
    stream.step(xs)
    stream.reset()
    np.testing.assert_array_equal(stream.step(xs[:3]).reshape(3, -1), per_output(outs, 0, STEPS + 3)[STEPS:])


def test_svdf_is_one_node_with_its_state_in_the_state_region():
    model = svdf_model(0, **SVDF_CASES["rank2"])
    cm = tinyaot.compile(model, name="svdf")
    (node,) = [n for n in cm.graph.nodes if n.op == "svdf"]
    assert node.attrs["rank"] == 2 and cm.state_bytes == 8 * 5 * 2  # filters x memory int16
    assert cm.plan.state_of(node.name).fill == 0
    assert "SVDF layer keeps its activation state" in cm.c_sources.files["svdf.h"]
    int8_state = tinyaot.compile(svdf_model(0, **SVDF_CASES["int8_state"]), name="svdf8")
    assert int8_state.plan.state[0].fill == 5  # TFLM resets an int8 variable tensor to its zero point


def _edit(model: bytes, tensor: int | None = None, op: int | None = None, **changes) -> bytes:
    m = load(model)
    if tensor is not None:
        for k, v in changes.items():
            setattr(m.tensors[tensor], k, v)
    if op is not None:
        m.ops[op].options[1].update(changes)
    return build(m)


def test_what_tflm_refuses_in_an_svdf_is_refused_with_its_rule():
    model = svdf_model(0, **SVDF_CASES["rank2"])
    m = load(model)
    m.tensors[4].dtype = "int8"  # the state's type differs from weights_time's
    with pytest.raises(UnsupportedOpError, match="both int16 or both int8"):
        tinyaot.compile(build(m))
    with pytest.raises(UnsupportedOpError, match="variable tensor"):
        tinyaot.compile(_edit(model, 4, variable=False))
    with pytest.raises(ModelError, match="not a multiple of the rank 3"):
        tinyaot.compile(_edit(model, op=1, Rank=3))
    with pytest.raises(ModelError, match="bias scale .* 1e-5"):
        tinyaot.compile(_edit(model, 3, scale=0.5))
    m = load(model)
    m.tensors[6].dtype = m.tensors[0].dtype = "int16"
    m.tensors[6].zero_point = m.tensors[0].zero_point = 0
    with pytest.raises(UnsupportedOpError, match="takes an int8 input"):
        tinyaot.compile(build(m))


def test_an_svdf_without_a_bias_sums_zero():
    """TFLM's Eval reads a missing bias as zeros (its Prepare cannot take one); tinyaot compiles it, the reference
    and host C agree, and it equals the same model with a zero bias under TFLM."""
    model = svdf_model(1, **SVDF_CASES["rank1"])
    m = load(model)
    m.ops[1].inputs[3] = -1
    xs = np.random.default_rng(4).integers(-128, 128, size=(5, 1, 8)).astype(np.int8)
    zero = _edit(model, 3, data=np.zeros(6, np.int32))
    want = per_output(tflm_sequence(zero, xs)[0], 0, 5)
    cm = tinyaot.compile(build(m), name="nobias")
    np.testing.assert_array_equal(cm.run(xs).reshape(5, -1), want)


# ---- softmax int8 -> int16, QUANTIZE between integer types -----------------------------------------------------


def test_int8_to_int16_softmax_equals_tflm():
    """TFLM's int8 Softmax template with an int16 output: zero point -32768, scale 1/65536 (1/65535 is within
    TFLM's 0.1 %: the keyword model's)."""
    tensors = [T((1, 3, 7), "int8", scale=0.11, zero_point=3), T((1, 3, 7), "int16", scale=1 / 65535,
                                                                   zero_point=-32768)]
    model = build(Model(tensors, [Op("SOFTMAX", [0], [1], ("SoftmaxOptions", {"Beta": 0.7}))], [0], [1]))
    x = np.random.default_rng(5).integers(-128, 128, size=(40, 1, 3, 7)).astype(np.int8)
    x[0] = 0  # equal logits: every output 1/7
    want = per_output(tflm_sequence(model, x)[0], 0, 40)
    cm = tinyaot.compile(model, name="softmax16")
    assert cm.graph.nodes[0].op == "softmax" and cm.output_qparams[1] == -32768
    got = cm.run(x).reshape(40, -1)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int16 and len(np.unique(got)) > 100
    tensors[1] = T((1, 3, 7), "int16", scale=1 / 32768, zero_point=-32768)
    with pytest.raises(UnsupportedOpError, match="scale 1/65536 and zero point -32768"):
        tinyaot.compile(build(Model(tensors, [Op("SOFTMAX", [0], [1], ("SoftmaxOptions", {"Beta": 1.0}))], [0], [1])))


def quantize_chain() -> bytes:
    """int16 in -> int8 -> int32 -> int16 -> int32 -> int8 -> int16 (zero point -32768): TFLM's integer QUANTIZE
    pairs, every intermediate an output."""
    specs = [("int16", 0.0011, 0), ("int8", 0.05, -7), ("int32", 0.0003, 0), ("int16", 0.004, 0),
             ("int32", 0.00071, 0), ("int8", 0.09, 11), ("int16", 0.002, -32768)]
    tensors = [T((1, 24), dt, scale=s, zero_point=z) for dt, s, z in specs]
    ops = [Op("QUANTIZE", [k], [k + 1]) for k in range(len(specs) - 1)]
    return build(Model(tensors, ops, [0], list(range(1, len(specs)))))


@pytest.mark.parametrize("engine", ["reference", pytest.param("host", marks=pytest.mark.host)])
def test_quantize_between_int8_int16_and_int32_equals_tflm(engine):
    model = quantize_chain()
    x = np.random.default_rng(6).integers(-32768, 32768, size=(30, 1, 24)).astype(np.int16)
    outs, _ = tflm_sequence(model, x)
    cm = tinyaot.compile(model, name="chain")
    got = cm.run(x, engine=engine)
    assert [g.dtype for g in got] == [np.int8, np.int32, np.int16, np.int32, np.int8, np.int16]
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g.reshape(30, -1), per_output(outs, k, 30), err_msg=f"output {k}")


def test_a_custom_operator_is_refused_with_what_it_means():
    tensors = [T((1, 8), "int8", scale=0.1), T((1, 8), "int8", scale=0.1)]
    for custom, words in (("ethos-u", "this .tflite was compiled by Vela for an Ethos-U NPU; give tinyaot the "
                                      ".tflite from before Vela"),
                          ("FlexErf", "a TensorFlow op (SELECT_TF_OPS)"), ("MyOp", "a custom operator")):
        model = build(Model(tensors, [Op("CUSTOM", [0], [1], custom=custom)], [0], [1]))
        with pytest.raises(UnsupportedOpError) as err:
            tinyaot.compile(model)
        assert f"operator 0 (CUSTOM '{custom}') is not supported: " in str(err.value) and words in str(err.value)
        assert "tinyaot imports ADD, " in str(err.value)


# ---- TFLM's keyword benchmark model ------------------------------------------------------------------------------


def keyword_inputs(seed: int, steps: int) -> np.ndarray:
    """int16 frames at growing amplitudes (the input's int8 QUANTIZE clips below 0 and above 9.5 real)."""
    rng = np.random.default_rng(seed)
    amplitude = np.linspace(200, 32767, steps).astype(int)
    return np.stack([rng.integers(-a, a + 1, size=(1, 96)) for a in amplitude]).astype(np.int16)


def keyword_every_tensor() -> bytes:
    """The keyword model with every operator's output a model output (its own output first)."""
    m = load(shared_file(KEYWORD).read_bytes())
    m.outputs = KEYWORD_OUTPUTS
    return build(m)


def test_keyword_model_imports_with_int16_input_int32_output_and_svdf_state():
    cm = tinyaot.compile(shared_file(KEYWORD), name="kw")
    assert [n.op for n in cm.graph.nodes].count("svdf") == 7
    assert cm.input_dtype == "int16" and cm.graph.tensor(cm.graph.outputs[0]).dtype == "int32"
    assert cm.state_bytes == 10240  # TFLM's variable tensors: 4 x 512 + 3 x 1024 int16
    assert cm.arena_bytes == 288  # TFLM needs 15,152 B in all, 10,240 of them the state (its recording allocator)
    fcs = [k for k in cm.plan.kernels if k.node.startswith("fully_connected")]
    assert len(fcs) == 5 and {k.variant for k in fcs} == {"wide"}  # biases near 2^31: some channels run exact
    assert all("run TFLM's exact requantization" in k.note for k in fcs)
    assert cm.c_sources.files["kw.c"].count("tinyaot_fully_connected_wide_mixed_s8(") == 5
    x = keyword_inputs(0, 4)
    want = per_output(tflm_sequence(shared_file(KEYWORD).read_bytes(), x)[0], 0, 4)
    np.testing.assert_array_equal(cm.run(x).reshape(4, -1), want)


def test_keyword_model_reference_equals_tflm_on_every_tensor_and_state_over_invokes_and_a_reset():
    model = keyword_every_tensor()
    x = np.concatenate([keyword_inputs(1, 10), keyword_inputs(2, 6)])
    outs, states = tflm_sequence(model, x, tensors=tuple(KEYWORD_STATES.values()), reset_at=(10,))
    cm = tinyaot.compile(model, name="kw")
    stream = cm.stream("reference")
    for k, xk in enumerate(x):
        if k == 10:
            stream.reset()
        got = stream.step(xk)
        for i, g in enumerate(got):
            np.testing.assert_array_equal(g.reshape(-1), outs[k][i].reshape(-1), err_msg=f"invoke {k}, output {i}")
        for (node, _), want in zip(KEYWORD_STATES.items(), states[k]):
            np.testing.assert_array_equal(stream.interp.state_view(node).view(np.int16), want.reshape(-1),
                                          err_msg=f"invoke {k}: {node}'s state")
    assert len(np.unique(np.concatenate([s.reshape(-1) for s in states[-1]]))) > 500  # the states are rich


@pytest.mark.host
def test_keyword_model_host_c_equals_tflm_on_every_tensor_over_invokes():
    model = keyword_every_tensor()
    x = np.concatenate([keyword_inputs(3, 12), keyword_inputs(4, 4)])
    outs, _ = tflm_sequence(model, x)
    got = tinyaot.compile(model, name="kw").run(x, engine="host")
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g.reshape(len(x), -1), per_output(outs, i, len(x)), err_msg=f"output {i}")


@pytest.mark.m33
def test_keyword_model_and_an_odd_svdf_on_the_cortex_m33_equal_tflm():
    """The DSP paths: the keyword model (filters multiples of 4, even memories) and an SVDF whose filters and
    memory leave tails (6 filters, memory 5) with an int8 state."""
    model = keyword_every_tensor()
    x = keyword_inputs(5, 6)
    outs, _ = tflm_sequence(model, x)
    cm = tinyaot.compile(model, name="kw")
    got = cm.run(x, engine="m33")
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g.reshape(len(x), -1), per_output(outs, i, len(x)), err_msg=f"output {i}")
    assert cm.last_m33.instructions is not None
    for case in ("rank3_batches2", "int8_state", "int16_saturating"):
        model, xs, want, _ = _svdf_run(case)
        np.testing.assert_array_equal(tinyaot.compile(model, name="svdf").run(xs, engine="m33").reshape(STEPS, -1),
                                      want, err_msg=case)


@pytest.mark.host
def test_svdf_c_is_clean_under_asan_and_ubsan():
    """The SVDF's wrapping sums, state clamps and int8 state stores, and the int32 / int16 conversions, under
    -fsanitize=address,undefined over a sequence from the int16 extremes (one state carried through it)."""
    from tinyaot.targets import host
    from tinyaot.targets.base import ModelSources

    problem = host.sanitizer_problem()
    if problem is not None:
        pytest.skip(f"no sanitizer support on this machine: {problem}")
    target = host.SanitizedHostTarget()
    for model, x in ((keyword_every_tensor(), keyword_inputs(6, 5)),
                     (svdf_model(2, **SVDF_CASES["int8_saturating_relu"]), _svdf_run("int8_saturating_relu")[1])):
        x[0], x[1] = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max
        cm = tinyaot.compile(model, name="sanitized")
        got = target.run(target.build(ModelSources.of(cm)), x.reshape(len(x), -1).view(np.int8)).outputs
        want = np.concatenate([np.asarray(o).reshape(len(x), -1).view(np.int8) for o in cm.run(x)]
                              if cm.n_outputs > 1 else [cm.run(x).reshape(len(x), -1).view(np.int8)], axis=1)
        np.testing.assert_array_equal(np.asarray(got).reshape(len(x), -1).view(np.int8), want)


def test_the_header_types_int16_input_int32_output_and_mixed_outputs():
    """The accessors take the model's types: int16_t in and int32_t out for the keyword model; with outputs of
    several types (every tensor of it) the output accessor is `const void *`, each output's type in its macros."""
    header = tinyaot.compile(shared_file(KEYWORD), name="kw").c_sources.files["kw.h"]
    assert "int16_t *kw_input(void);" in header and "const int32_t *kw_output(void);" in header
    header = tinyaot.compile(keyword_every_tensor(), name="kw").c_sources.files["kw.h"]
    assert "const void *kw_output(size_t index);" in header
    assert "/* output0: int32 [1, 2]" in header and "/* output14: int16 [1, 2]" in header
    with pytest.raises(ModelError, match="int16 or int32 input or output"):
        tinyaot.compile(shared_file(KEYWORD), name="kw").export("unused", target="pico2")
