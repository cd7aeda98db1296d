"""GNN layers on ``Graph``, with DGL's constructor conventions: ``(in_feats, out_feats, ...,
activation=None, bias=True, allow_zero_in_degree=False)`` and ``forward(graph, feat)``.

Zero in-degree nodes get no message, so their output is only the bias; a layer refuses such
graphs unless ``allow_zero_in_degree=True`` and says how to fix it (add self-loops).
"""
import mxnet as mx
from mxnet import autograd, gluon

from . import function as fn
from . import ops
from .batch import readout_nodes
from .graph import GraphError


def _check_in_degree(g, allow, layer):
    if not allow and float(g.in_degrees().min().asscalar()) == 0:
        raise GraphError(f"{layer}: the graph has nodes with no incoming edge, whose output would be "
                         "invalid; add self-loops (g = g.add_self_loop()) or pass allow_zero_in_degree=True")


class GraphConv(gluon.Block):
    """GCN layer: h' = D_in^{-1/2} A D_out^{-1/2} h W + b (``norm='both'``), ``'right'`` divides by the
    in-degree, ``'none'`` sums."""

    def __init__(self, in_feats, out_feats, norm="both", bias=True, activation=None,
                 allow_zero_in_degree=False):
        super().__init__()
        if norm not in ("both", "right", "none"):
            raise ValueError(f"norm must be both, right or none, got {norm!r}")
        self.norm, self.activation, self.allow_zero = norm, activation, allow_zero_in_degree
        self.in_feats, self.out_feats = in_feats, out_feats
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(in_feats, out_feats), init=mx.init.Xavier())
            self.bias = self.params.get("bias", shape=(out_feats,), init="zeros") if bias else None

    def forward(self, g, feat):
        _check_in_degree(g, self.allow_zero, "GraphConv")
        with g.local_scope():
            h = feat
            if self.norm == "both":
                h = mx.nd.broadcast_mul(h, mx.nd.power(mx.nd.maximum(g.out_degrees(), 1), -0.5).reshape((-1, 1)))
            if self.in_feats > self.out_feats:  # multiply first: fewer columns to aggregate
                h = mx.nd.dot(h, self.weight.data())
            g.ndata["h"] = h
            g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
            h = g.ndata["h"]
            if self.in_feats <= self.out_feats:
                h = mx.nd.dot(h, self.weight.data())
            deg = mx.nd.maximum(g.in_degrees(), 1).reshape((-1, 1))
            if self.norm == "both":
                h = mx.nd.broadcast_mul(h, mx.nd.power(deg, -0.5))
            elif self.norm == "right":
                h = mx.nd.broadcast_div(h, deg)
            if self.bias is not None:
                h = mx.nd.broadcast_add(h, self.bias.data())
            return self.activation(h) if self.activation else h


class GATConv(gluon.Block):
    """Multi-head graph attention: W h split into W_l·u + W_r·v scores (as apply_edges u_add_v),
    leaky ReLU, edge softmax, attention dropout, then u_mul_e + sum. Output (N, num_heads, out_feats).

    The attention step runs as one fused operator (``ops.gat_attention``) equal to that
    composition of built-ins; both score projections are one dense product with a block-diagonal
    (2 * heads, heads * out_feats) matrix built from ``attn_l`` and ``attn_r``."""

    def __init__(self, in_feats, out_feats, num_heads, feat_drop=0.0, attn_drop=0.0,
                 negative_slope=0.2, residual=False, bias=True, activation=None,
                 allow_zero_in_degree=False):
        super().__init__()
        self.H, self.F, self.slope, self.attn_rate = num_heads, out_feats, negative_slope, attn_drop
        self.activation, self.allow_zero = activation, allow_zero_in_degree
        with self.name_scope():
            self.fc = gluon.nn.Dense(num_heads * out_feats, in_units=in_feats, use_bias=False,
                                     weight_initializer=mx.init.Xavier(magnitude=2.0))
            self.attn_l = self.params.get("attn_l", shape=(1, num_heads, out_feats), init=mx.init.Xavier(magnitude=2.0))
            self.attn_r = self.params.get("attn_r", shape=(1, num_heads, out_feats), init=mx.init.Xavier(magnitude=2.0))
            self.feat_drop, self.attn_drop = gluon.nn.Dropout(feat_drop), gluon.nn.Dropout(attn_drop)
            self.res = gluon.nn.Dense(num_heads * out_feats, in_units=in_feats, use_bias=False) if residual else None
            self.bias = self.params.get("bias", shape=(num_heads * out_feats,), init="zeros") if bias else None

    def _scores(self, ft):
        """``(el, er)``, each (N, heads): the sums over features of ft * attn_l and ft * attn_r,
        as one dense product (MXNet's broadcast backward would reduce over N slowly)."""
        H, F = self.H, self.F
        eye = mx.nd.eye(H, ctx=ft.context).reshape((H, H, 1))
        w = mx.nd.concat(mx.nd.broadcast_mul(eye, self.attn_l.data()), mx.nd.broadcast_mul(eye, self.attn_r.data()),
                         dim=0).reshape((2 * H, H * F))
        elr = mx.nd.FullyConnected(ft.reshape((-1, H * F)), w, no_bias=True, num_hidden=2 * H)
        return mx.nd.slice_axis(elr, axis=1, begin=0, end=H), mx.nd.slice_axis(elr, axis=1, begin=H, end=2 * H)

    def forward(self, g, feat):
        _check_in_degree(g, self.allow_zero, "GATConv")
        h = self.feat_drop(feat)
        ft = self.fc(h).reshape((-1, self.H, self.F))
        el, er = self._scores(ft)
        mask = None
        if self.attn_rate > 0 and autograd.is_training():
            mask = self.attn_drop(mx.nd.ones((g.num_edges(), self.H), ctx=ft.context))
        out = ops.gat_attention(g._topo(), ft, el, er, self.slope, mask)
        if self.res is not None:
            out = out + self.res(h).reshape((-1, self.H, self.F))
        if self.bias is not None:
            out = mx.nd.broadcast_add(out, self.bias.data().reshape((1, self.H, self.F)))
        return self.activation(out) if self.activation else out


