"""Streaming a causal TCN: one frame per invoke, state kept between invokes, byte for byte the full-window model.

The model: three causal Conv1d (kernel 3, dilations 1, 2, 4, ReLU; receptive field 15 frames) and a 1x1 conv
classifier per frame, over windows of 40 frames x 8 features. Compiled with stream=True it is calibrated and
quantized on full windows, then each invoke takes one frame. What a step means:

- step t after a reset (t = 0, 1, ...) outputs the full-window model's output at frame t of the window that starts
  at the reset: before its first frame each causal conv reads its zero padding, and the state starts at zeros
  (every slot at its zero point), which is the same thing. So for t < 40 the want is frame t of the full model
  run on frames 0..39 (the first 14 frames, shorter than the receptive field, included).
- later, step t outputs the last frame of the full model run on the 40 frames ending at t.
"""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError

FEATURES, FRAMES, HIDDEN, CLASSES = 8, 40, 16, 4
DILATIONS = (1, 2, 4)
STREAM = 60  # frames streamed: 20 beyond the first window


class CausalTCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv1d(FEATURES if i == 0 else HIDDEN, HIDDEN, 3, dilation=d) for i, d in enumerate(DILATIONS))
        self.head = nn.Conv1d(HIDDEN, CLASSES, 1)

    def forward(self, x):
        for conv in self.convs:
            x = F.relu(conv(F.pad(x, ((conv.kernel_size[0] - 1) * conv.dilation[0], 0))))
        return self.head(x)


def _signals(n: int, frames: int, seed: int) -> np.ndarray:
    """Sensor-like windows [n, features, frames]: a sine per feature (own frequency and phase) plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / 8.0
    freq, phase = rng.uniform(0.3, 3.0, (n, FEATURES, 1)), rng.uniform(0, 6.3, (n, FEATURES, 1))
    return (np.sin(freq * t + phase) + 0.1 * rng.standard_normal((n, FEATURES, frames))).astype(np.float32)


@pytest.fixture(scope="module")
def tcn():
    torch.manual_seed(0)
    model = CausalTCN().eval()
    calibration = torch.from_numpy(_signals(64, FRAMES, 1))
    cm = tinyaot.compile(model, calibration[:1], calibration=calibration, name="tcn", stream=True)
    return cm, cm.window_model()


@pytest.fixture(scope="module")
def stream_and_want(tcn):
    """STREAM int8 frames (each [1, 8, 1]) and, for every step, the full-window model's output (reference)."""
    cm, window = tcn
    x = cm.quantize_input(_signals(1, STREAM, 2))[0]  # [8, STREAM]: the frames share the window's qparams
    frames = np.stack([x[:, t : t + 1] for t in range(STREAM)])
    full = window.run(x[:, :FRAMES])  # [FRAMES, CLASSES] per frame of the first window
    want = [full.reshape(FRAMES, CLASSES)[t] for t in range(FRAMES)]
    want += [window.run(x[:, t - FRAMES + 1 : t + 1]).reshape(FRAMES, CLASSES)[-1] for t in range(FRAMES, STREAM)]
    return frames, np.stack(want)


def _steps(y) -> np.ndarray:
    return np.asarray(y).reshape(-1, CLASSES)


def test_the_streamed_graph_takes_one_frame_and_keeps_each_convs_past_frames(tcn):
    cm, window = tcn
    assert cm.input_shape == (1, FEATURES, 1) and window.input_shape == (1, FEATURES, FRAMES)
    assert cm.input_qparams == window.input_qparams and cm.output_qparams == window.output_qparams
    shifts = [n for n in cm.graph.nodes if n.op == "frame_shift"]
    assert len(shifts) == len(DILATIONS)  # the 1x1 classifier needs no past frames
    channels = (FEATURES, HIDDEN, HIDDEN)
    assert [s.nbytes for s in cm.plan.state] == [2 * d * c for d, c in zip(DILATIONS, channels)]
    assert cm.state_bytes == sum(2 * d * c for d, c in zip(DILATIONS, channels)) == 208
    assert cm.ram_bytes == cm.arena_bytes + cm.state_bytes
    assert cm.stream_info.receptive_field == 1 + 2 * sum(DILATIONS) and cm.stream_info.window_frames == FRAMES
    # the state is never an arena buffer: the planner cannot share its bytes with an activation
    slots = {s.node for s in cm.plan.state}
    assert not {t for b in cm.plan.buffers for t in b.tensors} & slots
    ends = [s.offset + s.nbytes for s in cm.plan.state]
    assert all(a <= s.offset for a, s in zip(ends, cm.plan.state[1:]))  # slots do not overlap each other
    assert cm.arena_bytes < window.arena_bytes


