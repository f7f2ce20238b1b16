"""Models with several inputs and outputs: every engine, the Python API's lists, the header, TFLite, PT2E, the CLI."""
from __future__ import annotations

import re
import subprocess
import textwrap

import numpy as np
import pytest
import tflite_builder as tb
import torch
from cli_runner import run_cli
from zoo import ZOO, synthetic_data, trained

import tinyaot
from tinyaot.errors import CalibrationError, ModelError

N_BITEXACT = 12
N_AGREE = 300
MULTI = [e for e in ZOO if e.inputs > 1 or e.outputs > 1]


@pytest.fixture(scope="module", params=MULTI, ids=[e.name for e in MULTI])
def compiled(request):
    entry = request.param
    model = trained(entry)
    x, y = synthetic_data(entry, 200 + N_AGREE, seed=1)
    example = tuple(torch.from_numpy(v[:1]) for v in x) if entry.inputs > 1 else torch.from_numpy(x[:1])
    cal = [v[:200] for v in x] if entry.inputs > 1 else x[:200]
    cm = tinyaot.compile(model, example, calibration=cal, name=entry.name)
    held = [v[200:] for v in x] if entry.inputs > 1 else x[200:]
    return entry, model, cm, held


def _torch(model, x):
    with torch.no_grad():
        out = model(*[torch.from_numpy(v) for v in x]) if isinstance(x, list) else model(torch.from_numpy(x))
    return [o.numpy() for o in out] if isinstance(out, tuple) else out.numpy()


def _head(x, n):
    return [v[:n] for v in x] if isinstance(x, list) else x[:n]


def _as_list(y):
    return y if isinstance(y, list) else [y]


def test_the_api_speaks_in_lists_for_several_inputs_and_outputs(compiled):
    entry, model, cm, x = compiled
    assert (cm.n_inputs, cm.n_outputs) == (entry.inputs, entry.outputs)
    for value, n in ((cm.input_qparams, entry.inputs), (cm.input_shape, entry.inputs),
                     (cm.output_qparams, entry.outputs), (cm.output_shape, entry.outputs)):
        assert isinstance(value, list) == (n > 1) and (n == 1 or len(value) == n)
    xq = cm.quantize_input(cm.to_model_layout(_head(x, 3)))
    assert isinstance(xq, list) == (entry.inputs > 1)
    y = cm.run(xq)
    assert isinstance(y, list) == (entry.outputs > 1)
    shapes = cm.output_shape if entry.outputs > 1 else [cm.output_shape]
    assert [v.shape for v in _as_list(y)] == [(3,) + s[1:] for s in shapes]
    real = cm.dequantize_output(y)
    for v, q, (scale, zp) in zip(_as_list(real), _as_list(y), _as_list(cm.output_qparams)):
        np.testing.assert_allclose(v, (q.astype(np.float64) - zp) * scale)
    one = cm.run([v[0] for v in xq] if entry.inputs > 1 else xq[0])  # one sample in, one sample out
    for a, b in zip(_as_list(one), _as_list(y)):
        np.testing.assert_array_equal(a, b[0])


@pytest.mark.host
@pytest.mark.m33
@pytest.mark.slow
def test_every_engine_gives_the_same_bytes_for_every_output(compiled):
    entry, model, cm, x = compiled
    xq = cm.quantize_input(cm.to_model_layout(_head(x, N_BITEXACT)))
    want = _as_list(cm.run(xq, engine="reference"))
    for engine in ("host", "m33"):
        got = _as_list(cm.run(xq, engine=engine))
        assert len(got) == len(want)
        for k, (a, b) in enumerate(zip(got, want)):
            assert np.array_equal(a, b), f"{engine}: output {k} differs from the reference"
    assert cm.last_m33.instructions > 0


@pytest.mark.m33
@pytest.mark.slow
def test_the_portable_build_gives_the_dsp_builds_bytes(compiled, tmp_path):
    """The same C built for an M33 without the DSP extension (the kernels' portable paths)."""
    from tinyaot.targets.engines import raw_rows
    from tinyaot.targets.m33 import run_m33

    entry, model, cm, x = compiled
    xq = cm.quantize_input(cm.to_model_layout(_head(x, 4)))
    want = _as_list(cm.run(xq, engine="m33"))
    cm.export(tmp_path / "c")
    got = run_m33(tmp_path / "c", cm.name, raw_rows(xq), sum(cm.output_sizes), dsp=False, build_dir=tmp_path / "b",
                  input_sizes=tuple(cm.input_sizes), output_sizes=tuple(cm.output_sizes)).outputs
    edges = np.cumsum([0, *cm.output_sizes])
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[:, edges[k]:edges[k + 1]].reshape(w.shape), w)


