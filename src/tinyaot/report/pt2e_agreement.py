"""How closely a compiled PT2E model reproduces the PT2E graph's own int8 outputs.

The PT2E reference is the converted GraphModule itself: float math between its quantize/dequantize pairs, run
on the dequantized int8 input, its float output quantized with the output qparams. tinyaot runs integer
kernels instead (TFLM's fixed-point requantization, int32 bias). Each kernel on its own is (measured) at most one
step from PT2E, on 0-1% of its outputs (`pt2e_layer_agreement`, "isolated"); in a whole model those steps
compound with depth, so the output bytes of a deep net can differ on half of their values and by several steps
while the predicted class almost never changes (`pt2e_agreement`; figures in benchmarks/pt2e.py).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np

from tinyaot.frontend.pt2e import QUANTIZE, _walk
from tinyaot.ir.layout import model_to_torch_layout, torch_to_model_layout
from tinyaot.ref.interpreter import VIEW_OPS, prepare_all, run_unplanned


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


@contextmanager
def one_torch_thread():
    """Run torch on one thread: the PT2E graph runs one small sample per call, where a second thread only adds
    synchronization (and, on a busy machine, can make each call many times slower)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


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
    with torch.no_grad(), one_torch_thread():
        for sample in real:
            y = graph_module(torch.from_numpy(np.ascontiguousarray(sample[None])))
            y = y[0] if isinstance(y, (tuple, list)) else y
            outs.append(y.detach().cpu().numpy().astype(np.float64))
    y = np.concatenate(outs)
    if g.output_layout == "NHWC":
        y = torch_to_model_layout(y, "NHWC", y.ndim)
    return np.clip(np.round(y / np.float64(np.float32(so))) + zo, -128, 127).astype(np.int8).reshape(len(batch), -1)


def agreement_of(got: np.ndarray, want: np.ndarray) -> Agreement:
    """Compare int8 outputs (one row per sample) of tinyaot (`got`) and the PT2E reference (`want`)."""
    want = np.asarray(want).reshape(len(want), -1).astype(np.int64)
    got = np.asarray(got).reshape(want.shape).astype(np.int64)
    diff = np.abs(got - want)
    return Agreement(
        samples=len(want), equal_fraction=float((diff == 0).mean()), max_abs_steps=int(diff.max(initial=0)),
        mean_abs_steps=float(diff.mean()), argmax_agreement=float((got.argmax(1) == want.argmax(1)).mean()),
    )


def pt2e_agreement(cm, graph_module, x_int8: np.ndarray, engine: str = "reference") -> Agreement:
    """Run tinyaot (`engine`) and the PT2E reference on the same int8 inputs and compare the int8 outputs."""
    want = pt2e_reference(cm, graph_module, x_int8)
    return agreement_of(cm.run(np.asarray(x_int8), engine=engine), want)


@dataclass(frozen=True)
class LayerAgreement:
    """One int8 tensor of the compiled graph that the PT2E graph also quantizes, compared two ways."""

    layer: str  # the tinyaot node that writes the tensor
    op: str
    tensor: str
    size: int  # int8 values per sample
    chained_equal: float  # whole model run: tinyaot's tensor vs PT2E's, from the same model input
    chained_max_steps: int
    isolated_equal: float  # this kernel alone, fed PT2E's own int8 input(s)
    isolated_max_steps: int

    def as_dict(self) -> dict:
        return asdict(self)


def pt2e_intermediates(graph_module, real_input: np.ndarray) -> dict[str, np.ndarray]:
    """FX node name -> int8 output of every quantize_per_tensor node of the PT2E graph, for one float sample."""
    import torch
    import torch.fx

    seen: dict[str, np.ndarray] = {}

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if n.op == "call_function" and str(n.target) in QUANTIZE and "per_tensor" in str(n.target):
                seen[n.name] = out.detach().cpu().numpy()
            return out

    with torch.no_grad(), one_torch_thread():
        _Recorder(graph_module).run(torch.from_numpy(np.ascontiguousarray(real_input, np.float32)))
    return seen


