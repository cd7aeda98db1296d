"""DenseGraphConv, DenseSAGEConv and DenseChebConv against float64 NumPy versions of their
formulas, with the adjacency (rows destinations) taken from int64 and int32 graphs on two
contexts (an MXNet CSR matrix, as ``g.adj(transpose=True)`` gives it) or given dense and weighted."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import GraphError
from gluon_suite.graph.nn import DenseChebConv, DenseGraphConv, DenseSAGEConv, GraphConv

SRC = np.array([0, 0, 1, 2, 2, 3, 5, 1, 4])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4, 0])          # node 5 has no incoming edge
N = 6
CASES = [(mx.cpu(0), "int64"), (mx.cpu(1), "int32")]
IDS = ["cpu0-int64", "cpu1-int32"]


def setup(ctx, idtype, width=4):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    a = np.zeros((N, N))
    np.add.at(a, (DST, SRC), 1.0)
    x = np.random.RandomState(0).normal(size=(N, width))
    return g, a, x, mx.nd.array(x, ctx=ctx)


def data(p, ctx):
    return p.data(ctx).asnumpy().astype(np.float64)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("norm", ["both", "right", "none"])
@pytest.mark.parametrize("in_feats, out_feats", [(4, 3), (3, 5)])
def test_dense_graph_conv_normalised_product(ctx, idtype, norm, in_feats, out_feats):
    g, a, x, xn = setup(ctx, idtype, in_feats)
    conv = DenseGraphConv(in_feats, out_feats, norm=norm, activation=mx.nd.relu)
    conv.initialize(ctx=ctx)
    conv.bias.set_data(mx.nd.array(np.linspace(-1, 1, out_feats), ctx=ctx))
    out = conv(g.adj(transpose=True), xn)
    d_src, d_dst = np.maximum(a.sum(0), 1), np.maximum(a.sum(1), 1)
    p = {"both": d_dst[:, None] ** -0.5 * a * d_src[None, :] ** -0.5, "right": a / d_dst[:, None], "none": a}[norm]
    ref = np.maximum(p @ x @ data(conv.weight, ctx) + data(conv.bias, ctx), 0)
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_dense_graph_conv_equals_graph_conv_on_the_same_graph(ctx, idtype):
    g, a, x, xn = setup(ctx, idtype)
    dense, sparse = DenseGraphConv(4, 3), GraphConv(4, 3, allow_zero_in_degree=True)
    dense.initialize(ctx=ctx)
    sparse.initialize(ctx=ctx)
    sparse.weight.set_data(dense.weight.data(ctx))
    np.testing.assert_allclose(dense(g.adj(transpose=True), xn).asnumpy(), sparse(g, xn).asnumpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_dense_sage_conv_gcn_aggregator(ctx, idtype):
    g, a, x, xn = setup(ctx, idtype)
    conv = DenseSAGEConv(4, 3, norm=mx.nd.tanh, activation=mx.nd.relu)
    conv.initialize(ctx=ctx)
    conv.fc.bias.set_data(mx.nd.array([0.3, -0.3, 0.1], ctx=ctx))
    out = conv(g.adj(transpose=True), xn)
    h = (a @ x + x) / (a.sum(1, keepdims=True) + 1)
    ref = np.tanh(np.maximum(h @ data(conv.fc.weight, ctx).T + data(conv.fc.bias, ctx), 0))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)


def test_dense_sage_conv_bipartite_pair_with_weighted_adjacency():
    rs = np.random.RandomState(1)
    a = rs.uniform(0, 1, size=(3, 5)) * (rs.uniform(size=(3, 5)) > 0.4)
    xs, xd = rs.normal(size=(5, 4)), rs.normal(size=(3, 4))
    conv = DenseSAGEConv(4, 2, bias=False)
    conv.initialize()
    out = conv(mx.nd.array(a), (mx.nd.array(xs), mx.nd.array(xd)))
    ref = ((a @ xs + xd) / (a.sum(1, keepdims=True) + 1)) @ data(conv.fc.weight, mx.cpu()).T
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)


def cheb_reference(conv, ctx, a, x, lam):
    d = np.maximum(a.sum(1), 1) ** -0.5
    lap = np.eye(len(a)) - d[:, None] * a * d[None, :]
    lap_hat = 2 * lap / lam - np.eye(len(a))
    polys = [np.eye(len(a)), lap_hat]
    while len(polys) < conv._k:
        polys.append(2 * lap_hat @ polys[-1] - polys[-2])
    out = sum(polys[j] @ x @ data(conv.fc[j].weight, ctx).T for j in range(conv._k))
    return out + data(conv.bias, ctx), lap


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_dense_cheb_conv_chebyshev_polynomials(ctx, idtype, k):
    g, _, x, xn = setup(ctx, idtype)
    sym = dgl.to_bidirected(g)                     # symmetric, for the eigensolver
    a = sym.adj(transpose=True).asnumpy().astype(np.float64)
    conv = DenseChebConv(4, 3, k)
    conv.initialize(ctx=ctx)
    conv.bias.set_data(mx.nd.array([0.5, 0.0, -0.5], ctx=ctx))
    _, lap = cheb_reference(conv, ctx, a, x, 1.0)
    lam = np.linalg.eigvalsh(lap).max()
    ref, _ = cheb_reference(conv, ctx, a, x, lam)
    out = conv(sym.adj(transpose=True), xn)        # lambda_max from the eigensolver
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    given, _ = cheb_reference(conv, ctx, a, x, 1.5)
    np.testing.assert_allclose(conv(mx.nd.array(a, ctx=ctx), xn, 1.5).asnumpy(), given, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(conv(mx.nd.array(a, ctx=ctx), xn, [1.5]).asnumpy(), given, rtol=1e-4, atol=1e-4)


def test_dense_layers_refuse_mismatched_shapes():
    conv = DenseGraphConv(4, 2, norm="both")
    conv.initialize()
    with pytest.raises(GraphError, match="columns are the feature rows"):
        conv(mx.nd.ones((3, 5)), mx.nd.ones((4, 4)))
    with pytest.raises(GraphError, match="norm"):
        DenseGraphConv(4, 2, norm="left")
