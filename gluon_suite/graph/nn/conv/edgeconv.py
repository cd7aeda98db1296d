"""EdgeConv (Wang et al., Dynamic Graph CNN for Learning on Point Clouds), with
``dgl.nn.mxnet.EdgeConv``'s arguments."""
import mxnet as mx
from mxnet.gluon import nn

from ... import function as fn
from ..utils import check_in_degree, check_rows, expand_as_pair


class EdgeConv(nn.Block):
    """h'_v = max over edges u->v of (Theta (h_u - h_v) + Phi h_v), Theta and Phi dense layers
    with bias (``theta``, ``phi``), ``in_feat`` -> ``out_feat``; the paper's ReLU inside the max
    equals one applied afterwards. ``batch_norm=True`` normalises the per-edge values before the
    max.

    Theta is linear, so the edge value splits into a source part W_t h_u and a destination part
    Phi h_v - W_t h_v + b_t: without batch norm the layer is one fused ``copy_u``/``max`` of the
    projected source features plus the destination part (for nodes with an incoming edge; the
    others read 0, as the max over no edges does); with batch norm the edge values are one fused
    ``u_add_v``, normalised, then reduced with ``copy_e``/``max``. No (edges x in_feat) tensor is
    formed either way. The products are ``FullyConnected`` (oneDNN), the destination part one of
    them with the weight Phi - W_t. Nodes without incoming edges are refused unless
    ``allow_zero_in_degree=True``."""

    def __init__(self, in_feat, out_feat, batch_norm=False, allow_zero_in_degree=False):
        super().__init__()
        self.batch_norm = batch_norm
        self._allow_zero_in_degree = allow_zero_in_degree
        with self.name_scope():
            self.theta = nn.Dense(out_feat, in_units=in_feat, weight_initializer=mx.init.Xavier())
            self.phi = nn.Dense(out_feat, in_units=in_feat, weight_initializer=mx.init.Xavier())
            if batch_norm:
                self.bn = nn.BatchNorm(in_channels=out_feat)

    def set_allow_zero_in_degree(self, set_value):
        """Turn the zero-in-degree check off (True) or on (False)."""
        self._allow_zero_in_degree = set_value

    def forward(self, g, h):
        """Output (N_dst, out_feat) for node features (N_src, in_feat) or a (source, destination) pair."""
        check_in_degree(g, self._allow_zero_in_degree, "EdgeConv")
        with g.local_scope():
            h_src, h_dst = expand_as_pair(h, g)
            check_rows(g, h_src, "EdgeConv")
            ctx = h_src.context
            w_t, b_t = self.theta.weight.data(ctx), self.theta.bias.data(ctx)
            w_p, b_p = self.phi.weight.data(ctx), self.phi.bias.data(ctx)
            units = w_t.shape[0]
            g.srcdata["x"] = mx.nd.FullyConnected(h_src, w_t, no_bias=True, num_hidden=units)
            # Phi h_v - W_t h_v + b_t as one product with the difference of the weights
            dst_part = mx.nd.FullyConnected(h_dst, w_p - w_t, b_p + b_t, num_hidden=units)
            if not self.batch_norm:
                g.update_all(fn.copy_u("x", "m"), fn.max("m", "x"))
                if not g.has_zero_in_degree():
                    return mx.nd.elemwise_add(g.dstdata["x"], dst_part)
                return g.dstdata["x"] + mx.nd.broadcast_mul(dst_part, _has_in_edge(g, ctx))
            g.dstdata["y"] = dst_part
            g.apply_edges(fn.u_add_v("x", "y", "e"))
            g.edata["e"] = self.bn(g.edata["e"])
            g.update_all(fn.copy_e("e", "m"), fn.max("m", "x"))
            return g.dstdata["x"]


def _has_in_edge(graph, ctx):
    """(N_dst, 1): 1 for destination nodes with an incoming edge, else 0; built once per graph."""
    return graph._get(("has_in_edge", str(ctx)), lambda: mx.nd.array(
        (graph._degrees("in") > 0).astype("float32").reshape(-1, 1), ctx=ctx))
