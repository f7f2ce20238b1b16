"""nn.LSTM and nn.GRU (aten.lstm.input / aten.gru.input), and loops over nn.LSTMCell / nn.GRUCell
(aten.lstm_cell / aten.gru_cell), -> one IR lstm / gru node per layer.

torch.export keeps a recurrent module as one call returning (output, h_n[, c_n]), read through getitem, with its
initial state made by aten.zeros. tinyaot compiles what a microcontroller model does with it: a zero initial
state, every layer unidirectional (stacked layers are stacked nodes), and either the whole output sequence or
only the last step (output[:, -1], output[-1] or h_n[-1]: then the last layer writes only its last step, the
op's last_only). Anything else (a given initial state, bidirectional, proj_size, c_n) is refused by name.

A cell called in a Python loop (h = cell(x[:, t], h) for every t, or h, c = cell(x[:, t], (h, c))) exports
unrolled: one cell call per step, each reading the step's select of the sequence and the previous call's state.
The first call (zero state) finds the whole chain, checks it is that loop (the same weights, step t reading frame t
of one sequence, or step t of another cell loop: stacked cells), and emits one lstm / gru node over the sequence,
the layer nn.LSTM / nn.GRU with the same weights would be: the same integer kernels, the same bytes. Its output is
torch.stack of every step's h (the sequence) or the last step's h (last_only). A cell whose state is a model input
(forward(x_t, h) -> h_new, a hand-written step function) is refused: stream=True makes the step function.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np

from tinyaot.frontend.fx_util import layer_name

GATES = {"lstm": 4, "gru": 3}
LAST = "recurrent_tables"  # Builder attribute: (fx node -> the IR tensor of the last step [1, H], tuple items)
CELLS = "recurrent_cells"  # Builder attribute: the cell loops converted so far (_CellLoops)
CELL_OPS = {"aten.lstm_cell.default": "lstm", "aten.gru_cell.default": "gru"}


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
        shape = b.shape(x)[x.lead:]  # a time-major [T, 1, F] carries the batch's 1 ahead in the IR
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
        for layer in range(layers):
            weights = [b.const_data(p) for p in params[layer * per_layer : (layer + 1) * per_layer]]
            cur = _emit_layer(b, op, cur, steps, weights, layer == layers - 1 and not need_seq,
                              f"_l{layer}" if layers > 1 else "", f"_l{layer}")
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


def _emit_layer(b, op: str, x: str, steps: int, weights: list, last_only: bool, suffix: str,
                param_suffix: str) -> str:
    """One lstm / gru node over x [1, steps, F] from PyTorch's weights (w_ih, w_hh[, b_ih, b_hh]); its output.
    suffix: the node name's ending ("_l1" for an nn.LSTM's second layer); param_suffix: its constants'."""
    base = layer_name(b.current)
    w_ih, w_hh = weights[:2]
    hidden = w_hh.shape[1]
    b_ih, b_hh = weights[2:4] if len(weights) == 4 else (np.zeros(w_ih.shape[0]), np.zeros(w_ih.shape[0]))
    end = param_suffix
    inputs = [x, b.const(f"{base}.weight_ih{end}", w_ih), b.const(f"{base}.weight_hh{end}", w_hh)]
    if op == "lstm":
        inputs.append(b.const(f"{base}.bias{end}", b_ih + b_hh))
    else:  # the GRU's candidate reads r * (W_hn h + b_hn): the recurrent bias stays apart
        inputs += [b.const(f"{base}.bias_ih{end}", b_ih), b.const(f"{base}.bias_hh{end}", b_hh)]
    out_shape = (1, hidden) if last_only else (1, steps, hidden)
    out = b.emit(op, inputs, out_shape, {"hidden": hidden, "last_only": last_only or None}, suffix=suffix)
    node = b.graph.nodes[-1]
    node.outputs.append(b.activation(f"{node.name}_state", (1, steps, hidden)))
    return out


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


def recurrent_getitem(b, n) -> None:
    """One value of a recurrent layer's result tuple (the others are refused where they are read)."""
    if n.name in _loops(b).converted:
        return
    last, results = _tables(b)
    key = f"{n.args[0].name}#{n.args[1]}"
    if key in results:
        b.bind(n, results[key][0], False, results[key][1])
    elif n.users and n.name not in last:
        raise b.error(f"item {n.args[1]} of {n.args[0].target} is not supported as a value here")


