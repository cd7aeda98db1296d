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


def grads(layer, g, xn, wout, *extra):
    """Output, d sum(out * wout) / d x and the layer's parameter gradients (by name suffix)."""
    xn = xn.copy()
    xn.attach_grad()
    with mx.autograd.record():
        out = layer(g, xn, *extra)
        loss = (out * mx.nd.array(wout, ctx=xn.context)).sum()
    loss.backward()
    params = {k.split("_")[-1] if "dense" not in k else k: p.grad(xn.context).asnumpy()
              for k, p in layer.collect_params().items() if p.grad_req != "null"}
    return out.asnumpy(), xn.grad.asnumpy(), params


def chebyshev(lap, k):
    ts = [np.eye(len(lap)), lap]
    for _ in range(2, k):
        ts.append(2 * lap @ ts[-1] - ts[-2])
    return ts[:k]


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("out_feats", [3, 6], ids=["narrowing", "widening"])
def test_tagconv_forward_and_gradients_both_orders(ctx, idtype, out_feats):
    """A narrowing layer runs in Horner's form, a widening one on the hops: both equal the
    formula, and so do the gradients of the input and of the stacked weight."""
    g, x, xn = setup(ctx, idtype)
    conv = TAGConv(4, out_feats, k=2)
    conv.initialize(ctx=ctx)
    conv.h_bias.set_data(mx.nd.array(np.linspace(-1, 1, out_feats), ctx=ctx))
    wout = np.random.RandomState(1).normal(size=(N, out_feats))
    out, gx, gp = grads(conv, g, xn, wout)
    w, b = conv.lin.data(ctx).asnumpy().astype(np.float64), conv.h_bias.data(ctx).asnumpy()
    hops = [np.linalg.matrix_power(dense_p(), j) for j in range(3)]
    np.testing.assert_allclose(out, sum(p @ x @ w[4 * j:4 * (j + 1)] for j, p in enumerate(hops)) + b,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, sum(p.T @ wout @ w[4 * j:4 * (j + 1)].T for j, p in enumerate(hops)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gp["weight"], np.concatenate([(p @ x).T @ wout for p in hops]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gp["bias"], wout.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("out_feats", [3, 6], ids=["narrowing", "widening"])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_chebconv_forward_and_gradients_both_orders(ctx, idtype, out_feats, k):
    """Clenshaw's recurrence (narrowing) and the hop recursion (widening) give the Chebyshev
    series and its gradients with respect to the input and each weight."""
    g, x, xn = setup(ctx, idtype)
    conv = ChebConv(4, out_feats, k)
    conv.initialize(ctx=ctx)
    lam = 1.6
    wout = np.random.RandomState(2).normal(size=(N, out_feats))
    out, gx, gp = grads(conv, g, xn, wout, [lam])
    ts = chebyshev((2.0 / lam) * (np.eye(N) - dense_p()) - np.eye(N), k)
    ws = [conv.fc[j].weight.data(ctx).asnumpy().astype(np.float64) for j in range(k)]
    np.testing.assert_allclose(out, sum(t @ x @ w.T for t, w in zip(ts, ws)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gx, sum(t.T @ wout @ w for t, w in zip(ts, ws)), rtol=1e-4, atol=1e-5)
    for j, t in enumerate(ts):
        np.testing.assert_allclose(conv.fc[j].weight.grad(ctx).asnumpy(), wout.T @ (t @ x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_chebconv_lambda_max_per_graph_of_a_batch(ctx, idtype):
    """A different lambda_max per graph (an NDArray) rescales each graph's Laplacian apart."""
    ring = dgl.to_bidirected(dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0])))
    g = dgl.batch([dgl.graph((SRC, DST), num_nodes=N), ring]).astype(idtype).to(ctx)
    n = N + 4
    a = np.zeros((n, n))
    src, dst = (t.asnumpy() for t in g.edges())
    np.add.at(a, (dst, src), 1.0)
    d = np.maximum(a.sum(1), 1) ** -0.5
    p = d[:, None] * a * d[None, :]
    lam = np.array([1.5] * N + [2.0] * 4)
    lap = (2.0 / lam)[:, None] * (np.eye(n) - p) - np.eye(n)
    x = np.random.RandomState(3).normal(size=(n, 4))
    for out_feats in (3, 6):
        conv = ChebConv(4, out_feats, 3)
        conv.initialize(ctx=ctx)
        out = conv(g, mx.nd.array(x, ctx=ctx), mx.nd.array([1.5, 2.0], ctx=ctx)).asnumpy()
        ts = chebyshev(lap, 3)
        ref = sum(t @ x @ conv.fc[j].weight.data(ctx).asnumpy().T for j, t in enumerate(ts))
        np.testing.assert_allclose(out, ref + conv.bias.data(ctx).asnumpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_sgconv_and_appnp_input_gradients(ctx, idtype):
    g, x, xn = setup(ctx, idtype)
    p = dense_p()
    sg = SGConv(4, 3, k=2)
    sg.initialize(ctx=ctx)
    wout = np.random.RandomState(4).normal(size=(N, 3))
    sg.fc.bias.set_data(mx.nd.array([0.3, -0.1, 0.2], ctx=ctx))
    out, gx, _ = grads(sg, g, xn, wout)            # uncached and narrowing: P^2 (x W) + b
    w, b = sg.fc.weight.data(ctx).asnumpy(), sg.fc.bias.data(ctx).asnumpy()
    np.testing.assert_allclose(out, p @ p @ x @ w.T + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, (p @ p).T @ wout @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sg.fc.bias.grad(ctx).asnumpy(), wout.sum(0), rtol=1e-5, atol=1e-5)
    ap = APPNPConv(k=3, alpha=0.2)
    ap.initialize(ctx=ctx)
    wout = np.random.RandomState(5).normal(size=(N, 4))
    out, gx, _ = grads(ap, g, xn, wout)
    m = np.eye(N)
    for _ in range(3):
        m = 0.8 * p @ m + 0.2 * np.eye(N)
    np.testing.assert_allclose(out, m @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, m.T @ wout, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k", [2, 3])
def test_propagation_without_the_compiled_kernels_matches(monkeypatch, k):
    """The broadcast + built-in path (no compiled kernels, or other dtypes/devices) gives the
    same outputs as the scaled-sum path."""
    from gluon_suite.graph import native
    g, x, xn = setup(mx.cpu(0), "int64")
    layers = [TAGConv(4, 3, k=k), TAGConv(4, 6, k=k), ChebConv(4, 3, k), ChebConv(4, 6, k), SGConv(4, 3, k=k),
              APPNPConv(k, 0.3)]
    for layer in layers:
        layer.initialize()
    extra = lambda layer: ([1.7],) if isinstance(layer, ChebConv) else ()    # noqa: E731
    fast = [layer(g, xn, *extra(layer)).asnumpy() for layer in layers]
    monkeypatch.setattr(native, "usable", lambda *a: False)
    for layer, want in zip(layers, fast):
        np.testing.assert_allclose(layer(g, xn, *extra(layer)).asnumpy(), want, rtol=1e-5, atol=1e-6)
