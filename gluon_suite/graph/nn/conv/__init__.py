"""Graph convolutions (``dgl.nn.mxnet.conv``)."""
from .gatconv import GATConv
from .ginconv import GINConv
from .graphconv import GraphConv
from .propagation import APPNPConv, ChebConv, SGConv, TAGConv
from .sageconv import SAGEConv

__all__ = ["GraphConv", "GATConv", "SAGEConv", "GINConv", "SGConv", "TAGConv", "APPNPConv", "ChebConv"]
