"""The command line with bad input: one line that says what is wrong and what to do, an exit code, a JSON error
object with --json, and no traceback; argument values are checked before the compile starts."""
from __future__ import annotations

import errno
import json
import os
import pty
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from tflite_builder import Model, Op, T, build

import tinyaot.pipeline
from tinyaot.cli import build_parser, main

TINYAOT = Path(sys.executable).with_name("tinyaot")  # the console script, as a shell runs it


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small models (an int8 .tflite needs no torch) and the arrays the tests feed them."""
    d = tmp_path_factory.mktemp("cli_errors")
    rng = np.random.default_rng(2)
    fc = [T((1, 8), scale=0.1, zero_point=0), T((4, 8), data=rng.integers(-127, 128, (4, 8)).astype(np.int8),
                                                  scale=0.01),
          T((4,), "int32", data=np.arange(4, dtype=np.int32), scale=0.001), T((1, 4), scale=0.2, zero_point=3)]
    (d / "fc.tflite").write_bytes(build(Model(fc, [Op("FULLY_CONNECTED", [0, 1, 2], [3],
                                                      ("FullyConnectedOptions", {}), 4)], [0], [3])))
    f32 = [T((1, 8), "float32"), T((4, 8), "float32", data=rng.normal(size=(4, 8)).astype(np.float32)),
           T((4,), "float32", data=np.zeros(4, np.float32)), T((1, 4), "float32")]
    (d / "float.tflite").write_bytes(build(Model(f32, [Op("FULLY_CONNECTED", [0, 1, 2], [3],
                                                          ("FullyConnectedOptions", {}))], [0], [3])))
    (d / "nets.py").write_text(textwrap.dedent("""
        from pathlib import Path
        import torch
        import torch.nn as nn

        Path(__file__).with_name("imported").write_text("the model file was imported")

        def mlp():
            torch.manual_seed(3)
            return nn.Sequential(nn.Flatten(), nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4))

        def cube():  # input (1, 3, 3, 3): PyTorch's layout and the model's have the same shape
            torch.manual_seed(0)
            return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(36, 5))

        def conv():  # input (1, 2, 4, 4)
            torch.manual_seed(1)
            return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(48, 3))

        def broken():
            return undefined_layer(3)
    """))
    np.save(d / "x8.npy", rng.integers(-128, 128, (3, 8)).astype(np.int8))
    np.save(d / "noise.npy", rng.normal(size=(64, 3, 4)).astype(np.float32))  # i.i.d.: a calibration warning
    np.save(d / "x34.npy", rng.normal(size=(5, 3, 4)).astype(np.float32))
    np.save(d / "x10.npy", rng.normal(size=(5, 10)).astype(np.float32))
    np.save(d / "empty.npy", np.zeros((0, 3, 4), np.float32))
    np.savez(d / "empty.npz", x=np.zeros((0, 3, 4)), y=np.zeros(0))
    np.savez(d / "short_labels.npz", x=rng.normal(size=(10, 3, 4)), y=np.arange(9) % 4)
    np.save(d / "labels3.npy", np.array([0, 1, 2]))
    (d / "zero_bytes.npy").write_bytes(b"")
    (d / "text.npy").write_text("1 2 3\n")
    full = d / "full.npy"
    np.save(full, np.zeros((100, 8), np.int8))
    (d / "truncated.npy").write_bytes(full.read_bytes()[:200])
    np.save(d / "strings.npy", np.array(["a", "b"]))
    (d / "a_file").write_text("not a directory")
    smooth = np.sin(np.linspace(0, 3, 27).reshape(1, 3, 3, 3) * rng.uniform(0.5, 2, (64, 1, 1, 1)))
    np.save(d / "cube_cal.npy", smooth.astype(np.float32))
    np.save(d / "cube_x.npy", (0.5 * smooth[:2]).astype(np.float32))
    wave = np.sin(np.linspace(0, 3, 32).reshape(1, 2, 4, 4) * rng.uniform(0.5, 2, (64, 1, 1, 1)))
    np.save(d / "conv_cal.npy", wave.astype(np.float32))
    return d


@pytest.fixture(autouse=True)
def _fresh(files, monkeypatch):
    """No test sees another's import marker; relative default outputs land in the tmp folder."""
    (files / "imported").unlink(missing_ok=True)
    monkeypatch.chdir(files)


