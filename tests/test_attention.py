"""batch_matmul against TensorFlow Lite Micro's BATCH_MATMUL, and attention from PyTorch (matmul of two
activations, F.scaled_dot_product_attention, nn.MultiheadAttention): reference == host C == Cortex-M33 on every
byte, int8 tracking float, and clear refusals of what is not compiled (masks, batch_first=False)."""
from __future__ import annotations

import numpy as np
import pytest
from kernel_suite import act, one_op_graph

import tinyaot
from tinyaot.errors import UnsupportedOpError
from tinyaot.ref.interpreter import KERNELS

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional

N_TFLM, SAMPLES = 50, 6


# ---- BATCH_MATMUL: the reference against TFLM ------------------------------------------------------------------
def _qp(rng) -> tuple[float, int]:
    return float(np.float32(10 ** rng.uniform(-2.0, -0.5))), int(rng.integers(-128, 128))


def _bmm_case(rng):
    """Random ranks 2-5, batch dims broadcasting either way, adj_x / adj_y, output scale near the products'."""
    rank = int(rng.integers(2, 6))
    batch = [int(rng.integers(1, 4)) for _ in range(rank - 2)]
    lb = [d if rng.random() < 0.7 else 1 for d in batch]
    rb = [d if rng.random() < 0.7 else 1 for d in batch]
    if rank > 2 and rng.random() < 0.3:  # one operand of lower rank (TFLM extends it with 1s)
        rb = rb[1:]
    m, k, n = (int(v) for v in rng.integers(1, 9, size=3))
    adj_x, adj_y = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    a_shape = (*lb, *((k, m) if adj_x else (m, k)))
    b_shape = (*rb, *((n, k) if adj_y else (k, n)))
    out_shape = (*np.broadcast_shapes(tuple(lb), tuple(rb)), m, n) if batch else (m, n)
    qa, qb = _qp(rng), _qp(rng)
    qo = (float(np.float32(qa[0] * qb[0] * float(rng.uniform(3, 40)) * np.sqrt(k))), int(rng.integers(-128, 128)))
    return a_shape, b_shape, tuple(out_shape), qa, qb, qo, adj_x, adj_y


@pytest.mark.parametrize("seed", range(N_TFLM))
def test_batch_matmul_reference_equals_tflite_micro(seed):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    tb = pytest.importorskip("tflite_builder")
    from test_misc_kernels_tflm import _run_tflm, _t

    rng = np.random.default_rng(1000 + seed)
    a_shape, b_shape, out_shape, qa, qb, qo, adj_x, adj_y = _bmm_case(rng)
    opts = ("BatchMatMulOptions", {"AdjX": adj_x, "AdjY": adj_y})
    model = tb.Model([_t(a_shape, qa), _t(b_shape, qb), _t(out_shape, qo)],
                     [tb.Op("BATCH_MATMUL", [0, 1], [2], opts)], [0, 1], [2])
    g = one_op_graph("batch_matmul", [act("a", a_shape, *qa), act("b", b_shape, *qb)], act("y", out_shape, *qo),
                     {"adj_x": adj_x, "adj_y": adj_y})
    xs = [rng.integers(-128, 128, size=(SAMPLES, *s)).astype(np.int8) for s in (a_shape, b_shape)]
    want = _run_tflm(tb.build(model), xs)
    prepare, kernel = KERNELS["batch_matmul"]
    p = prepare(g.nodes[0], g)
    got = np.stack([kernel(xs[0][s], xs[1][s], p) for s in range(SAMPLES)])
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_batch_matmul_cases_cover_the_kernel():
    """The 50 random cases above hit every rank, both adj flags and broadcasting."""
    cases = [_bmm_case(np.random.default_rng(1000 + s)) for s in range(N_TFLM)]
    assert {len(c[0]) for c in cases} | {len(c[1]) for c in cases} >= {2, 3, 4, 5}
    assert {(c[6], c[7]) for c in cases} == {(False, False), (False, True), (True, False), (True, True)}
    assert any(c[0][:-2] != c[1][:-2] for c in cases if len(c[0]) > 2)