def test_no_float_in_the_generated_c(compiled):
    entry, model, cm, x = compiled
    for fname, text in cm.c_sources.files.items():
        if fname.endswith(".c"):
            code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
            assert not re.search(r"\b(float|double)\b", code), fname


@pytest.mark.host
@pytest.mark.slow
def test_the_sanitized_standalone_runner_copies_every_input_and_output(compiled):
    """The C runner's packing (each input at its index, back to back) under AddressSanitizer."""
    from tinyaot.targets.base import ModelSources
    from tinyaot.targets.engines import raw_rows, split_rows
    from tinyaot.targets.host import SanitizedHostTarget

    entry, model, cm, x = compiled
    xq = cm.quantize_input(cm.to_model_layout(_head(x, 4)))
    target = SanitizedHostTarget()
    got = split_rows(cm, target.run(target.build(ModelSources.of(cm)), raw_rows(xq if entry.inputs > 1 else xq)))
    want = cm.run(xq)
    for a, b in zip(_as_list(got.outputs), _as_list(want)):
        np.testing.assert_array_equal(a.reshape(b.shape), b)


@pytest.mark.host
@pytest.mark.slow
def test_int8_agrees_with_float_on_every_head(compiled):
    entry, model, cm, x = compiled
    want = _as_list(_torch(model, x))
    got = _as_list(cm.run_float(cm.to_model_layout(x), engine="host"))
    for k, (a, b) in enumerate(zip(got, want)):
        agreement = (a.reshape(len(b), -1).argmax(-1) == b.reshape(len(b), -1).argmax(-1)).mean()
        # committed weights, seeded samples: every head agrees on all 300 (30 inside the bound)
        assert agreement >= 0.90, f"{entry.name} output {k}: top-1 agreement {agreement:.3f}"


def test_arena_within_the_layer_by_layer_bound(compiled):
    """optimize="memory" keeps every plan within the bound; the default "speed" may add its conv kernels' work
    buffers (documented: a small work buffer in the arena), never more."""
    entry, model, cm, x = compiled
    work = max((k.work_bytes for k in cm.plan.kernels), default=0)
    assert sum(cm.input_sizes) <= cm.arena_bytes <= cm.lower_bound_bytes + work
    example = tuple(torch.from_numpy(v[:1]) for v in x) if entry.inputs > 1 else torch.from_numpy(x[:1])
    smallest = tinyaot.compile(model, example, calibration=_head(x, 100), name=entry.name, optimize="memory")
    assert smallest.arena_bytes <= smallest.lower_bound_bytes


def test_the_header_publishes_every_input_and_output(compiled):
    entry, model, cm, x = compiled
    h = cm.c_sources.files[f"{cm.name}.h"]
    m = cm.name.upper()
    assert f"#define {m}_NUM_INPUTS {entry.inputs}" in h and f"#define {m}_NUM_OUTPUTS {entry.outputs}" in h
    for kind, tensors in (("INPUT", cm.graph.inputs), ("OUTPUT", cm.graph.outputs)):
        for i, t in enumerate(tensors):
            tensor = cm.graph.tensor(t)
            assert f"#define {m}_{kind}{i}_SIZE {tensor.nbytes}" in h
            assert f"#define {m}_{kind}{i}_ZERO_POINT ({tensor.qparams.zero_point[0]})" in h
            scale = float(re.search(rf"#define {m}_{kind}{i}_SCALE (\S+)", h).group(1))
            assert scale == tensor.qparams.scale[0]
    for kind, n in (("input", entry.inputs), ("output", entry.outputs)):
        arg = "size_t index" if n > 1 else "void"
        assert re.search(rf"\b{cm.name}_{kind}\({arg}\);", h), kind
    assert f"#define {m}_INPUT_SIZE " not in h  # unnumbered names would be ambiguous


