"""The Pico 2 MNIST demo's model, exactly as the user report builds it, and digit images for it.

TinyMLPMNIST (784-32-16-10) with hand-crafted feature detectors for the digits 0, 1, 4 and 7.
The test patterns for 0, 1 and 7 are the report's; 4 is drawn to the same conventions. The
calibration set is many jittered drawings of those digits: representative data, not noise.
"""
from __future__ import annotations

import numpy as np

INPUT_SIZE, HIDDEN1_SIZE, HIDDEN2_SIZE, OUTPUT_SIZE, IMAGE_SIZE = 784, 32, 16, 10, 28
DEMO_DIGITS = (0, 1, 4, 7)


def build_seed_mlp():
    """The report's TinyMLPMNIST with its hand-set weights (torch is imported here only)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class TinyMLPMNIST(nn.Module):
        """A small MLP for MNIST digit classification."""

        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(INPUT_SIZE, HIDDEN1_SIZE)
            self.fc2 = nn.Linear(HIDDEN1_SIZE, HIDDEN2_SIZE)
            self.fc3 = nn.Linear(HIDDEN2_SIZE, OUTPUT_SIZE)

        def forward(self, x):
            x = x.reshape(x.size(0), -1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    model = TinyMLPMNIST()
    s = IMAGE_SIZE
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(0.0)
        w1, w2, w3 = model.fc1.weight, model.fc2.weight, model.fc3.weight
        for row in range(s):
            w1[0, row * s + 14] = 2.0  # vertical lines (1, 4, 7)
        w1[1, 0:84] = 2.0  # top horizontal (7, 4)
        w1[2, 25 * s:] = 2.0  # bottom horizontal (1, 4)
        w1[3, 1 * s + 8: 1 * s + 20] = 2.0  # oval (0): top and bottom curves
        w1[3, 26 * s + 8: 26 * s + 20] = 2.0
        for row in range(4, 24):
            w1[3, row * s + 7] = 2.0
            w1[3, row * s + 20] = 2.0
        for row in range(10, 18):
            w1[3, row * s + 14] = -1.5  # hollow centre
        w1[4, 13 * s: 15 * s] = 3.0  # middle horizontal (4)
        w2[0, 3], w2[0, 0], w2[0, 4] = 5.0, -2.0, -3.0  # digit 0
        w2[1, 0], w2[1, 2], w2[1, 1], w2[1, 3] = 3.0, 2.0, -1.0, -2.0  # digit 1
        w2[2, 0], w2[2, 1], w2[2, 4], w2[2, 3] = 2.0, 1.0, 4.0, -2.0  # digit 4
        w2[3, 1], w2[3, 0], w2[3, 2] = 3.0, 1.0, -2.0  # digit 7
        w3[0, 0], w3[1, 1], w3[4, 2], w3[7, 3] = 5.0, 5.0, 5.0, 5.0
        for digit in (2, 3, 5, 6, 8, 9):
            model.fc3.bias[digit] = -3.0
    return model.eval()


def _blank() -> np.ndarray:
    return np.zeros((IMAGE_SIZE, IMAGE_SIZE), dtype=np.float32)


def draw_digit(digit: int, dx: int = 0, dy: int = 0, thick: int = 0) -> np.ndarray:
    """One 28x28 image in [0, 1]; (dx, dy) shifts the drawing, `thick` widens strokes."""
    img = _blank()
    if digit == 1:
        img[2:26, 13 - thick:16 + thick] = 1.0
        img[2:5, 11:14] = 1.0
        img[24:27, 10:19] = 1.0
    elif digit == 7:
        img[1:4 + thick, 3:26] = 1.0
        for i in range(23):
            row, col = 4 + i, 23 - i
            img[row, max(col - 1 - thick, 0): col + 2 + thick] = 1.0
    elif digit == 0:
        # A tall oval whose strokes run where the model's oval detector looks (rows 1 and 26,
        # columns 7 and 20).
        rows, cols = np.mgrid[0:IMAGE_SIZE, 0:IMAGE_SIZE]
        e = ((rows - 13.5) / 12.5) ** 2 + ((cols - 13.5) / 6.5) ** 2
        img[(e >= 0.78 - 0.12 * thick) & (e <= 1.1)] = 1.0
    elif digit == 4:
        img[2:26, 14 - thick:17] = 1.0  # right vertical stroke
        img[2:15, 6:9 + thick] = 1.0  # left upper stroke
        img[13:16 + thick, 6:22] = 1.0  # middle bar
    else:
        raise ValueError(f"the demo draws digits {DEMO_DIGITS}, not {digit}")
    return np.roll(np.roll(img, dy, axis=0), dx, axis=1)


def demo_digits() -> tuple[np.ndarray, np.ndarray]:
    """The four test images (0, 1, 4, 7) and their labels, shaped (4, 28, 28)."""
    return np.stack([draw_digit(d) for d in DEMO_DIGITS]), np.array(DEMO_DIGITS)


def calibration_digits(n_per_digit: int = 64, seed: int = 0) -> np.ndarray:
    """Jittered drawings of the demo digits (shifts of up to 2 px, stroke width +0/1)."""
    rng = np.random.default_rng(seed)
    images = []
    for digit in DEMO_DIGITS:
        for _ in range(n_per_digit):
            dx, dy = (int(v) for v in rng.integers(-2, 3, size=2))
            images.append(draw_digit(digit, dx, dy, int(rng.integers(0, 2))))
    return np.stack(images)
