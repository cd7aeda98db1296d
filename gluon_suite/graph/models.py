"""Graph models registered in the zoo: two-layer GCN, GAT and GraphSAGE node classifiers and a
GIN graph classifier. All take ``forward(graph_or_blocks, feat)``; node models accept a list of
sampled blocks in place of the graph."""
import mxnet as mx
from mxnet import gluon

from ..model_zoo import register_model
from .readout import readout_nodes
from .nn import GATConv, GINConv, GraphConv, SAGEConv


def _elu(x):
    return mx.nd.LeakyReLU(x, act_type="elu")


class NodeClassifier(gluon.Block):
    """Two graph layers of kind ``gcn``, ``gat`` or ``sage`` with dropout between them."""

    def __init__(self, kind, in_feats, classes, hidden=16, heads=8, dropout=0.5, aggregator="mean"):
        super().__init__()
        self.kind = kind
        with self.name_scope():
            self.drop = gluon.nn.Dropout(dropout)
            if kind == "gcn":
                self.l1 = GraphConv(in_feats, hidden, activation=mx.nd.relu)
                self.l2 = GraphConv(hidden, classes)
            elif kind == "gat":
                self.l1 = GATConv(in_feats, hidden, heads, feat_drop=dropout, attn_drop=dropout, activation=_elu)
                self.l2 = GATConv(hidden * heads, classes, 1, feat_drop=dropout, attn_drop=dropout)
            elif kind == "sage":
                self.l1 = SAGEConv(in_feats, hidden, aggregator, activation=mx.nd.relu)
                self.l2 = SAGEConv(hidden, classes, aggregator)
            else:
                raise ValueError(f"unknown layer kind {kind!r}; choose gcn, gat or sage")

    def forward(self, g, x):
        """Logits (N, classes) on a graph, or (seeds, classes) on a list of two sampled blocks
        (``x``: features of the first block's source nodes)."""
        blocks = g if isinstance(g, (list, tuple)) else [g, g]
        h = x
        for i, (layer, block) in enumerate(zip((self.l1, self.l2), blocks)):
            if i:
                h = self.drop(h)
            h = layer(block, h)               # a block's layer output has its destinations' rows
            h = h.reshape((h.shape[0], -1))
        return h


class GINClassifier(gluon.Block):
    """GIN layers with learnable eps and a sum readout of every layer (graph classification)."""

    def __init__(self, in_feats, classes, hidden=32, layers=2):
        super().__init__()
        with self.name_scope():
            self.convs = []
            dims = [in_feats] + [hidden] * layers
            for i in range(layers):
                mlp = gluon.nn.HybridSequential()
                mlp.add(gluon.nn.Dense(hidden, in_units=dims[i], activation="relu"),
                        gluon.nn.Dense(hidden, in_units=hidden, activation="relu"))
                conv = GINConv(mlp, "sum", learn_eps=True)
                self.register_child(conv, f"gin{i}")
                self.convs.append(conv)
            self.out = gluon.nn.Dense(classes, in_units=in_feats + hidden * layers)

    def forward(self, bg, x):
        reads, h = [readout_nodes(bg, x, op="sum")], x
        for conv in self.convs:
            h = conv(bg, h)
            reads.append(readout_nodes(bg, h, op="sum"))
        return self.out(mx.nd.concat(*reads, dim=1))


@register_model("gcn", task="node-classification")
def gcn(in_feats=16, classes=2, hidden=16, dropout=0.5):
    """Two-layer GCN (symmetric normalisation) node classifier."""
    return NodeClassifier("gcn", in_feats, classes, hidden, dropout=dropout)


@register_model("gat", task="node-classification")
def gat(in_feats=16, classes=2, hidden=8, heads=8, dropout=0.6):
    """Two-layer GAT (8 heads x 8 hidden by default) node classifier."""
    return NodeClassifier("gat", in_feats, classes, hidden, heads=heads, dropout=dropout)


@register_model("sage", task="node-classification")
def sage(in_feats=16, classes=2, hidden=16, dropout=0.5, aggregator="mean"):
    """Two-layer GraphSAGE node classifier (mean or pool aggregator); works on sampled blocks."""
    return NodeClassifier("sage", in_feats, classes, hidden, dropout=dropout, aggregator=aggregator)


@register_model("gin", task="graph-classification")
def gin(in_feats=1, classes=2, hidden=32, layers=2):
    """GIN graph classifier with sum readouts."""
    return GINClassifier(in_feats, classes, hidden, layers)


# the zoo's trained graph models: the architectures above bound to the embedded data they were
# trained on (the published checkpoints and their cards are in model_zoo/)
@register_model("gcn_sbm", task="node-classification")
def gcn_sbm(in_feats=16, classes=3, hidden=16, dropout=0.5):
    """GCN node classifier for the embedded stochastic-block-model graph (16 features, 3 blocks)."""
    return gcn(in_feats, classes, hidden, dropout)


@register_model("gat_sbm", task="node-classification")
def gat_sbm(in_feats=16, classes=3, hidden=16, heads=8, dropout=0.5):
    """GAT node classifier (8 heads x 16 hidden) for the embedded stochastic-block-model graph."""
    return gat(in_feats, classes, hidden, heads, dropout)


@register_model("gin_families", task="graph-classification")
def gin_families(in_feats=1, classes=4, hidden=32, layers=2):
    """GIN graph classifier for the embedded graph families (cycles, stars, grids, trees)."""
    return gin(in_feats, classes, hidden, layers)


# the zoo's link predictor registers where its recipe lives
from . import link_recipe as _link_recipe  # noqa: E402,F401
from . import hetero_recipe as _hetero_recipe  # noqa: E402,F401  (the zoo's R-GCN)