@pytest.mark.host
def test_an_index_past_the_last_input_or_output_is_null(compiled, tmp_path):
    """A firmware's own main: init, write each input at its index, invoke, read each output; index n is NULL."""
    from tinyaot.targets.host import build_shared_library  # noqa: F401  (the host compiler must be there)

    entry, model, cm, x = compiled
    cm.export(tmp_path)
    m, name = cm.name.upper(), cm.name
    ins = [f"memset({name}_input({i}u), 0, {m}_INPUT{i}_SIZE);" for i in range(entry.inputs)] \
        if entry.inputs > 1 else [f"memset({name}_input(), 0, {m}_INPUT0_SIZE);"]
    null_in = f"if ({name}_input({entry.inputs}u) != NULL) return 3;" if entry.inputs > 1 else ""
    null_out = f"if ({name}_output({entry.outputs}u) != NULL) return 4;" if entry.outputs > 1 else ""
    outs = [f"if ({name}_output({i}u) == NULL) return 5;" for i in range(entry.outputs)] if entry.outputs > 1 else []
    body = [f"if ({name}_init(NULL, 0) != {m}_OK) return 1;", *ins, null_in,
            f"if ({name}_invoke() != {m}_OK) return 2;", *outs, null_out, "return 0;"]
    (tmp_path / "main.c").write_text("#include <string.h>\n" f'#include "{name}.h"\n' "int main(void) {\n"
                                     + "".join(f"    {line}\n" for line in body if line) + "}\n")
    exe = tmp_path / "app"
    cc = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", f"-I{tmp_path}",
                         *map(str, sorted(tmp_path.glob("*.c"))), "-o", str(exe)], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    assert subprocess.run([str(exe)]).returncode == 0


def test_lists_of_the_wrong_length_are_clear_errors(compiled):
    entry, model, cm, x = compiled
    if entry.inputs > 1:
        with pytest.raises(ModelError, match=f"has {entry.inputs} inputs"):
            cm.run(np.zeros(cm.input_shape[0], np.int8))
        with pytest.raises(ModelError, match="same number of samples"):
            cm.run([np.zeros((2,) + s[1:], np.int8) if i == 0 else np.zeros((3,) + s[1:], np.int8)
                    for i, s in enumerate(cm.input_shape)])
    if entry.outputs > 1:
        with pytest.raises(ModelError, match=f"has {entry.outputs} outputs"):
            cm.dequantize_output(np.zeros(4))


# ---- calibration forms and refusals -----------------------------------------------------------------------


def _two_input_model():
    entry = next(e for e in MULTI if e.inputs > 1)
    return entry, trained(entry), synthetic_data(entry, 64, seed=3)[0]


def test_calibration_as_per_input_batches_or_per_sample_tuples_gives_the_same_model():
    entry, model, x = _two_input_model()
    example = tuple(torch.from_numpy(v[:1]) for v in x)
    a = tinyaot.compile(model, example, calibration=[v for v in x], name="a")
    b = tinyaot.compile(model, example, calibration=[tuple(v[i] for v in x) for i in range(len(x[0]))], name="a")
    assert a.input_qparams == b.input_qparams and a.output_qparams == b.output_qparams
    assert a.c_sources.files["a.c"] == b.c_sources.files["a.c"]


def test_calibration_that_does_not_fit_several_inputs_is_a_clear_error():
    entry, model, x = _two_input_model()
    example = tuple(torch.from_numpy(v[:1]) for v in x)
    with pytest.raises(CalibrationError, match="one batch per input"):
        tinyaot.compile(model, example, calibration=x[0])
    with pytest.raises(CalibrationError, match="same number of samples"):
        tinyaot.compile(model, example, calibration=[x[0][:40], x[1][:30]])


def test_contract_options_and_the_pico2_project_say_they_take_one_input_and_output(tmp_path):
    entry, model, x = _two_input_model()
    example = tuple(torch.from_numpy(v[:1]) for v in x)
    with pytest.raises(ModelError, match="one input and one output"):
        tinyaot.compile(model, example, calibration=list(x), preserve_input=True)
    cm = tinyaot.compile(model, example, calibration=list(x), name="two")
    with pytest.raises(ModelError, match="one input and one output"):
        cm.export(tmp_path, target="pico2")


