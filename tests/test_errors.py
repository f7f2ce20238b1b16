"""Bad input gets a clear message that says what is wrong and what to do."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from conftest import make_mlp

import tinyaot
from tinyaot.errors import (
    ArenaTooSmallError,
    CalibrationError,
    InternalCompilerError,
    ModelError,
    UnsupportedOpError,
)


class WithRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.rnn = nn.RNN(8, 4, batch_first=True)  # nn.LSTM / nn.GRU compile (tests/test_lstm.py, test_gru.py)

    def forward(self, x):
        y, _ = self.rnn(self.fc(x))
        return y


class WithSort(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        return torch.sort(self.fc(x), dim=-1).values  # tinyaot has no sort


def test_unsupported_op_names_op_location_and_where_the_supported_list_is():
    with pytest.raises(UnsupportedOpError) as exc:
        tinyaot.compile(WithSort(), torch.zeros(1, 6), calibration=torch.randn(10, 6))
    msg = str(exc.value)
    first = msg.splitlines()[0]
    assert first.startswith("unsupported operation aten.sort")
    assert "test_errors.py:" in first and "torch.sort(self.fc(x)" in first  # where in the user's code
    assert "never falls back to float" in msg and "`tinyaot ops`" in msg  # the supported list, by family
    assert "aten.linear.default" not in msg and len(msg) < 600  # was 2,400 characters, mostly that list


class Softplus2(nn.Module):
    """An op with no kernel, in a layer of a submodule (not the top-level forward)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.act = nn.Softplus()

    def forward(self, x):
        return self.act(torch.sort(self.fc(x), dim=-1).values)


class ManyUnsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Softplus2()
        self.fc = nn.Linear(6, 6)
        self.grouped = nn.ConvTranspose2d(2, 2, 3, groups=2)

    def forward(self, x):
        up = self.grouped(x.view(1, 2, 3, 1))
        y = torch.sort(self.fc(self.block(x)), dim=-1).values
        return (y + x.abs_()).div_(2), up


def _refusal_lines(msg: str) -> list[str]:
    return [line[len("  - "):] for line in msg.splitlines() if line.startswith("  - ")]


def test_every_unsupported_op_of_the_model_is_said_at_once_with_count_and_first_line():
    with pytest.raises(UnsupportedOpError) as exc:
        tinyaot.compile(ManyUnsupported(), torch.zeros(1, 6), calibration=torch.randn(10, 6))
    msg = str(exc.value)
    assert msg.splitlines()[0] == "this model uses 5 operations tinyaot cannot compile (6 uses in all):"
    lines = _refusal_lines(msg)
    assert [line.split()[0] for line in lines] == ["aten.conv_transpose2d.input", "aten.sort.default",
                                                   "aten.softplus.default", "aten.abs_.default", "aten.div_.Tensor"]
    grouped, sort, softplus, abs_, div_ = lines
    # counted, and placed at the first use: the submodule's own line, not the top-level forward that calls it
    assert sort.startswith("aten.sort.default (2 uses), first in layer 'block' (Softplus2) at ")
    assert sort.endswith("return self.act(torch.sort(self.fc(x), dim=-1).values)")
    assert "in layer 'block.act' (Softplus) at " in softplus and "test_errors.py:" in softplus
    # in place: the out-of-place twin compiles (div) or does not either (abs)
    assert "in-place form of aten.div.Tensor" in div_ and "inplace=False" in div_ and "x = x.div(...)" in div_
    assert "x.abs_()" in abs_ and "aten.abs has no integer kernel in tinyaot either" in abs_
    # a supported op used in a way tinyaot cannot compile: its converter's reason
    assert "in layer 'grouped' (ConvTranspose2d)" in grouped and "groups=2" in grouped
    assert msg.splitlines()[-1].startswith("tinyaot never falls back to float")
    assert "aten.linear.default" not in msg