def recurrent_select(b, n) -> bool:
    """Whether this select is the recurrent layers' own (then handled): the last step of a recurrent layer's output
    (output[:, -1], h_n[-1]), or a cell loop's x[:, t] (read by the loop's first call, which converts the whole
    loop). Other selects are slices (frontend/pytorch_slicing.py)."""
    if n.users and all(str(u.target) in CELL_OPS and u.args[0] is n for u in n.users):
        return True
    last, _ = _tables(b)
    found = last.get(n.name, last.get(n.args[0].name))
    if found is not None:
        b.bind(n, found, False, 2)
        return True
    return False


# ---- nn.LSTMCell / nn.GRUCell loops ---------------------------------------------------------------------------

@dataclass
class _CellLoops:
    """The cell loops converted so far: what later fx nodes of a loop read or are."""

    converted: set = field(default_factory=set)  # fx nodes the loop's first call converted (later calls, items)
    stacks: dict = field(default_factory=dict)  # torch.stack of every step's h -> (the layer's output, dim)
    steps: dict = field(default_factory=dict)  # a step's h read by a stacked cell loop -> (output, step, steps)


def _loops(b) -> _CellLoops:
    if not hasattr(b, CELLS):
        setattr(b, CELLS, _CellLoops())
    return getattr(b, CELLS)


def _state_args(n) -> list:
    """The fx nodes of a cell call's state: [h] (GRUCell) or [h, c] (LSTMCell)."""
    hx = n.args[1]
    return list(hx) if isinstance(hx, (list, tuple)) else [hx]


def _step_outputs(n, op: str) -> tuple:
    """(h, c) of one cell call as fx nodes (c None for a GRU cell; None where nothing reads it)."""
    if op == "gru":
        return n, None
    items = {u.args[1]: u for u in n.users if u.target is operator.getitem}
    return items.get(0), items.get(1)


def _unrolled(n, op: str) -> list:
    """The calls of the loop that starts at `n`: each next one the same cell (same weights) on the last one's
    state."""
    chain = [n]
    while True:
        state = [v for v in _step_outputs(chain[-1], op) if v is not None]
        nxt = [u for u in (state[0].users if state else ()) if u.target == n.target and tuple(u.args[2:]) ==
               tuple(n.args[2:]) and _state_args(u) == state]
        if not nxt:
            return chain
        chain.append(nxt[0])


def _cell(op: str):
    what = "nn.LSTMCell" if op == "lstm" else "nn.GRUCell"

    def convert(b, n) -> None:
        loops = _loops(b)
        if n.name in loops.converted:  # a later step of a loop its first call converted
            return
        for s in _state_args(n):
            _check_zero_state(b, s, what)
        chain = _unrolled(n, op)
        steps = len(chain)
        x = _cell_sequence(b, [c.args[0] for c in chain], what)
        stacks, upper, last_readers = _cell_readers(b, chain, op, what)
        need_seq = bool(stacks or any(upper))
        if need_seq and last_readers:
            raise b.error(f"the last step's h of this {what} loop is read both on its own and in the stacked "
                          "sequence; read one of them (the sequence's [:, -1] is the last h)")
        weights = [b.const_data(p) for p in n.args[2:] if p is not None]
        out = _emit_layer(b, op, x, steps, weights, not need_seq, "", "")
        for k, cell in enumerate(chain):
            loops.converted.add(cell.name)
            loops.converted.update(v.name for v in _step_outputs(cell, op) if v is not None)
            loops.steps.update({h.name: (out, k, steps) for h in upper[k]})
        loops.stacks.update({u.name: (out, _stack_dim(u)) for u in stacks})
        if not need_seq:
            b.bind(_step_outputs(chain[-1], op)[0], out, False, 2)
    return convert


def _check_zero_state(b, arg, what: str) -> None:
    """A loop starts from zero state (torch.zeros, or the cell called without one)."""
    v = b.arg(arg)
    t = b.graph.tensor(v.name)
    if v.name in b.graph.inputs:
        raise b.error(f"this {what} takes its state from the model's input '{arg.name}' (a hand-written step "
                      "function): tinyaot compiles a cell loop over a whole sequence from zero state. For a step "
                      "function (one frame per invoke, the state kept between invokes) compile the sequence "
                      "model (the loop, or nn.LSTM / nn.GRU) with stream=True")
    if not t.is_const or np.any(t.data != 0):
        raise b.error(f"this {what} loop starts from a state other than zero; tinyaot starts every sequence from "
                      "zero state (torch.zeros, or call the cell without a state)")