def test_returning_the_same_tensor_twice_is_refused():
    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            y = self.fc(x)
            return y, y

    with pytest.raises(ModelError, match="same tensor"):
        tinyaot.compile(Twice().eval(), torch.zeros(1, 8), calibration=np.random.randn(40, 8).astype(np.float32))


def test_uint8_and_nchw_options_apply_to_every_input():
    entry, model, x = _two_input_model()
    example = tuple(torch.from_numpy(v[:1]) for v in x)
    u8 = tinyaot.compile(model, example, calibration=list(x), name="u8", input_dtype="uint8")
    assert [u8.graph.tensor(t).dtype for t in u8.graph.inputs] == ["uint8"] * entry.inputs
    plain = tinyaot.compile(model, example, calibration=list(x), name="plain")
    xq = plain.quantize_input(plain.to_model_layout(_head(x, 4)))
    shifted = [(v.astype(np.int16) + 128).astype(np.uint8) for v in xq]
    np.testing.assert_array_equal(u8.run(shifted), plain.run(xq))
    nchw = tinyaot.compile(model, example, calibration=list(x), name="nchw", input_layout="NCHW")
    images = [t for t in plain.graph.inputs if plain.graph.io_layout_of(t) == ("NHWC", 4)]
    moved = [n for n in nchw.graph.nodes if n.name.startswith("input_to_nhwc")]
    assert len(moved) == len(images) >= 1
    torch_layout = [np.ascontiguousarray(v.transpose(0, 3, 1, 2)) if v.ndim == 4 else v for v in xq]
    np.testing.assert_array_equal(nchw.run(torch_layout), plain.run(xq))


# ---- TFLite and PT2E ----------------------------------------------------------------------------------------


def _tflm_outputs(model: bytes, inputs: list[np.ndarray], n_out: int) -> list[np.ndarray]:
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=64 * 1024)
    outs = [[] for _ in range(n_out)]
    for s in range(len(inputs[0])):
        for i, x in enumerate(inputs):
            interp.set_input(x[s], i)
        interp.invoke()
        for k in range(n_out):
            outs[k].append(interp.get_output(k).copy())
    return [np.stack(o) for o in outs]


def _qp(rng):
    return float(np.float32(10 ** rng.uniform(-2.0, -0.5))), int(rng.integers(-100, 100))


@pytest.mark.host
@pytest.mark.m33
def test_a_tflite_model_with_two_inputs_and_two_outputs_equals_tflite_micro():
    """ADD and MUL of the same two inputs, each an output: 50 random cases of shapes and qparams."""
    rng = np.random.default_rng(11)
    for case in range(50):
        shape = (1, int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 9)))
        qa, qb, qs, qm = _qp(rng), _qp(rng), _qp(rng), _qp(rng)
        qm = (qa[0] * qb[0] * float(rng.uniform(20, 120)), qm[1])
        t = [tb.T(shape, "int8", scale=q[0], zero_point=q[1]) for q in (qa, qb, qs, qm)]
        model = tb.build(tb.Model(t, [tb.Op("ADD", [0, 1], [2], ("AddOptions", {"FusedActivationFunction": 0})),
                                      tb.Op("MUL", [0, 1], [3], ("MulOptions", {"FusedActivationFunction": 0}))],
                                  [0, 1], [2, 3]))
        cm = tinyaot.compile(model, name="io2")
        xs = [rng.integers(-128, 128, size=(6,) + shape).astype(np.int8) for _ in range(2)]
        want = _tflm_outputs(model, xs, 2)
        got = cm.run(xs)
        for k in range(2):
            assert np.array_equal(got[k], want[k].reshape(got[k].shape)), f"case {case}: output {k}"
        if case < 2:  # the C too, on a few of them
            for engine in ("host", "m33"):
                for k, v in enumerate(cm.run(xs, engine=engine)):
                    assert np.array_equal(v, got[k]), f"case {case}: {engine} output {k}"