class ThreeGrouped(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Sequential(*(nn.ConvTranspose2d(4, 4, 3, groups=2) for _ in range(3)))

    def forward(self, x):
        return self.up(x)


def test_refusals_after_a_refusal_are_counted_too():
    """A refused layer's output stands in for what it would be, so the layers after it are judged on their own."""
    with pytest.raises(UnsupportedOpError) as exc:
        tinyaot.compile(ThreeGrouped(), torch.zeros(1, 4, 5, 5), calibration=torch.randn(4, 4, 5, 5))
    first = str(exc.value).splitlines()[0]
    assert first.startswith("unsupported operation aten.conv_transpose2d.input (3 uses), first in layer 'up.0'")
    assert "groups=2" in first


def test_one_refusal_of_a_supported_op_keeps_its_own_message():
    with pytest.raises(UnsupportedOpError) as exc:
        tinyaot.compile(GroupedConv(), torch.zeros(1, 3, 8, 8), calibration=torch.randn(4, 3, 8, 8))
    assert str(exc.value).startswith("aten.conv_transpose2d.input in layer 'grouped' (ConvTranspose2d) at ")


def test_unsupported_layer_rnn_is_named():
    with pytest.raises((UnsupportedOpError, ModelError)) as exc:
        tinyaot.compile(WithRNN(), torch.zeros(1, 3, 8), calibration=torch.randn(10, 3, 8))
    assert "'rnn' is an nn.RNN" in str(exc.value)


@pytest.mark.parametrize("bad_shape", [(10, 5), (10, 7, 1), (4,)])
def test_calibration_of_wrong_shape(bad_shape):
    model = make_mlp([6, 4], False, 0)
    with pytest.raises(CalibrationError) as exc:
        tinyaot.compile(model, torch.zeros(1, 6), calibration=np.zeros(bad_shape, np.float32))
    msg = str(exc.value)
    assert "shape" in msg and "(6,)" in msg


def test_calibration_batches_from_an_iterable_are_accepted_and_checked():
    model = make_mlp([6, 4], True, 0)
    batches = [torch.randn(8, 6) for _ in range(3)]
    cm = tinyaot.compile(model, torch.zeros(1, 6), calibration=batches)
    assert cm.calibration_size == 24
    with pytest.raises(CalibrationError, match="batch 1 has shape"):
        tinyaot.compile(model, torch.zeros(1, 6), calibration=[torch.randn(8, 6), torch.randn(8, 5)])


def test_missing_calibration():
    with pytest.raises(CalibrationError, match="needs calibration samples"):
        tinyaot.compile(make_mlp([6, 4], False, 0), torch.zeros(1, 6))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_calibration(bad):
    cal = np.random.default_rng(0).normal(size=(20, 6)).astype(np.float32)
    cal[3, 2] = bad
    with pytest.raises(CalibrationError) as exc:
        tinyaot.compile(make_mlp([6, 4], False, 0), torch.zeros(1, 6), calibration=cal)
    assert "NaN/Inf" in str(exc.value) and "(3, 2)" in str(exc.value)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_weights(bad):
    model = make_mlp([6, 5, 4], True, 0)
    with torch.no_grad():
        model[2].weight[1, 3] = bad
    with pytest.raises(ModelError) as exc:
        tinyaot.compile(model, torch.zeros(1, 6), calibration=torch.randn(10, 6))
    msg = str(exc.value)
    assert "2_weight" in msg and "non-finite" in msg and "(1, 3)" in msg


@pytest.mark.host
def test_caller_arena_too_small_is_refused():
    cm = tinyaot.compile(make_mlp([40, 17, 3], True, 1), torch.zeros(1, 40), calibration=torch.randn(50, 40))
    x = np.zeros((1, 40), np.int8)
    with pytest.raises(ArenaTooSmallError) as exc:
        cm.run(x, engine="host", arena_bytes=cm.arena_bytes - 1)
    assert f"needs {cm.arena_bytes} bytes" in str(exc.value)
    assert "ARENA_SIZE" in str(exc.value)
    # exactly the planned size works and gives the reference answer
    np.testing.assert_array_equal(cm.run(x, engine="host", arena_bytes=cm.arena_bytes), cm.run(x))


def test_run_rejects_float_input_and_wrong_shape():
    cm = tinyaot.compile(make_mlp([6, 4], False, 0), torch.zeros(1, 6), calibration=torch.randn(10, 6))
    with pytest.raises(ModelError, match="run_float"):
        cm.run(np.full((1, 6), 0.5))
    with pytest.raises(ModelError, match="does not fit"):
        cm.run(np.zeros((1, 7), np.int8))
    with pytest.raises(ModelError, match="unknown engine"):
        cm.run(np.zeros((1, 6), np.int8), engine="gpu")


def test_bad_model_name():
    with pytest.raises(ModelError, match="C identifier"):
        tinyaot.compile(make_mlp([6, 4], False, 0), torch.zeros(1, 6), calibration=torch.randn(10, 6), name="my-model")


class GroupedConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.grouped = nn.ConvTranspose2d(8, 8, 3, padding=1, groups=2)

    def forward(self, x):
        return self.grouped(self.stem(x))


def test_grouped_transposed_conv_is_refused_with_the_layer_named():
    with pytest.raises(UnsupportedOpError) as exc:
        tinyaot.compile(GroupedConv(), torch.zeros(1, 3, 8, 8), calibration=torch.randn(4, 3, 8, 8))
    msg = str(exc.value)
    assert "layer 'grouped'" in msg and "groups=2" in msg and "test_errors.py:" in msg
    assert "supported: groups=1" in msg  # says what would work


class ScaledAdd(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.add(self.fc(x), x, alpha=2)


def test_unsupported_pattern_in_a_supported_op_names_the_layer():
    with pytest.raises(UnsupportedOpError) as exc:
        tinyaot.compile(ScaledAdd(), torch.zeros(1, 4), calibration=torch.randn(4, 4))
    assert "alpha=2 of two activations" in str(exc.value) and "test_errors.py:" in str(exc.value)


def _mlp_cal():
    return make_mlp([8, 16, 4], relu=True, seed=0), np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)


@pytest.mark.parametrize("shape", [(4, 8), (2, 8), (8,)])
def test_example_input_with_a_batch_other_than_one_is_refused(shape):
    """A batch-4 example used to build a fixed batch-4 model with 4x the arena, silently."""
    model, cal = _mlp_cal()
    with pytest.raises(ModelError, match="batch size 1") as exc:
        tinyaot.compile(model, torch.zeros(shape), calibration=cal)
    if len(shape) > 1:
        assert "example_input[:1]" in str(exc.value)


def test_compile_leaves_the_module_in_the_mode_it_was_given():
    model, cal = _mlp_cal()
    model.train()
    model[1].eval()  # a mixed state must come back exactly
    modes = [m.training for m in model.modules()]
    tinyaot.compile(model, torch.zeros(1, 8), calibration=cal)
    assert [m.training for m in model.modules()] == modes


@pytest.mark.parametrize("alignment", [3, 0, -4, 8192, 2.0, True])
def test_bad_alignment_is_refused_before_compiling(alignment):
    model, cal = _mlp_cal()
    with pytest.raises(ModelError, match="power of two"):
        tinyaot.compile(model, torch.zeros(1, 8), calibration=cal, alignment=alignment)


def test_a_long_name_is_refused_with_the_limit():
    model, cal = _mlp_cal()
    with pytest.raises(ModelError, match="32 or fewer"):
        tinyaot.compile(model, torch.zeros(1, 8), calibration=cal, name="m" * 300)


# ---- the guard: tinyaot's own bugs leave as InternalCompilerError ------------------------------------------


def _crash(node, args, g):
    raise IndexError("index 3 is out of bounds")


def test_a_crash_inside_a_stage_names_the_stage_and_the_layer_and_keeps_the_original(monkeypatch):
    from tinyaot.quantize import float_eval

    monkeypatch.setitem(float_eval.FLOAT_OPS, "fully_connected", _crash)  # stands for any bug in any stage
    model, cal = _mlp_cal()
    with pytest.raises(InternalCompilerError) as exc:
        tinyaot.compile(model, torch.zeros(1, 8), calibration=cal)
    e = exc.value
    assert isinstance(e, tinyaot.TinyAOTError) and isinstance(e.__cause__, IndexError)
    assert e.stage == "calibrating on 64 samples" and e.layer == "'0' (fully_connected)"
    assert str(e).startswith("internal compiler error while calibrating on 64 samples at layer '0' "
                             "(fully_connected): IndexError: index 3 is out of bounds. This is a bug in tinyaot")
    assert "please report it" in str(e)


def test_the_callers_own_exception_passes_the_guard_unchanged():
    def progress(stage):
        if stage.startswith("calibrating"):
            raise KeyError("the caller's own bug")

    model, cal = _mlp_cal()
    with pytest.raises(KeyError, match="the caller's own bug"):
        tinyaot.compile(model, torch.zeros(1, 8), calibration=cal, progress=progress)


def test_a_stage_that_breaks_the_ir_or_the_plan_is_an_internal_error():
    from tinyaot.errors import PlanError
    from tinyaot.ir.verify import IRError

    assert issubclass(IRError, InternalCompilerError) and issubclass(PlanError, InternalCompilerError)


# ---- what tinyaot.compile is given: every mistake a TinyAOTError that says what to pass ---------------------


class Twice(nn.Module):
    def forward(self, x):
        return x * 2


def _script():
    return torch.jit.script(Twice())


@pytest.mark.parametrize("model,kwargs,error,expect", [
    (None, {}, ModelError, "model must be a PyTorch nn.Module, a PT2E-converted GraphModule or a .tflite model"),
    ("model.pt", {}, ModelError, "load a PyTorch checkpoint into its nn.Module"),
    (_script, {}, ModelError, "TorchScript"),
    (lambda: torch.export.export(Twice(), (torch.zeros(1, 8),)), {}, ModelError, "pass the nn.Module it came from"),
    (Twice, {"calibrate": 3}, ModelError, "no option 'calibrate' (did you mean 'calibration'?)"),
    (Twice, {"progress": 5}, ModelError, "progress must be a function"),
    (Twice, {"input_layout": None}, ModelError, "input_layout must be 'NHWC' (default) or 'NCHW', got None"),
    (Twice, {"int16": 5}, ModelError, "int16 must be a list of layer names or 'auto', got 5"),
    (Twice, {"layer_observers": ["fc"]}, CalibrationError, "layer_observers must be a dict"),
])
def test_a_wrong_argument_to_compile_is_a_tinyaot_error(model, kwargs, error, expect):
    model = model() if callable(model) else model
    _, cal = _mlp_cal()
    kwargs = {"calibration": cal, **kwargs} if "calibrate" not in kwargs else kwargs
    with pytest.raises(error) as exc:
        tinyaot.compile(model, torch.zeros(1, 8), **kwargs)
    assert expect in str(exc.value)


def test_labels_that_do_not_match_the_data_are_refused():
    model, cal = _mlp_cal()
    with pytest.raises(ModelError, match="data has 5 inputs but 3 labels"):
        tinyaot.compile(model, torch.zeros(1, 8), calibration=cal, data=(cal[:5], np.arange(3)))


class IntCast(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).to(torch.int32)


def test_a_cast_to_another_dtype_is_refused_naming_it():
    with pytest.raises(UnsupportedOpError, match="a cast to torch.int32 is not supported"):
        tinyaot.compile(IntCast(), torch.zeros(1, 8), calibration=_mlp_cal()[1])
