"""Graph convolutions (``dgl.nn.mxnet.conv``)."""
from .agnnconv import AGNNConv
from .dense import DenseChebConv, DenseGraphConv, DenseSAGEConv
from .edgeconv import EdgeConv
from .edgeweight import GMMConv, NNConv
from .gatconv import GATConv
from .ginconv import GINConv
from .graphconv import GraphConv
from .hetero import HeteroGraphConv
from .propagation import APPNPConv, ChebConv, SGConv, TAGConv
from .relational import GatedGraphConv, RelGraphConv
from .sageconv import SAGEConv

__all__ = ["GraphConv", "GATConv", "SAGEConv", "GINConv", "SGConv", "TAGConv", "APPNPConv", "ChebConv", "AGNNConv",
           "GMMConv", "NNConv", "EdgeConv", "GatedGraphConv", "RelGraphConv", "DenseGraphConv", "DenseSAGEConv",
           "DenseChebConv", "HeteroGraphConv"]