@pytest.mark.parametrize("seed", range(8))
def test_a_folded_transpose_reads_the_same_values_as_the_transposed_tensor(seed):
    """lhs_perm / rhs_perm (a transpose the front end folded in) give the bytes of the product of the moved
    tensors, adj flags on top included."""
    rng = np.random.default_rng(seed)
    perms = [(0, 2, 1, 3), (0, 1, 3, 2), (0, 3, 1, 2), (0, 2, 3, 1)]
    pa, pb = (perms[int(i)] for i in rng.integers(0, 4, size=2))
    adj_x, adj_y = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    m, k, n, h = 3, 5, 4, 2
    a_log, b_log = (1, h, *((k, m) if adj_x else (m, k))), (1, h, *((n, k) if adj_y else (k, n)))
    a_stored = tuple(a_log[pa.index(d)] for d in range(4))  # transpose(stored, pa) has shape a_log
    b_stored = tuple(b_log[pb.index(d)] for d in range(4))
    qa, qb, qo = (0.05, -3), (0.04, 9), (0.2, 2)
    moved = one_op_graph("batch_matmul", [act("a", a_log, *qa), act("b", b_log, *qb)], act("y", (1, h, m, n), *qo),
                         {"adj_x": adj_x, "adj_y": adj_y})
    folded = one_op_graph("batch_matmul", [act("a", a_stored, *qa), act("b", b_stored, *qb)],
                          act("y", (1, h, m, n), *qo), {"adj_x": adj_x, "adj_y": adj_y, "lhs_perm": pa, "rhs_perm": pb})
    prepare, kernel = KERNELS["batch_matmul"]
    xa = rng.integers(-128, 128, size=a_stored).astype(np.int8)
    xb = rng.integers(-128, 128, size=b_stored).astype(np.int8)
    want = kernel(np.ascontiguousarray(xa.transpose(pa)), np.ascontiguousarray(xb.transpose(pb)),
                  prepare(moved.nodes[0], moved))
    np.testing.assert_array_equal(kernel(xa, xb, prepare(folded.nodes[0], folded)), want)


@pytest.mark.host
def test_batch_matmul_tflite_import_equals_tflite_micro():
    """A .tflite whose one input feeds both operands (x @ x^T, adj_y): imported, compiled to C, equal to TFLM."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    tb = pytest.importorskip("tflite_builder")
    from test_misc_kernels_tflm import _run_tflm, _t

    qx, qo = (0.05, -7), (0.4, 3)
    model = tb.Model([_t((1, 2, 6, 8), qx), _t((1, 2, 6, 6), qo)],
                     [tb.Op("BATCH_MATMUL", [0, 0], [1], ("BatchMatMulOptions", {"AdjX": False, "AdjY": True}))],
                     [0], [1])
    buf = tb.build(model)
    cm = tinyaot.compile(buf, name="bmm_tflite")
    assert [n.op for n in cm.graph.nodes] == ["batch_matmul"]
    x = np.random.default_rng(29).integers(-128, 128, size=(16, 1, 2, 6, 8)).astype(np.int8)
    want = _run_tflm(buf, [x])
    np.testing.assert_array_equal(cm.run(x, engine="reference").reshape(want.shape), want)
    np.testing.assert_array_equal(cm.run(x, engine="host").reshape(want.shape), want)


# ---- from PyTorch ------------------------------------------------------------------------------------------------
class PairwiseMatmul(nn.Module):
    """Matmul of two activations in 3-D (x @ y^T, the transpose read by the kernel) and 4-D (per head, torch.bmm
    style) and torch.bmm."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(12, 16), nn.Linear(12, 16), nn.Linear(12, 16)
        self.out = nn.Linear(8, 4)

    def forward(self, x):  # x: [1, 8, 12]
        sim = torch.matmul(self.a(x), self.b(x).transpose(1, 2))  # [1, 8, 8]
        heads = self.c(x).view(1, 8, 2, 8).transpose(1, 2)  # [1, 2, 8, 8]
        mixed = (heads @ heads).mean(1)  # 4-D matmul, then [1, 8, 8]
        return self.out(torch.bmm(sim, mixed) + sim)