@pytest.fixture
def no_compile(monkeypatch):
    """The compile must not start: these errors are found in the arguments alone."""
    def refuse(*args, **kwargs):
        raise AssertionError("the compile started before the arguments were checked")

    monkeypatch.setattr(tinyaot.pipeline, "compile_model", refuse)


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def error_of(capsys, *argv, code: int = 2) -> tuple[dict, str]:
    """Run with --json: the exit code, one `tinyaot: error:` line on stderr, and the JSON error on stdout."""
    rc, out, err = cli(capsys, *argv, "--json")
    assert rc == code, (rc, out, err)
    lines = [ln for ln in err.splitlines() if ln.startswith("tinyaot: error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    error = json.loads(out)["error"]
    assert error["exit_code"] == code and " ".join(error["message"].split()) == lines[0][len("tinyaot: error: "):]
    return error, lines[0]


def shell(*argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(TINYAOT), *map(str, argv)], capture_output=True, text=True, timeout=120, **kwargs)


# ---- argument values, checked before the compile ------------------------------------------------------------


@pytest.mark.parametrize("value", ["3", "0", "-4", "8192"])
def test_alignment_is_a_power_of_two(capsys, no_compile, value):
    error, line = error_of(capsys, "compile", "fc.tflite", "--alignment", value)
    assert error["type"] == "ModelError" and "power of two" in line and f"got {value}" in line


def test_a_300_character_name_is_refused_up_front(capsys, no_compile):
    error, line = error_of(capsys, "compile", "fc.tflite", "--name", "n" * 300)
    assert "300 characters" in line and "32 or fewer" in line


def test_argparse_errors_are_json_too(capsys):
    error, line = error_of(capsys, "compile", "fc.tflite", "--alignment", "four")
    assert error["type"] == "UsageError" and "invalid int value: 'four'" in line


@pytest.mark.parametrize("shape,expect", [("1,x,3", "expected integers"), ("1,0,3", ">= 1"),
                                          ("3,4", "batch dimension 1 first"), ("1,5", "do not match")])
def test_input_shape_errors_before_the_model_is_imported(capsys, files, shape, expect):
    _, line = error_of(capsys, "compile", "nets.py:mlp", "--calibration", "noise.npy", "--input-shape", shape)
    assert expect in line and not (files / "imported").exists()


def test_input_shape_and_torch_layout_are_for_pytorch_models(capsys, no_compile):
    _, line = error_of(capsys, "compile", "fc.tflite", "--input-shape", "1,8")
    assert "drop --input-shape" in line
    _, line = error_of(capsys, "run", "fc.tflite", "--input", "x8.npy", "--layout", "torch")
    assert "a .tflite model has no PyTorch layout" in line


def test_a_float_tflite_needs_calibration_before_compiling(capsys, no_compile):
    error, line = error_of(capsys, "compile", "float.tflite")
    assert error["type"] == "CalibrationError" and "float.tflite is a float .tflite: it needs --calibration" in line


@pytest.mark.parametrize("out,expect", [("x8.npy", "is a file, not a directory"),
                                        ("a_file/sub", "is a file, so nothing can be created inside it"),
                                        ("d/" + "n" * 300, "use a shorter name")])
def test_output_directory(capsys, no_compile, out, expect):
    for command in (["compile"], ["export", "--target", "c"]):
        _, line = error_of(capsys, *command, "fc.tflite", "-o", out)
        assert expect in line


def test_output_directory_not_writable(capsys, no_compile, files, monkeypatch):
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == files / "locked" else real(p, mode))
    (files / "locked").mkdir(exist_ok=True)
    _, line = error_of(capsys, "compile", "fc.tflite", "-o", "locked/gen/c")
    assert "cannot write in" in line and "locked" in line and "choose a directory you can write to" in line
    _, line = error_of(capsys, "run", "fc.tflite", "--input", "x8.npy", "-o", "locked/y.npy")
    assert "cannot write in" in line