def _cell_sequence(b, xs: list, what: str) -> str:
    """The [1, T, F] IR tensor whose frame t step t reads: x[:, t] (or x[t] of a time-major [T, 1, F]) for
    t = 0..T-1, or step t of a cell loop below (stacked cells)."""
    steps = len(xs)
    loops = _loops(b)
    if all(x.name in loops.steps for x in xs):
        below = [loops.steps[x.name] for x in xs]
        if all(s == (below[0][0], k, steps) for k, s in enumerate(below)):
            return below[0][0]
    elif all(str(getattr(x, "target", "")) == "aten.select.int" and x.args[0] is xs[0].args[0] for x in xs):
        v = b.arg(xs[0].args[0])
        shape = b.shape(v)[v.lead:]  # a time-major [T, 1, F] carries the batch's 1 ahead in the IR
        dim = xs[0].args[1] % len(shape) if len(shape) == 3 else None
        if dim in (0, 1) and shape[dim] == steps and shape[1 - dim] == 1 and not v.nhwc and \
                all(x.args[1] % 3 == dim and x.args[2] % steps == k for k, x in enumerate(xs)):
            if dim == 1:
                return v.name
            view = b.graph.producer(v.name)  # time-major: read the [1, T, F] tensor it is a view of
            if view is not None and view.op == "reshape" and set(xs[0].args[0].users) == set(xs) and \
                    b.graph.tensor(view.inputs[0]).shape == (1, steps, shape[2]):
                b.graph.nodes.remove(view)  # read by the loop only
                return view.inputs[0]
            raise b.error(f"a time-major sequence ({list(shape)}) must be a view of a [1, T, F] tensor, e.g. "
                          "x.reshape(T, 1, F) of the model's [1, T, F] input; or loop over x[:, t]")
        raise b.error(f"this {what} loop runs over {steps} step(s) reading x[:, t] of a tensor of shape "
                      f"{list(shape)}; tinyaot compiles a loop over every frame in order, t = 0..T-1 of a "
                      "[1, T, F] sequence (or x[t] of a time-major [T, 1, F] one)")
    raise b.error(f"step t of this {what} loop must read frame t of one sequence (x[:, t] for t = 0..T-1) or step "
                  "t of the cell loop below it; the loop reads something else")


def _cell_readers(b, chain: list, op: str, what: str) -> tuple[list, list, list]:
    """Who reads each step's h: the stacks of every step (the sequence out), a cell loop above (per step), or
    the last step's readers; anything else is refused, as is any read of c but the next step's."""
    stacks, upper, last = [], [], []
    steps = len(chain)
    for k, cell in enumerate(chain):
        h, c = _step_outputs(cell, op)
        nxt = chain[k + 1] if k + 1 < steps else None
        if c is not None and any(u is not nxt for u in c.users):
            raise b.error(f"the cell state c of step {k} of this {what} loop is read outside the loop; tinyaot "
                          "keeps c inside the layer: read the hidden state h")
        if h is None:
            raise b.error(f"the hidden state h of step {k} of this {what} loop is never read")
        upper.append([])
        for u in h.users:
            if u is nxt:
                continue
            if str(u.target) == "aten.stack.default" and list(u.args[0]) == [_step_outputs(c2, op)[0]
                                                                              for c2 in chain]:
                if _stack_dim(u) == 2:
                    raise b.error(f"torch.stack of this {what} loop's states along their last axis; stack along "
                                  "dim 1 (batch first) or 0 (time-major)")
                stacks += [u] if u not in stacks else []
            elif str(u.target) in CELL_OPS and u.args[0] is h:
                upper[k].append(h)
            elif k == steps - 1:
                last.append(u)
            else:
                raise b.error(f"the hidden state h of step {k} of this {what} loop is read by {u.target} inside "
                              "the loop; tinyaot turns the loop into one layer whose output is every step's h "
                              "stacked (torch.stack(hs, 1)) or the last step's h: apply per-step layers to the "
                              "stacked sequence")
    return stacks, upper, last


def _stack_dim(n) -> int:
    """The axis torch.stack puts the steps on, of the [1, T, H] / [T, 1, H] result."""
    dim = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", 0)
    return dim % 3


def recurrent_stack(b, n) -> bool:
    """torch.stack of every step's h of a cell loop: the layer's output sequence (stacked along dim 0, time-major:
    the same bytes, as nn.LSTM's time-major output; the compiled model keeps a batch of one first). False for
    any other stack (pytorch_elementwise.py's)."""
    found = _loops(b).stacks.get(n.name)
    if found is None:
        return False
    b.bind(n, found[0], False, 3)
    return True


CONVERTERS = {
    "aten.zeros.default": _zeros,
    "aten.lstm.input": _recurrent("lstm"),
    "aten.gru.input": _recurrent("gru"),
    "aten.lstm_cell.default": _cell("lstm"),
    "aten.gru_cell.default": _cell("gru"),
}
