"""The arguments every command that compiles a model shares (each command adds its own in its module)."""
from __future__ import annotations

import argparse

EXPORT_DEFAULT_INPUTS = 4  # test vectors a pico2 project embeds when no --input is given


def add_model_args(p: argparse.ArgumentParser, data: bool = True) -> None:
    p.add_argument("model", help="an int8 .tflite file, or path/to/file.py:name (an nn.Module or a function "
                   "returning one)")
    p.add_argument("--input-shape", action="append", help="model input shape with batch 1, e.g. 1,28,28 "
                   "(default: the calibration samples' shape); once per input for a model with several")
    p.add_argument("--calibration", action="append", help=".npy file of representative samples, shaped (N, ...); "
                   "a model with several inputs takes one file per input, in the order of forward()'s arguments")
    p.add_argument("--name", default="model", help="C identifier prefixing every generated symbol (at most 32 "
                   "characters)")
    p.add_argument("--alignment", type=int, default=4, help="arena alignment in bytes, a power of two (default 4)")
    p.add_argument("--observer", default="auto", choices=["auto", "minmax", "percentile", "mse"],
                   help="how activation ranges are estimated from the calibration samples (default auto: an "
                   "error-minimizing search, outlier samples left out, full range on the outputs)")
    p.add_argument("--strict", action="store_true", help="calibration warnings are errors (exit code 2), for CI")
    p.add_argument("--layout", default="auto", choices=["auto", "torch", "model"],
                   help="layout of --input/--data arrays: torch (channels first, as PyTorch holds them), model "
                   "(the compiled model's, channels last) or auto (default: from the shapes; an error when both "
                   "fit, as when channels, height and width are equal)")
    p.add_argument("--preserve-input", action="store_true", help="keep the input intact across invoke (the "
                   "arena may grow; the summary says by how much)")
    p.add_argument("--separate-output", action="store_true", help="keep the output's bytes apart from the "
                   "input's (the arena may grow; the summary says by how much)")
    p.add_argument("--optimize", default="speed", choices=["speed", "size", "memory"],
                   help="speed (default): convs and fully connected layers run on int16 weights widened at "
                   "compile time (about twice their weight flash; convs use a small work buffer in the arena); "
                   "size: int8 weights, a fast conv kernel that widens them as it reads; memory: the plain int8 "
                   "kernels and the smallest arena")
    p.add_argument("--cores", type=int, default=1, choices=[1, 2],
                   help="2: split the heavy layers between the RP2350's two Cortex-M33 cores (the same output "
                   "bytes; profile then counts each core on QEMU mps2-an521); 1 (default): one core")
    p.add_argument("--ram", metavar="BYTES", help="a RAM budget (arena + state + constants in SRAM), e.g. 48K: "
                   "the compiler chooses each layer's kernels and where constants live for the fastest plan, by "
                   "estimated cycles, that fits it and --flash (each mode profiled on the emulated Cortex-M33)")
    p.add_argument("--flash", metavar="BYTES", help="a flash budget for the constants, e.g. 1M (with or without "
                   "--ram; see --ram)")
    p.add_argument("--target-memory", metavar="FLASH,RAM", help="the flash and RAM the target leaves the model "
                   "(its constants; its arena and state), e.g. 2MB,264KB (K = 1024 bytes): a model that does not fit "
                   "is warned about, with what would help (default pico2: the Raspberry Pi Pico 2's 4 MB less 64 KB, "
                   "512 KB less 16 KB)")
    p.add_argument("--patch", action="store_true", help="run the first stages band by band (patch-based "
                   "inference) where that shrinks the arena, for at most 15 %% more MACs (recomputed halos); the "
                   "report shows the patch stage")
    p.add_argument("--int16", action="append", metavar="LAYER", help="give this layer int16 activations (16x8; "
                   "repeat for more layers), or 'auto' for the layers whose int8 kernel loses the most on the "
                   "calibration samples; input and output stay int8")
    p.add_argument("--sram-constants", action="append", metavar="LAYER", help="copy this layer's constants from "
                   "flash to SRAM at start-up (repeat for more layers), or 'all': read at SRAM speed instead of "
                   "through the Pico 2's XIP cache, for the RAM they take (report and profile say which pay)")
    if data:
        p.add_argument("--float-model", help="with --data and an int8 .tflite: the float .tflite it was converted "
                       "from, to compare outputs with")
        p.add_argument("--data", help="samples used only to check the int8 model against float, never to "
                       "calibrate: .npy of inputs, or .npz with inputs 'x' (and labels 'y'); PyTorch or model "
                       "layout (see --layout)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON (errors too)")
