"""Load what the CLI names: `path/to/file.py:name` (an nn.Module or a function returning one)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from tinyaot.errors import CalibrationError, ModelError


def load_model(spec: str):
    path, sep, attr = spec.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise ModelError(
            f"cannot load model {spec!r}: give path/to/file.py:name, where name is an nn.Module "
            "instance or a function returning one"
        )
    file = Path(path)
    if not file.is_file():
        raise ModelError(f"model file {path!r} does not exist")
    mod_name = f"_tinyaot_user_{file.stem}"
    module_spec = importlib.util.spec_from_file_location(mod_name, file)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    sys.path.insert(0, str(file.parent.resolve()))
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    if not hasattr(module, attr):
        raise ModelError(f"{path} defines no {attr!r}")
    obj = getattr(module, attr)
    import torch

    if not isinstance(obj, torch.nn.Module) and callable(obj):
        obj = obj()
    if not isinstance(obj, torch.nn.Module):
        raise ModelError(f"{spec} is a {type(obj).__name__}, not a torch.nn.Module")
    return obj


def load_array(path: str, what: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CalibrationError(f"{what} file {path!r} does not exist") from None
    except ValueError as exc:
        raise CalibrationError(f"{what} file {path!r} is not a .npy array: {exc}") from None


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(v) for v in text.replace("x", ",").split(",") if v.strip())
    except ValueError:
        raise ModelError(f"--input-shape {text!r}: expected integers like 1,28,28") from None
    if not shape or min(shape) < 1:
        raise ModelError(f"--input-shape {text!r}: every dimension must be >= 1")
    return shape
