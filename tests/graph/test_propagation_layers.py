"""SGConv, TAGConv, APPNPConv and ChebConv against float64 NumPy versions of their formulas with
the dense normalised adjacency P = D^-1/2 A D^-1/2 (D: in-degrees clamped at 1), on two contexts
and both id types."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph.nn import APPNPConv, ChebConv, SGConv, TAGConv

SRC = np.array([0, 0, 1, 2, 2, 3, 5, 1, 4, 3])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4, 0, 5])
N = 6
CASES = [(mx.cpu(0), "int64"), (mx.cpu(1), "int32")]
IDS = ["cpu0-int64", "cpu1-int32"]


def dense_p():
    a = np.zeros((N, N))
    np.add.at(a, (DST, SRC), 1.0)
    d = np.maximum(a.sum(1), 1) ** -0.5
    return d[:, None] * a * d[None, :]


def setup(ctx, idtype, width=4):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    x = np.random.RandomState(0).normal(size=(N, width))
    return g, x, mx.nd.array(x, ctx=ctx)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("k", [1, 3])
def test_sgconv_is_a_dense_layer_on_p_to_the_k(ctx, idtype, k):
    g, x, xn = setup(ctx, idtype)
    conv = SGConv(4, 3, k=k, cached=True)
    conv.initialize(ctx=ctx)
    out = conv(g, xn)
    w, b = conv.fc.weight.data(ctx).asnumpy(), conv.fc.bias.data(ctx).asnumpy()
    ref = np.linalg.matrix_power(dense_p(), k) @ x @ w.T + b
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    # cached: the propagated features are reused even for other inputs
    np.testing.assert_allclose(conv(g, mx.nd.zeros_like(xn)).asnumpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_tagconv_sums_one_weight_per_hop(ctx, idtype):
    g, x, xn = setup(ctx, idtype)
    conv = TAGConv(4, 3, k=2, activation=mx.nd.relu)
    conv.initialize(ctx=ctx)
    conv.h_bias.set_data(mx.nd.array([0.1, -0.2, 0.3], ctx=ctx))
    out = conv(g, xn)
    w, b = conv.lin.data(ctx).asnumpy(), conv.h_bias.data(ctx).asnumpy()
    p = dense_p()
    ref = sum(np.linalg.matrix_power(p, j) @ x @ w[4 * j:4 * (j + 1)] for j in range(3)) + b
    np.testing.assert_allclose(out.asnumpy(), np.maximum(ref, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_appnp_iterates_personalised_pagerank(ctx, idtype):
    g, x, xn = setup(ctx, idtype)
    conv = APPNPConv(k=4, alpha=0.15, edge_drop=0.5)
    conv.initialize(ctx=ctx)
    out = conv(g, xn)                                   # not training: no edge dropout
    h, p = x, dense_p()
    for _ in range(4):
        h = 0.85 * p @ h + 0.15 * x
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), h, rtol=1e-5, atol=1e-5)
    with mx.autograd.record():                          # training: some edges dropped, output changes
        dropped = conv(g, xn)
    assert not np.allclose(dropped.asnumpy(), h)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_chebconv_chebyshev_recursion(ctx, idtype, k):
    g, x, xn = setup(ctx, idtype)
    conv = ChebConv(4, 3, k)
    conv.initialize(ctx=ctx)
    conv.bias.set_data(mx.nd.array([0.5, 0.0, -0.5], ctx=ctx))
    lam = 1.7
    out = conv(g, xn, [lam])
    lap = (2.0 / lam) * (np.eye(N) - dense_p()) - np.eye(N)
    ts = [x, lap @ x]
    for _ in range(2, k):
        ts.append(2 * lap @ ts[-1] - ts[-2])
    ref = sum(ts[j] @ conv.fc[j].weight.data(ctx).asnumpy().T for j in range(k)) + conv.bias.data(ctx).asnumpy()
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_laplacian_lambda_max_per_graph_of_a_batch():
    g = dgl.graph((SRC, DST), num_nodes=N)
    ring = dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0]))
    ring = dgl.to_bidirected(ring)
    lams = dgl.laplacian_lambda_max(dgl.batch([g, ring]))
    lap = np.eye(N) - dense_p()
    vals = np.linalg.eigvals(lap)
    assert lams[0] == pytest.approx(vals[np.argmax(np.abs(vals))].real, rel=1e-6)
    assert lams[1] == pytest.approx(2.0, rel=1e-6)        # an even cycle is bipartite: lambda_max = 2
    conv = ChebConv(4, 2, 3)
    conv.initialize()
    x = mx.nd.ones((N, 4))
    np.testing.assert_allclose(conv(g, x).asnumpy(), conv(g, x, [lams[0]]).asnumpy(), rtol=1e-5)
