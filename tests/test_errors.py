"""Bad input gets a clear message that says what is wrong and what to do."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from conftest import make_mlp

import tinyaot
from tinyaot.errors import ArenaTooSmallError, CalibrationError, ModelError, UnsupportedOpError


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


def test_unsupported_op_names_op_location_and_supported_list():
    with pytest.raises(UnsupportedOpError) as exc:
        tinyaot.compile(WithSort(), torch.zeros(1, 6), calibration=torch.randn(10, 6))
    msg = str(exc.value)
    assert "aten.sort" in msg
    assert "test_errors.py:" in msg and "torch.sort(self.fc(x)" in msg  # where in the user's code
    assert "aten.linear.default" in msg  # the supported list
    assert "never falls back to float" in msg


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
