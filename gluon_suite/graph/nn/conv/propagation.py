"""Layers that propagate features with the symmetrically normalised adjacency
P = D^-1/2 A D^-1/2 (A[v, u] = edges u->v, D the in-degrees clamped at 1, as DGL's MXNet layers
normalise both sides by in-degree), with ``dgl.nn.mxnet``'s constructor arguments: ``SGConv``,
``TAGConv``, ``APPNPConv`` and ``ChebConv``. With the compiled kernels each product with P is one
scaled-sum operator with the cached degree powers (and any constant factor) as its row scales;
otherwise, and for APPNP's edge dropout, one fused ``copy_u``/``sum`` (``u_mul_e``/``sum``)
between two scalings by the degree powers."""
import math

import mxnet as mx
import numpy as np
from mxnet.gluon import nn

from ... import function as fn
from ... import native
from ...base import GraphError
from ..utils import apply_activation


def _norm(graph, h):
    """D^-1/2 of the graph's in-degrees, shaped to scale ``h`` row-wise, on ``h``'s context."""
    if graph._two_sides:
        raise GraphError("this layer propagates over one node set; pass a graph, not a block or bipartite graph")
    return graph._degree_power("in", -0.5, h.context).reshape((-1,) + (1,) * (h.ndim - 1))


def propagate(graph, h, weight=None, scale=1.0, bias=None):
    """``scale`` P h (+ ``bias`` on every row), or with per-edge ``weight`` (E, 1) the product
    with A's entries scaled by it."""
    norm = _norm(graph, h)
    if weight is None and native.usable(h, norm, bias) and graph.num_edges() > 0:
        flat = norm.reshape((-1,))
        right = flat if scale == 1.0 else graph._get(("in", -0.5, str(h.context), scale), lambda: flat * scale)
        return native.scaled_sum(graph._structure(h.context), h, flat, right, bias, scale_grad=False)
    if bias is not None:
        return mx.nd.broadcast_add(propagate(graph, h, weight, scale), bias)
    with graph.local_scope():
        graph.ndata["h"] = mx.nd.broadcast_mul(h, norm)
        if weight is None:
            graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
        else:
            graph.edata["w"] = weight
            graph.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "h"))
        out = mx.nd.broadcast_mul(graph.ndata["h"], norm)
        return out if scale == 1.0 else out * scale


