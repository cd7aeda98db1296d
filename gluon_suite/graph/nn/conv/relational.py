"""Convolutions over typed edges, with ``dgl.nn.mxnet``'s arguments: ``RelGraphConv`` (R-GCN,
Schlichtkrull et al., 2018; basis and block-diagonal regularizers) and ``GatedGraphConv`` (GG-NN,
Li et al., 2016). Both take the graph's edge types as a tensor (E,) beside the features, as DGL's
MXNet layers do for a homogeneous graph.

A message h_u W_type(e) depends on the source and on the edge's type only, so it is read from a
(nodes x types) table of products (each row of h multiplied by each type's weight once, not per
edge) and summed into the destinations with one fused ``copy_e``/``sum``; the R-GCN basis form
instead sums over the bases inside one fused ``u_mul_e`` (source products with each basis times
the edge's coefficients), never forming the per-relation weights' products."""
import math

import mxnet as mx
import numpy as np
from mxnet import gluon
from mxnet.gluon import nn

from ... import function as fn
from ...base import GraphError
from ..utils import apply_activation


def _edge_types(graph, etypes, ctx, layer):
    """Edge types as an int64 NDArray (E,) on ``ctx`` (from an NDArray, NumPy array or list)."""
    if not isinstance(etypes, mx.nd.NDArray):
        etypes = mx.nd.array(np.asarray(etypes).reshape(-1), ctx=ctx, dtype="int64")
    if etypes.shape != (graph.num_edges(),):
        raise GraphError(f"{layer}: etypes has shape {etypes.shape} but the graph has {graph.num_edges()} edges; "
                         "give one type id per edge")
    return etypes.as_in_context(ctx).astype("int64")


def typed_sum(graph, table, etypes, norm=None):
    """Per destination v: sum over edges e = u->v of norm_e * table[u, type_e], for a (nodes,
    types, out) table of per-type products; a gather of one row per edge and one fused
    ``copy_e``/``sum``."""
    n, t, out = table.shape
    if t == 1:
        msg = mx.nd.take(table.reshape((n, out)), graph._src_nd)
    else:
        idx = graph._src_nd.astype("int64") * t + etypes
        msg = mx.nd.take(table.reshape((n * t, out)), idx)
    if norm is not None:
        msg = mx.nd.broadcast_mul(msg, norm.reshape((-1, 1)))
    with graph.local_scope():
        graph.edata["m"] = msg
        graph.update_all(fn.copy_e("m", "m"), fn.sum("m", "h"))
        return graph.dstdata["h"]


