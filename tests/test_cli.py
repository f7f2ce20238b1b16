"""The command line, as a firmware team's CI would call it."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from cli_runner import run_cli

_run = run_cli


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "net.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        def build():
            torch.manual_seed(3)
            return nn.Sequential(nn.Flatten(), nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4))

        instance = build()
        not_a_model = 42
    """))
    rng = np.random.default_rng(0)
    np.save(d / "cal.npy", rng.normal(size=(64, 3, 4)).astype(np.float32))
    np.save(d / "x_float.npy", rng.normal(size=(5, 3, 4)).astype(np.float32))
    np.save(d / "x_int8.npy", rng.integers(-128, 128, size=(5, 3, 4)).astype(np.int8))
    return d


MODEL_ARGS = ["net.py:build", "--calibration", "cal.npy", "--name", "net"]


@pytest.mark.arm
def test_compile_writes_c_and_reports_json(model_dir):
    out = _run(["compile", *MODEL_ARGS, "-o", "gen", "--json"], model_dir, subprocess_=True)  # the real program
    info = json.loads(out.stdout)
    assert info["lower_bound_bytes"] == 12 + 9 and info["arena_bytes"] < 21 + 4
    assert info["input"]["shape"] == [1, 3, 4] and info["input"]["dtype"] == "int8"
    assert {p.name for p in (model_dir / "gen").iterdir()} >= {"net.c", "net.h", "fully_connected_s8.c"}


@pytest.mark.arm
def test_compile_human_output(model_dir):
    out = _run(["compile", "net.py:instance", "--calibration", "cal.npy", "--name", "net2", "-o", "gen2"], model_dir)
    assert "arena" in out.stdout and "lower bound" in out.stdout


@pytest.mark.arm
def test_compile_timings_prints_each_pass(model_dir):
    out = _run(["compile", *MODEL_ARGS, "--int16", "1", "-o", "gen_t", "--timings"], model_dir).stdout
    table = out[out.index("time per pass"):]
    passes = ["import_torch", "fold_batch_norm", "calibrate", "lower_to_int8", "int16_layers", "plan", "generate_c",
              "check_budget"]
    assert all(f" {p} " in table for p in passes) and " ms " in table and "share" in table
    assert [table.index(f" {p} ") for p in passes] == sorted(table.index(f" {p} ") for p in passes)  # in order
    assert " uint8_input " not in table  # an option not asked for: the pass did not run
    info = json.loads(_run(["compile", *MODEL_ARGS, "-o", "gen_t", "--timings", "--json"], model_dir).stdout)
    assert [t["pass"] for t in info["timings"]][:2] == ["import_torch", "fold_batch_norm"]
    assert all(t["seconds"] >= 0 for t in info["timings"])
    assert "timings" not in json.loads(_run(["compile", *MODEL_ARGS, "-o", "gen_t", "--json"], model_dir).stdout)


@pytest.mark.arm
def test_compile_int16_layers(model_dir):
    out = _run(["compile", *MODEL_ARGS, "--int16", "1", "-o", "gen16", "--json"], model_dir)
    info = json.loads(out.stdout)
    assert info["int16_layers"] == {"1": "chosen by name"} and info["input"]["dtype"] == "int8"
    assert "fully_connected_s16.c" in {p.name for p in (model_dir / "gen16").iterdir()}
    human = _run(["compile", *MODEL_ARGS, "--int16", "1", "-o", "gen16"], model_dir).stdout
    assert "int16 activations: 1 (chosen by name)" in human
    bad = _run(["compile", *MODEL_ARGS, "--int16", "fc9", "-o", "gen16"], model_dir, check=False)
    assert bad.returncode != 0 and "no layer named 'fc9'; the layers are 0, 1, 3" in bad.stdout + bad.stderr


@pytest.mark.host
def test_run_int8_and_float_inputs(model_dir):
    a = json.loads(_run(["run", *MODEL_ARGS, "--input", "x_int8.npy", "--engine", "host", "--json"], model_dir).stdout)
    b = json.loads(_run(["run", *MODEL_ARGS, "--input", "x_int8.npy", "--json"], model_dir).stdout)
    assert a["output"] == b["output"] and len(a["output"]) == 5
    assert all(isinstance(v, int) for v in a["output"][0])
    f = json.loads(_run(["run", *MODEL_ARGS, "--input", "x_float.npy", "--json", "-o", "y.npy"], model_dir).stdout)
    assert isinstance(f["output"][0][0], float)
    assert np.load(model_dir / "y.npy").shape == (5, 4)


