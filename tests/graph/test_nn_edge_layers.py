"""AGNNConv, EdgeConv, GMMConv and NNConv against float64 NumPy loops over the edges that follow
each layer's formula, on int64 and int32 graphs on two contexts (with parallel edges and a
self-loop), on bipartite graphs with (source, destination) feature pairs, and the zero-in-degree
guard."""
import mxnet as mx
import numpy as np
import pytest
from mxnet.gluon import nn

import gluon_suite.graph as dgl
from gluon_suite.graph import GraphError
from gluon_suite.graph.nn import AGNNConv, EdgeConv, GMMConv, NNConv

SRC = np.array([0, 0, 1, 2, 2, 3, 5, 1, 4, 3])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4, 0, 5])
N = 6
CASES = [(mx.cpu(0), "int64"), (mx.cpu(1), "int32")]
IDS = ["cpu0-int64", "cpu1-int32"]


def setup(ctx, idtype, width=4, seed=0):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    x = np.random.RandomState(seed).normal(size=(N, width))
    return g, x, mx.nd.array(x, ctx=ctx)


def aggregate(msgs, dst, n, op):
    """Per destination, sum / mean / max of its edges' messages (0 with no edge)."""
    out = np.zeros((n,) + msgs.shape[1:])
    for v in range(n):
        m = msgs[dst == v]
        if len(m):
            out[v] = {"sum": m.sum(0), "mean": m.mean(0), "max": m.max(0)}[op]
    return out


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_agnnconv_softmax_of_scaled_cosines(ctx, idtype):
    g, x, xn = setup(ctx, idtype)
    conv = AGNNConv(init_beta=0.7)
    conv.initialize(ctx=ctx)
    out = conv(g, xn)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    logits = 0.7 * (unit[SRC] * unit[DST]).sum(1)
    ref = np.zeros_like(x)
    for v in range(N):
        e = np.flatnonzero(DST == v)
        p = np.exp(logits[e] - logits[e].max())
        ref[v] = (p / p.sum()) @ x[SRC[e]]
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    with mx.autograd.record():                      # beta is learned
        loss = (conv(g, xn) * mx.nd.array(np.arange(N * 4).reshape(N, 4), ctx=ctx)).sum()
    loss.backward()
    assert abs(float(conv.beta.grad(ctx).asscalar())) > 0


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_agnnconv_on_a_bipartite_graph_compares_sources_with_destinations(ctx, idtype):
    u, v = np.array([0, 1, 2, 3, 3]), np.array([0, 0, 1, 1, 2])
    g = dgl.heterograph({("_U", "_E", "_V"): (u, v)}, idtype=idtype, device=ctx)
    rs = np.random.RandomState(1)
    xs, xd = rs.normal(size=(4, 3)), rs.normal(size=(3, 3))
    conv = AGNNConv(init_beta=2.0, learn_beta=False)
    conv.initialize(ctx=ctx)
    out = conv(g, (mx.nd.array(xs, ctx=ctx), mx.nd.array(xd, ctx=ctx)))
    cos = (xs[u] * xd[v]).sum(1) / np.linalg.norm(xs[u], axis=1) / np.linalg.norm(xd[v], axis=1)
    ref = np.zeros((3, 3))
    for d in range(3):
        e = np.flatnonzero(v == d)
        p = np.exp(2.0 * cos[e])
        ref[d] = (p / p.sum()) @ xs[u[e]]
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)


