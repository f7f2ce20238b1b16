"""The arrays a command feeds a compiled model, in the model's own layout: PyTorch's channels-first arrays are
converted, and an array that reads both ways is refused unless --layout says which it is."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir.layout import torch_sample_shape, torch_to_model_layout


def one_input_only(cm, flag: str) -> None:
    if cm.n_inputs > 1:
        raise ModelError(f"{flag} takes the samples of a one-input model; '{cm.name}' has {cm.n_inputs} inputs: "
                         "check it from Python with cm.check_data([x0, x1, ...], labels)")


def model_inputs(cm, arrays: Sequence[np.ndarray], layout: str = "auto", what: str = "--input"):
    """One array per model input (a list for a model with several), each in the model's layout."""
    if cm.n_inputs == 1:
        return model_input(cm, arrays[0], layout, what)
    return [model_input(cm, x, layout, f"{what} {k}", k) for k, x in enumerate(arrays)]


def model_input(cm, x: np.ndarray, layout: str = "auto", what: str = "--input", k: int = 0) -> np.ndarray:
    """Inputs come in PyTorch's channels-first layout or the model's own; convert the former. When both read as
    the same shape (channels == height == width) only the user knows which it is: --layout says. k: which input
    of a model with several."""
    g = cm.graph
    name = g.inputs[k]
    io_layout, rank = g.io_layout_of(name)
    if io_layout != "NHWC" or rank == 0:  # the same layout either way
        return x
    model = tuple(g.tensor(name).shape[1:])
    fits_model = x.shape[1:] == model or x.shape == model
    torch = torch_sample_shape(model, io_layout, rank)
    fits_torch = x.shape[1:] == torch or x.shape == torch
    if layout == "auto" and fits_model and fits_torch:
        raise ModelError(f"{what} of shape {x.shape} reads both as PyTorch's layout (N, {_dims(torch)}) and as the "
                         f"model's (N, {_dims(model)}); say which with --layout torch (channels first, as PyTorch "
                         "holds tensors) or --layout model (channels last, as the compiled C takes them)")
    if layout in ("auto", "model") and fits_model:
        return x
    if layout in ("auto", "torch") and fits_torch:
        return torch_to_model_layout(x if x.shape[1:] == torch else x[None], io_layout, rank)
    which = {"auto": "", "torch": " in PyTorch's layout (--layout torch)", "model": " in the model's layout "
             "(--layout model)"}[layout]
    raise ModelError(f"{what} of shape {x.shape} does not fit{which}: model '{cm.name}' takes (N, {_dims(model)}) "
                     f"in its own layout or (N, {_dims(torch)}) in PyTorch's")


def _dims(shape) -> str:
    return ", ".join(map(str, shape))
