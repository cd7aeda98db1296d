"""SortPooling, GlobalAttentionPooling and Set2Set against float64 NumPy versions of their
formulas, graph by graph, on batches of int64 and int32 graphs on two contexts (one graph smaller
than SortPooling's k)."""
import mxnet as mx
import numpy as np
import pytest
from mxnet.gluon import nn

import gluon_suite.graph as dgl
from gluon_suite.graph.nn import GlobalAttentionPooling, Set2Set, SortPooling
from gluon_suite.graph.nn import glob

SIZES = [5, 2, 4]
CASES = [(mx.cpu(0), "int64"), (mx.cpu(1), "int32")]
IDS = ["cpu0-int64", "cpu1-int32"]


def batch(ctx, idtype, width=3):
    graphs = [dgl.graph((np.arange(n), (np.arange(n) + 1) % n), num_nodes=n, idtype=idtype, device=ctx)
              for n in SIZES]
    x = np.random.RandomState(0).normal(size=(sum(SIZES), width))
    return dgl.batch(graphs), x, mx.nd.array(x, ctx=ctx)


def per_graph(x):
    offs = np.concatenate([[0], np.cumsum(SIZES)])
    return [x[offs[i]:offs[i + 1]] for i in range(len(SIZES))]


def data(p, ctx):
    return p.data(ctx).asnumpy().astype(np.float64)


def softmax(z):
    e = np.exp(z - z.max(0))
    return e / e.sum(0)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_sort_pooling_keeps_k_nodes_by_largest_feature(ctx, idtype):
    g, x, xn = batch(ctx, idtype)
    k = 3
    out = SortPooling(k)(g, xn)
    ref = []
    for xs in per_graph(x):
        rows = np.sort(xs, axis=1)
        rows = rows[np.argsort(-rows[:, -1], kind="stable")][:k]
        ref.append(np.concatenate([rows, np.zeros((k - len(rows), x.shape[1]))]).reshape(-1))
    assert out.shape == (len(SIZES), k * x.shape[1]) and out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), np.stack(ref), rtol=1e-6, atol=1e-6)
    assert glob.SortPooling is SortPooling


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("with_feat_nn", [False, True])
def test_global_attention_pooling_softmax_over_each_graph(ctx, idtype, with_feat_nn):
    g, x, xn = batch(ctx, idtype)
    gate, feat = nn.Dense(1, in_units=3), (nn.Dense(4, in_units=3) if with_feat_nn else None)
    pool = GlobalAttentionPooling(gate, feat)
    pool.initialize(ctx=ctx)
    gate.bias.set_data(mx.nd.array([0.3], ctx=ctx))
    out = pool(g, xn)
    ref = []
    for xs in per_graph(x):
        a = softmax(xs @ data(gate.weight, ctx).T + data(gate.bias, ctx))
        f = xs @ data(feat.weight, ctx).T + data(feat.bias, ctx) if with_feat_nn else xs
        ref.append((a * f).sum(0))
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), np.stack(ref), rtol=1e-5, atol=1e-6)


def lstm_step(params, layer, x, h, c):
    """MXNet's LSTM layer: gates (input, forget, cell, output) stacked in that order."""
    p = {name: params[f"l{layer}_{name}"] for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias")}
    z = x @ p["i2h_weight"].T + p["i2h_bias"] + h @ p["h2h_weight"].T + p["h2h_bias"]
    size = h.shape[1]
    sig = lambda v: 1 / (1 + np.exp(-v))                      # noqa: E731
    i, f = sig(z[:, :size]), sig(z[:, size:2 * size])
    cell, o = np.tanh(z[:, 2 * size:3 * size]), sig(z[:, 3 * size:])
    c = f * c + i * cell
    return o * np.tanh(c), c


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("n_layers", [1, 2])
def test_set2set_attention_iterations(ctx, idtype, n_layers):
    g, x, xn = batch(ctx, idtype)
    s2s = Set2Set(3, n_iters=3, n_layers=n_layers)
    s2s.initialize(ctx=ctx)
    for p in s2s.lstm.collect_params().values():        # away from zero so the test sees every term
        p.set_data(mx.nd.array(np.random.RandomState(len(p.name)).normal(0, 0.5, size=p.shape), ctx=ctx))
    out = s2s(g, xn)
    params = {name.split("_", 2)[-1]: data(p, ctx) for name, p in s2s.lstm.collect_params().items()}
    b = len(SIZES)
    h, c = np.zeros((n_layers, b, 3)), np.zeros((n_layers, b, 3))
    q_star = np.zeros((b, 6))
    for _ in range(3):
        inp = q_star
        for layer in range(n_layers):
            h[layer], c[layer] = lstm_step(params, layer, inp, h[layer], c[layer])
            inp = h[layer]
        q = inp
        r = np.stack([(softmax(xs @ q[i])[:, None] * xs).sum(0) for i, xs in enumerate(per_graph(x))])
        q_star = np.concatenate([q, r], axis=1)
    assert out.shape == (b, 6) and out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), q_star, rtol=1e-4, atol=1e-5)