def edgeconv_values(conv, ctx, xs, xd, u, v):
    tw, tb = conv.theta.weight.data(ctx).asnumpy(), conv.theta.bias.data(ctx).asnumpy()
    pw, pb = conv.phi.weight.data(ctx).asnumpy(), conv.phi.bias.data(ctx).asnumpy()
    return (xs[u] - xd[v]) @ tw.T + tb + xd[v] @ pw.T + pb


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_edgeconv_max_of_theta_difference_plus_phi(ctx, idtype):
    g, x, xn = setup(ctx, idtype)
    conv = EdgeConv(4, 3)
    conv.initialize(ctx=ctx)
    for d in (conv.theta, conv.phi):
        d.bias.set_data(mx.nd.array(np.random.RandomState(2).normal(size=3), ctx=ctx))
    out = conv(g, xn)
    ref = aggregate(edgeconv_values(conv, ctx, x, x, SRC, DST), DST, N, "max")
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_edgeconv_batch_norm_normalises_edge_values_before_the_max(ctx, idtype):
    g, x, xn = setup(ctx, idtype)
    conv = EdgeConv(4, 3, batch_norm=True)
    conv.initialize(ctx=ctx)
    with mx.autograd.record():                      # training: batch statistics over the edges
        out = conv(g, xn)
    e = edgeconv_values(conv, ctx, x, x, SRC, DST)
    e = (e - e.mean(0)) / np.sqrt(e.var(0) + 1e-5)
    np.testing.assert_allclose(out.asnumpy(), aggregate(e, DST, N, "max"), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_edgeconv_pairs_and_nodes_without_in_edges(ctx, idtype):
    u, v = np.array([0, 1, 2, 3, 3]), np.array([0, 0, 1, 1, 3])     # destination 2 has no edge
    g = dgl.heterograph({("_U", "_E", "_V"): (u, v)}, num_nodes_dict={"_U": 4, "_V": 4}, idtype=idtype, device=ctx)
    rs = np.random.RandomState(3)
    xs, xd = rs.normal(size=(4, 5)), rs.normal(size=(4, 5))
    pair = (mx.nd.array(xs, ctx=ctx), mx.nd.array(xd, ctx=ctx))
    conv = EdgeConv(5, 2)
    conv.initialize(ctx=ctx)
    with pytest.raises(GraphError, match="allow_zero_in_degree"):
        conv(g, pair)
    conv.set_allow_zero_in_degree(True)
    ref = aggregate(edgeconv_values(conv, ctx, xs, xd, u, v), v, 4, "max")
    np.testing.assert_allclose(conv(g, pair).asnumpy(), ref, rtol=1e-5, atol=1e-5)
    assert np.all(conv(g, pair).asnumpy()[2] == 0)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("agg", ["sum", "mean", "max"])
def test_gmmconv_gaussian_kernels_of_pseudo_coordinates(ctx, idtype, agg):
    g, x, xn = setup(ctx, idtype)
    k, dim, out_feats = 3, 2, 5
    pseudo = np.random.RandomState(4).uniform(-1, 1, size=(len(SRC), dim))
    conv = GMMConv(4, out_feats, dim, k, aggregator_type=agg, residual=True)
    conv.initialize(ctx=ctx)
    conv.inv_sigma.set_data(mx.nd.array(np.random.RandomState(5).uniform(0.5, 2, size=(k, dim)), ctx=ctx))
    conv.bias.set_data(mx.nd.array(np.linspace(-1, 1, out_feats), ctx=ctx))
    out = conv(g, xn, mx.nd.array(pseudo, ctx=ctx))
    mu, s = conv.mu.data(ctx).asnumpy(), conv.inv_sigma.data(ctx).asnumpy()
    w_fc = conv.fc.weight.data(ctx).asnumpy().reshape(k, out_feats, 4)
    ref = np.zeros((N, out_feats))
    for j in range(k):
        w = np.exp(-0.5 * (((pseudo - mu[j]) * s[j]) ** 2).sum(1))
        ref += aggregate(w[:, None] * (x[SRC] @ w_fc[j].T), DST, N, agg)
    ref += x @ conv.res_fc.weight.data(ctx).asnumpy().T + conv.bias.data(ctx).asnumpy()
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("agg", ["sum", "mean", "max"])
def test_nnconv_edge_network_weights(ctx, idtype, agg):
    g, x, xn = setup(ctx, idtype, width=3)
    edim, out_feats = 2, 4
    ef = np.random.RandomState(6).normal(size=(len(SRC), edim))
    conv = NNConv(3, out_feats, nn.Dense(3 * out_feats, in_units=edim), agg, residual=True)
    conv.initialize(ctx=ctx)
    conv.bias.set_data(mx.nd.array(np.linspace(0, 1, out_feats), ctx=ctx))
    out = conv(g, xn, mx.nd.array(ef, ctx=ctx))
    wd, bd = conv.edge_nn.weight.data(ctx).asnumpy(), conv.edge_nn.bias.data(ctx).asnumpy()
    w_e = (ef @ wd.T + bd).reshape(-1, 3, out_feats)
    msgs = x[SRC][:, :, None] * w_e                                    # (E, in, out)
    ref = aggregate(msgs, DST, N, agg).sum(1)
    ref += x @ conv.res_fc.weight.data(ctx).asnumpy().T + conv.bias.data(ctx).asnumpy()
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_layers_refuse_misshaped_edge_inputs():
    g, _, xn = setup(mx.cpu(), "int64")
    conv = GMMConv(4, 2, 2, 3)
    conv.initialize()
    with pytest.raises(GraphError, match="one row per edge"):
        conv(g, xn, mx.nd.ones((3, 2)))
    with pytest.raises(GraphError, match="aggregator_type"):
        NNConv(4, 2, nn.Dense(8), "lstm")


def numeric_grad(f, a, h=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("agg", ["sum", "max"])
def test_nnconv_and_gmmconv_gradients_match_the_references(ctx, idtype, agg):
    """Gradients through the fused u_mul_e (features broadcast against per-edge matrices, and
    per-edge kernel weights) against central differences of the float64 formulas."""
    g, x, xn = setup(ctx, idtype, width=3)
    rs = np.random.RandomState(9)
    ef, pseudo, probe = rs.normal(size=(len(SRC), 2)), rs.uniform(-1, 1, size=(len(SRC), 2)), rs.normal(size=(N, 2))
    nnc = NNConv(3, 2, nn.Dense(6, in_units=2), agg, bias=False)
    gmm = GMMConv(3, 2, 2, 3, aggregator_type=agg, bias=False)
    for layer in (nnc, gmm):
        layer.initialize(ctx=ctx)
    wd, bd = nnc.edge_nn.weight.data(ctx).asnumpy(), nnc.edge_nn.bias.data(ctx).asnumpy()
    mu, s = gmm.mu.data(ctx).asnumpy(), gmm.inv_sigma.data(ctx).asnumpy()
    w_fc = gmm.fc.weight.data(ctx).asnumpy().reshape(3, 2, 3)

    def nn_ref(xx, ee):
        w_e = (ee @ wd.T + bd).reshape(-1, 3, 2)
        return (aggregate(xx[SRC][:, :, None] * w_e, DST, N, agg).sum(1) * probe).sum()

    def gmm_ref(xx, pp):
        out = sum(aggregate(np.exp(-0.5 * (((pp - mu[j]) * s[j]) ** 2).sum(1))[:, None] * (xx[SRC] @ w_fc[j].T),
                            DST, N, agg) for j in range(3))
        return (out * probe).sum()

    for layer, ref, edge_in in ((nnc, nn_ref, ef), (gmm, gmm_ref, pseudo)):
        xv, ev = mx.nd.array(x, ctx=ctx), mx.nd.array(edge_in, ctx=ctx)
        xv.attach_grad()
        ev.attach_grad()
        with mx.autograd.record():
            loss = (layer(g, xv, ev) * mx.nd.array(probe, ctx=ctx)).sum()
        loss.backward()
        np.testing.assert_allclose(xv.grad.asnumpy(), numeric_grad(lambda a: ref(a, edge_in), x), rtol=1e-3,
                                   atol=1e-4)
        np.testing.assert_allclose(ev.grad.asnumpy(), numeric_grad(lambda a: ref(x, a), edge_in), rtol=1e-3,
                                   atol=1e-4)


def agnn_reference(x, beta):
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    logits = beta * (unit[SRC] * unit[DST]).sum(1)
    out = np.zeros_like(x)
    for v in range(N):
        e = np.flatnonzero(DST == v)
        p = np.exp(logits[e] - logits[e].max())
        out[v] = (p / p.sum()) @ x[SRC[e]]
    return out


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_agnnconv_gradients_of_input_and_beta(ctx, idtype):
    """Gradients through the row normalisation, the cosines, the learned beta and the softmax
    against central differences of the float64 formula."""
    g, x, xn = setup(ctx, idtype)
    conv = AGNNConv(init_beta=0.7)
    conv.initialize(ctx=ctx)
    w = np.random.RandomState(7).normal(size=x.shape)
    xg = xn.copy()
    xg.attach_grad()
    with mx.autograd.record():
        loss = (conv(g, xg) * mx.nd.array(w, ctx=ctx)).sum()
    loss.backward()
    h = 1e-6
    want_x = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += h
        down[j] -= h
        want_x[j] = ((agnn_reference(up, 0.7) - agnn_reference(down, 0.7)) * w).sum() / (2 * h)
    want_beta = ((agnn_reference(x, 0.7 + h) - agnn_reference(x, 0.7 - h)) * w).sum() / (2 * h)
    np.testing.assert_allclose(xg.grad.asnumpy(), want_x, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(conv.beta.grad(ctx).asnumpy(), [want_beta], rtol=1e-3, atol=1e-4)