class RelGraphConv(gluon.Block):
    """R-GCN: h'_v = act(sum over edges e = u->v of norm_e h_u W_type(e) + h_v W_0 + b), dropout
    after the activation. ``regularizer='basis'``: W_r = sum over b of a_rb V_b with ``num_bases``
    bases V (``weight``, (B, in, out)) and coefficients ``w_comp`` (R, B); with B equal to
    ``num_rels`` (the default when None or out of range) each relation has its own matrix and
    there is no ``w_comp``. ``'bdd'``: W_r is block-diagonal, ``num_bases`` blocks of
    (in/B, out/B) (``weight``, (R, B * in/B * out/B)); both sizes must divide by B. ``self_loop``
    adds h_v W_0 (``loop_weight``), ``bias`` the vector ``h_bias``. ``forward(g, x, etypes,
    norm=None)``: ``x`` node features (N, in) or, with the basis regularizer, integer node ids
    (N,) standing for one-hot inputs; ``etypes`` (E,) edge types in 0..num_rels-1; ``norm``
    (E, 1) optional per-edge factors (e.g. 1 / |N_r(v)|). ``low_mem`` and ``layer_norm`` are not
    available (nor in DGL's MXNet layer)."""

    def __init__(self, in_feat, out_feat, num_rels, regularizer="basis", num_bases=None, bias=True,
                 activation=None, self_loop=True, low_mem=False, dropout=0.0, layer_norm=False):
        super().__init__()
        if regularizer not in ("basis", "bdd"):
            raise GraphError(f"RelGraphConv(regularizer={regularizer!r}): choose 'basis' or 'bdd'")
        if low_mem or layer_norm:
            raise GraphError("RelGraphConv: low_mem and layer_norm are not available; leave them False")
        if num_bases is None or num_bases > num_rels or num_bases <= 0:
            num_bases = num_rels
        self.in_feat, self.out_feat, self.num_rels, self.num_bases = in_feat, out_feat, num_rels, num_bases
        self.regularizer, self.activation, self.self_loop = regularizer, activation, self_loop
        init = mx.init.Xavier(magnitude=math.sqrt(2.0))
        with self.name_scope():
            if regularizer == "basis":
                self.weight = self.params.get("weight", shape=(num_bases, in_feat, out_feat), init=init)
                self.w_comp = (self.params.get("w_comp", shape=(num_rels, num_bases), init=init)
                               if num_bases < num_rels else None)
            else:
                if in_feat % num_bases or out_feat % num_bases:
                    raise GraphError(f"RelGraphConv('bdd'): in_feat ({in_feat}) and out_feat ({out_feat}) must "
                                     f"be multiples of num_bases ({num_bases})")
                self.submat_in, self.submat_out = in_feat // num_bases, out_feat // num_bases
                self.weight = self.params.get("weight", shape=(num_rels, num_bases * self.submat_in *
                                                               self.submat_out), init=init)
            self.h_bias = self.params.get("bias", shape=(out_feat,), init=mx.init.Zero()) if bias else None
            self.loop_weight = self.params.get("W_0", shape=(in_feat, out_feat), init=init) if self_loop else None
            self.dropout = nn.Dropout(dropout)

    def _project(self, x, w):
        """x W for features (N, in) and w (in, k...), or the rows of w picked by integer ids (N,).
        The product is a ``FullyConnected`` (oneDNN) with w as (k, in)."""
        if x.ndim == 1:
            return mx.nd.take(w, x.astype("int64"))
        rest = w.shape[1:]
        k = int(np.prod(rest))
        out = mx.nd.FullyConnected(x, w.reshape((w.shape[0], k)).T, no_bias=True, num_hidden=k)
        return out.reshape((x.shape[0],) + rest)

    def forward(self, g, x, etypes, norm=None):
        """Output (N_dst, out_feat); see the class for the arguments."""
        if g._two_sides:
            raise GraphError("RelGraphConv runs on a graph with one node set (edge types as a tensor), "
                             "not on a block or bipartite graph")
        if x.shape[0] != g.num_nodes():
            raise GraphError(f"RelGraphConv: x has {x.shape[0]} rows but the graph has {g.num_nodes()} nodes")
        ctx, n = x.context, x.shape[0]
        types = _edge_types(g, etypes, ctx, "RelGraphConv")
        if self.regularizer == "basis":
            w = self.weight.data(ctx)                                       # (B, in, out)
            table = self._project(x, w.transpose((1, 0, 2))).reshape((n, self.num_bases, self.out_feat))
            if self.w_comp is None:
                h = typed_sum(g, table, types, norm)
            else:
                coef = mx.nd.take(self.w_comp.data(ctx), types)               # (E, B)
                if norm is not None:
                    coef = mx.nd.broadcast_mul(coef, norm.reshape((-1, 1)))
                with g.local_scope():
                    g.ndata["h"], g.edata["a"] = table, coef.expand_dims(-1)
                    g.update_all(fn.u_mul_e("h", "a", "m"), fn.sum("m", "h"))
                    h = g.ndata["h"].sum(axis=1)
        else:
            if x.ndim == 1:
                raise GraphError("RelGraphConv('bdd') needs node features (N, in_feat), not integer node ids; "
                                 "use the 'basis' regularizer for id inputs")
            nb, si, so = self.num_bases, self.submat_in, self.submat_out
            q = self.weight.data(ctx).reshape((self.num_rels, nb, si, so)).transpose((1, 2, 0, 3))
            blocks = mx.nd.batch_dot(x.reshape((n, nb, si)).transpose((1, 0, 2)),
                                     q.reshape((nb, si, self.num_rels * so)))        # (B, N, R * so)
            table = blocks.reshape((nb, n, self.num_rels, so)).transpose((1, 2, 0, 3))
            h = typed_sum(g, table.reshape((n, self.num_rels, self.out_feat)), types, norm)
        if self.h_bias is not None:
            h = mx.nd.broadcast_add(h, self.h_bias.data(ctx))
        if self.self_loop:
            h = h + self._project(x, self.loop_weight.data(ctx))
        h = apply_activation(self.activation, h)
        return self.dropout(h)


