# Ported from DGL's examples/mxnet/gcn/gcn.py (https://github.com/dmlc/dgl, Apache-2.0,
# Copyright the DGL team; see LICENSE in this folder): commit 3d16000b41,
# git blob 7d994120937a5b3e2dc570df4d1751cdf6231fb4.
# Changes: import lines and dataset loading, as `diff -U0 <DGL's file> <this file below the header>`:
#   @@ -8 +8 @@
#   -import dgl
#   +import gluon_suite.graph as dgl
#   @@ -10 +10 @@
#   -from dgl.nn.mxnet import GraphConv
#   +from gluon_suite.graph.nn import GraphConv
# ---- end of port header; DGL's file follows ----
"""GCN using DGL nn package

References:
- Semi-Supervised Classification with Graph Convolutional Networks
- Paper: https://arxiv.org/abs/1609.02907
- Code: https://github.com/tkipf/gcn
"""
import gluon_suite.graph as dgl
import mxnet as mx
from gluon_suite.graph.nn import GraphConv
from mxnet import gluon


class GCN(gluon.Block):
    def __init__(
        self, g, in_feats, n_hidden, n_classes, n_layers, activation, dropout
    ):
        super(GCN, self).__init__()
        self.g = g
        self.layers = gluon.nn.Sequential()
        # input layer
        self.layers.add(GraphConv(in_feats, n_hidden, activation=activation))
        # hidden layers
        for i in range(n_layers - 1):
            self.layers.add(
                GraphConv(n_hidden, n_hidden, activation=activation)
            )
        # output layer
        self.layers.add(GraphConv(n_hidden, n_classes))
        self.dropout = gluon.nn.Dropout(rate=dropout)

    def forward(self, features):
        h = features
        for i, layer in enumerate(self.layers):
            if i != 0:
                h = self.dropout(h)
            h = layer(self.g, h)
        return h
