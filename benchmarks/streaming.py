"""Streaming a causal TCN and a GRU: RAM (arena + state) and Cortex-M33 instructions per frame, against the full window.

The TCN is tests/test_streaming.py's: three causal Conv1d (kernel 3, dilations 1, 2, 4, ReLU) and a per-frame
1x1 classifier over 40 frames x 8 features, compiled with stream=True (one frame per invoke) and as the full-window
model with the same weights and qparams (cm.window_model()). The recurrent row is tests/zoo.py's gru_kws (49 frames
x 13 MFCCs, one GRU of 32 units, the classifier on the last step; trained as the zoo trains it) streamed: each
frame's invoke outputs the classifier's answer for the utterance so far, against the full 49-frame inference.
Counts are deterministic (QEMU -icount).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

import tinyaot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_streaming import FRAMES, CausalTCN, _signals  # noqa: E402


def measure(use_m33: bool, optimize: str) -> dict:
    torch.manual_seed(0)
    model = CausalTCN().eval()
    calibration = torch.from_numpy(_signals(64, FRAMES, 1))
    cm = tinyaot.compile(model, calibration[:1], calibration=calibration, name="tcn", stream=True, optimize=optimize)
    window = cm.window_model()
    row = {"model": "tcn", "optimize": optimize, "frames": FRAMES, "stream_arena_bytes": cm.arena_bytes,
           "stream_state_bytes": cm.state_bytes, "stream_ram_bytes": cm.arena_bytes + cm.state_bytes,
           "window_arena_bytes": window.arena_bytes, "instructions_per_frame": None, "window_instructions": None}
    if use_m33:
        x = cm.quantize_input(_signals(1, FRAMES, 2))[0]
        frames = np.stack([x[:, t : t + 1] for t in range(FRAMES)])
        streamed = cm.run(frames, engine="m33")  # one stream from a reset; the first frame is measured
        row["instructions_per_frame"] = cm.last_m33.instructions
        full = window.run(x, engine="m33")
        row["window_instructions"] = window.last_m33.instructions
        if not np.array_equal(np.asarray(streamed).reshape(FRAMES, -1), np.asarray(full).reshape(FRAMES, -1)):
            raise SystemExit("the streamed outputs differ from the full-window model's")
    return row


def measure_gru(use_m33: bool, optimize: str) -> dict:
    import zoo

    entry = next(e for e in zoo.ZOO if e.name == "gru_kws")
    model = zoo.trained(entry)
    x, _ = zoo.synthetic_data(entry, 200, seed=1)
    cm = tinyaot.compile(model, torch.from_numpy(x[:1]), calibration=x, name="gru_kws", stream=True,
                         optimize=optimize)
    window = cm.window_model()
    frames_n = entry.shape[0]
    row = {"model": "gru_kws", "optimize": optimize, "frames": frames_n, "stream_arena_bytes": cm.arena_bytes,
           "stream_state_bytes": cm.state_bytes, "stream_ram_bytes": cm.arena_bytes + cm.state_bytes,
           "window_arena_bytes": window.arena_bytes, "instructions_per_frame": None, "window_instructions": None}
    if use_m33:
        xq = cm.quantize_input(x[:1])[0]  # [49, 13]
        frames = xq[:, None, :]
        streamed = cm.run(frames, engine="m33")  # one stream from a reset; the first frame is measured
        row["instructions_per_frame"] = cm.last_m33.instructions
        full = window.run(xq, engine="m33")
        row["window_instructions"] = window.last_m33.instructions
        if not np.array_equal(np.asarray(streamed).reshape(frames_n, -1)[-1], np.asarray(full).reshape(-1)):
            raise SystemExit("the streamed GRU's last frame differs from the full-sequence model's output")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-m33", action="store_true", help="skip the emulated Cortex-M33 (instruction counts)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_m33 = not args.no_m33
    if use_m33:
        from tinyaot.targets.toolchain import have_m33_toolchain

        use_m33 = have_m33_toolchain()
    rows = [measure(use_m33, mode) for mode in ("speed", "memory")]
    rows += [measure_gru(use_m33, mode) for mode in ("speed", "memory")]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{r['model']} {r['optimize']}: streamed arena {r['stream_arena_bytes']:,} B + state "
              f"{r['stream_state_bytes']:,} B "
              f"= {r['stream_ram_bytes']:,} B RAM (full {r['frames']}-frame window: arena "
              f"{r['window_arena_bytes']:,} B); M33 instructions per frame {r['instructions_per_frame']}, per "
              f"window {r['window_instructions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
