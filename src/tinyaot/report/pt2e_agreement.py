"""How closely a compiled PT2E model reproduces the PT2E graph's own int8 outputs.

The PT2E reference is the converted GraphModule itself: float math between its quantize/dequantize pairs, run
on the dequantized int8 input, its float output quantized with the output qparams. tinyaot runs integer
kernels instead (TFLM's fixed-point requantization, int32 bias), so a few outputs differ by a step; this
measures by how much and how often.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from tinyaot.ir.layout import model_to_torch_layout, torch_to_model_layout


@dataclass(frozen=True)
class Agreement:
    samples: int
    equal_fraction: float  # output bytes equal to the PT2E reference
    max_abs_steps: int  # largest |tinyaot - PT2E| in output int8 steps
    mean_abs_steps: float
    argmax_agreement: float  # samples whose largest output is at the same index (classifiers)

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return (f"{self.samples} samples: {self.equal_fraction:.2%} of output bytes equal to the PT2E reference, "
                f"max |diff| {self.max_abs_steps} step(s), mean {self.mean_abs_steps:.4f}, "
                f"argmax agreement {self.argmax_agreement:.2%}")


def pt2e_reference(cm, graph_module, x_int8: np.ndarray) -> np.ndarray:
    """The PT2E graph's int8 outputs for int8 inputs given in the compiled model's layout (one sample per call,
    as the graph was exported for batch size 1)."""
    import torch

    g = cm.graph
    si, zi = cm.input_qparams
    so, zo = cm.output_qparams
    batch = np.asarray(x_int8).reshape((-1,) + cm.input_shape[1:])
    x_torch = model_to_torch_layout(batch, g.layout, g.torch_input_rank)
    real = (x_torch.astype(np.float32) - np.float32(zi)) * np.float32(si)
    outs = []
    with torch.no_grad():
        for sample in real:
            y = graph_module(torch.from_numpy(np.ascontiguousarray(sample[None])))
            y = y[0] if isinstance(y, (tuple, list)) else y
            outs.append(y.detach().cpu().numpy().astype(np.float64))
    y = np.concatenate(outs)
    if g.output_layout == "NHWC":
        y = torch_to_model_layout(y, "NHWC", y.ndim)
    return np.clip(np.round(y / np.float64(np.float32(so))) + zo, -128, 127).astype(np.int8).reshape(len(batch), -1)


def pt2e_agreement(cm, graph_module, x_int8: np.ndarray, engine: str = "reference") -> Agreement:
    """Run tinyaot (`engine`) and the PT2E reference on the same int8 inputs and compare the int8 outputs."""
    want = pt2e_reference(cm, graph_module, x_int8).astype(np.int64)
    got = np.asarray(cm.run(np.asarray(x_int8), engine=engine)).reshape(want.shape).astype(np.int64)
    diff = np.abs(got - want)
    return Agreement(
        samples=len(want), equal_fraction=float((diff == 0).mean()), max_abs_steps=int(diff.max(initial=0)),
        mean_abs_steps=float(diff.mean()), argmax_agreement=float((got.argmax(1) == want.argmax(1)).mean()),
    )
