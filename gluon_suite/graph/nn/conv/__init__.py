"""Graph convolutions (``dgl.nn.mxnet.conv``)."""
from .gatconv import GATConv
from .ginconv import GINConv
from .graphconv import GraphConv
from .sageconv import SAGEConv

__all__ = ["GraphConv", "GATConv", "SAGEConv", "GINConv"]
