"""In-place activations and dropout, as torchvision and timm write them (nn.Hardswish(inplace=True), x.sigmoid_()):
they compile to the program of their out-of-place spelling, and run bit-exactly."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from conftest import random_int8

import tinyaot


class Activations(nn.Module):
    """Every activation with an in-place spelling, in a conv net with a residual use of an activated tensor."""

    def __init__(self, inplace: bool) -> None:
        super().__init__()
        torch.manual_seed(5)
        self.inplace = inplace
        self.c1, self.c2, self.c3 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 1), nn.Conv2d(8, 8, 1)
        self.hswish, self.silu = nn.Hardswish(inplace=inplace), nn.SiLU(inplace=inplace)
        self.hsig, self.relu6 = nn.Hardsigmoid(inplace=inplace), nn.ReLU6(inplace=inplace)
        self.drop = nn.Dropout(0.2, inplace=inplace)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = self.hswish(self.c1(x))
        z = self.silu(self.c2(y)) + y  # y read again after the in-place op on the conv's output
        z = self.relu6(self.hsig(self.c3(z)) * z)
        z = z.sigmoid_() if self.inplace else z.sigmoid()
        z = z.tanh_() if self.inplace else z.tanh()
        z = z.clamp_(-0.5, 0.9) if self.inplace else z.clamp(-0.5, 0.9)
        return self.fc(self.drop(z.mean((2, 3))))


def _compile(inplace: bool):
    cal = np.random.default_rng(3).uniform(-1, 1, (64, 3, 8, 8)).astype(np.float32)
    return tinyaot.compile(Activations(inplace).eval(), torch.from_numpy(cal[:1]), calibration=cal, name="acts")


@pytest.mark.filterwarnings("ignore::tinyaot.diagnostics.CalibrationWarning")
def test_in_place_spellings_compile_to_the_same_program():
    """The same ops with the same attributes, the same arena, the same bytes out (only the node names differ, as
    torch.export names them: `sigmoid_` for `sigmoid`)."""
    inplace, plain = _compile(True), _compile(False)
    assert [(n.op, n.attrs) for n in inplace.graph.nodes] == [(n.op, n.attrs) for n in plain.graph.nodes]
    assert inplace.arena_bytes == plain.arena_bytes and inplace.constant_bytes == plain.constant_bytes
    x = random_int8((50, *plain.input_shape[1:]), seed=9)
    np.testing.assert_array_equal(inplace.run(x), plain.run(x))


@pytest.mark.host
@pytest.mark.filterwarnings("ignore::tinyaot.diagnostics.CalibrationWarning")
def test_in_place_spellings_run_bit_exactly_on_the_host():
    cm = _compile(True)
    x = random_int8((20, *cm.input_shape[1:]), seed=4)
    np.testing.assert_array_equal(cm.run(x, engine="host"), cm.run(x))
