"""Layers that propagate features with the symmetrically normalised adjacency
P = D^-1/2 A D^-1/2 (A[v, u] = edges u->v, D the in-degrees clamped at 1, as DGL's MXNet layers
normalise both sides by in-degree), with ``dgl.nn.mxnet``'s constructor arguments: ``SGConv``,
``TAGConv``, ``APPNPConv`` and ``ChebConv``. Each product with P is one fused ``copy_u``/``sum``
(or ``u_mul_e``/``sum`` for APPNP's edge dropout) between two scalings by cached degree powers."""
import math

import mxnet as mx
import numpy as np
from mxnet.gluon import nn

from ... import function as fn
from ...base import GraphError


def _norm(graph, h):
    """D^-1/2 of the graph's in-degrees, shaped to scale ``h`` row-wise, on ``h``'s context."""
    if graph._two_sides:
        raise GraphError("this layer propagates over one node set; pass a graph, not a block or bipartite graph")
    return graph._degree_power("in", -0.5, h.context).reshape((-1,) + (1,) * (h.ndim - 1))


def propagate(graph, h, weight=None):
    """P h, or with per-edge ``weight`` (E, 1) the product with A's entries scaled by it."""
    norm = _norm(graph, h)
    with graph.local_scope():
        graph.ndata["h"] = mx.nd.broadcast_mul(h, norm)
        if weight is None:
            graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
        else:
            graph.edata["w"] = weight
            graph.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "h"))
        return mx.nd.broadcast_mul(graph.ndata["h"], norm)


class SGConv(nn.Block):
    """Simplified graph convolution (Wu et al., 2019): h' = norm(P^k x) W + b. With ``cached`` the
    propagated features P^k x are computed once and reused (transductive training on one fixed
    graph and fixed input features)."""

    def __init__(self, in_feats, out_feats, k=1, cached=False, bias=True, norm=None):
        super().__init__()
        self._k, self._cached, self._cached_h = int(k), cached, None
        with self.name_scope():
            self.norm = norm
            self.fc = nn.Dense(out_feats, in_units=in_feats, use_bias=bias, weight_initializer=mx.init.Xavier())

    def forward(self, graph, feat):
        """Output (N, out_feats) for node features (N, in_feats)."""
        if self._cached_h is None:
            h = feat
            for _ in range(self._k):
                h = propagate(graph, h)
            if self.norm is not None:
                h = self.norm(h)
            if self._cached:
                self._cached_h = h
        else:
            h = self._cached_h
        return self.fc(h)


class TAGConv(nn.Block):
    """Topology-adaptive graph convolution (Du et al., 2017): h' = act(sum over j = 0..k of
    P^j x W_j + b), computed as one product of [x, P x, ..., P^k x] (features concatenated) with a
    (in_feats * (k + 1), out_feats) weight."""

    def __init__(self, in_feats, out_feats, k=2, bias=True, activation=None):
        super().__init__()
        self.in_feats, self.out_feats, self.k, self.activation = in_feats, out_feats, int(k), activation
        with self.name_scope():
            self.lin = self.params.get("weight", shape=(in_feats * (self.k + 1), out_feats),
                                       init=mx.init.Xavier(magnitude=math.sqrt(2.0)))
            self.h_bias = self.params.get("bias", shape=(out_feats,), init=mx.init.Zero()) if bias else None

    def forward(self, graph, feat):
        """Output (N, out_feats) for node features (N, in_feats)."""
        hops, h = [feat], feat
        for _ in range(self.k):
            h = propagate(graph, h)
            hops.append(h)
        out = mx.nd.dot(mx.nd.concat(*hops, dim=-1), self.lin.data(feat.context))
        if self.h_bias is not None:
            out = mx.nd.broadcast_add(out, self.h_bias.data(feat.context))
        return self.activation(out) if self.activation is not None else out


