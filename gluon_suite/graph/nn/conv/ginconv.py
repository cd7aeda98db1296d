"""GIN layer (Xu et al., How Powerful are Graph Neural Networks), with
``dgl.nn.mxnet.GINConv``'s arguments."""
import mxnet as mx
from mxnet import gluon

from ... import function as fn
from ... import native
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
        self._aggregator_type, self._learn_eps = aggregator_type, learn_eps
        with self.name_scope():
            self.apply_func = apply_func
            self.eps = self.params.get("eps", shape=(1,), grad_req="write" if learn_eps else "null",
                                       init=mx.init.Constant(init_eps))

    def _narrowing_dense(self, feat):
        """``apply_func`` when it is a gluon ``nn.Dense`` with a known weight that maps 2-D
        features to fewer columns (so the product can run before the sum), else None."""
        f = self.apply_func
        if not isinstance(f, gluon.nn.Dense) or feat.ndim != 2:
            return None
        shape = f.weight.shape
        if not shape or 0 in shape or shape[1] != feat.shape[1] or shape[0] >= shape[1]:
            return None
        return f

    def forward(self, graph, feat):
        """Output for node features (N_src, *) or a (source, destination) pair: (N_dst, *) before
        ``apply_func``."""
        with graph.local_scope():
            feat_src, feat_dst = expand_as_pair(feat, graph)
            check_rows(graph, feat_src, "GINConv")
            ctx = feat_src.context
            if (self._aggregator_type != "max" and not isinstance(feat, (tuple, list))
                    and native.usable(feat_src) and graph.num_edges() > 0):
                # one operator: (1 + eps) h_v (the destination nodes are feat's first rows) plus
                # the neighbours' sum, or their mean as the sum scaled by 1/in-degree
                right = (graph._degree_power("in", -1.0, ctx).reshape((-1,))
                         if self._aggregator_type == "mean" else None)
                dense = self._narrowing_dense(feat_src)
                if dense is not None:
                    # f is a narrowing linear layer: W((1 + eps) h_v + agg h_u) + b =
                    # (1 + eps) W h_v + agg W h_u + b, so the product comes first and the sum runs
                    # over the narrower rows, the bias added inside it
                    h = mx.nd.FullyConnected(feat_src, dense.weight.data(ctx), no_bias=True,
                                             num_hidden=dense.weight.shape[0])
                    b = dense.bias.data(ctx) if dense.bias is not None else None
                    rst = native.scaled_sum(graph._structure(ctx), h, None, right, b, scale_grad=False,
                                            self_scale=1 + self.eps.data(ctx), self_grad=self._learn_eps)
                    return dense.act(rst) if dense.act is not None else rst
                rst = native.scaled_sum(graph._structure(ctx), feat_src, None, right, None, scale_grad=False,
                                        self_scale=1 + self.eps.data(ctx), self_grad=self._learn_eps)
                return self.apply_func(rst) if self.apply_func is not None else rst
            graph.srcdata["h"] = feat_src
            graph.update_all(fn.copy_u("h", "m"), self._reducer("m", "neigh"))
            # (1 + eps) spread to feat_dst's shape and multiplied element-wise: MXNet's broadcast_mul
            # backward runs a generic reduction that costs 4x the forward on (N, F) features
            scale = (1 + self.eps.data(feat_dst.context)).reshape((1,) * feat_dst.ndim)
            self_part = mx.nd.elemwise_mul(feat_dst, mx.nd.broadcast_like(scale, feat_dst))
            rst = mx.nd.elemwise_add(self_part, graph.dstdata["neigh"])
            return self.apply_func(rst) if self.apply_func is not None else rst
