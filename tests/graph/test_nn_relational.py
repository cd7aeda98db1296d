"""RelGraphConv (basis with and without coefficients, block-diagonal, integer-id inputs, edge
norms) and GatedGraphConv against float64 NumPy loops over typed edges that follow the layers'
formulas (per-relation weights built from the parameters; MXNet's GRU equations), on int64 and
int32 graphs on two contexts."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import GraphError
from gluon_suite.graph.nn import GatedGraphConv, RelGraphConv

SRC = np.array([0, 0, 1, 2, 2, 3, 5, 1, 4, 3, 5, 0])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4, 0, 5, 5, 3])
TYPES = np.array([0, 2, 1, 1, 2, 0, 2, 1, 0, 2, 1, 1])
N, R = 6, 3
CASES = [(mx.cpu(0), "int64"), (mx.cpu(1), "int32")]
IDS = ["cpu0-int64", "cpu1-int32"]


def setup(ctx, idtype, width=4):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    x = np.random.RandomState(0).normal(size=(N, width))
    return g, x, mx.nd.array(x, ctx=ctx), mx.nd.array(TYPES, ctx=ctx)


def rgcn_reference(x_rows, w_rel, loop, bias, norm=None):
    """sum over edges u->v of norm * x_u W_type + x_v W_0 + b; ``x_rows`` (N, in) input rows."""
    out = np.zeros((N, w_rel.shape[2]))
    for e, (u, v, t) in enumerate(zip(SRC, DST, TYPES)):
        out[v] += (1.0 if norm is None else norm[e]) * (x_rows[u] @ w_rel[t])
    return out + x_rows @ loop + bias


def data(p, ctx):
    return p.data(ctx).asnumpy().astype(np.float64)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("num_bases", [2, None])
def test_rgcn_basis_weights_are_combinations_of_bases(ctx, idtype, num_bases):
    g, x, xn, tn = setup(ctx, idtype)
    conv = RelGraphConv(4, 5, R, "basis", num_bases, activation=mx.nd.tanh)
    conv.initialize(ctx=ctx)
    conv.h_bias.set_data(mx.nd.array(np.linspace(-0.5, 0.5, 5), ctx=ctx))
    norm = np.random.RandomState(1).uniform(0.1, 1, size=(len(SRC), 1))
    out = conv(g, xn, tn, mx.nd.array(norm, ctx=ctx))
    bases = data(conv.weight, ctx)
    w_rel = bases if num_bases is None else np.einsum("rb,bio->rio", data(conv.w_comp, ctx), bases)
    assert (conv.w_comp is None) == (num_bases is None)
    ref = np.tanh(rgcn_reference(x, w_rel, data(conv.loop_weight, ctx), data(conv.h_bias, ctx), norm[:, 0]))
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_rgcn_block_diagonal_weights(ctx, idtype):
    g, x, xn, tn = setup(ctx, idtype, width=6)
    conv = RelGraphConv(6, 4, R, "bdd", num_bases=2, self_loop=True)
    conv.initialize(ctx=ctx)
    blocks = data(conv.weight, ctx).reshape(R, 2, 3, 2)             # (relations, blocks, in/B, out/B)
    w_rel = np.zeros((R, 6, 4))
    for r in range(R):
        for b in range(2):
            w_rel[r, 3 * b:3 * (b + 1), 2 * b:2 * (b + 1)] = blocks[r, b]
    ref = rgcn_reference(x, w_rel, data(conv.loop_weight, ctx), data(conv.h_bias, ctx))
    np.testing.assert_allclose(conv(g, xn, tn).asnumpy(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_rgcn_integer_node_ids_are_one_hot_inputs(ctx, idtype):
    g, _, _, tn = setup(ctx, idtype)
    ids = np.array([3, 0, 5, 1, 2, 4])
    conv = RelGraphConv(N, 3, R, "basis", num_bases=2, self_loop=True)
    conv.initialize(ctx=ctx)
    onehot = np.eye(N)[ids]
    out = conv(g, mx.nd.array(ids, ctx=ctx, dtype="int64"), tn)
    w_rel = np.einsum("rb,bio->rio", data(conv.w_comp, ctx), data(conv.weight, ctx))
    ref = rgcn_reference(onehot, w_rel, data(conv.loop_weight, ctx), data(conv.h_bias, ctx))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_rgcn_refusals():
    with pytest.raises(GraphError, match="multiples of num_bases"):
        RelGraphConv(5, 4, R, "bdd", num_bases=2)
    with pytest.raises(GraphError, match="regularizer"):
        RelGraphConv(4, 4, R, "diag")
    g, _, xn, _ = setup(mx.cpu(), "int64")
    conv = RelGraphConv(4, 4, R)
    conv.initialize()
    with pytest.raises(GraphError, match="one type id per edge"):
        conv(g, xn, mx.nd.zeros(3))


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def gru(cell, ctx, a, h):
    """MXNet's GRU cell: gates (reset, update, new) stacked in that order in each weight."""
    wi, wh = data(cell.i2h_weight, ctx), data(cell.h2h_weight, ctx)
    bi, bh = data(cell.i2h_bias, ctx), data(cell.h2h_bias, ctx)
    gi, gh = a @ wi.T + bi, h @ wh.T + bh
    size = h.shape[1]
    r = sigmoid(gi[:, :size] + gh[:, :size])
    z = sigmoid(gi[:, size:2 * size] + gh[:, size:2 * size])
    n = np.tanh(gi[:, 2 * size:] + r * gh[:, 2 * size:])
    return (1 - z) * n + z * h


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("n_etypes", [1, 3])
def test_gated_graph_conv_sums_typed_messages_into_a_gru(ctx, idtype, n_etypes):
    g, x, xn, _ = setup(ctx, idtype, width=3)
    types = TYPES % n_etypes
    conv = GatedGraphConv(3, 5, n_steps=3, n_etypes=n_etypes)
    conv.initialize(ctx=ctx)
    for i, lin in enumerate(conv.linears):
        lin.bias.set_data(mx.nd.array(np.full(5, 0.1 * (i + 1)), ctx=ctx))
    out = conv(g, xn, mx.nd.array(types, ctx=ctx))
    h = np.concatenate([x, np.zeros((N, 2))], axis=1)
    for _ in range(3):
        a = np.zeros((N, 5))
        for u, v, t in zip(SRC, DST, types):
            lin = conv.linears[int(t)]
            a[v] += h[u] @ data(lin.weight, ctx).T + data(lin.bias, ctx)
        h = gru(conv.gru, ctx, a, h)
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), h, rtol=1e-4, atol=1e-5)


