"""Human-readable dump of a graph, one node per line."""
from __future__ import annotations

from tinyaot.ir.graph import Graph, Tensor


def _fmt_tensor(t: Tensor) -> str:
    q = ""
    if t.qparams is not None and t.qparams.is_per_tensor:
        q = f" s={t.qparams.scale[0]:.6g} zp={t.qparams.zero_point[0]}"
    elif t.qparams is not None:
        q = f" per-channel[{len(t.qparams.scale)}]"
    return f"{t.name}:{t.dtype}{list(t.shape)}{q}"


def format_graph(g: Graph) -> str:
    lines = [f"inputs: {', '.join(_fmt_tensor(g.tensor(n)) for n in g.inputs)}"]
    for node in g.nodes:
        ins = ", ".join(n if g.tensor(n).is_const else _fmt_tensor(g.tensor(n)) for n in node.inputs)
        outs = ", ".join(_fmt_tensor(g.tensor(n)) for n in node.outputs)
        attrs = " ".join(f"{k}={v}" for k, v in node.attrs.items() if not hasattr(v, "shape"))
        lines.append(f"  {node.name} = {node.op}({ins}) {attrs} -> {outs}")
    lines.append(f"outputs: {', '.join(g.outputs)}")
    return "\n".join(lines)
