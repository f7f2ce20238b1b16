"""nn.LSTM and nn.GRU (aten.lstm.input / aten.gru.input) -> one IR lstm / gru node per layer.

torch.export keeps a recurrent module as one call returning (output, h_n[, c_n]), read through getitem, with its
initial state made by aten.zeros. tinyaot compiles what a microcontroller model does with it: a zero initial
state, every layer unidirectional (stacked layers are stacked nodes), and either the whole output sequence or
only the last step (output[:, -1], output[-1] or h_n[-1]: then the last layer writes only its last step, the
op's last_only). Anything else (a given initial state, bidirectional, proj_size, c_n) is refused by name.
"""
from __future__ import annotations

import operator

import numpy as np

from tinyaot.frontend.fx_util import layer_name

GATES = {"lstm": 4, "gru": 3}
LAST = "recurrent_tables"  # Builder attribute: (fx node -> the IR tensor of the last step [1, H], tuple items)


def _zeros(b, n) -> None:
    """aten.zeros: a constant (a recurrent layer's initial state, checked to be zero where it is read)."""
    shape = tuple(int(s) for s in n.args[0])
    b.bind(n, b.const(f"{n.name}", np.zeros(shape, dtype=np.float32)), False, len(shape))


def _last_step_reader(user, time_axis: int, steps: int) -> bool:
    """select(seq, time_axis, -1) or seq[:, -1]-style reads of the last step."""
    if user.op != "call_function" or str(user.target) != "aten.select.int":
        return False
    dim, index = user.args[1], user.args[2]
    return dim % 3 == time_axis and index in (-1, steps - 1)


def _recurrent(op: str):
    def convert(b, n) -> None:
        x_arg, hx, params, has_biases, layers, _dropout, train, bidirectional, batch_first = n.args[:9]
        what = "nn.LSTM" if op == "lstm" else "nn.GRU"
        if bidirectional:
            raise b.error(f"a bidirectional {what} is not supported (unidirectional layers only)")
        if train:
            raise b.error(f"the {what} runs in training mode; compile the model in eval mode")
        per_layer = 4 if has_biases else 2
        if len(params) != layers * per_layer:
            raise b.error(f"{what} with proj_size is not supported (no projection)")
        for h0 in hx if isinstance(hx, (list, tuple)) else [hx]:
            t = b.graph.tensor(b.arg(h0).name)
            if not t.is_const or np.any(t.data != 0):
                raise b.error(f"{what} with an initial state is not supported: tinyaot starts every sequence from "
                              "zero state (leave h0 / c0 out)")
        x = b.arg(x_arg)
        shape = b.shape(x)
        if len(shape) != 3 or shape[0 if batch_first else 1] != 1:
            raise b.error(f"{what} input of shape {list(shape)}: tinyaot runs one batched sequence "
                          "([1, T, F] with batch_first, [T, 1, F] without)")
        steps, time_axis = shape[1 if batch_first else 0], 1 if batch_first else 0
        outs = {u.args[1]: u for u in n.users if u.target is operator.getitem}
        seq_users = list(outs[0].users) if 0 in outs else []
        need_seq = any(not _last_step_reader(u, time_axis, steps) for u in seq_users)
        if 2 in outs and outs[2].users:
            raise b.error("the final cell state c_n is not supported as a value; use the output or h_n")
        if need_seq and 1 in outs and outs[1].users:
            raise b.error(f"this {what} is read both as its whole output sequence and as h_n; read one of them "
                          "(output[:, -1] is h_n[-1])")
        cur = x.name if batch_first else _batch_first_source(b, x_arg, x.name, (1, steps, shape[2]))
        base = layer_name(n)
        for layer in range(layers):
            w_ih, w_hh = (b.const_data(p) for p in params[layer * per_layer : layer * per_layer + 2])
            hidden = w_hh.shape[1]
            b_ih, b_hh = ((b.const_data(p) for p in params[layer * per_layer + 2 : layer * per_layer + 4])
                          if has_biases else (np.zeros(w_ih.shape[0]), np.zeros(w_ih.shape[0])))
            last_only = layer == layers - 1 and not need_seq
            inputs = [cur, b.const(f"{base}.weight_ih_l{layer}", w_ih), b.const(f"{base}.weight_hh_l{layer}", w_hh)]
            if op == "lstm":
                inputs.append(b.const(f"{base}.bias_l{layer}", b_ih + b_hh))
            else:  # the GRU's candidate reads r * (W_hn h + b_hn): the recurrent bias stays apart
                inputs += [b.const(f"{base}.bias_ih_l{layer}", b_ih), b.const(f"{base}.bias_hh_l{layer}", b_hh)]
            out_shape = (1, hidden) if last_only else (1, steps, hidden)
            cur = b.emit(op, inputs, out_shape, {"hidden": hidden, "last_only": last_only or None},
                         suffix=f"_l{layer}" if layers > 1 else "")
            node = b.graph.nodes[-1]
            node.outputs.append(b.activation(f"{node.name}_state", (1, steps, hidden)))
        last, results = _tables(b)
        hidden = b.graph.tensor(cur).shape[-1]
        if need_seq:
            results[f"{n.name}#0"] = (cur, 3)  # time-major too: [T, 1, H] has the bytes of [1, T, H]
            return
        last.update({u.name: cur for u in seq_users})
        if 0 in outs:
            last[outs[0].name] = cur
        if 1 in outs:
            last[outs[1].name] = cur  # h_n[-1]
            if any(not _last_step_reader(u, 0, layers) for u in outs[1].users):
                if layers > 1:
                    raise b.error(f"h_n of a {layers}-layer {what} is read whole; tinyaot keeps the last layer's "
                                  "final state only: read h_n[-1]")
                results[f"{n.name}#1"] = (b.emit("reshape", [cur], (1, 1, hidden), suffix="_h_n"), 3)
    return convert


