"""Layers given MXNet's ``nd.relu`` as their activation run it as ``nd.Activation(act_type="relu")``
(oneDNN's kernel, five times faster here): values and input gradients equal to the same layer
given a wrapper around ``nd.relu``, which takes the ordinary path, on a graph whose outputs have
both signs. Other activations are called as given."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

import gluon_suite.graph as dgl
from gluon_suite.graph.nn import GATConv, GraphConv, RelGraphConv, SAGEConv, TAGConv
from gluon_suite.graph.nn.conv.dense import DenseGraphConv, DenseSAGEConv

SRC = np.array([0, 0, 1, 2, 2, 3, 3, 0, 5, 5, 1, 3, 2])
DST = np.array([1, 1, 2, 2, 3, 3, 4, 4, 0, 4, 0, 1, 4])
N = 7

LAYERS = {
    "GraphConv": lambda act: GraphConv(4, 5, activation=act, allow_zero_in_degree=True),
    "SAGEConv-mean": lambda act: SAGEConv(4, 5, "mean", activation=act),
    "SAGEConv-mean-narrowing": lambda act: SAGEConv(6, 3, "mean", activation=act),
    "GATConv": lambda act: GATConv(4, 3, 2, activation=act, allow_zero_in_degree=True),
    "TAGConv": lambda act: TAGConv(4, 5, k=2, activation=act),
    "RelGraphConv": lambda act: RelGraphConv(4, 5, 2, num_bases=2, activation=act),
    "DenseGraphConv": lambda act: DenseGraphConv(4, 5, activation=act),
    "DenseSAGEConv": lambda act: DenseSAGEConv(4, 5, activation=act),
}


def _run(name, act):
    mx.random.seed(3)
    layer = LAYERS[name](act)
    layer.initialize(mx.init.Normal(1.0))
    in_feats = 6 if name.endswith("narrowing") else 4
    x = mx.nd.array(np.random.RandomState(4).normal(size=(N, in_feats)))
    x.attach_grad()
    g = dgl.graph((SRC, DST), num_nodes=N)
    if name.startswith("Dense"):
        adj = np.zeros((N, N))
        np.add.at(adj, (DST, SRC), 1.0)
        args = (mx.nd.array(adj), x)
    elif name == "RelGraphConv":
        args = (g, x, mx.nd.array(np.arange(len(SRC)) % 2))
    else:
        args = (g, x)
    with autograd.record():
        out = layer(*args)
        loss = (out * mx.nd.array(np.random.RandomState(5).normal(size=out.shape))).sum()
    loss.backward()
    return out.asnumpy(), x.grad.asnumpy(), layer


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_relu_runs_as_activation_with_the_same_values_and_gradients(name, monkeypatch):
    calls = []
    real = mx.nd.Activation
    monkeypatch.setattr(mx.nd, "Activation", lambda *a, **k: calls.append(k.get("act_type")) or real(*a, **k))
    out, grad, layer = _run(name, mx.nd.relu)
    assert "relu" in calls, f"{name} did not run nd.relu as Activation"
    ref_out, ref_grad, _ = _run(name, lambda h: mx.nd.relu(h))
    assert (ref_out == 0).any() and (ref_out > 0).any()          # both sides of the kink are used
    np.testing.assert_allclose(out, ref_out, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-6, atol=1e-7)


def test_other_activations_are_called_as_given():
    seen = []
    out, _, _ = _run("GraphConv", lambda h: seen.append(h.shape) or mx.nd.tanh(h))
    assert seen == [(N, 5)] and (np.abs(out) < 1).all()
