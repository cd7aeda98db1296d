"""GNN layers with DGL's MXNet constructor arguments and ``forward(graph, feat)``
(``dgl.nn.mxnet``): ``GraphConv``, ``GATConv``, ``SAGEConv``, ``GINConv``, ``SGConv``, ``TAGConv``,
``APPNPConv``, ``ChebConv``, the graph readouts
``SumPooling``/``AvgPooling``/``MaxPooling`` and ``edge_softmax``. Every layer takes a graph or a
block (features of the source nodes, or a ``(src, dst)`` pair)."""
from .conv import APPNPConv, ChebConv, GATConv, GINConv, GraphConv, SAGEConv, SGConv, TAGConv
from .glob import AvgPooling, MaxPooling, SumPooling
from .softmax import edge_softmax

__all__ = ["GraphConv", "GATConv", "SAGEConv", "GINConv", "SGConv", "TAGConv", "APPNPConv", "ChebConv",
           "SumPooling", "AvgPooling", "MaxPooling", "edge_softmax"]
