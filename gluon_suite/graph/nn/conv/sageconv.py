"""GraphSAGE layer (Hamilton et al.), with ``dgl.nn.mxnet.SAGEConv``'s arguments."""
import math

import mxnet as mx
from mxnet.gluon import nn

from ... import function as fn
from ... import native
from ...base import GraphError
from ..utils import apply_activation, check_rows, maybe_dropout


def _dense(units, in_units, bias):
    return nn.Dense(units, use_bias=bias, in_units=in_units,
                    weight_initializer=mx.init.Xavier(magnitude=math.sqrt(2.0)))


class SAGEConv(nn.Block):
    """GraphSAGE: h'_v = norm(act(W_self h_v + W_neigh agg_v)) with agg over edges u->v of h_u:
    ``'mean'``; ``'pool'``: element-wise max of ReLU(W_pool h_u + b); ``'gcn'``: (sum of h_u + h_v)
    / (in-degree + 1), and then only W_neigh. Both dense layers carry a bias with ``bias=True``
    (as in DGL). ``feat_drop`` is dropout on the input features; ``'lstm'`` is not available
    (neither in DGL's MXNet version). Nodes without incoming edges aggregate 0."""

    def __init__(self, in_feats, out_feats, aggregator_type="mean", feat_drop=0.0, bias=True, norm=None,
                 activation=None):
        super().__init__()
        if aggregator_type not in ("mean", "gcn", "pool"):
            raise GraphError(f"SAGEConv(aggregator_type={aggregator_type!r}): choose 'mean', 'gcn' or 'pool'")
        self._in_src_feats, self._in_dst_feats = in_feats if isinstance(in_feats, tuple) else (in_feats, in_feats)
        self._out_feats, self._aggre_type, self._feat_rate = out_feats, aggregator_type, feat_drop
        with self.name_scope():
            self.norm, self.activation = norm, activation
            self.feat_drop = nn.Dropout(feat_drop)
            if aggregator_type == "pool":
                self.fc_pool = _dense(self._in_src_feats, self._in_src_feats, bias)
            if aggregator_type != "gcn":
                self.fc_self = _dense(out_feats, self._in_dst_feats, bias)
            self.fc_neigh = _dense(out_feats, self._in_src_feats, bias)

    def forward(self, graph, feat):
        """Output (N_dst, out_feats) for node features (N_src, in_feats) or a (source,
        destination) pair."""
        with graph.local_scope():
            if isinstance(feat, (tuple, list)):
                feat_src, feat_dst = (maybe_dropout(self.feat_drop, self._feat_rate, f) for f in feat)
            else:
                feat_src = feat_dst = maybe_dropout(self.feat_drop, self._feat_rate, feat)
                if graph.is_block:
                    feat_dst = feat_src[:graph.num_dst_nodes()]
            check_rows(graph, feat_src, "SAGEConv")
            # the product first where it does not widen what is aggregated: at equal widths the
            # single [W_self; W_neigh] product below still saves a product and a sum
            lin_first = self._aggre_type == "mean" and self._in_src_feats >= self._out_feats
            if lin_first and native.usable(feat_src) and graph.num_edges() > 0:
                # fewer columns to aggregate: W_neigh before the mean, its bias after it, the mean's
                # 1/in-degree and the bias inside one scaled sum (a node without edges gets the bias,
                # as W_neigh 0 + b)
                ctx = feat_src.context
                w = self.fc_neigh.weight.data(ctx)
                b = self.fc_neigh.bias.data(ctx) if self.fc_neigh.bias is not None else None
                right = graph._degree_power("in", -1.0, ctx).reshape((-1,))
                if feat_dst is feat_src and feat_src.ndim == 2 and graph.num_dst_nodes() == graph.num_src_nodes():
                    # one product with [W_self; W_neigh]: each row [self part | neighbour part], the
                    # scaled sum adds the self part to the neighbours' mean (no second product,
                    # no element-wise sum, one input gradient instead of two to add up)
                    bs = self.fc_self.bias.data(ctx) if self.fc_self.bias is not None else None
                    both = mx.nd.concat(self.fc_self.weight.data(ctx), w, dim=0)
                    h = mx.nd.FullyConnected(feat_src, both, num_hidden=2 * self._out_feats, no_bias=True)
                    if b is not None and bs is not None:
                        b = mx.nd.elemwise_add(bs, b)
                    elif bs is not None:
                        b = bs
                    rst = native.scaled_sum(graph._structure(ctx), h, None, right, b, scale_grad=False, halves=True)
                else:
                    h = mx.nd.FullyConnected(feat_src, w, num_hidden=self._out_feats, no_bias=True, flatten=False)
                    rst = native.scaled_sum(graph._structure(ctx), h, None, right, b, scale_grad=False)
                    rst = mx.nd.elemwise_add(self.fc_self(feat_dst), rst)
                rst = apply_activation(self.activation, rst)
                return self.norm(rst) if self.norm is not None else rst
            if self._aggre_type == "mean":
                graph.srcdata["h"] = feat_src
                graph.update_all(fn.copy_u("h", "m"), fn.mean("m", "neigh"))
                h_neigh = graph.dstdata["neigh"]
            elif self._aggre_type == "gcn":
                graph.srcdata["h"] = feat_src
                graph.update_all(fn.copy_u("h", "m"), fn.sum("m", "neigh"))
                ctx = feat_dst.context     # in-degree + 1 per destination, built once per graph
                deg = graph._get(("in+1", str(ctx)), lambda: mx.nd.array(graph._degrees("in").reshape(-1, 1) + 1.0,
                                                                          ctx=ctx))
                h_neigh = mx.nd.broadcast_div(graph.dstdata["neigh"] + feat_dst, deg)
            else:
                graph.srcdata["h"] = mx.nd.Activation(self.fc_pool(feat_src), act_type="relu")
                graph.update_all(fn.copy_u("h", "m"), fn.max("m", "neigh"))
                h_neigh = graph.dstdata["neigh"]
            rst = self.fc_neigh(h_neigh)
            if self._aggre_type != "gcn":
                rst = mx.nd.elemwise_add(self.fc_self(feat_dst), rst)
            rst = apply_activation(self.activation, rst)
            if self.norm is not None:
                rst = self.norm(rst)
            return rst
