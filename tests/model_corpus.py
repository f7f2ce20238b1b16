"""The real-model corpus: models nobody here wrote, as users bring them (benchmarks/corpus.py prints one row per
model; tests/test_corpus.py runs a bounded slice on every CI run).

- every .tflite under shared/models/ (TFLite Micro's example models, the MLPerf Tiny models), found by listing
  the folders, so a model added there joins the corpus;
- torchvision's and timm's mobile / small architectures at microcontroller resolutions, built exactly as the
  libraries build them (random init, eval mode, in-place flags untouched);
- a BC-ResNet keyword spotter (tests/bc_resnet.py), written from its paper.

Inputs are deterministic and realistic enough for calibration: smooth image-like fields for vision models (random
low-resolution noise upsampled bilinearly), the real MNIST digits for the MNIST LSTMs, the MLPerf generators of
tests/mlperf_inputs.py for the MLPerf float models, the hello_world model's own input range (0 .. 2 pi).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

SHARED = Path(os.environ.get("TINYAOT_SHARED", Path(__file__).resolve().parents[2] / "shared"))
MNIST = SHARED / "data" / "mnist10k.npz"
CAL_SEED, EVAL_SEED = 1, 2


@dataclass(frozen=True)
class Entry:
    """One corpus model. `model()` gives what tinyaot.compile takes (a .tflite path or an nn.Module);
    `inputs(n, seed)` float inputs in the model's own layout (None for an int8 .tflite: random int8 is used);
    a PyTorch model's builder takes the library's own keyword arguments (e.g. num_classes=10, for a short test);
    `example` the shape of one input for a PyTorch model."""
    name: str
    source: str  # "tflm_examples", "mlperf_tiny", "torchvision", "timm", "paper"
    model: Callable
    inputs: Callable | None = None
    example: tuple | None = None
    classifier: bool = True
    tags: tuple = field(default_factory=tuple)

    @property
    def is_tflite(self) -> bool:
        return self.source in ("tflm_examples", "mlperf_tiny")


def smooth_images(n: int, shape: tuple, seed: int) -> np.ndarray:
    """Image-like float inputs (N, C, H, W): low-resolution Gaussian noise upsampled bilinearly, so neighbouring
    pixels correlate as in photographs and no sample stands out from the rest."""
    import torch

    c, h, w = shape
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, max(h // 8, 2), max(w // 8, 2), generator=g)
    return torch.nn.functional.interpolate(x, size=(h, w), mode="bilinear", align_corners=False).numpy()


def _nhwc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def mnist_sequences(n: int, seed: int) -> np.ndarray:
    """Real MNIST digits as the MNIST LSTM takes them: (N, 28, 28) rows as time steps, pixels in [0, 1]."""
    d = np.load(MNIST)
    x = d["images"]
    start = 0 if seed == CAL_SEED else 5000
    return (x[start:start + n].reshape(n, 28, 28) / 255.0).astype(np.float32)


def _mlperf(key: str):
    def inputs(n: int, seed: int) -> np.ndarray:
        import mlperf_inputs as mi

        if key == "kws":
            return mi.kws_inputs(mi.kws_real_input(np.load(SHARED / mi.KWS_INPUT)), n, seed)
        if key == "vww":
            return (_nhwc(smooth_images(n, (3, 96, 96), seed)) * 0.25 + 0.5).clip(0, 1)  # pixels in [0, 1]
        return {"ic": mi.ic_inputs, "ad": mi.ad_inputs}[key](n, seed)
    return inputs


def _sine(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 2 * np.pi, (n, 1)).astype(np.float32)


FLOAT_TFLITE_INPUTS = {
    "hello_world_float.tflite": _sine,
    "trained_lstm.tflite": mnist_sequences,
    "kws_ref_model_float32.tflite": _mlperf("kws"),
    "pretrainedResnet.tflite": _mlperf("ic"),
    "ad01_fp32.tflite": _mlperf("ad"),
    "vww_96_float.tflite": _mlperf("vww"),
}
REGRESSION = {"hello_world_float.tflite", "hello_world_int8.tflite", "ad01_fp32.tflite", "ad01_int8.tflite"}


def tflite_entries() -> list[Entry]:
    out = []
    for folder in ("tflm_examples", "mlperf_tiny"):
        for path in sorted((SHARED / "models" / folder).glob("*.tflite")):
            out.append(Entry(path.name, folder, (lambda p=path: p), FLOAT_TFLITE_INPUTS.get(path.name),
                             classifier=path.name not in REGRESSION))
    return out


def _vision(res: int):
    return lambda n, seed: smooth_images(n, (3, res, res), seed)


def _torchvision(builder: str, res: int, **kwargs) -> Entry:
    def build(**overrides):
        from vision_models import import_torchvision

        return getattr(import_torchvision().models, builder)(**{**kwargs, **overrides}).eval()
    label = builder + "".join(f" {k}={v}" for k, v in kwargs.items())
    return Entry(f"{label} {res}x{res}", "torchvision", build, _vision(res), (1, 3, res, res))


def _timm(name: str, res: int, **kwargs) -> Entry:
    def build(**overrides):
        from vision_models import import_timm

        return import_timm().create_model(name, pretrained=False, **{**kwargs, **overrides}).eval()
    return Entry(f"{name} {res}x{res}", "timm", build, _vision(res), (1, 3, res, res))


def _bc_resnet() -> Entry:
    def build(num_classes: int | None = None):
        import bc_resnet

        return (bc_resnet.BCResNet() if num_classes is None else bc_resnet.BCResNet(classes=num_classes)).eval()

    def inputs(n: int, seed: int) -> np.ndarray:  # log-mel-like: smooth over time and frequency
        return smooth_images(n, (1, 40, 101), seed)
    return Entry("bc_resnet-1 40x101", "paper", build, inputs, (1, 1, 40, 101))


def pytorch_entries() -> list[Entry]:
    return [
        _torchvision("mobilenet_v3_small", 96),
        _torchvision("mobilenet_v2", 96, width_mult=0.35),
        _torchvision("mnasnet0_5", 96),
        _torchvision("shufflenet_v2_x0_5", 96),
        _torchvision("squeezenet1_1", 96),
        _torchvision("efficientnet_b0", 64),
        _torchvision("regnet_x_400mf", 64),
        _torchvision("resnet18", 64),
        _torchvision("densenet121", 64),
        _timm("mobilenetv3_small_050", 96),
        _timm("mobilenetv2_035", 96),
        _timm("mobilenetv4_conv_small_035", 96),
        _timm("lcnet_050", 96),
        _timm("mixnet_s", 96),
        _timm("ghostnet_050", 96),
        _timm("tinynet_e", 96),
        _timm("mnasnet_small", 96),
        _timm("semnasnet_050", 96),
        _timm("efficientnet_lite0", 96),
        _timm("repghostnet_050", 96),
        _timm("mobileone_s0", 96),
        _timm("regnetx_002", 96),
        _timm("resnet10t", 96),
        _timm("tf_mobilenetv3_small_minimal_100", 96),
        _timm("vit_tiny_patch16_224", 64, img_size=64),
        _timm("mobilevit_xxs", 96),
        _timm("mobilevitv2_050", 96),
        _timm("skresnet18", 96),  # selective kernels: torch.stack of the paths, softmax over them
        _timm("resnest14d", 96),  # split attention: radix groups, their sum and softmax
        _timm("selecsls42", 96),
        _timm("edgenext_xx_small", 96),  # cross-covariance attention: F.normalize
        _timm("xcit_nano_12_p16_224", 64, img_size=64),  # F.normalize
        _timm("coat_lite_tiny", 64, img_size=64),  # F.pad of the token axis
        _timm("darknet17", 96),  # these three use nn.LeakyReLU
        _timm("cspresnet50", 96),
        _timm("cspdarknet53", 96),
        _bc_resnet(),
    ]


def entries() -> list[Entry]:
    return tflite_entries() + pytorch_entries()
