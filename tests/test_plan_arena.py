"""Arena alignment in the generated C (4 default, 16 optional) and the init-time checks of a caller's arena."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
from conftest import make_mlp, random_int8

import tinyaot
from tinyaot.errors import ArenaTooSmallError


@pytest.fixture(scope="module")
def mlp16():
    model = make_mlp([21, 13, 6], True, 11)
    cal = torch.randn((64, 21), generator=torch.Generator().manual_seed(11))
    return tinyaot.compile(model, torch.zeros(1, 21), calibration=cal, name="al16", alignment=16)


def test_alignment_16_plan_and_header(mlp16):
    plan = mlp16.plan
    assert plan.alignment == 16
    assert all(off % 16 == 0 for off in plan.offsets.values())
    assert mlp16.arena_bytes % 16 == 0 and mlp16.arena_bytes >= mlp16.lower_bound_bytes
    files = mlp16.c_sources.files
    assert "#define AL16_ARENA_ALIGNMENT 16" in files["al16.h"]
    assert "__attribute__((aligned(AL16_ARENA_ALIGNMENT)))" in files["al16.c"]


@pytest.mark.host
def test_caller_arena_is_checked_at_init(mlp16):
    from tinyaot.targets.host import build_shared_library

    lib = ctypes.CDLL(str(build_shared_library(mlp16.c_sources.files, "al16")))
    lib.al16_init.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.al16_init.restype = ctypes.c_int
    lib.al16_input.restype = ctypes.c_void_p
    need = mlp16.arena_bytes
    buf = (ctypes.c_uint8 * (need + 64))()
    base = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % 64  # 64-aligned start inside buf
    assert lib.al16_init(base, need) == 0
    assert lib.al16_init(base, need - 1) == -1  # too small
    for skew in (1, 4, 8):  # aligned to less than 16
        assert lib.al16_init(base + skew, need) == -2
    assert lib.al16_init(base + 16, need) == 0
    # The built-in static arena honours 16 too: input() points at base + the input's planned offset.
    assert lib.al16_init(None, 0) == 0
    static_base = lib.al16_input() - mlp16.plan.offset_of(mlp16.graph.inputs[0])
    assert static_base % 16 == 0


@pytest.mark.host
def test_alignment_16_runs_bit_exact_with_static_and_caller_arenas(mlp16):
    x = random_int8((40, 21), 5)
    ref = mlp16.run(x, engine="reference")
    np.testing.assert_array_equal(mlp16.run(x, engine="host"), ref)
    np.testing.assert_array_equal(mlp16.run(x, engine="host", arena_bytes=mlp16.arena_bytes), ref)
    with pytest.raises(ArenaTooSmallError, match="too small"):
        mlp16.run(x, engine="host", arena_bytes=mlp16.arena_bytes - 16)
