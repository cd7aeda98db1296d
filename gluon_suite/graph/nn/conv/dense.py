"""Convolutions on a dense adjacency matrix, with ``dgl.nn.mxnet``'s arguments:
``DenseGraphConv``, ``DenseSAGEConv`` and ``DenseChebConv``. ``forward(adj, feat)`` takes the
adjacency as an NDArray (N_dst, N_src) whose row v holds v's in-neighbours (rows destinations,
columns sources; weights allowed) instead of a graph; for small dense graphs, where one matrix
product beats sparse message passing (DGL computes them the same way)."""
import math

import mxnet as mx
import numpy as np
from mxnet.gluon import nn

from ...base import GraphError
from ..utils import apply_activation


def _xavier():
    return mx.init.Xavier(magnitude=math.sqrt(2.0))


def _adjacency(adj, feat, layer):
    """``adj`` as a dense NDArray of ``feat``'s type on its context, its columns checked against ``feat``'s rows."""
    if not isinstance(adj, mx.nd.NDArray):
        adj = mx.nd.array(adj)
    if adj.stype != "default":
        adj = adj.tostype("default")
    if adj.ndim != 2 or adj.shape[1] != feat.shape[0]:
        raise GraphError(f"{layer}: adj has shape {adj.shape} for features of {feat.shape[0]} rows; "
                         "give an (N_dst, N_src) matrix whose columns are the feature rows")
    return adj.astype(feat.dtype).as_in_context(feat.context)


def _column(v):
    return v.reshape((-1, 1))


class DenseGraphConv(nn.Block):
    """GCN on a dense adjacency A: h' = act(D_dst^-a A D_src^-c x W + b) with ``norm='both'``
    (a = c = 1/2, D_src the column sums, D_dst the row sums, each at least 1), ``'right'``
    (a = 1, c = 0: the mean of the in-neighbours) or ``'none'``. The product with W comes
    first when it shrinks the features. A node without in-neighbours gets the bias only (add
    the identity to A for self-loops)."""

    def __init__(self, in_feats, out_feats, norm="both", bias=True, activation=None):
        super().__init__()
        if norm not in ("both", "right", "none"):
            raise GraphError(f"DenseGraphConv(norm={norm!r}): choose 'both', 'right' or 'none'")
        self._in_feats, self._out_feats, self._norm = in_feats, out_feats, norm
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(in_feats, out_feats), init=_xavier())
            self.bias = self.params.get("bias", shape=(out_feats,), init=mx.init.Zero()) if bias else None
            self._activation = activation

    def forward(self, adj, feat):
        """Output (N_dst, out_feats) for the adjacency (N_dst, N_src) and features (N_src, in_feats)."""
        a = _adjacency(adj, feat, "DenseGraphConv")
        w = self.weight.data(feat.context)
        h = feat
        if self._norm == "both":
            h = mx.nd.broadcast_mul(h, _column(mx.nd.maximum(a.sum(axis=0), 1) ** -0.5))
        if self._in_feats > self._out_feats:
            rst = mx.nd.dot(a, mx.nd.dot(h, w))
        else:
            rst = mx.nd.dot(mx.nd.dot(a, h), w)
        if self._norm != "none":
            rst = mx.nd.broadcast_mul(rst, _column(mx.nd.maximum(a.sum(axis=1), 1) **
                                                   (-0.5 if self._norm == "both" else -1.0)))
        if self.bias is not None:
            rst = mx.nd.broadcast_add(rst, self.bias.data(feat.context))
        return apply_activation(self._activation, rst)


