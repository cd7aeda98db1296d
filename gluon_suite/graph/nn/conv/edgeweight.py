"""Convolutions whose per-edge weights come from edge data: ``GMMConv`` (Gaussian kernels of
pseudo-coordinates, Monti et al., 2017) and ``NNConv`` (a network of the edge features, Gilmer
et al., 2017), with ``dgl.nn.mxnet``'s arguments. Both multiply source features by per-edge
weights and reduce in one fused ``u_mul_e`` with ``sum``, ``mean`` or ``max``."""
import math

import mxnet as mx
from mxnet.gluon import nn
from mxnet.gluon.contrib.nn import Identity

from ... import function as fn
from ...base import GraphError
from ..utils import check_in_degree, check_rows, expand_as_pair


def _reducer(layer, aggregator_type):
    if aggregator_type not in ("sum", "mean", "max"):
        raise GraphError(f"{layer}(aggregator_type={aggregator_type!r}): choose 'sum', 'mean' or 'max'")
    return getattr(fn, aggregator_type)


def _pair(in_feats):
    return tuple(in_feats) if isinstance(in_feats, (tuple, list)) else (in_feats, in_feats)


def _residual(in_dst, out_feats, residual, init=None):
    """The residual branch: None, the identity when the sizes match, else a dense map without bias."""
    if not residual:
        return None
    if in_dst == out_feats:
        return Identity()
    return nn.Dense(out_feats, in_units=in_dst, use_bias=False, weight_initializer=init)


def _check_edges(graph, x, what, layer):
    if x.shape[0] != graph.num_edges():
        raise GraphError(f"{layer}: {what} has {x.shape[0]} rows but the graph has {graph.num_edges()} edges; "
                         "give one row per edge")


class GMMConv(nn.Block):
    """Gaussian mixture model convolution: with pseudo-coordinates u_uv (E, dim) per edge and
    K = ``n_kernels`` diagonal Gaussians of means mu_k and inverse standard deviations s_k
    (parameters ``mu``, ``inv_sigma``, both (K, dim)),

        w_k(u) = exp(-1/2 sum over d of (u_d - mu_kd)^2 s_kd^2)
        h'_v = sum over k of agg over edges u->v of w_k(u_uv) (W_k h_u)  (+ residual + b)

    where W_k is the k-th (in, out) block of ``fc`` and agg is ``aggregator_type`` (sum, mean,
    max). As in DGL's layer the kernels are summed (no 1/K: W_k absorbs it). ``in_feats`` may be a
    (source, destination) pair; ``residual`` adds the destination features (mapped by ``res_fc``
    when sizes differ). Nodes without incoming edges are refused unless ``allow_zero_in_degree``."""

    def __init__(self, in_feats, out_feats, dim, n_kernels, aggregator_type="sum", residual=False, bias=True,
                 allow_zero_in_degree=False):
        super().__init__()
        self._in_src_feats, self._in_dst_feats = _pair(in_feats)
        self._out_feats, self._dim, self._n_kernels = out_feats, dim, n_kernels
        self._allow_zero_in_degree = allow_zero_in_degree
        self._reducer = _reducer("GMMConv", aggregator_type)
        with self.name_scope():
            self.mu = self.params.get("mu", shape=(n_kernels, dim), init=mx.init.Normal(0.1))
            self.inv_sigma = self.params.get("inv_sigma", shape=(n_kernels, dim), init=mx.init.Constant(1))
            self.fc = nn.Dense(n_kernels * out_feats, in_units=self._in_src_feats, use_bias=False,
                               weight_initializer=mx.init.Xavier(magnitude=math.sqrt(2.0)))
            self.res_fc = _residual(self._in_dst_feats, out_feats, residual)
            self.bias = self.params.get("bias", shape=(out_feats,), init=mx.init.Zero()) if bias else None

    def set_allow_zero_in_degree(self, set_value):
        """Turn the zero-in-degree check off (True) or on (False)."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, pseudo):
        """Output (N_dst, out_feats) for node features (N_src, in) or a (source, destination)
        pair and pseudo-coordinates ``pseudo`` (E, dim)."""
        check_in_degree(graph, self._allow_zero_in_degree, "GMMConv")
        feat_src, feat_dst = expand_as_pair(feat, graph)
        check_rows(graph, feat_src, "GMMConv")
        _check_edges(graph, pseudo, "pseudo", "GMMConv")
        ctx, k, d = feat_src.context, self._n_kernels, self._dim
        with graph.local_scope():
            graph.srcdata["h"] = self.fc(feat_src).reshape((-1, k, self._out_feats))
            diff = mx.nd.broadcast_sub(pseudo.reshape((-1, 1, d)), self.mu.data(ctx).reshape((1, k, d)))
            scaled = mx.nd.broadcast_mul(diff * diff, mx.nd.square(self.inv_sigma.data(ctx)).reshape((1, k, d)))
            graph.edata["w"] = mx.nd.exp(-0.5 * scaled.sum(axis=-1, keepdims=True))       # (E, K, 1)
            graph.update_all(fn.u_mul_e("h", "w", "m"), self._reducer("m", "h"))
            rst = graph.dstdata["h"].sum(axis=1)
        if self.res_fc is not None:
            rst = rst + self.res_fc(feat_dst)
        if self.bias is not None:
            rst = mx.nd.broadcast_add(rst, self.bias.data(ctx))
        return rst


class NNConv(nn.Block):
    """Edge-network convolution (MPNN): h'_v = agg over edges u->v of h_u W(e_uv)
    (+ residual + b), where W(e_uv) is ``edge_func(efeat)`` reshaped to (in_feats, out_feats) per
    edge and agg is ``aggregator_type`` (sum, mean, max, element-wise over the output before the
    sum over the input axis, as in DGL). ``residual`` adds the destination features (through a
    dense map ``res_fc`` when sizes differ); ``in_feats`` may be a (source, destination) pair.
    One fused ``u_mul_e`` of (N, in, 1) features with the (E, in, out) weights."""

    def __init__(self, in_feats, out_feats, edge_func, aggregator_type, residual=False, bias=True):
        super().__init__()
        self._in_src_feats, self._in_dst_feats = _pair(in_feats)
        self._out_feats, self._aggre_type = out_feats, aggregator_type
        self.reducer = _reducer("NNConv", aggregator_type)
        with self.name_scope():
            self.edge_nn = edge_func
            self.res_fc = _residual(self._in_dst_feats, out_feats, residual, mx.init.Xavier())
            self.bias = self.params.get("bias", shape=(out_feats,), init=mx.init.Zero()) if bias else None

    def forward(self, graph, feat, efeat):
        """Output (N_dst, out_feats) for node features (N_src, in_feats) or a (source,
        destination) pair and edge features ``efeat`` (E, ...) as ``edge_func`` takes them."""
        feat_src, feat_dst = expand_as_pair(feat, graph)
        check_rows(graph, feat_src, "NNConv")
        _check_edges(graph, efeat, "efeat", "NNConv")
        with graph.local_scope():
            graph.srcdata["h"] = feat_src.expand_dims(-1)                                    # (N, in, 1)
            graph.edata["w"] = self.edge_nn(efeat).reshape((-1, self._in_src_feats, self._out_feats))
            graph.update_all(fn.u_mul_e("h", "w", "m"), self.reducer("m", "neigh"))
            rst = graph.dstdata["neigh"].sum(axis=1)
        if self.res_fc is not None:
            rst = rst + self.res_fc(feat_dst)
        if self.bias is not None:
            rst = mx.nd.broadcast_add(rst, self.bias.data(feat_dst.context))
        return rst