@pytest.mark.m33
def test_report_json_and_text(model_dir):
    rep = json.loads(_run(["report", *MODEL_ARGS, "--json"], model_dir).stdout)
    assert rep["lower_bound_bytes"] == 21 and 21 <= rep["arena_bytes"] < 21 + 4  # at most alignment padding
    assert [t["name"] for t in rep["tensors"]][0] == "input"
    text = _run(["report", *MODEL_ARGS], model_dir).stdout
    assert "lower bound" in text and "input" in text


@pytest.mark.parametrize("args,expect", [
    (["compile", "net.py:build", "--name", "x"], "needs --calibration"),
    (["compile", "net.py:not_a_model", "--calibration", "cal.npy"], "not a torch.nn.Module"),
    (["compile", "missing.py:m", "--calibration", "cal.npy"], "does not exist"),
    (["compile", "net.py", "--calibration", "cal.npy"], "path/to/file.py:name"),
    (["compile", "net.py:build", "--calibration", "nope.npy"], "does not exist"),
    (["compile", "net.py:build", "--calibration", "cal.npy", "--input-shape", "1,5"], "shape"),
])
def test_clear_errors_without_tracebacks(model_dir, args, expect):
    proc = _run(args, model_dir, check=False)
    assert proc.returncode == 2
    assert expect in proc.stderr
    assert "Traceback" not in proc.stderr


def _demo_json(tmp_path, *flags):
    proc = _run(["demo", "--json", *flags, "--out", str(tmp_path / "demo")], tmp_path)
    d = json.loads(proc.stdout)
    assert d["all_correct"] is True
    assert d["arena_bytes"] <= 816 and d["lower_bound_bytes"] == 816
    assert d["float_arena_bytes"] == 4 * 816
    assert {"float PyTorch", "reference", "host C"} <= set(d["predictions"])
    for preds in d["predictions"].values():
        assert preds == [0, 1, 4, 7]
    assert d["code_bytes"] is None or d["flash_bytes"] == d["constant_bytes"] + d["code_bytes"]
    assert (tmp_path / "demo" / "c" / "mnist.c").exists()
    assert json.loads((tmp_path / "demo" / "report.json").read_text())["demo"]["arena_bytes"] == d["arena_bytes"]
    assert "lower bound" in (tmp_path / "demo" / "report.txt").read_text()
    return d


@pytest.mark.arm
@pytest.mark.slow
def test_demo_json_host_engines_correct(tmp_path):
    d = _demo_json(tmp_path, "--no-m33")
    assert "Cortex-M33" not in d["predictions"] and d["code_bytes"] > 0


@pytest.mark.m33
@pytest.mark.slow
def test_demo_json_all_engines_correct(tmp_path):
    d = _demo_json(tmp_path)
    assert "Cortex-M33" in d["predictions"] and d["instructions"] > 15_000 and d["stack_bytes"] > 0  # ~25k MACs


@pytest.mark.arm
def test_demo_table(tmp_path):
    proc = _run(["demo", "--no-m33", "--out", str(tmp_path / "demo")], tmp_path)
    assert "predicted digit per engine" in proc.stdout
    assert "816 B" in proc.stdout and "3,264 B" in proc.stdout


@pytest.mark.m33
def test_profile_per_op_instructions(model_dir):
    d = json.loads(_run(["profile", *MODEL_ARGS, "--json"], model_dir).stdout)
    assert [o["op"] for o in d["ops"]] == ["fully_connected", "fully_connected"]
    assert [o["kernel"] for o in d["ops"]] == ["tinyaot_fully_connected_s8"] * 2  # 12 and 9 inputs: not the wide one
    assert d["total_macs"] == 12 * 9 + 9 * 4
    summed = sum(o["instructions"] for o in d["ops"])
    assert 0 < summed <= d["total_instructions"] < summed + 200  # the rest is the invoke's own call overhead


