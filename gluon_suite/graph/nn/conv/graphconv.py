"""GCN layer (Kipf & Welling), with ``dgl.nn.mxnet.GraphConv``'s arguments and semantics."""
import math

import mxnet as mx
from mxnet import gluon

from ... import function as fn
from ... import native
from ...base import GraphError
from ..utils import apply_activation, check_in_degree, check_rows, expand_as_pair


def _linear(x, weight, bias):
    """x (N, *, in) @ weight (in, out) [+ bias (out,)] as one ``FullyConnected`` (its backward
    sums the bias gradient without MXNet's generic broadcast reduction)."""
    return mx.nd.FullyConnected(x, mx.nd.transpose(weight), bias, num_hidden=weight.shape[1],
                                no_bias=bias is None, flatten=False)


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
        built with ``weight=False``.

        With the compiled kernels, the degree normalisation (the graph's cached degree powers)
        and, when nothing follows the aggregation, the bias run inside one scaled-sum operator;
        the weight product and the bias after it are one ``FullyConnected`` (oneDNN on CPU). So
        a layer makes two (N, F) tensors where a broadcast per factor made five."""
        check_in_degree(graph, self._allow_zero_in_degree, "GraphConv")
        with graph.local_scope():
            feat_src, feat_dst = expand_as_pair(feat, graph)
            check_rows(graph, feat_src, "GraphConv")
            if weight is not None and self.weight is not None:
                raise GraphError("GraphConv: an external weight was passed to a layer that has its own; "
                                 "build it with weight=False")
            ctx = feat_src.context
            if weight is None and self.weight is not None:
                weight = self.weight.data(ctx)
            bias = self.bias.data(ctx) if self.bias is not None else None
            power = -0.5 if self._norm == "both" else -1.0
            left = graph._degree_power("out", power, ctx) if self._norm in ("both", "left") else None
            right = graph._degree_power("in", power, ctx) if self._norm in ("both", "right") else None
            multiply_first = weight is not None and self._in_feats > self._out_feats
            if multiply_first:  # fewer columns to aggregate
                feat_src = _linear(feat_src, weight, None)
            last = not (weight is not None and not multiply_first)     # the aggregation ends the layer
            if native.usable(feat_src, left, right, bias) and graph.num_edges() > 0:
                rst = native.scaled_sum(graph._structure(ctx), feat_src,
                                        None if left is None else left.reshape((-1,)),
                                        None if right is None else right.reshape((-1,)), bias if last else None,
                                        scale_grad=False)
            else:
                if left is not None:
                    feat_src = mx.nd.broadcast_mul(feat_src, left.reshape((-1,) + (1,) * (feat_src.ndim - 1)))
                graph.srcdata["h"] = feat_src
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
                rst = graph.dstdata["h"]
                if right is not None:   # a row scale: before the weight product as after it
                    rst = mx.nd.broadcast_mul(rst, right.reshape((-1,) + (1,) * (rst.ndim - 1)))
                if last and bias is not None:
                    rst = mx.nd.broadcast_add(rst, bias)
            if not last:
                rst = _linear(rst, weight, bias)
            return apply_activation(self._activation, rst)

    def __repr__(self):
        return (f"GraphConv(in={self._in_feats}, out={self._out_feats}, normalization={self._norm}, "
                f"activation={self._activation})")
