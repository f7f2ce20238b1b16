"""frame_shift_s8: the window a streamed causal conv reads, from the frames kept in the state region.

A causal Conv1d of kernel k and dilation d reads K = (k - 1) * d + 1 consecutive frames. Streamed
(passes/streaming.py), each invoke brings one new frame: the window is the K - 1 frames kept from the
invokes before (the state, oldest first) followed by the new one, and the state then moves on by one frame
(the oldest dropped, the new one kept). After a reset the state holds the zero point (real 0), which is the
causal zero padding the full-window model puts before its first frame. Only bytes move: no arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks


@dataclass(frozen=True)
class FrameShiftParams:
    frame_bytes: int  # C: one frame of the conv's input
    frames: int  # K: the window's frames; the state keeps K - 1 of them


def prepare(node: Node, g: Graph) -> FrameShiftParams:
    x, y = _checks.io(node, g)
    if x.qparams != y.qparams:
        raise ModelError(f"frame_shift '{node.name}': the window must keep the frame's qparams")
    frame = x.nbytes
    if frame == 0 or y.nbytes % frame or y.nbytes < frame:
        raise ModelError(f"frame_shift '{node.name}': the window {list(y.shape)} is not a whole number of frames "
                         f"{list(x.shape)}")
    return FrameShiftParams(frame, y.nbytes // frame)


def state_bytes(p: FrameShiftParams) -> int:
    """Bytes this layer keeps across invokes: the last K - 1 frames."""
    return (p.frames - 1) * p.frame_bytes


def frame_shift_s8(frame: np.ndarray, p: FrameShiftParams, state: np.ndarray) -> np.ndarray:
    """The window [state..., frame]; `state` (int8, K - 1 frames) is updated in place to the window's last K - 1."""
    window = np.concatenate([state.reshape(-1), np.asarray(frame, np.int8).reshape(-1)])
    state.reshape(-1)[...] = window[p.frame_bytes:]
    return window