def test_run_output_and_report_picture_are_files(capsys, no_compile):
    _, line = error_of(capsys, "run", "fc.tflite", "--input", "x8.npy", "-o", ".")
    assert "is a directory; give a file name" in line
    _, line = error_of(capsys, "report", "fc.tflite", "--picture", ".")
    assert "--picture '.' is a directory" in line


@pytest.mark.parametrize("flag,path,expect", [
    ("--input", "missing.npy", "does not exist"),
    ("--input", ".", "is a directory"),
    ("--input", "zero_bytes.npy", "the file is empty"),
    ("--input", "text.npy", "is not a NumPy array"),
    ("--input", "truncated.npy", "failed to read all data"),
    ("--input", "strings.npy", "give numbers"),
    ("--input", "empty.npy", "holds no samples (shape (0, 3, 4))"),
    ("--calibration", "empty.npy", "holds no samples"),
    ("--calibration", "zero_bytes.npy", "the file is empty"),
])
def test_input_files_are_checked_before_compiling(capsys, no_compile, flag, path, expect):
    argv = ["run", "fc.tflite", "--input", "x8.npy"] if flag == "--calibration" else ["run", "fc.tflite"]
    _, line = error_of(capsys, *argv, flag, path)
    assert expect in line


def test_unreadable_input(capsys, no_compile, files, monkeypatch):
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).endswith("x8.npy") else real(p, mode))
    _, line = error_of(capsys, "run", "fc.tflite", "--input", "x8.npy")
    assert "not readable (permission denied)" in line


def test_empty_data_and_label_counts(capsys, files):
    _, line = error_of(capsys, "eval", "nets.py:mlp", "--calibration", "noise.npy", "--data", "empty.npz")
    assert "holds no samples" in line
    _, line = error_of(capsys, "eval", "nets.py:mlp", "--calibration", "noise.npy", "--data", "short_labels.npz")
    assert "10 inputs but 9 labels" in line
    _, line = error_of(capsys, "report", "nets.py:mlp", "--calibration", "noise.npy", "--data", "short_labels.npz")
    assert "10 inputs but 9 labels" in line
    assert not (files / "imported").exists()


def test_input_size_mismatch_before_compiling(capsys, files):
    _, line = error_of(capsys, "run", "nets.py:mlp", "--calibration", "noise.npy", "--input", "x10.npy")
    assert "hold 10 values" in line and "(3, 4) (12 values)" in line and not (files / "imported").exists()


def test_export_options_belong_to_pico2(capsys, no_compile):
    _, line = error_of(capsys, "export", "fc.tflite", "--copy-to-ram")
    assert "--copy-to-ram is an option of --target pico2" in line
    _, line = error_of(capsys, "export", "fc.tflite", "--labels", "labels3.npy")
    assert "--target c writes only the model" in line


def test_export_label_count_is_checked_before_compiling(capsys, files):
    _, line = error_of(capsys, "export", "nets.py:mlp", "--calibration", "noise.npy", "--target", "pico2",
                       "--labels", "labels3.npy")
    assert "3 labels for 4 test inputs (the first 4 --calibration samples)" in line
    assert not (files / "imported").exists()


def test_float_model_needs_data(capsys, no_compile):
    _, line = error_of(capsys, "report", "fc.tflite", "--float-model", "fc.tflite")
    assert "add --data" in line


def test_model_file_errors_name_the_users_line(capsys):
    error, line = error_of(capsys, "compile", "nets.py:broken", "--calibration", "noise.npy")
    assert error["type"] == "ModelError" and re.search(r"nets.py:\d+: NameError: name 'undefined_layer'", line)
    _, line = error_of(capsys, "compile", "nets.py:nothing", "--calibration", "noise.npy")
    assert "defines no 'nothing'" in line


# ---- failures while working: the user's, the machine's and tinyaot's -----------------------------------------


def test_toolchain_missing_is_exit_code_3(capsys, monkeypatch):
    monkeypatch.setenv("TINYAOT_ARM_GCC", "no-such-arm-gcc")
    error, line = error_of(capsys, "run", "fc.tflite", "--input", "x8.npy", "--engine", "m33", code=3)
    assert error["type"] == "ToolchainMissing" and "apt-get install" in line


