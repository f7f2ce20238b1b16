"""torchvision and timm models as the libraries build them, for the real-model corpus (tests and
benchmarks/corpus.py).

The torchvision release that matches torch 2.13.0 (0.28.0) ships only as a CUDA build; next to the CPU torch its
C extension does not load, and `import torchvision` then fails while registering fake kernels for
`torchvision::nms` ("operator torchvision::nms does not exist"). The model builders are pure Python and never
call those operators, so when (and only when) the import fails that way, the two schemas are defined with
torch.library first and the import is tried again. timm imports torchvision, so it goes through here too.
"""
from __future__ import annotations

import importlib

_SHIM = None  # the torch.library.Library that holds the stand-in schemas (kept alive for the process)


def _define_nms_schemas() -> None:
    global _SHIM
    import torch

    if _SHIM is None:
        _SHIM = torch.library.Library("torchvision", "DEF")
        _SHIM.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _SHIM.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


def import_torchvision():
    """torchvision, or ImportError with the reason (for pytest.importorskip-style skips)."""
    try:
        return importlib.import_module("torchvision")
    except RuntimeError as e:
        if "torchvision::nms" not in str(e):
            raise
    import sys

    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]  # the failed import left half-initialised modules behind
    _define_nms_schemas()
    return importlib.import_module("torchvision")


def import_timm():
    import_torchvision()
    return importlib.import_module("timm")
