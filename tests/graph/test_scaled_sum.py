"""GraphConv's fused aggregation: the compiled scaled-sum operator (degree scales on both sides and
a bias inside the neighbour sum) against a float64 per-edge loop, forward and gradients (central
differences of the reference), on a graph with self-loops, parallel edges, a node without incoming
edges and an isolated node, int32 and int64 structure, two CPU contexts; and GraphConv itself, on
the compiled and on the Python kernels, against float64 NumPy formulas for every normalisation;
the self term (GINConv's (1 + eps) h_v inside the operator) and GINConv on it."""
import zlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

import gluon_suite.graph as dgl
from gluon_suite.graph import native
from gluon_suite.graph.layout import topology
from gluon_suite.graph.nn import GraphConv, SAGEConv

from .test_kernels import CTXS, IDTYPES, numeric_grads, run, small_graph

H, F = 2, 3
FLAGS = [(lft, rgt, b) for lft in (False, True) for rgt in (False, True) for b in (None, (F,), (H * F,))]


def ref_scaled_sum(src, dst, n_dst, x, left, right, bias):
    """out[v] = right[v] * sum over edges u->v of left[u] * x[u] + bias (bias repeated along the row)."""
    out = np.zeros((n_dst,) + x.shape[1:])
    for u, v in zip(src, dst):
        out[v] += (left[u] if left is not None else 1.0) * x[u]
    if right is not None:
        out *= right.reshape((-1,) + (1,) * (x.ndim - 1))
    if bias is not None:
        out = out + np.tile(bias, out[0].size // bias.size).reshape(out.shape[1:])
    return out


def test_scaled_sum_is_loaded():
    assert native.LOADED and hasattr(mx.nd, "gs_scaled_sum"), native.REASON


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("use_left, use_right, bshape", FLAGS, ids=lambda c: str(c).replace(" ", ""))
def test_scaled_sum_forward_and_gradients(use_left, use_right, bshape, idtype, ctx):
    src, dst, n = small_graph()
    rs = np.random.RandomState(zlib.crc32(repr((use_left, use_right, bshape)).encode()))
    x = rs.normal(size=(n, H, F))
    left = rs.uniform(0.2, 2.0, size=n) if use_left else None
    right = rs.uniform(0.2, 2.0, size=n) if use_right else None
    bias = rs.normal(size=bshape) if bshape else None
    S = topology(src, dst, n, n).structure(ctx, idtype)
    expect = ref_scaled_sum(src, dst, n, x, left, right, bias)
    assert (expect[6] == (np.tile(bias, H * F // bias.size).reshape(H, F) if bias is not None else 0)).all()
    w = rs.normal(size=expect.shape)
    out, grads = run(lambda *a: native.scaled_sum(S, *a), [x, left, right, bias], ctx, w)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
    want = numeric_grads(lambda *a: ref_scaled_sum(src, dst, n, *a), [x, left, right, bias], w)
    for got, ref in zip(grads, want):
        if ref is not None:
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
def test_scaled_sum_on_a_bipartite_structure_and_without_edges(idtype):
    ctx = mx.cpu()
    src, dst = np.array([0, 2, 2, 1, 2]), np.array([1, 1, 0, 1, 1])       # 2->1 twice
    rs = np.random.RandomState(1)
    x, left, right, bias = rs.normal(size=(3, 4)), rs.rand(3) + 0.5, rs.rand(2) + 0.5, rs.normal(size=4)
    S = topology(src, dst, 3, 2).structure(ctx, idtype)
    w = rs.normal(size=(2, 4))
    out, grads = run(lambda *a: native.scaled_sum(S, *a), [x, left, right, bias], ctx, w)
    np.testing.assert_allclose(out, ref_scaled_sum(src, dst, 2, x, left, right, bias), rtol=1e-5, atol=1e-6)
    want = numeric_grads(lambda *a: ref_scaled_sum(src, dst, 2, *a), [x, left, right, bias], w)
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    E0 = topology(np.array([], np.int64), np.array([], np.int64), 4, 4).structure(ctx, idtype)
    out, (gx, gl, gr, gb) = run(lambda *a: native.scaled_sum(E0, *a), [x[:1].repeat(4, 0), left[:1].repeat(4),
                                                                      left[:1].repeat(4), bias], ctx, np.ones((4, 4)))
    np.testing.assert_allclose(out, np.tile(bias, (4, 1)), rtol=1e-6)
    assert (gx == 0).all() and (gl == 0).all() and (gr == 0).all()
    np.testing.assert_allclose(gb, np.full(4, 4.0))


def test_scaled_sum_refuses_scales_of_the_wrong_length():
    src, dst, n = small_graph()
    S = topology(src, dst, n, n).structure(mx.cpu(), np.int32)
    x = mx.nd.ones((n, 4))
    with pytest.raises(mx.base.MXNetError, match="left scale"):
        native.scaled_sum(S, x, left=mx.nd.ones((n - 1,))).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="bias length"):
        native.scaled_sum(S, x, bias=mx.nd.ones((3,))).wait_to_read()


# ---- GraphConv on the fused operator -----------------------------------------------------------
SRC = np.array([0, 0, 1, 2, 2, 3, 3, 0, 5, 5, 1, 3, 2])     # parallel 0->1, self-loops on 2 and 3
DST = np.array([1, 1, 2, 2, 3, 3, 4, 4, 0, 4, 0, 1, 4])     # 5 and 6 receive nothing, 6 sends nothing
N = 7


def ref_graphconv(x, W, b, norm, src=SRC, dst=DST, n_src=N, n_dst=N):
    """act-free GraphConv in float64: diag(r) A diag(l) x W + b, degrees clipped at 1."""
    a = np.zeros((n_dst, n_src))
    np.add.at(a, (dst, src), 1.0)
    power = -0.5 if norm == "both" else -1.0
    dout = np.maximum(a.sum(0), 1) ** power if norm in ("both", "left") else np.ones(n_src)
    din = np.maximum(a.sum(1), 1) ** power if norm in ("both", "right") else np.ones(n_dst)
    h = np.einsum("vu,u...->v...", a, dout.reshape((-1,) + (1,) * (x.ndim - 1)) * x)
    h = din.reshape((-1,) + (1,) * (x.ndim - 1)) * h
    if W is not None:
        h = h @ W
    return h + b if b is not None else h


def graphconv_grads(x, W, b, norm, w, **kw):
    """Reference gradients of sum(GraphConv(x) * w) for x, W, b: the layer is linear in each."""
    return numeric_grads(lambda *a: ref_graphconv(*a, norm, **kw), [x, W, b], w, h=1e-3)


@pytest.fixture(params=["compiled", "python"])
def kernels(request, monkeypatch):
    """Run a test on the compiled kernels (and check that the fused operator ran) or on the
    Python ones."""
    calls = []
    if request.param == "python":
        monkeypatch.setattr(native, "usable", lambda *a: False)
    else:
        real = native.scaled_sum
        monkeypatch.setattr(native, "scaled_sum", lambda *a, **k: calls.append(1) or real(*a, **k))
    yield request.param, calls
    if request.param == "compiled":
        assert calls, "GraphConv did not run the fused scaled-sum operator"


@pytest.mark.parametrize("ctx, idtype", [(c, t) for c in CTXS for t in ("int32", "int64")],
                         ids=lambda c: str(c))
@pytest.mark.parametrize("norm", ["both", "left", "right", "none"])
@pytest.mark.parametrize("in_feats, out_feats, bias", [(3, 5, True), (5, 3, True), (5, 3, False), (4, 4, True)])
def test_graphconv_matches_the_formula(in_feats, out_feats, bias, norm, ctx, idtype, kernels):
    rs = np.random.RandomState(zlib.crc32(repr((in_feats, out_feats, bias, norm)).encode()))
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    layer = GraphConv(in_feats, out_feats, norm=norm, bias=bias, allow_zero_in_degree=True)
    layer.initialize(ctx=ctx)
    W = rs.normal(size=(in_feats, out_feats))
    layer.weight.set_data(mx.nd.array(W, ctx=ctx))
    b = rs.normal(size=out_feats) if bias else None
    if bias:
        layer.bias.set_data(mx.nd.array(b, ctx=ctx))
    x = rs.normal(size=(N, in_feats))
    X = mx.nd.array(x, ctx=ctx)
    X.attach_grad()
    w = rs.normal(size=(N, out_feats))
    with autograd.record():
        out = layer(g, X)
        loss = (out * mx.nd.array(w, ctx=ctx)).sum()
    loss.backward()
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref_graphconv(x, W, b, norm), rtol=1e-5, atol=1e-5)
    gx, gW, gb = graphconv_grads(x, W, b, norm, w)
    np.testing.assert_allclose(X.grad.asnumpy(), gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(layer.weight.grad(ctx).asnumpy(), gW, rtol=1e-4, atol=1e-4)
    if bias:
        np.testing.assert_allclose(layer.bias.grad(ctx).asnumpy(), gb, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("norm", ["both", "right"])
def test_graphconv_multi_dimensional_features_external_weight_and_no_weight(norm, kernels):
    rs = np.random.RandomState(7)
    g = dgl.graph((SRC, DST), num_nodes=N).add_self_loop()
    src, dst = (a.asnumpy() for a in g.edges())
    x = rs.normal(size=(N, H, 4))
    for layer, W in ((GraphConv(4, 4, norm=norm, weight=False), None),
                     (GraphConv(4, 3, norm=norm, weight=False), rs.normal(size=(4, 3)))):
        layer.initialize()
        b = rs.normal(size=layer._out_feats)
        layer.bias.set_data(mx.nd.array(b))
        X = mx.nd.array(x)
        X.attach_grad()
        w = rs.normal(size=(N, H, layer._out_feats))
        with autograd.record():
            out = layer(g, X, mx.nd.array(W)) if W is not None else layer(g, X)
            loss = (out * mx.nd.array(w)).sum()
        loss.backward()
        want = ref_graphconv(x, W, b, norm, src=src, dst=dst)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5)
        gx, _, gb = graphconv_grads(x, W, b, norm, w, src=src, dst=dst)
        np.testing.assert_allclose(X.grad.asnumpy(), gx, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(layer.bias.grad().asnumpy(), gb, rtol=1e-4, atol=1e-4)


def test_graphconv_on_a_block(kernels):
    """A block with 4 sources and 2 destinations: the output has the destinations' rows, the
    left scale uses the sources' out-degrees and the right one the destinations' in-degrees."""
    src, dst = np.array([0, 1, 2, 3, 3, 1]), np.array([0, 0, 1, 1, 0, 1])
    blk = dgl.create_block((src, dst), num_src_nodes=4, num_dst_nodes=2)
    rs = np.random.RandomState(3)
    x, W, b = rs.normal(size=(4, 5)), rs.normal(size=(5, 2)), rs.normal(size=2)
    layer = GraphConv(5, 2)
    layer.initialize()
    layer.weight.set_data(mx.nd.array(W))
    layer.bias.set_data(mx.nd.array(b))
    out = layer(blk, mx.nd.array(x))
    np.testing.assert_allclose(out.asnumpy(), ref_graphconv(x, W, b, "both", src=src, dst=dst, n_src=4, n_dst=2),
                               rtol=1e-5, atol=1e-5)


def test_constant_scales_get_zero_gradients_and_leave_the_others_alone():
    src, dst, n = small_graph()
    rs = np.random.RandomState(11)
    x, left, right, bias = rs.normal(size=(n, 4)), rs.rand(n) + 0.5, rs.rand(n) + 0.5, rs.normal(size=4)
    S = topology(src, dst, n, n).structure(mx.cpu(), np.int32)
    w = rs.normal(size=(n, 4))
    out, (gx, gl, gr, gb) = run(lambda *a: native.scaled_sum(S, *a, scale_grad=False), [x, left, right, bias],
                                mx.cpu(), w)
    np.testing.assert_allclose(out, ref_scaled_sum(src, dst, n, x, left, right, bias), rtol=1e-5, atol=1e-6)
    want = numeric_grads(lambda *a: ref_scaled_sum(src, dst, n, *a), [x, left, right, bias], w)
    np.testing.assert_allclose(gx, want[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, want[3], rtol=1e-4, atol=1e-4)
    assert (gl == 0).all() and (gr == 0).all()


def ref_sage_mean(x, ws, bs, wn, bn):
    """SAGEConv(mean) in float64: x Ws^T + bs + mean over edges u->v of x_u Wn^T + bn (mean 0 for
    a node without incoming edges)."""
    agg = np.zeros_like(x)
    np.add.at(agg, DST, x[SRC])
    agg /= np.maximum(np.bincount(DST, minlength=N), 1)[:, None]
    return x @ ws.T + bs + agg @ wn.T + bn


@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_sageconv_mean_projects_before_aggregating_when_it_narrows(ctx, kernels):
    """in_feats > out_feats: W_neigh before the mean, its bias inside the scaled sum; nodes 5 and
    6 (no incoming edge) get W_self x + b_self + b_neigh, as when the mean comes first."""
    rs = np.random.RandomState(21)
    layer = SAGEConv(5, 3, "mean")
    layer.initialize(ctx=ctx)
    params = [rs.normal(size=p.shape) for p in (layer.fc_self.weight, layer.fc_self.bias, layer.fc_neigh.weight,
                                                layer.fc_neigh.bias)]
    for p, v in zip((layer.fc_self.weight, layer.fc_self.bias, layer.fc_neigh.weight, layer.fc_neigh.bias), params):
        p.set_data(mx.nd.array(v, ctx=ctx))
    g = dgl.graph((SRC, DST), num_nodes=N, device=ctx)
    x = rs.normal(size=(N, 5))
    X = mx.nd.array(x, ctx=ctx)
    X.attach_grad()
    w = rs.normal(size=(N, 3))
    with autograd.record():
        out = layer(g, X)
        loss = (out * mx.nd.array(w, ctx=ctx)).sum()
    loss.backward()
    np.testing.assert_allclose(out.asnumpy(), ref_sage_mean(x, *params), rtol=1e-5, atol=1e-5)
    want = numeric_grads(lambda *a: ref_sage_mean(*a), [x] + params, w, h=1e-3)
    got = [X.grad] + [p.grad(ctx) for p in (layer.fc_self.weight, layer.fc_self.bias, layer.fc_neigh.weight,
                                            layer.fc_neigh.bias)]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-4, atol=1e-4)


# ---- the self term: GINConv's (1 + eps) h_v inside the operator ------------------------------
def assert_matches(op, ref, arrays, ctx, w, atol=1e-5):
    """The operator's output and gradients against the float64 reference and its central
    differences (inputs that are None have neither); returns the operator's gradients."""
    out, grads = run(op, arrays, ctx, w)
    np.testing.assert_allclose(out, ref(*arrays), rtol=1e-5, atol=atol)
    for got, want in zip(grads, numeric_grads(ref, arrays, w)):
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return grads


def ref_with_self(src, dst, n_dst, x, left, right, bias, c):
    """The scaled sum plus c[0] * x[v] for the destination nodes, x's first n_dst rows."""
    return ref_scaled_sum(src, dst, n_dst, x, left, right, bias) + c[0] * x[:n_dst]


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("use_left, use_right, bshape", [(False, False, None), (False, True, None),
                                                         (True, True, (F,))], ids=str)
def test_self_term_forward_and_gradients(use_left, use_right, bshape, idtype, ctx):
    src, dst, n = small_graph()
    rs = np.random.RandomState(zlib.crc32(repr(("self", use_left, use_right, bshape)).encode()))
    x = rs.normal(size=(n, H, F))
    left = rs.uniform(0.2, 2.0, size=n) if use_left else None
    right = rs.uniform(0.2, 2.0, size=n) if use_right else None
    bias = rs.normal(size=bshape) if bshape else None
    c = np.array([1.37])
    S = topology(src, dst, n, n).structure(ctx, idtype)
    w = rs.normal(size=(n, H, F))
    assert_matches(lambda *a: native.scaled_sum(S, *a[:4], self_scale=a[4]),
                   lambda *a: ref_with_self(src, dst, n, *a), [x, left, right, bias, c], ctx, w)


@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
def test_self_term_on_a_block_reads_the_destination_prefix_and_can_be_constant(idtype):
    # 4 source nodes, the first 2 are the destinations; 3->0 and 2->1 twice
    src, dst = np.array([0, 2, 2, 1, 3, 3]), np.array([1, 1, 0, 1, 0, 1])
    rs = np.random.RandomState(5)
    x, right, c = rs.normal(size=(4, 6)), rs.rand(2) + 0.5, np.array([0.6])
    S = topology(src, dst, 4, 2).structure(mx.cpu(), idtype)
    w = rs.normal(size=(2, 6))
    gx = assert_matches(lambda x, r, c: native.scaled_sum(S, x, None, r, None, self_scale=c),
                        lambda x, r, c: ref_with_self(src, dst, 2, x, None, r, None, c), [x, right, c], mx.cpu(), w,
                        atol=1e-6)[0]
    # self_grad=False: the scale is a constant, its gradient zero, the others unchanged
    _, (gx_const, _, gc) = run(lambda x, r, c: native.scaled_sum(S, x, None, r, None, self_scale=c, self_grad=False),
                               [x, right, c], mx.cpu(), w)
    assert (gc == 0).all()
    np.testing.assert_allclose(gx_const, gx, rtol=1e-6, atol=1e-6)


def test_self_term_refuses_a_long_scale_and_more_destinations_than_sources():
    src, dst, n = small_graph()
    S = topology(src, dst, n, n).structure(mx.cpu(), np.int32)
    x = mx.nd.ones((n, 4))
    with pytest.raises(mx.base.MXNetError, match="self term"):
        native.scaled_sum(S, x, self_scale=mx.nd.ones((2,))).wait_to_read()
    wide = topology(np.array([0, 1]), np.array([2, 0]), 2, 3).structure(mx.cpu(), np.int32)
    with pytest.raises(mx.base.MXNetError, match="self term"):
        native.scaled_sum(wide, mx.nd.ones((2, 4)), self_scale=mx.nd.ones((1,))).wait_to_read()


def ref_gin(x, eps, agg, src=SRC, dst=DST, n_dst=N):
    """(1 + eps) x_v + sum (or mean; 0 without incoming edges) over edges u->v of x_u, float64."""
    a = np.zeros((n_dst, x.shape[0]))
    np.add.at(a, (dst, src), 1.0)
    h = a @ x
    if agg == "mean":
        h = h / np.maximum(a.sum(1), 1)[:, None]
    return (1 + eps[0]) * x[:n_dst] + h


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("agg", ["sum", "mean"])
@pytest.mark.parametrize("learn_eps", [True, False])
def test_ginconv_on_the_fused_operator_matches_the_formula(agg, learn_eps, ctx, kernels):
    from gluon_suite.graph.nn import GINConv
    rs = np.random.RandomState(31)
    x = rs.normal(size=(N, 4))
    conv = GINConv(None, agg, init_eps=0.25, learn_eps=learn_eps)
    conv.initialize(ctx=ctx)
    g = dgl.graph((SRC, DST), num_nodes=N, device=ctx)
    X = mx.nd.array(x, ctx=ctx)
    X.attach_grad()
    w = rs.normal(size=(N, 4))
    with autograd.record():
        out = conv(g, X)
        (out * mx.nd.array(w, ctx=ctx)).sum().backward()
    eps = np.array([0.25])
    np.testing.assert_allclose(out.asnumpy(), ref_gin(x, eps, agg), rtol=1e-5, atol=1e-5)
    gx, geps = numeric_grads(lambda x, e: ref_gin(x, e, agg), [x, eps], w, h=1e-3)
    np.testing.assert_allclose(X.grad.asnumpy(), gx, rtol=1e-4, atol=1e-4)
    if learn_eps:
        np.testing.assert_allclose(conv.eps.grad(ctx).asnumpy(), geps, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("agg", ["sum", "mean"])
@pytest.mark.parametrize("act", [None, "relu"])
def test_ginconv_with_a_narrowing_dense_sums_after_the_product_and_matches_the_formula(agg, act, ctx, monkeypatch):
    """apply_func = Dense(3, in_units=5): the layer multiplies first and sums 3 columns, not 5
    (the sum's input is seen 3 wide); output and the gradients of x, W, b and eps against float64
    NumPy (central differences of the formula f((1 + eps) x_v + agg x_u))."""
    from mxnet import gluon
    from gluon_suite.graph.nn import GINConv
    widths = []
    real = native.scaled_sum
    monkeypatch.setattr(native, "scaled_sum", lambda S, x, *a, **k: widths.append(x.shape[1]) or real(S, x, *a, **k))
    rs = np.random.RandomState(33)
    x, W, b, w = rs.normal(size=(N, 5)), rs.normal(size=(3, 5)), rs.normal(size=(3,)), rs.normal(size=(N, 3))
    conv = GINConv(gluon.nn.Dense(3, in_units=5, activation=act), agg, init_eps=0.25, learn_eps=True)
    conv.initialize(ctx=ctx)
    conv.apply_func.weight.set_data(mx.nd.array(W, ctx=ctx))
    conv.apply_func.bias.set_data(mx.nd.array(b, ctx=ctx))
    X = mx.nd.array(x, ctx=ctx)
    X.attach_grad()
    with autograd.record():
        out = conv(dgl.graph((SRC, DST), num_nodes=N, device=ctx), X)
        (out * mx.nd.array(w, ctx=ctx)).sum().backward()
    assert widths == [3]

    def ref(x, W, b, eps):
        z = ref_gin(x, eps, agg) @ W.T + b
        return np.maximum(z, 0) if act == "relu" else z
    eps = np.array([0.25])
    np.testing.assert_allclose(out.asnumpy(), ref(x, W, b, eps), rtol=1e-5, atol=1e-5)
    gx, gW, gb, geps = numeric_grads(ref, [x, W, b, eps], w, h=1e-4)
    np.testing.assert_allclose(X.grad.asnumpy(), gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(conv.apply_func.weight.grad(ctx).asnumpy(), gW, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(conv.apply_func.bias.grad(ctx).asnumpy(), gb, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(conv.eps.grad(ctx).asnumpy(), geps, rtol=1e-4, atol=1e-4)


def test_ginconv_with_a_widening_dense_sums_first():
    """Dense(6, in_units=4) widens: the sum runs on the 4 input columns, then the layer."""
    from mxnet import gluon
    from gluon_suite.graph.nn import GINConv
    rs = np.random.RandomState(34)
    x = rs.normal(size=(N, 4))
    conv = GINConv(gluon.nn.Dense(6, in_units=4), "sum", init_eps=0.1)
    conv.initialize()
    out = conv(dgl.graph((SRC, DST), num_nodes=N), mx.nd.array(x)).asnumpy()
    W, b = conv.apply_func.weight.data().asnumpy(), conv.apply_func.bias.data().asnumpy()
    np.testing.assert_allclose(out, ref_gin(x, np.array([0.1]), "sum") @ W.T.astype(np.float64) + b,
                               rtol=1e-5, atol=1e-5)


def test_ginconv_on_a_block(kernels):
    from gluon_suite.graph.nn import GINConv
    src, dst = np.array([0, 2, 2, 1, 3, 3]), np.array([1, 1, 0, 1, 0, 1])
    blk = dgl.create_block((src, dst), num_src_nodes=4, num_dst_nodes=2)
    rs = np.random.RandomState(32)
    x = rs.normal(size=(4, 3))
    conv = GINConv(None, "sum", init_eps=-0.4)
    conv.initialize()
    out = conv(blk, mx.nd.array(x))
    np.testing.assert_allclose(out.asnumpy(), ref_gin(x, np.array([-0.4]), "sum", src, dst, 2), rtol=1e-5, atol=1e-6)


# ---- halves: SAGEConv's [self | neighbour] rows from one product -------------------------------
def ref_halves(src, dst, n_dst, x, left, right, bias, c):
    """x (N_src, 2L): the scaled sum over the neighbour halves plus c (1 when None) times the
    destination rows' self halves."""
    L = x.shape[1] // 2
    a = 1.0 if c is None else c[0]
    return ref_scaled_sum(src, dst, n_dst, x[:, L:], left, right, bias) + a * x[:n_dst, :L]


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("use_left, use_right, use_bias, use_c", [(False, True, True, False), (True, False, False, True),
                                                                  (True, True, True, True), (False, False, False, False)],
                         ids=str)
def test_halves_forward_and_gradients(use_left, use_right, use_bias, use_c, idtype, ctx):
    src, dst, n = small_graph()
    rs = np.random.RandomState(zlib.crc32(repr(("halves", use_left, use_right, use_bias, use_c)).encode()))
    x = rs.normal(size=(n, 2 * 5))
    left = rs.uniform(0.2, 2.0, size=n) if use_left else None
    right = rs.uniform(0.2, 2.0, size=n) if use_right else None
    bias = rs.normal(size=5) if use_bias else None
    c = np.array([0.7]) if use_c else None
    S = topology(src, dst, n, n).structure(ctx, idtype)
    assert ref_halves(src, dst, n, x, left, right, bias, c).shape == (n, 5)
    w = rs.normal(size=(n, 5))
    assert_matches(lambda *a: native.scaled_sum(S, *a[:4], self_scale=a[4], halves=True),
                   lambda *a: ref_halves(src, dst, n, *a), [x, left, right, bias, c], ctx, w)


@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
def test_halves_on_a_block_zero_the_self_gradient_of_source_only_rows(idtype):
    src, dst = np.array([0, 2, 2, 1, 3, 3]), np.array([1, 1, 0, 1, 0, 1])   # 4 sources, 2 destinations
    rs = np.random.RandomState(8)
    x, right, bias = rs.normal(size=(4, 8)), rs.rand(2) + 0.5, rs.normal(size=4)
    S = topology(src, dst, 4, 2).structure(mx.cpu(), idtype)
    w = rs.normal(size=(2, 4))
    gx = assert_matches(lambda x, r, b: native.scaled_sum(S, x, None, r, b, halves=True),
                        lambda x, r, b: ref_halves(src, dst, 2, x, None, r, b, None), [x, right, bias], mx.cpu(),
                        w, atol=1e-6)[0]
    assert (gx[2:, :4] == 0).all()          # source-only rows have no self part


def test_halves_refuses_odd_rows_and_more_than_two_axes():
    src, dst, n = small_graph()
    S = topology(src, dst, n, n).structure(mx.cpu(), np.int32)
    with pytest.raises(mx.base.MXNetError, match="halves"):
        native.scaled_sum(S, mx.nd.ones((n, 5)), halves=True).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="halves"):
        native.scaled_sum(S, mx.nd.ones((n, 2, 4)), halves=True).wait_to_read()


@pytest.mark.parametrize("bias", [True, False])
def test_sageconv_narrowing_on_one_product_runs_halves_and_matches_the_formula(bias, monkeypatch):
    seen = []
    real = native.scaled_sum
    monkeypatch.setattr(native, "scaled_sum", lambda *a, **k: seen.append(k.get("halves")) or real(*a, **k))
    rs = np.random.RandomState(22)
    layer = SAGEConv(5, 3, "mean", bias=bias)
    layer.initialize()
    dense = [layer.fc_self.weight, layer.fc_neigh.weight] + ([layer.fc_self.bias, layer.fc_neigh.bias] if bias else [])
    vals = [rs.normal(size=p.shape) for p in dense]
    for p, v in zip(dense, vals):
        p.set_data(mx.nd.array(v))
    x = rs.normal(size=(N, 5))
    out = layer(dgl.graph((SRC, DST), num_nodes=N), mx.nd.array(x)).asnumpy()
    ws, wn = vals[0], vals[1]
    bs, bn = (vals[2], vals[3]) if bias else (np.zeros(3), np.zeros(3))
    np.testing.assert_allclose(out, ref_sage_mean(x, ws, bs, wn, bn), rtol=1e-5, atol=1e-5)
    assert seen == [True]