@pytest.mark.host
def test_a_pt2e_two_output_model_compiles_with_its_own_qparams():
    from pt2e_models import quantize_pt2e

    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 6, 3, padding=1)
            self.fc = torch.nn.Linear(6 * 8 * 8, 4)
            self.seg = torch.nn.Conv2d(6, 2, 1)

        def forward(self, x):
            h = torch.relu(self.conv(x))
            return self.fc(torch.flatten(h, 1)), self.seg(h)

    torch.manual_seed(0)
    cal = np.random.default_rng(0).random((48, 1, 8, 8)).astype(np.float32)
    q = quantize_pt2e(TwoHeads().eval(), torch.from_numpy(cal[:1]), cal)
    cm = tinyaot.compile(q, torch.from_numpy(cal[:1]))
    assert cm.n_outputs == 2
    # the qparams of the graph's last quantize nodes, one per output
    output_node = next(n for n in q.graph.nodes if n.op == "output")
    want = []
    for out in output_node.args[0]:
        dq = out  # dequantize(quantize(...)) at each output
        scale, zp = dq.args[1], dq.args[2]
        want.append((float(scale), int(zp)))
    assert [(round(s, 9), z) for s, z in cm.output_qparams] == [(round(s, 9), z) for s, z in want]
    xq = cm.quantize_input(cm.to_model_layout(cal[:6]))
    for a, b in zip(cm.run(xq, engine="host"), cm.run(xq)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.host
def test_a_pt2e_two_input_model_compiles_with_its_own_qparams():
    from pt2e_models import quantizer, quiet
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    class Fusion(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.out = torch.nn.Linear(6, 8), torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)

        def forward(self, x, y):
            return self.out(torch.relu(self.a(x)) + torch.relu(self.b(y)))

    quiet()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=(48, 1, 6)).astype(np.float32), rng.normal(size=(48, 1, 4)).astype(np.float32)
    with torch.no_grad():
        exported = torch.export.export(Fusion().eval(), (torch.from_numpy(xs[0]), torch.from_numpy(ys[0])))
        prepared = prepare_pt2e(exported.module(), quantizer(True))
        for x, y in zip(xs, ys):
            prepared(torch.from_numpy(x), torch.from_numpy(y))
        q = convert_pt2e(prepared)
    cm = tinyaot.compile(q, (torch.from_numpy(xs[0]), torch.from_numpy(ys[0])))
    assert cm.n_inputs == 2
    # each input's qparams are those of the quantize node that reads it in the PT2E graph
    placeholders = [n for n in q.graph.nodes if n.op == "placeholder" and n.users]
    want = [(float(u.args[1]), int(u.args[2])) for p in placeholders for u in p.users if "quantize" in str(u.target)]
    assert [(round(s, 9), z) for s, z in cm.input_qparams] == [(round(s, 9), z) for s, z in want]
    xq = cm.quantize_input([xs[:6, 0], ys[:6, 0]])
    np.testing.assert_array_equal(cm.run(xq, engine="host"), cm.run(xq))


# ---- the CLI --------------------------------------------------------------------------------------------------


@pytest.mark.host
def test_the_cli_runs_a_two_input_model_from_one_file_per_input(tmp_path):
    (tmp_path / "net.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(1)
                self.a, self.b, self.out = nn.Linear(6, 8), nn.Linear(4, 8), nn.Linear(8, 3)

            def forward(self, x, y):
                return self.out(torch.relu(self.a(x)) + torch.relu(self.b(y))), torch.relu(self.b(y))

        def build():
            return Net().eval()
    """))
    rng = np.random.default_rng(0)
    for name, n in (("cx", 6), ("cy", 4)):
        np.save(tmp_path / f"{name}.npy", rng.normal(size=(64, n)).astype(np.float32))
    for name, n in (("x", 6), ("y", 4)):
        np.save(tmp_path / f"{name}.npy", rng.normal(size=(3, n)).astype(np.float32))
    base = ["run", "net.py:build", "--calibration", "cx.npy", "--calibration", "cy.npy", "--name", "two",
            "--input", "x.npy", "--input", "y.npy"]
    proc = run_cli([*base, "--json", "-o", "out/y.npy"], tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr
    import json

    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(result["outputs"]) == 2 and np.asarray(result["outputs"][0]).shape == (3, 3)
    np.testing.assert_allclose(np.load(tmp_path / "out/y.0.npy"), result["outputs"][0])
    bad = run_cli(base[:-2], tmp_path, check=False)
    assert bad.returncode != 0 and "--input was given 1" in bad.stderr + bad.stdout