def test_reference_frame_by_frame_equals_the_full_window_model_at_every_step(tcn, stream_and_want):
    cm, _ = tcn
    frames, want = stream_and_want
    got = _steps(cm.run(frames))  # one run: consecutive invokes of one interpreter, from a reset
    bad = [t for t in range(STREAM) if not np.array_equal(got[t], want[t])]
    assert bad == []
    assert len({tuple(w) for w in want}) > 10  # the outputs do change from frame to frame


def test_invoke_needs_nothing_from_the_arena_of_the_last_invoke(tcn, stream_and_want):
    """Between invokes the whole arena is overwritten with noise: only the state region carries the past."""
    from tinyaot.ref.interpreter import Interpreter

    cm, _ = tcn
    frames, want = stream_and_want
    interp, rng = Interpreter(cm.graph, cm.plan), np.random.default_rng(3)
    for t in range(STREAM):
        interp.arena[:] = rng.integers(0, 256, interp.arena.size, dtype=np.uint8)
        assert np.array_equal(_steps(interp.invoke(frames[t]))[0], want[t]), t


def test_reset_restores_the_initial_state(tcn, stream_and_want):
    cm, _ = tcn
    frames, want = stream_and_want
    s = cm.stream("reference")
    first = _steps(s.step(frames[:FRAMES]))
    again = _steps(s.step(frames[:FRAMES]))  # the state still holds the end of the first pass
    assert not np.array_equal(again[:15], first[:15])
    s.reset()
    assert np.array_equal(_steps(s.step(frames[:FRAMES])), first)
    assert np.array_equal(first, want[:FRAMES])


@pytest.mark.host
def test_host_c_runs_the_frames_as_consecutive_invokes_and_resets(tcn, stream_and_want):
    cm, _ = tcn
    frames, want = stream_and_want
    assert np.array_equal(_steps(cm.run(frames, engine="host")), want)
    s = cm.stream("host")  # <name>_init once, then frame after frame on the same state
    first = _steps(s.step(frames[:FRAMES]))
    assert not np.array_equal(_steps(s.step(frames[:FRAMES]))[:15], first[:15])
    s.reset()  # tcn_reset()
    assert np.array_equal(_steps(s.step(frames[:FRAMES])), first) and np.array_equal(first, want[:FRAMES])
    lib = s.model._lib  # a caller's state region is checked like the arena
    lib.tcn_bind_state.argtypes, lib.tcn_bind_state.restype = [ctypes.c_void_p, ctypes.c_size_t], ctypes.c_int
    small = (ctypes.c_uint8 * cm.state_bytes)()
    assert lib.tcn_bind_state(ctypes.addressof(small), cm.state_bytes - 1) == -5
    assert lib.tcn_bind_state(ctypes.addressof(small) + 1, cm.state_bytes) == -6


class _Instance(ctypes.Structure):
    _fields_ = [("arena", ctypes.c_void_p), ("state", ctypes.c_void_p)]  # tcn_instance_t


@pytest.mark.host
def test_the_stream_is_clean_under_address_and_undefined_behaviour_sanitizers(tcn, stream_and_want):
    """The standalone runner (a heap arena of exactly the planned size): every frame one invoke, no report."""
    from tinyaot.targets.base import ModelSources
    from tinyaot.targets.engines import raw_rows
    from tinyaot.targets.host import SanitizedHostTarget

    cm, _ = tcn
    frames, want = stream_and_want
    target = SanitizedHostTarget()
    got = target.run(target.build(ModelSources.of(cm)), raw_rows(frames)).outputs
    assert np.array_equal(_steps(got), want)