def hop_sum(hops, weights, bias):
    """sum over j of hops[j] W_j^T (+ bias) for weights (out, in) as ``FullyConnected`` products
    (the first one carries the bias), summed by one ``add_n``."""
    outs = [mx.nd.FullyConnected(h, w, bias if j == 0 else None, num_hidden=w.shape[0],
                                 no_bias=bias is None or j > 0, flatten=False)
            for j, (h, w) in enumerate(zip(hops, weights))]
    return outs[0] if len(outs) == 1 else mx.nd.add_n(*outs)


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
        """Output (N, out_feats) for node features (N, in_feats). Without ``cached`` and ``norm``,
        a narrowing layer (out_feats < in_feats) projects first, P^k (x W) + b, so that P runs
        on out_feats columns."""
        fc = self.fc
        if not self._cached and self.norm is None and fc._units < fc._in_units:
            ctx = feat.context
            h = mx.nd.FullyConnected(feat, fc.weight.data(ctx), no_bias=True, num_hidden=fc._units)
            bias = fc.bias.data(ctx) if fc.bias is not None else None
            for j in range(self._k):
                h = propagate(graph, h, bias=bias if j == self._k - 1 else None)
            return h if self._k or bias is None else mx.nd.broadcast_add(h, bias)
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
    P^j x W_j + b), the W_j stacked in one (in_feats * (k + 1), out_feats) weight (rows j *
    in_feats onwards for hop j). A widening or square layer propagates x and multiplies each hop
    by its block, the products summed (``hop_sum``: cheaper than concatenating the hops along the
    feature axis, which MXNet copies slowly both ways); a narrowing one (out_feats < in_feats)
    projects first and propagates the narrower products in Horner's form, x W_0 + P (x W_1 +
    P (x W_2 + ...)): k products with P of out_feats columns instead of in_feats."""

    def __init__(self, in_feats, out_feats, k=2, bias=True, activation=None):
        super().__init__()
        self.in_feats, self.out_feats, self.k, self.activation = in_feats, out_feats, int(k), activation
        with self.name_scope():
            self.lin = self.params.get("weight", shape=(in_feats * (self.k + 1), out_feats),
                                       init=mx.init.Xavier(magnitude=math.sqrt(2.0)))
            self.h_bias = self.params.get("bias", shape=(out_feats,), init=mx.init.Zero()) if bias else None

    def forward(self, graph, feat):
        """Output (N, out_feats) for node features (N, in_feats)."""
        bias = self.h_bias.data(feat.context) if self.h_bias is not None else None
        w = self.lin.data(feat.context)
        blocks = [w[j * self.in_feats:(j + 1) * self.in_feats].T for j in range(self.k + 1)]   # (out, in)
        if self.out_feats < self.in_feats:
            out = hop_sum([feat], blocks[self.k:], None)
            for j in range(self.k - 1, -1, -1):
                out = mx.nd.elemwise_add(propagate(graph, out), hop_sum([feat], blocks[j:j + 1], bias if j == 0 else None))
        else:
            hops, h = [feat], feat
            for _ in range(self.k):
                h = propagate(graph, h)
                hops.append(h)
            out = hop_sum(hops, blocks, bias)
        return apply_activation(self.activation, out)


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
        h, teleport = feat, self._alpha * feat
        for _ in range(self._k):
            w = None
            if self._drop > 0 and mx.autograd.is_training():
                w = self.edge_drop(mx.nd.ones((graph.num_edges(), 1), ctx=feat.context))
            h = mx.nd.elemwise_add(propagate(graph, h, w, 1 - self._alpha), teleport)
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
        """Output (N, out_feats) for node features (N, in_feats).

        Each hop T_j is multiplied by its weight and the products summed (``hop_sum``, the bias in
        the first); a narrowing layer (out_feats < in_feats) projects first and sums the series
        with Clenshaw's recurrence on out_feats columns; each L' t is one scaled sum of t (row scales D^-1/2 and
        -2 / lambda_max D^-1/2) plus (2 / lambda_max - 1) t, a scalar when all graphs share one
        lambda_max."""
        from ...readout import broadcast_nodes
        ctx = feat.context
        if lambda_max is None:
            lambda_max = laplacian_lambda_max(graph)
        if not isinstance(lambda_max, mx.nd.NDArray):
            values = np.asarray(lambda_max, np.float32).reshape(-1)
            lambda_max = mx.nd.array(values, ctx=ctx)
        else:
            values = None
        same = values is not None and len(values) and (values == values[0]).all()
        norm = _norm(graph, feat).reshape((-1,))
        if same:
            c = 2.0 / float(values[0])
            keep, right = c - 1.0, norm * -c           # L' t = keep t + P t scaled by -c
        else:
            lam = broadcast_nodes(graph, lambda_max.reshape((-1, 1)).as_in_context(ctx)).reshape((-1,))
            keep, right = (2.0 / lam - 1).reshape((-1, 1)), -2.0 / lam * norm

        def scaled(t, factor):      # factor * L' t
            kept = t * (keep * factor) if same else mx.nd.broadcast_mul(t, keep * factor)
            if native.usable(t, norm) and graph.num_edges() > 0:
                return mx.nd.elemwise_add(kept, native.scaled_sum(graph._structure(ctx), t, norm, right * factor,
                                                                  None, scale_grad=False))
            with graph.local_scope():
                graph.ndata["h"] = mx.nd.broadcast_mul(t, norm.reshape((-1, 1)))
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                return kept + mx.nd.broadcast_mul(graph.ndata["h"], (right * factor).reshape((-1, 1)))
        weights = [self.fc[j].weight.data(ctx) for j in range(self._k)]
        bias = self.bias.data(ctx) if self.bias is not None else None
        if self._out_feats < self._in_feats and self._k > 1:
            # Clenshaw: b_j = x W_j + 2 L' b_{j+1} - b_{j+2} down to j = 1, then x W_0 + L' b_1 - b_2
            b1, b2 = hop_sum([feat], weights[-1:], None), None
            for j in range(self._k - 2, 0, -1):
                b = mx.nd.elemwise_add(hop_sum([feat], weights[j:j + 1], None), scaled(b1, 2.0))
                b1, b2 = (b if b2 is None else mx.nd.elemwise_sub(b, b2)), b1
            out = mx.nd.elemwise_add(hop_sum([feat], weights[:1], bias), scaled(b1, 1.0))
            return out if b2 is None else mx.nd.elemwise_sub(out, b2)
        hops, t_prev, t = [feat], None, feat
        for j in range(1, self._k):
            t_next = scaled(t, 1.0) if j == 1 else mx.nd.elemwise_sub(scaled(t, 2.0), t_prev)
            t_prev, t = t, t_next
            hops.append(t)
        return hop_sum(hops, weights, bias)
