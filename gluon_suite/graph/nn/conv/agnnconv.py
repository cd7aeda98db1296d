"""Attention-based graph neural network layer (Thekumparampil et al., 2018), with
``dgl.nn.mxnet.AGNNConv``'s arguments."""
import mxnet as mx
from mxnet import gluon

from ... import function as fn
from ...ops import edge_softmax
from ..utils import check_in_degree, check_rows, expand_as_pair


def l2_normalize(x, eps=1e-12):
    """``x`` divided by the L2 norm of its last axis (norms below ``eps`` count as ``eps``). Rows
    of a 2-D ``x`` go through MXNet's one ``L2Normalization`` operator, x / sqrt(|x|^2 + eps^2)
    (the same to float32 precision; one output and one gradient instead of five of each)."""
    if x.ndim == 2:
        return mx.nd.L2Normalization(x, eps=eps * eps, mode="instance")
    norm = mx.nd.sqrt(mx.nd.sum(x * x, axis=-1, keepdims=True))
    return mx.nd.broadcast_div(x, mx.nd.maximum(norm, eps))


class AGNNConv(gluon.Block):
    """AGNN propagation, no weight matrix: h'_v = sum over edges u->v of p_uv h_u with
    p_uv = softmax over v's incoming edges of beta * cos(h_u, h_v). ``init_beta`` starts the
    scalar beta, learned when ``learn_beta``. The cosines are one fused ``u_dot_v`` of the
    L2-normalised features, the softmax one ``edge_softmax`` and the sum one ``u_mul_e``/``sum``.
    Nodes without incoming edges are refused unless ``allow_zero_in_degree=True``."""

    def __init__(self, init_beta=1.0, learn_beta=True, allow_zero_in_degree=False):
        super().__init__()
        self._allow_zero_in_degree = allow_zero_in_degree
        with self.name_scope():
            self.beta = self.params.get("beta", shape=(1,), grad_req="write" if learn_beta else "null",
                                        init=mx.init.Constant(init_beta))

    def set_allow_zero_in_degree(self, set_value):
        """Turn the zero-in-degree check off (True) or on (False)."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat):
        """Output (N_dst, *) for node features (N_src, *) or a (source, destination) pair; the
        cosine runs over the last axis."""
        check_in_degree(graph, self._allow_zero_in_degree, "AGNNConv")
        with graph.local_scope():
            feat_src, feat_dst = expand_as_pair(feat, graph)
            check_rows(graph, feat_src, "AGNNConv")
            graph.srcdata["h"] = feat_src
            graph.srcdata["n"] = l2_normalize(feat_src)
            if graph._two_sides:
                graph.dstdata["n"] = l2_normalize(feat_dst)
            graph.apply_edges(fn.u_dot_v("n", "n", "cos"))
            cos = graph.edata["cos"]
            beta = self.beta.data(feat_src.context).reshape((1,) * cos.ndim)
            logits = mx.nd.elemwise_mul(cos, mx.nd.broadcast_like(beta, cos))   # no generic broadcast backward
            graph.edata["p"] = edge_softmax(graph, logits)
            graph.update_all(fn.u_mul_e("h", "p", "m"), fn.sum("m", "h"))
            return graph.dstdata["h"]