class APPNPConv(nn.Block):
    """Personalised-PageRank propagation (Klicpera et al., 2019), no parameters: h_0 = x,
    h_{t+1} = (1 - alpha) P_t h_t + alpha x for t < k, where P_t is P with each edge's entry
    dropped with probability ``edge_drop`` (and the others scaled by 1 / (1 - edge_drop)) in
    training."""

    def __init__(self, k, alpha, edge_drop=0.0):
        super().__init__()
        self._k, self._alpha = int(k), float(alpha)
        with self.name_scope():
            self.edge_drop = nn.Dropout(edge_drop)
        self._drop = float(edge_drop)

    def forward(self, graph, feat):
        """Output of the same shape as ``feat`` (N, ...)."""
        h = feat
        for _ in range(self._k):
            w = None
            if self._drop > 0 and mx.autograd.is_training():
                w = self.edge_drop(mx.nd.ones((graph.num_edges(), 1), ctx=feat.context))
            h = (1 - self._alpha) * propagate(graph, h, w) + self._alpha * feat
        return h


def laplacian_lambda_max(g):
    """DGL's ``laplacian_lambda_max``: per graph of a batch, the largest eigenvalue (by modulus,
    real part) of the normalised Laplacian L = I - D^-1/2 A D^-1/2 (D the in-degrees clamped at
    1), as a list of floats."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import eigs
    out = []
    nodes, _ = g._batch_sizes()
    offs = np.concatenate([[0], np.cumsum(nodes)])
    for b, n in enumerate(nodes):
        if n == 0:
            out.append(0.0)
            continue
        sel = (g._dst >= offs[b]) & (g._dst < offs[b + 1])
        src, dst = g._src[sel] - offs[b], g._dst[sel] - offs[b]
        a = sp.csr_matrix((np.ones(len(src)), (dst, src)), shape=(n, n))
        d = sp.diags(np.maximum(np.asarray(a.sum(1)).ravel(), 1) ** -0.5)
        lap = sp.eye(n) - d @ a @ d
        if n < 64:
            vals = np.linalg.eigvals(lap.toarray())
            out.append(float(vals[np.argmax(np.abs(vals))].real))
        else:
            out.append(float(eigs(lap, 1, which="LM", return_eigenvectors=False)[0].real))
    return out


class ChebConv(nn.Block):
    """Chebyshev spectral graph convolution (Defferrard et al., 2016): h' = sum over j < k of
    T_j W_j + b with T_0 = x, T_1 = L' x, T_j = 2 L' T_{j-1} - T_{j-2} and the rescaled Laplacian
    L' = 2 (I - P) / lambda_max - I. ``forward(graph, feat, lambda_max)``: ``lambda_max`` per graph
    of the batch (a list or NDArray); None computes it with ``laplacian_lambda_max``."""

    def __init__(self, in_feats, out_feats, k, bias=True):
        super().__init__()
        self._in_feats, self._out_feats, self._k = in_feats, out_feats, int(k)
        with self.name_scope():
            self.fc = nn.Sequential()
            for _ in range(self._k):
                self.fc.add(nn.Dense(out_feats, use_bias=False, in_units=in_feats,
                                     weight_initializer=mx.init.Xavier(magnitude=math.sqrt(2.0))))
            self.bias = self.params.get("bias", shape=(out_feats,), init=mx.init.Zero()) if bias else None

    def forward(self, graph, feat, lambda_max=None):
        """Output (N, out_feats) for node features (N, in_feats)."""
        from ...readout import broadcast_nodes
        if lambda_max is None:
            lambda_max = laplacian_lambda_max(graph)
        if not isinstance(lambda_max, mx.nd.NDArray):
            lambda_max = mx.nd.array(np.asarray(lambda_max, np.float32).reshape(-1), ctx=feat.context)
        lam = broadcast_nodes(graph, lambda_max.reshape((-1, 1)).as_in_context(feat.context))   # (N, 1)

        def rescaled(t):            # L' t = (2 / lambda - 1) t - (2 / lambda) P t
            return mx.nd.broadcast_mul(t, 2.0 / lam - 1) - mx.nd.broadcast_mul(propagate(graph, t), 2.0 / lam)
        t_prev, t = None, feat
        out = self.fc[0](t)
        for j in range(1, self._k):
            t_next = rescaled(t) if j == 1 else 2 * rescaled(t) - t_prev
            t_prev, t = t, t_next
            out = out + self.fc[j](t)
        if self.bias is not None:
            out = mx.nd.broadcast_add(out, self.bias.data(feat.context))
        return out