class GatedGraphConv(nn.Block):
    """Gated graph convolution: h_v^0 = [x_v, 0] padded to ``out_feats`` (so in_feats <=
    out_feats), then ``n_steps`` times a_v = sum over edges e = u->v of (W_type(e) h_u + b_type(e))
    and h_v = GRU(a_v, h_v), with one dense layer per edge type (``linears``, ``n_etypes`` of
    them) and a ``gluon.rnn.GRUCell`` (``gru``). ``forward(graph, feat, etypes)``: ``etypes`` (E,)
    in 0..n_etypes-1. ``bias=False`` is refused (MXNet's GRU cell always has biases; DGL's MXNet
    layer refuses it too)."""

    def __init__(self, in_feats, out_feats, n_steps, n_etypes, bias=True):
        super().__init__()
        if not bias:
            raise GraphError("GatedGraphConv(bias=False) is not available: MXNet's GRU cell always has biases")
        if in_feats > out_feats:
            raise GraphError(f"GatedGraphConv: in_feats ({in_feats}) must not exceed out_feats ({out_feats}); "
                             "the input is zero-padded to out_feats")
        self._in_feats, self._out_feats, self._n_steps, self._n_etypes = in_feats, out_feats, n_steps, n_etypes
        with self.name_scope():
            self.linears = nn.Sequential()
            for _ in range(n_etypes):
                self.linears.add(nn.Dense(out_feats, in_units=out_feats, weight_initializer=mx.init.Xavier()))
            self.gru = gluon.rnn.GRUCell(out_feats, input_size=out_feats)

    def forward(self, graph, feat, etypes):
        """Output (N, out_feats) for node features (N, in_feats)."""
        if graph._two_sides:
            raise GraphError("GatedGraphConv runs on a graph with one node set, not a block or bipartite graph")
        if feat.shape[0] != graph.num_nodes():
            raise GraphError(f"GatedGraphConv: feat has {feat.shape[0]} rows but the graph has "
                             f"{graph.num_nodes()} nodes")
        ctx, n, out, t = feat.context, feat.shape[0], self._out_feats, self._n_etypes
        types = _edge_types(graph, etypes, ctx, "GatedGraphConv")
        h = feat
        if feat.shape[1] < out:
            h = mx.nd.concat(feat, mx.nd.zeros((n, out - feat.shape[1]), ctx=ctx, dtype=feat.dtype), dim=-1)
        # every type's dense layer as one (out, t * out) product
        w = mx.nd.concat(*[lin.weight.data(ctx) for lin in self.linears], dim=0)          # (t * out, out)
        b = mx.nd.concat(*[lin.bias.data(ctx) for lin in self.linears], dim=0)            # (t * out,)
        for _ in range(self._n_steps):
            table = mx.nd.FullyConnected(h, w, b, num_hidden=t * out).reshape((n, t, out))
            a = typed_sum(graph, table, types)
            h = self.gru(a, [h])[0]
        return h
