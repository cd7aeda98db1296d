"""GNN layers with DGL's MXNet constructor arguments and ``forward(graph, feat, ...)``
(``dgl.nn.mxnet``): ``GraphConv``, ``GATConv``, ``SAGEConv``, ``GINConv``, ``SGConv``, ``TAGConv``,
``APPNPConv``, ``ChebConv``, ``AGNNConv``, ``GMMConv``, ``NNConv``, ``EdgeConv``,
``GatedGraphConv``, ``RelGraphConv``, ``HeteroGraphConv`` (a module per relation of a
heterograph, results aggregated per node type), the dense-adjacency ``DenseGraphConv``/
``DenseSAGEConv``/``DenseChebConv`` (``forward(adj, feat)``), the graph readouts ``SumPooling``/``AvgPooling``/
``MaxPooling``/``SortPooling``/``GlobalAttentionPooling``/``Set2Set``, ``edge_softmax`` and the
``Sequential`` container of graph layers. Every message-passing layer takes a graph or a block
(features of the source nodes, or a ``(src, dst)`` pair) except the typed-edge ones
(``GatedGraphConv``, ``RelGraphConv``), which take one node set."""
from .conv import (AGNNConv, APPNPConv, ChebConv, DenseChebConv, DenseGraphConv, DenseSAGEConv, EdgeConv, GATConv,
                   GatedGraphConv, GINConv, GMMConv, GraphConv, HeteroGraphConv, NNConv, RelGraphConv, SAGEConv,
                   SGConv, TAGConv)
from .glob import AvgPooling, GlobalAttentionPooling, MaxPooling, Set2Set, SortPooling, SumPooling
from .softmax import edge_softmax
from .utils import Sequential

__all__ = ["GraphConv", "GATConv", "SAGEConv", "GINConv", "SGConv", "TAGConv", "APPNPConv", "ChebConv", "AGNNConv",
           "GMMConv", "NNConv", "EdgeConv", "GatedGraphConv", "RelGraphConv", "DenseGraphConv", "DenseSAGEConv",
           "DenseChebConv", "HeteroGraphConv", "SumPooling", "AvgPooling", "MaxPooling", "SortPooling",
           "GlobalAttentionPooling", "Set2Set", "edge_softmax", "Sequential"]