def test_emulator_failure_is_exit_code_3(capsys, monkeypatch):
    import tinyaot.targets.m33 as m33

    def qemu_fails(*args, **kwargs):
        raise m33.M33RunError("QEMU timed out after 60 s")

    monkeypatch.setattr(m33, "run_m33", qemu_fails)
    error, line = error_of(capsys, "run", "fc.tflite", "--input", "x8.npy", "--engine", "m33", code=3)
    assert error["type"] == "M33RunError" and "QEMU timed out" in line


def test_disk_full_while_writing(capsys, monkeypatch):
    from tinyaot.model import CompiledModel

    def full(self, directory, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(Path(directory) / "fc.c"))

    monkeypatch.setattr(CompiledModel, "export", full)
    error, line = error_of(capsys, "compile", "fc.tflite", "-o", "gen")
    assert error["type"] == "OSError" and "No space left on device" in line and "free some disk space" in line


def test_ctrl_c_is_one_line_and_exit_code_130(capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tinyaot.pipeline, "compile_model", interrupted)
    try:
        error, line = error_of(capsys, "compile", "fc.tflite", code=130)
    except KeyboardInterrupt:  # it escaped main(): do not let it stop the test session
        pytest.fail("KeyboardInterrupt escaped main()")
    assert line == "tinyaot: error: interrupted"


def test_a_bug_keeps_its_traceback_and_says_it_is_a_bug(capsys, monkeypatch):
    def bug(*args, **kwargs):
        raise IndexError("list index out of range")

    monkeypatch.setattr(tinyaot.pipeline, "compile_model", bug)
    rc, out, err = cli(capsys, "compile", "fc.tflite", "--json")
    assert rc == 4 and "Traceback" in err and "IndexError: list index out of range" in err
    assert "This is a bug in tinyaot" in err and "please report it" in err
    assert json.loads(out)["error"]["type"] == "InternalError"


@pytest.mark.parametrize("bug", ["IRError", "ParamsMismatch"])
def test_tinyaots_own_errors_are_exit_code_4_with_a_bug_report_hint(capsys, monkeypatch, bug):
    """An InternalError (here a pass that breaks the IR, caught by the driver's verifier, or a Params that does not
    fit its C struct) is tinyaot's bug, not the user's: exit 4, not 2, and a request to report it."""
    import tinyaot.backend
    from tinyaot.codegen.params import ParamsMismatch
    from tinyaot.errors import InternalError
    from tinyaot.frontend.tflite import from_tflite
    from tinyaot.ir.verify import IRError

    assert issubclass(IRError, InternalError) and issubclass(ParamsMismatch, InternalError)

    def inputless_import(model):  # an import pass that loses the graph's input: the layer reads what none writes
        return from_tflite(model).replace(inputs=[])

    def mismatch(*args):
        raise ParamsMismatch("tinyaot_fully_connected_params.input_offset has no field in the dataclass")

    if bug == "IRError":
        monkeypatch.setattr(tinyaot.pipeline, "from_tflite", inputless_import)
    else:
        monkeypatch.setattr(tinyaot.backend, "generate_c", mismatch)
    rc, out, err = cli(capsys, "compile", "fc.tflite", "-o", "gen_bug", "--json")
    assert rc == 4, err
    assert json.loads(out)["error"] == {"type": "InternalError", "exit_code": 4, "message": ANY_MESSAGE}
    line = next(ln for ln in err.splitlines() if ln.startswith("tinyaot: error: "))
    assert line.startswith(f"tinyaot: error: internal error ({bug}: ")
    assert "This is a bug in tinyaot" in line and "please report it" in line
    assert "the command you ran, the model" in line and "Traceback" in err
    if bug == "IRError":
        assert "after the pass import_tflite, the graph breaks the IR's rules" in line


class _Any:
    def __eq__(self, other):
        return isinstance(other, str) and bool(other)


ANY_MESSAGE = _Any()