class DenseSAGEConv(nn.Block):
    """GraphSAGE with the ``'gcn'`` aggregator on a dense adjacency A (DGL's only one here):
    h'_v = norm(act(W (sum over u of A[v, u] x_u + x_v) / (sum over u of A[v, u] + 1) + b)),
    with dropout ``feat_drop`` on the input features; ``feat`` may be a (source, destination)
    pair of the same width."""

    def __init__(self, in_feats, out_feats, feat_drop=0.0, bias=True, norm=None, activation=None):
        super().__init__()
        self._in_feats, self._out_feats, self._norm = in_feats, out_feats, norm
        with self.name_scope():
            self.feat_drop = nn.Dropout(feat_drop)
            self.activation = activation
            self.fc = nn.Dense(out_feats, in_units=in_feats, use_bias=bias, weight_initializer=_xavier())

    def forward(self, adj, feat):
        """Output (N_dst, out_feats) for the adjacency (N_dst, N_src) and features (N_src,
        in_feats) or a (source, destination) pair."""
        if isinstance(feat, (tuple, list)):
            if feat[0].shape[1:] != feat[1].shape[1:]:
                raise GraphError(f"DenseSAGEConv: source features {feat[0].shape} and destination features "
                                 f"{feat[1].shape} must have the same width")
            feat_src, feat_dst = self.feat_drop(feat[0]), self.feat_drop(feat[1])
        else:
            feat_src = feat_dst = self.feat_drop(feat)
        a = _adjacency(adj, feat_src, "DenseSAGEConv")
        if feat_dst.shape[0] != a.shape[0]:
            raise GraphError(f"DenseSAGEConv: adj has {a.shape[0]} rows but the destination features "
                             f"{feat_dst.shape[0]}")
        neigh = mx.nd.broadcast_div(mx.nd.dot(a, feat_src) + feat_dst, _column(a.sum(axis=1)) + 1)
        rst = self.fc(neigh)
        rst = apply_activation(self.activation, rst)
        return self._norm(rst) if self._norm is not None else rst


class DenseChebConv(nn.Block):
    """Chebyshev convolution on a dense adjacency A (N, N): with L = I - D^-1/2 A D^-1/2 (D the
    row sums, at least 1) and L' = 2 L / lambda_max - I, h' = sum over j < k of T_j(L') x W_j + b
    (T_0 = I, T_1 = L', T_j = 2 L' T_{j-1} - T_{j-2}; W_j the j-th dense layer of ``fc``).
    ``forward(adj, feat, lambda_max=None)``: None takes L's largest eigenvalue from a symmetric
    eigensolver (so A should be symmetric, as an undirected graph's is)."""

    def __init__(self, in_feats, out_feats, k, bias=True):
        super().__init__()
        self._in_feats, self._out_feats, self._k = in_feats, out_feats, int(k)
        with self.name_scope():
            self.fc = nn.Sequential()
            for _ in range(self._k):
                self.fc.add(nn.Dense(out_feats, in_units=in_feats, use_bias=False, weight_initializer=_xavier()))
            self.bias = self.params.get("bias", shape=(out_feats,), init=mx.init.Zero()) if bias else None

    def forward(self, adj, feat, lambda_max=None):
        """Output (N, out_feats) for the adjacency (N, N) and features (N, in_feats)."""
        a = _adjacency(adj, feat, "DenseChebConv")
        n = a.shape[0]
        d = _column(mx.nd.maximum(a.sum(axis=1), 1) ** -0.5)
        eye = mx.nd.eye(n, ctx=feat.context, dtype=feat.dtype)
        lap = eye - mx.nd.broadcast_mul(mx.nd.broadcast_mul(a, d), d.reshape((1, -1)))
        if lambda_max is None:
            lambda_max = mx.nd.linalg.syevd(lap)[1].max()
        if isinstance(lambda_max, mx.nd.NDArray):
            lap_hat = mx.nd.broadcast_div(2 * lap, lambda_max.reshape((1, 1)).as_in_context(feat.context)) - eye
        else:
            lap_hat = 2 * lap / float(np.asarray(lambda_max, np.float64).reshape(-1)[0]) - eye
        out = self.fc[0](feat)
        t_prev, t = None, feat           # T_j(L') x, without forming the matrix polynomials
        for j in range(1, self._k):
            t_prev, t = t, (mx.nd.dot(lap_hat, t) if j == 1 else 2 * mx.nd.dot(lap_hat, t) - t_prev)
            out = out + self.fc[j](t)
        if self.bias is not None:
            out = mx.nd.broadcast_add(out, self.bias.data(feat.context))
        return out