class SDPABlock(nn.Module):
    """Heads split by view + transpose, F.scaled_dot_product_attention with its own scale, heads merged."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.proj = nn.Linear(12, 16), nn.Linear(12, 16), nn.Linear(12, 16), nn.Linear(16, 6)

    def forward(self, x):  # x: [1, 8, 12]
        b = x.shape[0]
        q, k, v = (f(x).view(b, 8, 2, 8).transpose(1, 2) for f in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, scale=0.5).transpose(1, 2).reshape(b, 8, 16)
        return self.proj(y)


class MHABlock(nn.Module):
    def __init__(self, d=16, heads=4):
        super().__init__()
        self.inp, self.mha, self.out = nn.Linear(12, d), nn.MultiheadAttention(d, heads, batch_first=True), \
            nn.Linear(d, 6)

    def forward(self, x):
        h = self.inp(x)
        a, _ = self.mha(h, h, h, need_weights=False)
        return self.out(h + a)


def _compile(model, shape, name):
    torch.manual_seed(3)
    rng = np.random.default_rng(29)  # its own: the same samples whichever tests ran before
    x = (rng.normal(size=(72, *shape)) + np.sin(np.arange(shape[-1]))).astype(np.float32)
    cm = tinyaot.compile(model.eval(), torch.from_numpy(x[:1]), calibration=x[:64], name=name)
    return cm, x[64:]


def _check_engines(cm, x, engines=("host", "m33")):
    xq = cm.quantize_input(cm.to_model_layout(x))
    want = cm.run(xq, engine="reference")
    for engine in engines:
        np.testing.assert_array_equal(cm.run(xq, engine=engine), want, err_msg=engine)


@pytest.mark.m33
def test_matmul_of_two_activations_reference_host_m33():
    torch.manual_seed(0)
    model = PairwiseMatmul()
    cm, x = _compile(model, (8, 12), "pairwise")
    ops = [n.op for n in cm.graph.nodes]
    assert ops.count("batch_matmul") == 3
    adj = [n.attrs.get("adj_y") for n in cm.graph.nodes if n.op == "batch_matmul"]
    assert adj[0] is True  # the transpose of b(x) is read by the kernel, not run
    assert ops.count("transpose") == 1  # heads @ heads reads its operand twice: that transpose runs
    _check_engines(cm, x)


def _tracks_float(model, cm, x, tol):
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    got = cm.run_float(cm.to_model_layout(x), engine="host").reshape(want.shape)
    rel = np.abs(got - want).mean() / np.abs(want).mean()
    assert rel < tol, f"int8 vs float relative error {rel:.3f}"  # seeded: measured 1.8% (sdpa), 2.1% (mha)


@pytest.mark.m33
def test_scaled_dot_product_attention_reference_host_m33():
    torch.manual_seed(1)
    model = SDPABlock()
    cm, x = _compile(model, (8, 12), "sdpa")
    ops = [n.op for n in cm.graph.nodes]
    assert ops.count("batch_matmul") == 2 and ops.count("softmax") == 1
    assert ops.count("transpose") == 1  # the head split is read in place, the merge after SDPA runs
    assert next(n for n in cm.graph.nodes if n.op == "softmax").attrs["beta"] == 0.5
    _check_engines(cm, x)
    _tracks_float(model, cm, x, 0.1)


@pytest.mark.m33
def test_multihead_attention_reference_host_m33():
    torch.manual_seed(2)
    model = MHABlock()
    cm, x = _compile(model, (10, 12), "mha")
    ops = [n.op for n in cm.graph.nodes]
    assert ops.count("batch_matmul") == 2 and ops.count("softmax") == 1 and ops.count("fully_connected") == 6
    assert ops.count("transpose") == 1
    names = {n.name for n in cm.graph.nodes}
    assert {"mha.q_proj", "mha.k_proj", "mha.v_proj", "mha.out_proj"} <= names  # layers named as in the model
    _check_engines(cm, x)
    _tracks_float(model, cm, x, 0.1)
    assert isinstance(model.mha, nn.MultiheadAttention)  # the user's model is left as it was
    attention = [n for n in cm.graph.nodes if n.name.startswith("mha") or n.op in ("batch_matmul", "softmax")]
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if "a, _ = self.mha(h, h, h" in text)
    for n in attention:  # the decomposed layers name the line that calls the attention, not tinyaot's own files
        assert n.source.startswith(f"{__file__}:{line}:"), (n.name, n.source)


def test_attention_refusals_are_clear():
    class Masked(nn.Module):
        def __init__(self, **kw):
            super().__init__()
            self.mha = nn.MultiheadAttention(8, 2, **kw)

        def forward(self, x):
            mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1)
            return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]

    x = torch.zeros(1, 4, 8)
    with pytest.raises(UnsupportedOpError, match=r"layer 'mha' \(nn.MultiheadAttention\) has batch_first=False"):
        tinyaot.compile(Masked().eval(), x, calibration=np.zeros((2, 4, 8), np.float32))
    with pytest.raises(UnsupportedOpError, match=r"layer 'mha' \(nn.MultiheadAttention\) is called with an attention "
                       r"mask") as masked:
        tinyaot.compile(Masked(batch_first=True).eval(), x, calibration=np.zeros((2, 4, 8), np.float32))
    assert "does not run on example input" not in str(masked.value)  # the refusal itself, not a wrapped failure

    class Causal(nn.Module):
        def forward(self, x):
            q = x.view(1, 4, 2, 4).transpose(1, 2)
            return F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(1, 4, 8)

    with pytest.raises(UnsupportedOpError, match=r"(?s)scaled_dot_product_attention.*is_causal=True is not supported"):
        tinyaot.compile(Causal().eval(), x, calibration=np.zeros((2, 4, 8), np.float32))
