"""Inputs for comparing tinyaot's PTQ of the MLPerf Tiny float models with the TF converter's int8 models.

Real inputs are scarce: shared/ holds one real KWS input (the word "on") and no CIFAR-10 or ToyADMOS data. So
every set here is synthesized, seeded and stated; calibration and evaluation sets come from different seeds
(the same generator, disjoint draws). All are float32 in the model's own layout (NHWC / [N, 640]).

- kws: the one real MFCC input (dequantized with kws_ref_model.tflite's input qparams), perturbed per sample:
  a circular time shift of -6..6 frames, a gain of 0.8..1.25, and Gaussian noise of `noise` times each MFCC
  coefficient's spread over time in the real input (default 0.25), clipped to the range the TF model's input
  qparams cover (the real input spans it: -123.4 .. 17.0 of -123.4 .. 25.7), so neither int8 model is handed
  inputs the other cannot represent.
- ic: "natural-statistics" colour images: per channel a 1/f amplitude-spectrum random field (the average
  spectrum of natural photographs), the channels mixed by a random colour matrix, mapped to a random mean and
  contrast, rounded to integer pixels 0..255 (the float model takes raw pixels; int8 = pixel - 128 is exact).
- ad: log-mel-like frames (5 frames x 128 mel bins): a smooth random spectral envelope (a few cosines over the
  mel axis, falling with frequency), a few dB of frame-to-frame variation and noise, inside the range
  ad01_int8.tflite's input qparams cover ([-84.9, 14.9]).
These are not the benchmarks' test sets: figures on them say how closely int8 tracks float, not accuracy.
"""
from __future__ import annotations

import numpy as np

KWS_INPUT = "models/mlperf_tiny/kws_input_int8_1x49x10x1.npy"
KWS_INPUT_QPARAMS = (np.float32(0.5847029), 83)  # kws_ref_model.tflite's input scale / zero point
CAL_SEED, EVAL_SEED = 1, 2


def kws_real_input(raw_int8: np.ndarray) -> np.ndarray:
    """The real KWS input as the float model takes it: (1, 49, 10, 1) float32."""
    s, zp = KWS_INPUT_QPARAMS
    return ((raw_int8.astype(np.float32) - np.float32(zp)) * s).reshape(1, 49, 10, 1)


def kws_inputs(real: np.ndarray, n: int, seed: int, noise: float = 0.25) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x0 = real.reshape(49, 10)
    spread = x0.std(axis=0, keepdims=True)
    out = np.empty((n, 49, 10), np.float32)
    for i in range(n):
        x = np.roll(x0, int(rng.integers(-6, 7)), axis=0) * rng.uniform(0.8, 1.25)
        out[i] = x + rng.standard_normal((49, 10)) * noise * spread
    s, zp = KWS_INPUT_QPARAMS
    return np.clip(out, (-128 - zp) * s, (127 - zp) * s).reshape(n, 49, 10, 1)


def ic_inputs(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fy, fx = np.meshgrid(np.fft.fftfreq(32), np.fft.fftfreq(32), indexing="ij")
    amplitude = 1.0 / np.maximum(np.hypot(fy, fx), 1.0 / 32)
    out = np.empty((n, 32, 32, 3), np.float32)
    for i in range(n):
        phase = rng.uniform(0, 2 * np.pi, (3, 32, 32))
        field = np.real(np.fft.ifft2(amplitude * np.exp(1j * phase) * rng.standard_normal((3, 32, 32))))
        field = (field - field.mean(axis=(1, 2), keepdims=True)) / field.std(axis=(1, 2), keepdims=True)
        mix = np.eye(3) * 0.5 + rng.uniform(0.2, 0.8, (3, 3))  # correlated colour channels
        img = np.einsum("cd,dhw->hwc", mix / mix.sum(axis=1, keepdims=True), field)
        img = rng.uniform(70, 180) + rng.uniform(25, 60) * img / img.std() + rng.uniform(-30, 30, 3)
        out[i] = np.clip(np.rint(img), 0, 255)
    return out


def ad_inputs(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mel = np.arange(128) / 127.0
    out = np.empty((n, 5, 128), np.float32)
    for i in range(n):
        envelope = rng.uniform(-40, -15) - rng.uniform(5, 30) * mel
        for k in range(1, 5):
            envelope += rng.normal(0, 6 / k) * np.cos(np.pi * k * mel + rng.uniform(0, np.pi))
        frames = envelope + rng.normal(0, 2, (5, 1)) + rng.normal(0, 2.5, (5, 128))
        out[i] = np.clip(frames, -84, 14)
    return out.reshape(n, 640)
