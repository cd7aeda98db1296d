"""GIN layer (Xu et al., How Powerful are Graph Neural Networks), with
``dgl.nn.mxnet.GINConv``'s arguments."""
import mxnet as mx
from mxnet import gluon

from ... import function as fn
from ...base import GraphError
from ..utils import check_rows, expand_as_pair


class GINConv(gluon.Block):
    """h'_v = f((1 + eps) h_v + agg over edges u->v of h_u), agg = ``aggregator_type`` (sum, max
    or mean; a node without incoming edges aggregates 0), f = ``apply_func`` (e.g. an MLP; None
    for identity), eps starting at ``init_eps`` and learned with ``learn_eps``."""

    def __init__(self, apply_func, aggregator_type, init_eps=0, learn_eps=False):
        super().__init__()
        if aggregator_type not in ("sum", "max", "mean"):
            raise GraphError(f"GINConv(aggregator_type={aggregator_type!r}): choose 'sum', 'max' or 'mean'")
        self._reducer = getattr(fn, aggregator_type)
        with self.name_scope():
            self.apply_func = apply_func
            self.eps = self.params.get("eps", shape=(1,), grad_req="write" if learn_eps else "null",
                                       init=mx.init.Constant(init_eps))

    def forward(self, graph, feat):
        """Output for node features (N_src, *) or a (source, destination) pair: (N_dst, *) before
        ``apply_func``."""
        with graph.local_scope():
            feat_src, feat_dst = expand_as_pair(feat, graph)
            check_rows(graph, feat_src, "GINConv")
            graph.srcdata["h"] = feat_src
            graph.update_all(fn.copy_u("h", "m"), self._reducer("m", "neigh"))
            # (1 + eps) spread to feat_dst's shape and multiplied element-wise: MXNet's broadcast_mul
            # backward runs a generic reduction that costs 4x the forward on (N, F) features
            scale = (1 + self.eps.data(feat_dst.context)).reshape((1,) * feat_dst.ndim)
            self_part = mx.nd.elemwise_mul(feat_dst, mx.nd.broadcast_like(scale, feat_dst))
            rst = mx.nd.elemwise_add(self_part, graph.dstdata["neigh"])
            return self.apply_func(rst) if self.apply_func is not None else rst
