"""Shared fixtures: where the test data lives, which toolchains exist, small model builders."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TINYAOT_SHARED", REPO.parent / "shared"))


def have_host_cc() -> bool:
    return shutil.which(os.environ.get("CC", "gcc")) is not None


def have_m33() -> bool:
    from tinyaot.targets.toolchain import have_m33_toolchain

    return have_m33_toolchain()


needs_host = pytest.mark.skipif(not have_host_cc(), reason="no host C compiler (gcc) on PATH")
needs_m33 = pytest.mark.skipif(
    not have_m33(), reason="arm-none-eabi-gcc / qemu-system-arm missing (apt-get install --no-install-recommends "
    "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)"
)


def shared_file(rel: str) -> Path:
    path = SHARED / rel
    if not path.exists():
        pytest.skip(f"test data {rel} not found under {SHARED} (set TINYAOT_SHARED to the shared/ folder)")
    return path


def make_mlp(sizes: list[int], relu: bool, seed: int, flatten_from: tuple[int, ...] | None = None):
    """An nn.Sequential MLP with the given layer sizes, optionally ReLU between layers."""
    import torch
    import torch.nn as nn

    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    if flatten_from is not None:
        layers.append(nn.Flatten())
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if relu and i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).eval()


def random_int8(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int16).astype(np.int8)