def test_an_internal_compiler_error_is_exit_code_4_with_the_stage_and_the_original_traceback(capsys, monkeypatch):
    from tinyaot.quantize import float_eval

    def crash(node, args, g):
        raise IndexError("index 3 is out of bounds")

    monkeypatch.setitem(float_eval.FLOAT_OPS, "fully_connected", crash)  # stands for a bug in any stage
    rc, out, err = cli(capsys, "compile", "nets.py:mlp", "--calibration", "noise.npy", "--json")
    assert rc == 4 and "Traceback" in err and "IndexError: index 3 is out of bounds" in err  # the original's
    lines = [ln for ln in err.splitlines() if ln.startswith("tinyaot: error: ")]
    assert len(lines) == 1 and lines[0].startswith("tinyaot: error: internal compiler error while calibrating on 64 "
                                                   "samples at layer '1' (fully_connected")
    assert "please report it" in lines[0] and lines[0].endswith("the traceback is printed above")
    assert json.loads(out)["error"]["type"] == "InternalError"


# ---- warnings, layout, export, options ----------------------------------------------------------------------


def test_ops_lists_every_supported_op_once_by_family(capsys):
    from tinyaot.frontend.pytorch import supported_ops

    rc, out, _ = cli(capsys, "ops")
    listed = [op for line in out.splitlines() if line.startswith("    ") for op in line.strip(" ,").split(", ")]
    assert rc == 0 and "  activations:" in out and "  convolution, linear, matmul, attention:" in out
    assert "  other:" not in out  # every op in a family: by its name, or by its converter module's table
    assert sorted(op for op in listed if op.startswith(("aten.", "<"))) == supported_ops()
    assert "CONV_2D" in listed and "aten.upsample_bicubic2d.vec" not in listed  # refused with advice, not listed
    rc, out, _ = cli(capsys, "ops", "--json")
    families = json.loads(out)["pytorch"]
    assert sorted(op for ops in families.values() for op in ops) == supported_ops()


@pytest.mark.arm
def test_warnings_are_one_tidy_line(capsys):
    rc, out, err = cli(capsys, "compile", "nets.py:mlp", "--calibration", "noise.npy", "-o", "gen_mlp")
    assert rc == 0
    warns = [ln for ln in err.splitlines() if "random noise" in ln]
    assert len(warns) == 1 and warns[0].startswith("tinyaot: warning: model 'model': the calibration samples")
    assert "warning" not in out  # said once, on stderr


@pytest.mark.arm
def test_calibration_of_an_int8_tflite_is_not_used_and_says_so(capsys):
    rc, out, err = cli(capsys, "compile", "fc.tflite", "--calibration", "x8.npy", "-o", "gen_fc")
    assert rc == 0 and "tinyaot: warning: fc.tflite is already quantized (int8): --calibration is not used" in err


def test_ambiguous_layout_asks_for_layout(capsys, files):
    model = ["nets.py:cube", "--calibration", "cube_cal.npy", "--name", "cube"]
    _, line = error_of(capsys, "run", *model, "--input", "cube_x.npy")
    assert "reads both as PyTorch's layout (N, 3, 3, 3) and as the model's" in line and "--layout torch" in line
    _, line = error_of(capsys, "compile", *model, "--data", "cube_x.npy", "-o", "gen_cube")
    assert line.startswith("tinyaot: error: --data of shape (2, 3, 3, 3) reads both")
    rc, out, _ = cli(capsys, "run", *model, "--input", "cube_x.npy", "--layout", "torch", "--json")
    torch_layout = json.loads(out)["output"]
    np.save(files / "cube_x_nhwc.npy", np.load(files / "cube_x.npy").transpose(0, 2, 3, 1))
    rc, out, _ = cli(capsys, "run", *model, "--input", "cube_x_nhwc.npy", "--layout", "model", "--json")
    assert rc == 0 and json.loads(out)["output"] == torch_layout


@pytest.mark.arm
def test_export_pico2_converts_the_calibration_samples(capsys, files):
    from test_pico2 import _vectors

    model = ["export", "nets.py:conv", "--calibration", "conv_cal.npy", "--name", "conv", "--target", "pico2"]
    rc, out, err = cli(capsys, *model, "-o", "p_cal", "--json")
    assert rc == 0, err
    scale, zp = json.loads(out)["input"]["scale"], json.loads(out)["input"]["zero_point"]
    nhwc = np.load(files / "conv_cal.npy")[:4].transpose(0, 2, 3, 1)
    want = np.clip(np.round(nhwc / scale) + zp, -128, 127).reshape(4, -1)
    np.testing.assert_array_equal(_vectors(files / "p_cal")[0], want)
    np.save(files / "conv_x.npy", np.load(files / "conv_cal.npy")[:4])  # PyTorch's layout, as for run
    assert cli(capsys, *model, "-o", "p_in", "--input", "conv_x.npy")[0] == 0
    np.testing.assert_array_equal(_vectors(files / "p_in")[0], want)


