"""GCN layer (Kipf & Welling), with ``dgl.nn.mxnet.GraphConv``'s arguments and semantics."""
import math

import mxnet as mx
from mxnet import gluon

from ... import function as fn
from ...base import GraphError
from ..utils import check_in_degree, check_rows, expand_as_pair


class GraphConv(gluon.Block):
    """Graph convolution: h'_v = act(b + sum over edges u->v of c_uv h_u W). ``norm='both'``
    (default) takes c_uv = 1 / sqrt(d_out(u) d_in(v)) (symmetric), ``'right'`` 1 / d_in(v) (mean),
    ``'left'`` 1 / d_out(u), ``'none'`` 1; degrees below 1 count as 1. ``weight=False`` drops W (then
    pass ``weight=`` to ``forward`` or keep in_feats == out_feats). Nodes without incoming edges are
    refused unless ``allow_zero_in_degree=True`` (add self-loops instead)."""

    def __init__(self, in_feats, out_feats, norm="both", weight=True, bias=True, activation=None,
                 allow_zero_in_degree=False):
        super().__init__()
        if norm not in ("none", "both", "right", "left"):
            raise GraphError(f"GraphConv(norm={norm!r}): choose 'both', 'right', 'left' or 'none'")
        self._in_feats, self._out_feats, self._norm = in_feats, out_feats, norm
        self._activation, self._allow_zero_in_degree = activation, allow_zero_in_degree
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(in_feats, out_feats),
                                          init=mx.init.Xavier(magnitude=math.sqrt(2.0))) if weight else None
            self.bias = self.params.get("bias", shape=(out_feats,), init=mx.init.Zero()) if bias else None

    def set_allow_zero_in_degree(self, set_value):
        """Turn the zero-in-degree check off (True) or on (False)."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, weight=None):
        """Output (N_dst, *, out_feats) for node features (N_src, *, in_feats) or a (source,
        destination) pair; ``weight`` is an external (in_feats, out_feats) matrix for a layer
        built with ``weight=False``."""
        check_in_degree(graph, self._allow_zero_in_degree, "GraphConv")
        with graph.local_scope():
            feat_src, feat_dst = expand_as_pair(feat, graph)
            check_rows(graph, feat_src, "GraphConv")
            if weight is not None and self.weight is not None:
                raise GraphError("GraphConv: an external weight was passed to a layer that has its own; "
                                 "build it with weight=False")
            if weight is None and self.weight is not None:
                weight = self.weight.data(feat_src.context)
            if self._norm in ("both", "left"):
                norm = graph._degree_power("out", -0.5 if self._norm == "both" else -1.0, feat_src.context)
                feat_src = mx.nd.broadcast_mul(feat_src, norm.reshape((-1,) + (1,) * (feat_src.ndim - 1)))
            multiply_first = weight is not None and self._in_feats > self._out_feats
            if multiply_first:  # fewer columns to aggregate
                feat_src = mx.nd.dot(feat_src, weight)
            graph.srcdata["h"] = feat_src
            graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            rst = graph.dstdata["h"]
            if weight is not None and not multiply_first:
                rst = mx.nd.dot(rst, weight)
            if self._norm in ("both", "right"):
                norm = graph._degree_power("in", -0.5 if self._norm == "both" else -1.0, rst.context)
                rst = mx.nd.broadcast_mul(rst, norm.reshape((-1,) + (1,) * (rst.ndim - 1)))
            if self.bias is not None:
                rst = mx.nd.broadcast_add(rst, self.bias.data(rst.context))
            return self._activation(rst) if self._activation is not None else rst

    def __repr__(self):
        return (f"GraphConv(in={self._in_feats}, out={self._out_feats}, normalization={self._norm}, "
                f"activation={self._activation})")