def test_gated_graph_conv_refusals():
    with pytest.raises(GraphError, match="bias"):
        GatedGraphConv(3, 5, 2, 1, bias=False)
    with pytest.raises(GraphError, match="must not exceed"):
        GatedGraphConv(6, 5, 2, 1)


@pytest.mark.parametrize("regularizer, num_bases", [("basis", 2), ("basis", None), ("bdd", 2)])
def test_rgcn_gradients_match_central_differences(regularizer, num_bases):
    g, x, xn, tn = setup(mx.cpu(), "int64")
    conv = RelGraphConv(4, 2, R, regularizer, num_bases)
    conv.initialize()
    probe = np.random.RandomState(7).normal(size=(N, 2))
    with mx.autograd.record():
        loss = (conv(g, xn, tn) * mx.nd.array(probe)).sum()
    loss.backward()
    w = conv.weight.data()
    got, base = conv.weight.grad().asnumpy().reshape(-1), w.asnumpy().astype(np.float64)
    for i in np.random.RandomState(8).choice(base.size, 6, replace=False):
        vals = []
        for step in (1e-2, -1e-2):
            moved = base.copy().reshape(-1)
            moved[i] += step
            conv.weight.set_data(mx.nd.array(moved.reshape(base.shape)))
            vals.append(float((conv(g, xn, tn).asnumpy() * probe).sum()))
        conv.weight.set_data(mx.nd.array(base))
        assert got[i] == pytest.approx((vals[0] - vals[1]) / 2e-2, rel=1e-2, abs=1e-3)