@pytest.mark.arm
def test_copy_to_ram_reaches_the_pico2_export(capsys, monkeypatch):
    import tinyaot.model

    real, seen = tinyaot.model.export_pico2, {}

    def export_pico2(cm, out_dir, inputs=None, labels=None, copy_to_ram=False):
        seen["copy_to_ram"] = copy_to_ram
        return real(cm, out_dir, inputs=inputs, labels=labels)

    monkeypatch.setattr(tinyaot.model, "export_pico2", export_pico2)  # the name CompiledModel.export calls
    rc, _, err = cli(capsys, "export", "fc.tflite", "--target", "pico2", "--copy-to-ram", "-o", "p_ram")
    assert rc == 0 and seen == {"copy_to_ram": True}, err


@pytest.mark.arm
def test_contract_options_and_their_cost(capsys):
    for command in ("compile", "run", "report", "export", "profile", "eval"):
        args = build_parser().parse_args([command, "fc.tflite", "--preserve-input", "--separate-output"]
                                         + (["--input", "x8.npy"] if command == "run" else [])
                                         + (["--data", "x8.npy"] if command == "eval" else []))
        assert args.preserve_input and args.separate_output
    rc, out, err = cli(capsys, "compile", "fc.tflite", "--preserve-input", "-o", "gen_keep", "--json")
    assert rc == 0, err
    contract = json.loads(out)["contract"]
    assert contract["preserve_input"] and contract["input_preserved"] and not contract["separate_output"]
    assert contract["cost_bytes"] == contract["arena_bytes"] - contract["unconstrained_arena_bytes"] >= 0
    rc, out, err = cli(capsys, "compile", "fc.tflite", "--separate-output", "-o", "gen_apart")
    text = " ".join(out.split())  # rich wraps at 80 columns off a terminal
    assert rc == 0 and "output apart from the input: arena" in text and "more than without --separate-output" in text


# ---- as a shell runs it ---------------------------------------------------------------------------------------


def test_console_script_errors_without_traceback(files):
    proc = shell("compile", "fc.tflite", "--alignment", "3", "--json", cwd=files)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == ["tinyaot: error: alignment must be a power of two from 1 to 4096 "
                                                "bytes (e.g. 4, 8, 16), got 3"]
    assert json.loads(proc.stdout)["error"]["type"] == "ModelError"


def test_console_script_warnings_without_file_and_line(files):
    np.save(files / "x_loud.npy", np.full((2, 3, 4), 50.0, np.float32))  # far outside the calibrated range
    proc = shell("run", "nets.py:mlp", "--calibration", "noise.npy", "--input", "x_loud.npy", cwd=files)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert all(ln.startswith("tinyaot: warning: ") for ln in lines) and len(lines) == 2, lines
    assert any("fall outside the calibrated range" in ln for ln in lines)
    assert "CalibrationWarning" not in proc.stderr and "sys:1" not in proc.stderr


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
@pytest.mark.arm
def test_stdout_closed_early_is_quiet(files, json_flag):
    proc = subprocess.Popen([str(TINYAOT), "compile", "fc.tflite", "-o", "gen_pipe", *json_flag], cwd=files,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # like `| head` that has already exited
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


@pytest.mark.arm
def test_a_terminal_sees_the_stages(files):
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(TINYAOT), "compile", "fc.tflite", "-o", "gen_tty"], cwd=files,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    out = proc.stdout.read().decode()
    assert proc.wait(timeout=120) == 0
    err = b"".join(chunks).decode(errors="replace")
    assert "compiling fc.tflite: planning memory" in err and "writing the C to gen_tty/" in err
    assert "compiled model" in out and "compiling" not in out