class SAGEConv(gluon.Block):
    """GraphSAGE: h' = W_self h + W_neigh agg(neighbours), agg = mean, or max of ReLU(W_pool h)
    (``'pool'``)."""

    def __init__(self, in_feats, out_feats, aggregator_type="mean", feat_drop=0.0, bias=True,
                 activation=None, allow_zero_in_degree=True):
        super().__init__()
        if aggregator_type not in ("mean", "pool"):
            raise ValueError(f"aggregator_type must be mean or pool, got {aggregator_type!r}")
        self.agg, self.activation, self.allow_zero = aggregator_type, activation, allow_zero_in_degree
        with self.name_scope():
            self.drop = gluon.nn.Dropout(feat_drop)
            self.fc_self = gluon.nn.Dense(out_feats, in_units=in_feats, use_bias=bias)
            self.fc_neigh = gluon.nn.Dense(out_feats, in_units=in_feats, use_bias=False)
            self.fc_pool = gluon.nn.Dense(in_feats, in_units=in_feats, activation="relu") \
                if aggregator_type == "pool" else None

    def forward(self, g, feat):
        _check_in_degree(g, self.allow_zero, "SAGEConv")
        with g.local_scope():
            h = self.drop(feat)
            if self.agg == "mean":
                g.ndata["h"] = h
                g.update_all(fn.copy_u("h", "m"), fn.mean("m", "n"))
            else:
                g.ndata["h"] = self.fc_pool(h)
                g.update_all(fn.copy_u("h", "m"), fn.max("m", "n"))
            out = self.fc_self(h) + self.fc_neigh(g.ndata["n"])
            return self.activation(out) if self.activation else out


class GINConv(gluon.Block):
    """GIN: h' = f((1 + eps)·h + sum of neighbours), with ``apply_func`` f (e.g. an MLP) and
    optionally learnable eps."""

    def __init__(self, apply_func, init_eps=0.0, learn_eps=False, aggregator_type="sum",
                 allow_zero_in_degree=True):
        super().__init__()
        if aggregator_type not in ("sum", "mean", "max"):
            raise ValueError(f"aggregator_type must be sum, mean or max, got {aggregator_type!r}")
        self.agg, self.allow_zero, self.learn_eps = aggregator_type, allow_zero_in_degree, learn_eps
        with self.name_scope():
            self.apply_func = apply_func
            self.eps = self.params.get("eps", shape=(1,), init=mx.init.Constant(init_eps),
                                       grad_req="write" if learn_eps else "null")

    def forward(self, g, feat):
        _check_in_degree(g, self.allow_zero, "GINConv")
        with g.local_scope():
            g.ndata["h"] = feat
            g.update_all(fn.copy_u("h", "m"), getattr(fn, self.agg)("m", "n"))
            out = mx.nd.broadcast_mul(feat, 1 + self.eps.data()) + g.ndata["n"]
            return self.apply_func(out) if self.apply_func is not None else out


class SumPooling(gluon.Block):
    """Graph-level readout: the sum of node features per graph of a batch."""

    def forward(self, bg, feat):
        return readout_nodes(bg, feat, "sum")
