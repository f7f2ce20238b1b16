"""Where an exported FX node came from in the user's code: file:line and module path."""
from __future__ import annotations

import os
import re

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')
_FRONTEND = os.path.dirname(os.path.abspath(__file__))  # the front ends' own files (their decompositions)


def source_location(fx_node) -> str:
    """The user's file:line for an exported node: the innermost frame outside torch itself and outside the front
    ends' own decompositions (an nn.MultiheadAttention rewritten by frontend/pytorch_attention.py is the line that
    calls it)."""
    trace = fx_node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    user = [f for f in frames if f"{os.sep}torch{os.sep}" not in f[0] and os.path.dirname(f[0]) != _FRONTEND]
    if not user:
        return ""
    path, line, _func, code = user[-1]
    return f"{path}:{line}: {code.strip()}"


def layer_name(fx_node) -> str:
    """The module path (e.g. 'fc1') the node came from, falling back to the FX node name."""
    stack = fx_node.meta.get("nn_module_stack") or {}
    if stack:
        path = list(stack.values())[-1][0]
        if path:
            return path.replace("._modules.", ".").replace("L['self'].", "")
    return fx_node.name


def layer_type(fx_node) -> str:
    stack = fx_node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    t = list(stack.values())[-1][1]
    name = t.__name__ if isinstance(t, type) else str(t).rsplit(".", 1)[-1].strip("'>")
    return f" ({name})"