@pytest.mark.host
def test_eval_accuracy_agreement_and_layer_errors(model_dir):
    rng = np.random.default_rng(4)
    np.savez(model_dir / "data.npz", x=rng.normal(size=(300, 3, 4)).astype(np.float32), y=rng.integers(0, 4, 300))
    d = json.loads(_run(["eval", *MODEL_ARGS, "--data", "data.npz", "--json"], model_dir).stdout)
    # Seeded model and samples: all 300 agree here; int8 and float disagree on about 1% of such inputs (97 of 10,000
    # fresh draws), so 0.9 (30 disagreements) is far from anything a machine's float rounding could move.
    assert d["samples"] == 300 and d["float_int8_agreement"] >= 0.9
    assert 0 <= d["int8_accuracy"] <= 1 and 0 <= d["float_accuracy"] <= 1
    assert [e["op"] for e in d["layers"]["layers"]] == ["fully_connected", "fully_connected"]


@pytest.mark.arm
def test_compile_json_lists_calibration_findings_and_strict_fails(model_dir):
    # cal.npy is i.i.d. Gaussian, the kind of calibration the seed used: it is reported, and --strict refuses it.
    info = json.loads(_run(["compile", *MODEL_ARGS, "-o", "gen3", "--json"], model_dir).stdout)
    assert [f["code"] for f in info["findings"]] == ["noise_like"]
    assert info["calibration"] == {"samples": 64, "observer": "auto"}
    proc = _run(["compile", *MODEL_ARGS, "-o", "gen3", "--strict"], model_dir, check=False)
    assert proc.returncode == 2 and "strict=True" in proc.stderr and "random noise" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.arm
def test_report_with_data_names_the_clipping_layer(model_dir):
    rng = np.random.default_rng(7)
    t = np.linspace(0, 3, 12).reshape(1, 3, 4)
    smooth = np.sin(t * rng.uniform(0.5, 2, size=(200, 1, 1)) + rng.uniform(0, 6, size=(200, 1, 1)))
    np.save(model_dir / "cal_narrow.npy", (0.1 * smooth).astype(np.float32))
    np.savez(model_dir / "check.npz", x=smooth.astype(np.float32))
    args = ["net.py:build", "--calibration", "cal_narrow.npy", "--name", "net", "--data", "check.npz", "--no-m33"]
    rep = json.loads(_run(["report", *args, "--json"], model_dir).stdout)
    check = rep["check"]
    assert check["samples"] == 200 and [e["op"] for e in check["layers"]] == ["fully_connected"] * 2
    assert check["diagnosis"]["cause"] == "range too narrow" and check["diagnosis"]["layer"] == "1"
    assert any("saturate" in w for w in check["warnings"])
    text = _run(["report", *args], model_dir).stdout
    assert "first fault: layer '1'" in text and "clipped" in text
    proc = _run(["report", *args, "--strict"], model_dir, check=False)
    assert proc.returncode == 2 and "saturate" in proc.stderr


@pytest.mark.host
def test_eval_confusion_matrix(model_dir):
    rng = np.random.default_rng(4)
    np.savez(model_dir / "data2.npz", x=rng.normal(size=(40, 3, 4)).astype(np.float32), y=rng.integers(0, 4, 40))
    d = json.loads(_run(["eval", *MODEL_ARGS, "--data", "data2.npz", "--json", "--no-layers"], model_dir).stdout)
    m = np.asarray(d["confusion"])
    assert m.sum() == 40 and m.shape[0] == m.shape[1] >= 4
    assert np.trace(m) / 40 == pytest.approx(d["int8_accuracy"])
    assert "layers" not in d
    text = _run(["eval", *MODEL_ARGS, "--data", "data2.npz"], model_dir).stdout
    assert "confusion matrix" in text and "recall" in text
    np.savez(model_dir / "bad.npz", x=rng.normal(size=(40, 3, 4)).astype(np.float32), y=rng.integers(0, 4, 39))
    proc = _run(["eval", *MODEL_ARGS, "--data", "bad.npz"], model_dir, check=False)
    assert proc.returncode == 2 and "40 inputs but 39 labels" in proc.stderr


@pytest.mark.arm
def test_demo_random_calibration_json(tmp_path):
    d = json.loads(_run(["demo", "--json", "--no-m33", "--random-calibration", "--out", str(tmp_path / "d")],
                        tmp_path).stdout)
    assert d["seed_mistake"]["predictions"] == [0, 1, 4, 4] and d["all_correct"] is True
    assert d["seed_mistake"]["report"]["diagnosis"]["layer"] == "fc1"
    assert d["check"]["output"]["argmax_agreement"] == 1.0
