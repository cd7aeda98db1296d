"""Graph attention layer (Velickovic et al.), with ``dgl.nn.mxnet.GATConv``'s arguments, on the
fused attention operator."""
import math

import mxnet as mx
from mxnet import autograd
from mxnet.gluon import nn
from mxnet.gluon.contrib.nn import Identity

from ... import function as fn
from ...gat_attention import gat_attention
from ...ops import edge_softmax
from ..utils import apply_activation, check_in_degree, check_rows, maybe_dropout


def _xavier():
    return mx.init.Xavier(magnitude=math.sqrt(2.0))


class GATConv(nn.Block):
    """Multi-head graph attention: ft = W h split into heads; e_uv = LeakyReLU(a_l . ft_u +
    a_r . ft_v); a = edge softmax of e over v's incoming edges, attention dropout; h'_v = sum over
    u->v of a_uv ft_u (+ residual) (+ bias); output (N_dst, num_heads, out_feats).

    The attention step runs as one fused operator (``gat_attention``) equal to DGL's composition
    ``apply_edges(u_add_v)``, leaky ReLU, ``edge_softmax``, ``update_all(u_mul_e, sum)``; the two
    score projections are one dense product with a block-diagonal (2 * heads, heads * out_feats)
    matrix. ``forward(..., get_attention=True)`` runs the composition instead and returns the
    attention too. ``bias`` (default True, zero-initialised) is DGL's PyTorch layer's; DGL's
    MXNet layer has none. ``in_feats`` may be a (source, destination) pair for bipartite input."""

    def __init__(self, in_feats, out_feats, num_heads, feat_drop=0.0, attn_drop=0.0, negative_slope=0.2,
                 residual=False, activation=None, allow_zero_in_degree=False, bias=True):
        super().__init__()
        self._num_heads, self._out_feats, self._in_feats = num_heads, out_feats, in_feats
        self._in_src_feats, self._in_dst_feats = in_feats if isinstance(in_feats, tuple) else (in_feats, in_feats)
        self._slope, self._attn_rate, self._feat_rate = negative_slope, attn_drop, feat_drop
        self._allow_zero_in_degree, self.activation = allow_zero_in_degree, activation
        with self.name_scope():
            dense = lambda n: nn.Dense(out_feats * num_heads, use_bias=False,  # noqa: E731
                                       weight_initializer=_xavier(), in_units=n)
            if isinstance(in_feats, tuple):
                self.fc_src, self.fc_dst = dense(self._in_src_feats), dense(self._in_dst_feats)
            else:
                self.fc = dense(in_feats)
            self.attn_l = self.params.get("attn_l", shape=(1, num_heads, out_feats), init=_xavier())
            self.attn_r = self.params.get("attn_r", shape=(1, num_heads, out_feats), init=_xavier())
            self.feat_drop, self.attn_drop = nn.Dropout(feat_drop), nn.Dropout(attn_drop)
            # DGL's rule: an identity residual when in_feats == out_feats (it then broadcasts over heads)
            self.res_fc = None if not residual else \
                Identity() if self._in_dst_feats == out_feats else dense(self._in_dst_feats)
            self.bias = self.params.get("bias", shape=(num_heads * out_feats,), init="zeros") if bias else None

    def set_allow_zero_in_degree(self, set_value):
        """Turn the zero-in-degree check off (True) or on (False)."""
        self._allow_zero_in_degree = set_value

    def _scores(self, ft_src, ft_dst, num_dst):
        """``(el, er)``: (N_src, heads) and (N_dst, heads) sums over features of ft * attn_l and
        ft * attn_r, as dense products with block-diagonal matrices (MXNet's broadcast backward
        would reduce over N slowly); one product when both sides share the features."""
        H, F = self._num_heads, self._out_feats
        eye = mx.nd.eye(H, ctx=ft_src.context).reshape((H, H, 1))
        wl = mx.nd.broadcast_mul(eye, self.attn_l.data(ft_src.context)).reshape((H, H * F))
        wr = mx.nd.broadcast_mul(eye, self.attn_r.data(ft_src.context)).reshape((H, H * F))
        if ft_dst is None:
            elr = mx.nd.FullyConnected(ft_src.reshape((-1, H * F)), mx.nd.concat(wl, wr, dim=0), no_bias=True,
                                       num_hidden=2 * H)
            el = mx.nd.slice_axis(elr, axis=1, begin=0, end=H)
            er = mx.nd.slice_axis(elr, axis=1, begin=H, end=2 * H)
            return el, (er if num_dst == er.shape[0] else er[:num_dst])
        return (mx.nd.FullyConnected(ft_src.reshape((-1, H * F)), wl, no_bias=True, num_hidden=H),
                mx.nd.FullyConnected(ft_dst.reshape((-1, H * F)), wr, no_bias=True, num_hidden=H))

    def forward(self, graph, feat, get_attention=False):
        """Output (N_dst, num_heads, out_feats) for node features (N_src, in_feats) or a (source,
        destination) pair; with ``get_attention`` also the attention (E, num_heads, 1)."""
        check_in_degree(graph, self._allow_zero_in_degree, "GATConv")
        H, F, num_dst = self._num_heads, self._out_feats, graph.num_dst_nodes()
        if isinstance(feat, (tuple, list)):
            h_src, h_dst = (maybe_dropout(self.feat_drop, self._feat_rate, f) for f in feat)
            fc_src, fc_dst = (self.fc_src, self.fc_dst) if hasattr(self, "fc_src") else (self.fc, self.fc)
            ft_src, ft_dst = fc_src(h_src).reshape((-1, H, F)), fc_dst(h_dst).reshape((-1, H, F))
            el, er = self._scores(ft_src, ft_dst, num_dst)
        else:
            h_src = h_dst = maybe_dropout(self.feat_drop, self._feat_rate, feat)
            ft_src = self.fc(h_src).reshape((-1, H, F))
            if graph.is_block:
                h_dst = h_dst[:num_dst]
            ft_dst = None
            el, er = self._scores(ft_src, None, num_dst)
        check_rows(graph, ft_src, "GATConv")
        attention = None
        if get_attention:
            rst, attention = self._composed(graph, ft_src, el, er)
        else:
            mask = None
            if self._attn_rate > 0 and autograd.is_training():
                mask = self.attn_drop(mx.nd.ones((graph.num_edges(), H), ctx=ft_src.context))
            rst = gat_attention(graph._topo(), ft_src, el, er, self._slope, mask)
        if self.res_fc is not None:
            rst = mx.nd.broadcast_add(rst, self.res_fc(h_dst).reshape((num_dst, -1, F)))
        if self.bias is not None:
            rst = mx.nd.broadcast_add(rst, self.bias.data(rst.context).reshape((1, H, F)))
        rst = apply_activation(self.activation, rst)
        return (rst, attention) if get_attention else rst

    def _composed(self, graph, ft_src, el, er):
        """The attention step as DGL writes it with built-ins (also returns the attention)."""
        with graph.local_scope():
            graph.srcdata.update({"ft": ft_src, "el": el.expand_dims(-1)})
            graph.dstdata["er"] = er.expand_dims(-1)
            graph.apply_edges(fn.u_add_v("el", "er", "e"))
            e = mx.nd.LeakyReLU(graph.edata.pop("e"), slope=self._slope)
            graph.edata["a"] = self.attn_drop(edge_softmax(graph, e))
            graph.update_all(fn.u_mul_e("ft", "a", "m"), fn.sum("m", "ft"))
            return graph.dstdata["ft"], graph.edata["a"]
