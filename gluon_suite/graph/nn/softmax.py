"""``edge_softmax`` where DGL's MXNet layers find it (``dgl.nn.mxnet.softmax``)."""
from ..ops import edge_softmax

__all__ = ["edge_softmax"]
