"""Graph-level readouts (``dgl.nn.mxnet.glob``): one row per graph of a batch."""
from mxnet import gluon

from ..readout import _readout, _view


class _Pooling(gluon.Block):
    _op = "sum"

    def forward(self, graph, feat):
        """(graphs in the batch, ...) readout of node features ``feat`` (N, ...)."""
        return _readout(_view(graph, "nodes", None)[1], "nodes", feat, self._op)


class SumPooling(_Pooling):
    """Sum of the node features of each graph of a batch."""
    _op = "sum"


class AvgPooling(_Pooling):
    """Mean of the node features of each graph of a batch."""
    _op = "mean"


class MaxPooling(_Pooling):
    """Element-wise max of the node features of each graph of a batch."""
    _op = "max"


from .pooling import GlobalAttentionPooling, Set2Set, SortPooling  # noqa: E402 - DGL keeps them in glob too