def pt2e_layer_agreement(cm, graph_module, x_int8: np.ndarray) -> list[LayerAgreement]:
    """Per int8 tensor (graph order): how often tinyaot's value equals the PT2E graph's quantize output.

    Both run the reference kernels (`tinyaot.ref`, the ones the interpreter and the C implement) node by node
    outside the arena. `chained` feeds each kernel tinyaot's own outputs, as the compiled model does, so a layer
    inherits every difference made before it (the last row equals `pt2e_agreement`); `isolated` feeds each
    kernel PT2E's int8 input(s), so it shows that kernel's own rounding alone. Views are skipped (they move
    bytes); tensors the PT2E graph never quantizes (a requantize's input, say) are not compared.
    """
    g = cm.graph
    where = _quantized_tensors(g, graph_module)
    params = prepare_all(g)
    si, zi = cm.input_qparams
    batch = np.asarray(x_int8).reshape((-1,) + cm.input_shape[1:])
    x_torch = model_to_torch_layout(batch, g.layout, g.torch_input_rank)
    real = (x_torch.astype(np.float32) - np.float32(zi)) * np.float32(si)

    stats: dict[str, list] = {}  # tensor -> [chained equal, chained max, isolated equal, isolated max, count]
    for sample_q, sample_real in zip(batch, real):
        seen = pt2e_intermediates(graph_module, sample_real[None])
        want = {ir: _to_ir(seen[fx], shape, cf, g.tensor(ir).shape) for ir, (fx, shape, cf) in where.items()}
        chained = run_unplanned(g, params, sample_q)
        isolated = run_unplanned(g, params, sample_q, replace=want)
        for out in (n.outputs[0] for n in g.nodes if n.outputs[0] in want):
            ref = want[out].astype(np.int64)
            d_chain = np.abs(chained[out].astype(np.int64) - ref)
            d_iso = np.abs(isolated[out].astype(np.int64) - ref)
            s = stats.setdefault(out, [0, 0, 0, 0, 0])
            s[0] += int((d_chain == 0).sum())
            s[1] = max(s[1], int(d_chain.max(initial=0)))
            s[2] += int((d_iso == 0).sum())
            s[3] = max(s[3], int(d_iso.max(initial=0)))
            s[4] += ref.size
    rows = []
    for node in g.nodes:
        s = stats.get(node.outputs[0])
        if s is None:
            continue
        rows.append(LayerAgreement(node.name, node.op, node.outputs[0], g.tensor(node.outputs[0]).size,
                                   s[0] / s[4], s[1], s[2] / s[4], s[3]))
    return rows


def _quantized_tensors(g, graph_module) -> dict:
    """IR tensor -> (FX quantize node, torch shape, channels-first?) for every activation of the compiled graph
    whose int8 value the PT2E graph computes. A quantize after a view (flatten) stands for the tensor before the
    view when PT2E quantizes only the view's output: q(view(x)) == view(q(x))."""
    builder = _walk(graph_module)
    producers = {o: n for n in g.nodes for o in n.outputs}
    fx_nodes = {n.name: n for n in graph_module.graph.nodes}
    torch_of: dict[str, tuple] = {}  # IR tensor -> (torch shape, channels-first?) of an FX value standing for it
    for fx_name, v in builder.values.items():
        val = fx_nodes[fx_name].meta.get("val") if fx_name in fx_nodes else None
        if val is not None and hasattr(val, "shape"):
            torch_of.setdefault(v.name, (tuple(val.shape), v.nhwc))
    direct, through_view = {}, {}
    for n in graph_module.graph.nodes:
        v = builder.values.get(n.name)
        if n.op != "call_function" or str(n.target) not in QUANTIZE or "per_tensor" not in str(n.target) \
                or v is None or v.name not in torch_of or producers.get(v.name) is None:
            continue
        name = v.name
        if producers[name].op not in VIEW_OPS:
            direct[name] = (n.name,) + torch_of[name]
            continue
        while producers.get(name) is not None and producers[name].op in VIEW_OPS:
            name = producers[name].inputs[0]
        if producers.get(name) is None:
            continue
        shape = g.tensor(name).shape
        if name in torch_of:
            through_view.setdefault(name, (n.name,) + torch_of[name])
        elif len(shape) == 4:  # made by the lowering (a pool before a view): channels-first in torch
            through_view.setdefault(name, (n.name, (shape[0], shape[3], shape[1], shape[2]), True))
    return {**through_view, **direct}


def _to_ir(q: np.ndarray, torch_shape: tuple, channels_first: bool, ir_shape: tuple) -> np.ndarray:
    """A PT2E int8 tensor (torch layout) as the compiled graph holds it."""
    q = np.asarray(q).reshape(torch_shape)
    if channels_first:
        q = torch_to_model_layout(q, "NHWC", len(torch_shape))
    return q.astype(np.int8).reshape(ir_shape)
