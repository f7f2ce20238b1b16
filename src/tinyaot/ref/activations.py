"""The lut op's functions, defined once: the real function each table holds (torch's definition), read by the int8
and int16 tables (ref/lut_s8.py, ref/lut_s16.py) and by calibration's float evaluation (quantize/float_eval.py),
so a table activation is added here and nowhere else.

TFLite Micro's integer activations (ref/tflm_activations.py replays them into tables) approximate real functions
of this table too: APPROXIMATES says which, for calibrating a graph that holds them.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # no overflow for large |x|


def _relu6(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0.0, 6.0)


_erf = np.vectorize(math.erf, otypes=[np.float64])

# name -> the real function (float64 in, float64 out), as torch defines it.
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "hardswish": lambda x: x * _relu6(x + 3.0) / 6.0,
    "hardsigmoid": lambda x: _relu6(x + 3.0) / 6.0,
    "silu": lambda x: x * _sigmoid(x),
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),  # torch's default (approximate='none')
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
}

# Bounds on |f'| over the reals: how far an input quantization error can move f.
LIPSCHITZ: dict[str, float] = {
    "sigmoid": 0.25,
    "tanh": 1.0,
    "hardswish": 1.5,
    "hardsigmoid": 1.0 / 6.0,
    "silu": 1.1,
    "gelu": 1.13,
    "gelu_tanh": 1.13,
}

# TFLite Micro's integer activation -> the real function of FUNCTIONS it approximates.
APPROXIMATES: dict[str, str] = {"tflm_hard_swish": "hardswish", "tflm_logistic": "sigmoid", "tflm_tanh": "tanh"}


def real_function(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The real function of a lut function name (TFLM's integer ones: the function they approximate)."""
    return FUNCTIONS[APPROXIMATES.get(name, name)]
