"""Learned and sorting graph readouts (``dgl.nn.mxnet.glob``): ``SortPooling`` (Zhang et al.,
2018), ``GlobalAttentionPooling`` (Li et al., 2016) and ``Set2Set`` (Vinyals et al., 2016), one
row per graph of a batch, built on the per-graph readouts (``topk_nodes``, ``softmax_nodes``,
``sum_nodes``, ``broadcast_nodes``)."""
import mxnet as mx
from mxnet import gluon
from mxnet.gluon import nn

from ..base import GraphError
from ..readout import broadcast_nodes, softmax_nodes, sum_nodes, topk_nodes


class SortPooling(nn.Block):
    """Sort pooling: each node's features sorted ascending, then per graph the ``k`` nodes with
    the largest last (so largest) feature, in descending order, flattened to (graphs, k * D); a
    graph with fewer than k nodes is padded with zero rows."""

    def __init__(self, k):
        super().__init__()
        self.k = int(k)

    def forward(self, graph, feat):
        """Output (graphs, k * D) for node features (N, D)."""
        if feat.ndim != 2:
            raise GraphError(f"SortPooling takes node features (N, D), got shape {feat.shape}")
        feat = mx.nd.sort(feat, axis=-1)
        top, _ = topk_nodes(graph, feat, self.k, sortby=feat.shape[1] - 1)
        return top.reshape((-1, self.k * feat.shape[1]))

    def __repr__(self):
        return f"SortPooling(k={self.k})"


class GlobalAttentionPooling(nn.Block):
    """Attention readout: r = sum over the nodes i of a graph of softmax_i(gate_nn(x_i))
    feat_nn(x_i), the softmax over the nodes of each graph; ``gate_nn`` maps a node's features
    to one score (N, 1), ``feat_nn`` (optional, identity when None) transforms them."""

    def __init__(self, gate_nn, feat_nn=None):
        super().__init__()
        with self.name_scope():
            self.gate_nn = gate_nn
            self.feat_nn = feat_nn

    def forward(self, graph, feat):
        """Output (graphs, D') for node features (N, D)."""
        gate = self.gate_nn(feat)
        if gate.ndim != 2 or gate.shape[-1] != 1:
            raise GraphError(f"GlobalAttentionPooling: gate_nn must give one score per node (N, 1), got {gate.shape}")
        feat = self.feat_nn(feat) if self.feat_nn is not None else feat
        return sum_nodes(graph, mx.nd.broadcast_mul(feat, softmax_nodes(graph, gate)))


class Set2Set(nn.Block):
    """Set2Set readout, ``n_iters`` steps per graph from q*_0 = 0:
    q_t = LSTM(q*_{t-1}) (``n_layers`` layers, hidden size ``input_dim``), a_i = softmax over the
    graph's nodes of x_i . q_t, r_t = sum over i of a_i x_i, q*_t = [q_t, r_t]; returns q*_T,
    (graphs, 2 * input_dim)."""

    def __init__(self, input_dim, n_iters, n_layers):
        super().__init__()
        self.input_dim, self.output_dim = input_dim, 2 * input_dim
        self.n_iters, self.n_layers = n_iters, n_layers
        with self.name_scope():
            self.lstm = gluon.rnn.LSTM(input_dim, num_layers=n_layers, input_size=self.output_dim)

    def forward(self, graph, feat):
        """Output (graphs, 2 * input_dim) for node features (N, input_dim)."""
        b, ctx = graph.batch_size, feat.context
        state = [mx.nd.zeros((self.n_layers, b, self.input_dim), ctx=ctx, dtype=feat.dtype) for _ in range(2)]
        q_star = mx.nd.zeros((b, self.output_dim), ctx=ctx, dtype=feat.dtype)
        for _ in range(self.n_iters):
            q, state = self.lstm(q_star.expand_dims(axis=0), state)
            q = q.reshape((b, self.input_dim))
            e = mx.nd.sum(feat * broadcast_nodes(graph, q), axis=-1, keepdims=True)
            r = sum_nodes(graph, mx.nd.broadcast_mul(feat, softmax_nodes(graph, e)))
            q_star = mx.nd.concat(q, r, dim=-1)
        return q_star

    def __repr__(self):
        return (f"Set2Set(in={self.input_dim}, out={self.output_dim}, n_iters={self.n_iters}, "
                f"n_layers={self.n_layers})")