@pytest.mark.host
def test_two_instances_stream_independently_each_with_its_own_state(tcn, stream_and_want):
    """Two sensors interleaved frame by frame through tcn_instance_*: each instance's state is its own."""
    cm, _ = tcn
    frames, want = stream_and_want
    other = frames[::-1].copy()
    want_other = _steps(cm.run(other))
    lib = cm.stream("host").model._lib
    P, SIZE = ctypes.c_void_p, ctypes.c_size_t
    for fn, args, res in (("input", [P], P), ("output", [P], P), ("invoke", [P], ctypes.c_int),
                          ("init", [P, P, SIZE], ctypes.c_int), ("bind_state", [P, P, SIZE], ctypes.c_int)):
        f = getattr(lib, f"tcn_instance_{fn}")
        f.argtypes, f.restype = args, res
    buffers, instances = [], []
    for _ in range(2):
        arena, state = (ctypes.c_uint64 * (cm.arena_bytes // 8 + 1))(), (ctypes.c_uint64 * (cm.state_bytes // 8))()
        inst = _Instance()
        assert lib.tcn_instance_invoke(ctypes.byref(inst)) == -3  # no arena yet
        assert lib.tcn_instance_init(ctypes.byref(inst), arena, cm.arena_bytes) == 0
        assert lib.tcn_instance_invoke(ctypes.byref(inst)) == -3  # an arena but no state region yet
        assert lib.tcn_instance_bind_state(ctypes.byref(inst), state, cm.state_bytes) == 0
        buffers.append((arena, state))
        instances.append(inst)
    for t in range(STREAM):
        for inst, xs, ws in zip(instances, (frames, other), (want, want_other)):
            ctypes.memmove(lib.tcn_instance_input(ctypes.byref(inst)), xs[t].ctypes.data, xs[t].nbytes)
            assert lib.tcn_instance_invoke(ctypes.byref(inst)) == 0
            got = np.ctypeslib.as_array((ctypes.c_int8 * CLASSES).from_address(lib.tcn_instance_output(
                ctypes.byref(inst))))
            assert np.array_equal(got, ws[t]), t


@pytest.mark.host
def test_the_header_publishes_the_state_region_and_the_streaming_contract(tcn):
    cm, _ = tcn
    h = cm.c_sources.files["tcn.h"]
    c = cm.c_sources.files["tcn.c"]
    assert f"#define TCN_STATE_SIZE {cm.state_bytes}" in h
    for fn in ("int tcn_reset(void);", "int tcn_bind_state(uint8_t *state, size_t state_size);",
               "int tcn_instance_reset(const tcn_instance_t *instance);"):
        assert fn in h
    assert "Streaming: the input is the newest frame only" in h
    # invoke leaves the frame as it was written (stream=True implies preserve_input): a caller may keep it there
    assert "#define TCN_INVOKE_PRESERVES_INPUT 1" in h and cm.contract.input_preserved
    from tinyaot.targets.host import build_shared_library  # without the built-in arena and state: caller's both

    lib = ctypes.CDLL(str(build_shared_library(cm.c_sources.files, "tcn", ["-DTCN_NO_STATIC_ARENA",
                                                                            "-DTCN_NO_STATIC_STATE"])))
    P, SIZE = ctypes.c_void_p, ctypes.c_size_t
    lib.tcn_init.argtypes = lib.tcn_bind_state.argtypes = [P, SIZE]
    arena, state = (ctypes.c_uint64 * (cm.arena_bytes // 8 + 1))(), (ctypes.c_uint64 * (cm.state_bytes // 8))()
    assert lib.tcn_init(None, 0) == -1 and lib.tcn_init(arena, cm.arena_bytes) == 0
    assert lib.tcn_invoke() == -3 and lib.tcn_reset() == -3  # no state region bound yet
    assert lib.tcn_bind_state(state, cm.state_bytes) == 0 and lib.tcn_invoke() == 0
    code = re.sub(r"/\*.*?\*/", "", c, flags=re.S)
    assert code.count("tinyaot_frame_shift_s8(") == len(DILATIONS)
    assert not re.search(r"\b(float|double|malloc)\b", code)
    assert "_window_" not in c  # the arena's offsets name no state


@pytest.mark.m33
def test_cortex_m33_runs_the_stream_and_costs_a_fraction_of_the_window(tcn, stream_and_want):
    cm, window = tcn
    frames, want = stream_and_want
    assert np.array_equal(_steps(cm.run(frames, engine="m33")), want)  # one harness: no reset between frames
    per_frame = cm.last_m33.instructions
    window.run(frames[:FRAMES, :, 0].T, engine="m33")
    per_window = window.last_m33.instructions
    report = cm.report()
    print(f"\nstreamed TCN: arena {cm.arena_bytes} B + state {cm.state_bytes} B = {cm.ram_bytes} B RAM "
          f"(full window: arena {window.arena_bytes} B); {per_frame:,} instructions per frame vs {per_window:,} "
          f"per {FRAMES}-frame window")
    assert report.state_bytes == cm.state_bytes and report.ram_bytes >= cm.ram_bytes
    assert 0 < per_frame * 10 < per_window


class ResidualDepthwiseTCN(nn.Module):
    """Another common form: a 1x1 stem (so the input is NHWC frames), dilated depthwise causal convs, a residual
    add, ReLU6 and a per-frame softmax over the classes."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv1d(FEATURES, HIDDEN, 1)
        self.dw = nn.Conv1d(HIDDEN, HIDDEN, 3, dilation=2, groups=HIDDEN)
        self.pw = nn.Conv1d(HIDDEN, HIDDEN, 1)
        self.dw2 = nn.Conv1d(HIDDEN, HIDDEN, 5, groups=HIDDEN)
        self.head = nn.Conv1d(HIDDEN, CLASSES, 1)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = x + F.relu(self.pw(self.dw(F.pad(x, (4, 0)))))
        x = F.relu6(self.dw2(F.pad(x, (4, 0))))
        return torch.softmax(self.head(x).transpose(1, 2), dim=-1)


@pytest.mark.host
def test_a_residual_depthwise_tcn_streams_byte_for_byte_too():
    torch.manual_seed(1)
    calibration = torch.from_numpy(_signals(64, FRAMES, 5))
    cm = tinyaot.compile(ResidualDepthwiseTCN().eval(), calibration[:1], calibration=calibration, name="restcn",
                         stream=True)
    window = cm.window_model()
    assert cm.state_bytes == (2 * 2 + 4) * HIDDEN and cm.stream_info.receptive_field == 9
    x = window.quantize_input(window.to_model_layout(_signals(1, FRAMES, 6)))  # [1, 1, frames, features] NHWC
    frames = np.stack([x[0, :, t : t + 1] for t in range(FRAMES)])
    want = window.run(x).reshape(FRAMES, CLASSES)
    assert np.array_equal(_steps(cm.run(frames)), want)
    assert np.array_equal(_steps(cm.run(frames, engine="host")), want)


class _Strided(CausalTCN):
    def __init__(self):
        super().__init__()
        self.convs[1] = nn.Conv1d(HIDDEN, HIDDEN, 3, stride=2)


class _Pooled(CausalTCN):
    def forward(self, x):
        return super().forward(x).mean(dim=-1)


class _Symmetric(CausalTCN):
    def __init__(self):
        super().__init__()
        self.convs[0] = nn.Conv1d(FEATURES, HIDDEN, 3, padding=1)

    def forward(self, x):
        return self.head(F.relu(self.convs[0](x)))


class _Flattened(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEATURES, HIDDEN, 3)
        self.fc = nn.Linear(HIDDEN * FRAMES, CLASSES)

    def forward(self, x):
        return self.fc(torch.flatten(F.relu(self.conv(F.pad(x, (2, 0)))), 1))


@pytest.mark.parametrize("model, why", [
    (_Strided, "stride 2 along time"),
    (_Pooled, "averages over time"),
    (_Symmetric, "on the right .*not causal"),
    (_Flattened, "merging the time axis"),
])
def test_what_cannot_stream_exactly_is_refused_with_the_reason(model, why):
    torch.manual_seed(0)
    calibration = torch.from_numpy(_signals(32, FRAMES, 4))
    with pytest.raises(UnsupportedOpError, match=f"stream=True: layer .*{why}"):
        tinyaot.compile(model().eval(), calibration[:1], calibration=calibration, stream=True)


def test_stream_options_that_do_not_apply_are_refused():
    calibration = torch.from_numpy(_signals(32, FRAMES, 4))
    with pytest.raises(ModelError, match="data= checks"):
        tinyaot.compile(CausalTCN().eval(), calibration[:1], calibration=calibration, stream=True, data=calibration)
    with pytest.raises(ModelError, match="stream=True converts a PyTorch nn.Module"):
        tinyaot.compile(b"TFL3", stream=True)
