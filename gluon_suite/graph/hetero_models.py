"""R-GCN on a heterograph (Schlichtkrull et al., 2018), as DGL's heterograph entity-classification
example builds it: each relation r has its own weight W_r (or a combination of shared bases), a
node's new state sums, over the relations into its type, the mean of its in-neighbours' states
times W_r, plus its own state times a self-loop weight and a bias:

    h'_v = act( sum over r of (1 / |N_r(v)|) sum over u in N_r(v) of h_u W_r  +  h_v W_0  +  b )

Each relation's mean is a ``GraphConv(norm='right', weight=False)`` run by ``HeteroGraphConv``
on its relation graph (the compiled scaled-sum kernel), with W_r passed in by position.
``HeteroRGCN`` stacks two such layers over learnable per-type node embeddings (or projected
input features) and returns per-type logits."""
import math

import mxnet as mx
from mxnet import gluon

from .base import GraphError
from .nn.conv.graphconv import GraphConv
from .nn.conv.hetero import HeteroGraphConv
from .nn.utils import apply_activation

__all__ = ["HeteroRelGraphConv", "HeteroRGCN"]


def _key(rel):
    return rel if isinstance(rel, str) else "__".join(rel)


class HeteroRelGraphConv(gluon.Block):
    """One R-GCN layer on a heterograph (the module docstring's rule). ``rel_names``: the edge
    types (names, or canonical triples where names repeat). ``num_bases`` below the number of
    relations gives W_r = sum over b of a_rb V_b (``weight`` (B, in, out), ``w_comp`` (R, B));
    otherwise ``weight`` is (R, in, out). ``self_loop`` adds h_v W_0 (``loop_weight``), ``bias``
    the vector ``h_bias``; dropout after the activation. ``forward(g, inputs)``: ``inputs``
    ``{node type: (N, in_feat)}``; returns ``{node type: (N, out_feat)}`` for every input type
    (a type no relation reaches keeps only its self-loop term and bias)."""

    def __init__(self, in_feat, out_feat, rel_names, num_bases=None, activation=None, self_loop=True, bias=True,
                 dropout=0.0):
        super().__init__()
        self.rel_names = list(rel_names)
        if not self.rel_names:
            raise GraphError("HeteroRelGraphConv: give at least one relation")
        R = len(self.rel_names)
        self.num_bases = num_bases if num_bases is not None and 0 < num_bases < R else R
        self.in_feat, self.out_feat, self.activation, self.self_loop = in_feat, out_feat, activation, self_loop
        init = mx.init.Xavier(magnitude=math.sqrt(2.0))
        with self.name_scope():
            self.conv = HeteroGraphConv({rel: GraphConv(in_feat, out_feat, norm="right", weight=False, bias=False)
                                         for rel in self.rel_names}, aggregate="sum")
            self.weight = self.params.get("weight", shape=(self.num_bases, in_feat, out_feat), init=init)
            self.w_comp = (self.params.get("w_comp", shape=(R, self.num_bases), init=init)
                           if self.num_bases < R else None)
            self.loop_weight = self.params.get("W_0", shape=(in_feat, out_feat), init=init) if self_loop else None
            self.h_bias = self.params.get("bias", shape=(out_feat,), init=mx.init.Zero()) if bias else None
            self.dropout = gluon.nn.Dropout(dropout)

    def relation_weights(self, ctx):
        """(R, in, out): every relation's W_r (from the bases when there are fewer than R)."""
        w = self.weight.data(ctx)
        if self.w_comp is None:
            return w
        flat = mx.nd.dot(self.w_comp.data(ctx), w.reshape((self.num_bases, -1)))
        return flat.reshape((len(self.rel_names), self.in_feat, self.out_feat))

    def forward(self, g, inputs):
        """``{node type: output}``; see the class."""
        if not inputs:
            raise GraphError("HeteroRelGraphConv: inputs are {node type: features}")
        ctx = next(iter(inputs.values())).context
        w = self.relation_weights(ctx)
        ws = [w.reshape((self.in_feat, self.out_feat))] if len(self.rel_names) == 1 else \
            mx.nd.split(w, num_outputs=len(self.rel_names), axis=0, squeeze_axis=True)
        hs = self.conv(g, inputs, {rel: (ws[i],) for i, rel in enumerate(self.rel_names)})
        out = {}
        for ntype, x in inputs.items():
            h = hs.get(ntype)
            if self.self_loop:
                loop = mx.nd.FullyConnected(x, self.loop_weight.data(ctx).T, no_bias=True, num_hidden=self.out_feat)
                h = loop if h is None else mx.nd.elemwise_add(h, loop)
            if h is None:
                h = mx.nd.zeros((x.shape[0], self.out_feat), ctx=ctx)
            if self.h_bias is not None:
                h = mx.nd.broadcast_add(h, self.h_bias.data(ctx))
            out[ntype] = self.dropout(apply_activation(self.activation, h))
        return out


class HeteroRGCN(gluon.Block):
    """Two-layer R-GCN entity classifier on a heterograph: node type t starts from a learnable
    embedding (``num_nodes[t]`` rows of ``hidden``) or, for the types in ``in_feats`` ({type:
    feature size}), from its features through a dense layer; then ``HeteroRelGraphConv`` to
    ``hidden`` (ReLU, ``dropout``) and to ``classes``. ``rel_names`` and ``num_bases`` as for the
    layer. ``forward(g, feats=None)``: ``feats`` ``{type: features}`` for the types in
    ``in_feats``; returns ``{node type: logits (N, classes)}``."""

    def __init__(self, num_nodes, rel_names, hidden, classes, num_bases=None, in_feats=None, dropout=0.0):
        super().__init__()
        self.in_feats = dict(in_feats or {})
        self.ntypes = list(num_nodes)
        with self.name_scope():
            self.inputs = {}
            for t in self.ntypes:
                block = (gluon.nn.Dense(hidden, in_units=self.in_feats[t]) if t in self.in_feats
                         else gluon.nn.Embedding(int(num_nodes[t]), hidden))
                self.register_child(block, f"input_{_key(t)}")
                self.inputs[t] = block
            self.layer1 = HeteroRelGraphConv(hidden, hidden, rel_names, num_bases, activation=mx.nd.relu,
                                             dropout=dropout)
            self.layer2 = HeteroRelGraphConv(hidden, classes, rel_names, num_bases)

    def forward(self, g, feats=None):
        """``{node type: logits}``; see the class."""
        feats = feats or {}
        missing = [t for t in self.in_feats if t not in feats]
        if missing:
            raise GraphError(f"HeteroRGCN: features for node types {missing} are missing; pass feats={{type: x}}")
        ctx = g.device
        h = {t: (block(feats[t]) if t in self.in_feats else block.weight.data(ctx)) for t, block in self.inputs.items()}
        return self.layer2(g, self.layer1(g, h))