def _batch_first_source(b, x_arg, x: str, shape: tuple[int, ...]) -> str:
    """A time-major input [T, 1, F] is a view of the model's [1, T, F] tensor (the compiled model takes a batch of
    one first): the layer reads that tensor, and the view, read by nothing else, goes."""
    view = b.graph.producer(x)
    if view is None or view.op != "reshape" or b.graph.tensor(view.inputs[0]).shape != shape or \
            len(x_arg.users) != 1:
        raise b.error(f"a time-major input ({list(b.graph.tensor(x).shape)}) must be a view of a [1, T, F] "
                      "tensor, e.g. x.reshape(T, 1, F) of the model's [1, T, F] input, or use batch_first=True")
    b.graph.nodes.remove(view)
    return view.inputs[0]


def _tables(b) -> tuple[dict, dict]:
    """The builder's recurrent bookkeeping: the last-step tensors by fx node, and the tuple items by key."""
    if not hasattr(b, LAST):
        setattr(b, LAST, ({}, {}))
    return getattr(b, LAST)


def _getitem(b, n) -> None:
    """One value of a recurrent layer's result tuple (the others are refused where they are read)."""
    last, results = _tables(b)
    key = f"{n.args[0].name}#{n.args[1]}"
    if key in results:
        b.bind(n, results[key][0], False, results[key][1])
    elif n.users and n.name not in last:
        raise b.error(f"item {n.args[1]} of {n.args[0].target} is not supported as a value here")


def _select(b, n) -> None:
    """The last step of a recurrent layer's output (output[:, -1], h_n[-1]); other selects are not supported."""
    last, _ = _tables(b)
    found = last.get(n.name, last.get(n.args[0].name))
    if found is not None:
        b.bind(n, found, False, 2)
        return
    raise b.error("select (indexing one position of an axis) is supported only for the last step of an nn.LSTM / "
                  "nn.GRU output")


CONVERTERS = {
    "aten.zeros.default": _zeros,
    "aten.lstm.input": _recurrent("lstm"),
    "aten.gru.input": _recurrent("gru"),
    "<built-in function getitem>": _getitem,
    "aten.select.int": _select,
}
