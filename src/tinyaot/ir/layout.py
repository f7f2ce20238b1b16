"""Moving user data between PyTorch's channels-first layout and the compiled model's input layout."""
from __future__ import annotations

import math

import numpy as np

from tinyaot.errors import ModelError


def torch_to_model_layout(x: np.ndarray, layout: str, torch_rank: int) -> np.ndarray:
    """(N, C, H, W) -> (N, H, W, C); (N, C, L) -> (N, 1, L, C); anything else is returned as is."""
    if layout != "NHWC" or torch_rank == 0:
        return x
    x = np.asarray(x)
    if x.ndim != torch_rank:
        raise ModelError(f"expected a batch of channels-first tensors of rank {torch_rank}, got shape {x.shape}")
    if torch_rank == 3:
        x = x[:, :, None, :]
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def model_to_torch_layout(y: np.ndarray, layout: str, torch_rank: int) -> np.ndarray:
    if layout != "NHWC" or torch_rank == 0:
        return y
    y = np.asarray(y).transpose(0, 3, 1, 2)
    return y[:, :, 0, :] if torch_rank == 3 else y


def torch_sample_shape(model_shape: tuple[int, ...], layout: str, torch_rank: int) -> tuple[int, ...]:
    """One sample as PyTorch holds it, given the model's sample shape: (H, W, C) -> (C, H, W); (1, L, C) -> (C, L)."""
    if layout != "NHWC" or torch_rank == 0:
        return model_shape
    h, w, c = model_shape
    return (c, w) if torch_rank == 3 else (c, h, w)


MAX_TRANSPOSE_RANK = 6  # TFLite's TRANSPOSE limit; the kernel's loops


def reduced_permutation(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, perm) of the same byte movement on the fewest axes: size-1 axes dropped, runs of input axes that
    stay adjacent and in order in the output merged into one. ((1,), (0,)) when no bytes move."""
    order = [a for a in perm if shape[a] != 1]  # the moving axes, in output order
    runs: list[list[int]] = []
    for a in order:
        kept = [b for b in range(len(shape)) if shape[b] != 1]
        if runs and kept.index(a) == kept.index(runs[-1][-1]) + 1:
            runs[-1].append(a)
        else:
            runs.append([a])
    if len(runs) <= 1:
        return (math.prod(shape),), (0,)
    by_input = sorted(runs, key=lambda r: r[0])
    return tuple(math.prod(shape[a] for a in r) for r in by_input), tuple(by_input.index(r) for r in runs)
