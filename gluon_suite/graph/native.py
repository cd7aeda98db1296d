"""The compiled message-passing kernels: an MXNet operator library (``csrc/graph_kernels.cc``,
built by ``make kernels``, which ``make setup`` runs) loaded once, when this module is imported.

Operators (forward and backward, OpenMP over rows, float32 features, int32 or int64 structure):

- ``gspmm``: out[v] = reduce over edges u->v of op(lhs[u], rhs[e]), op one of add, sub, mul, div,
  copy_lhs, copy_rhs, reduce one of sum, mean, max, min (0 for a node without incoming edges);
  the gradient of max/min goes to the first edge reaching the extreme.
- ``gsddmm``: out[e] = op(lhs[t_l(e)], rhs[t_r(e)]) for targets u (source), v (destination),
  e (edge), op one of add, sub, mul, div, dot (summed over the last axis), copy_lhs, copy_rhs;
  with ``same=1`` one array is both operands (targets u and v) and gets one gradient.
- ``edge_softmax``: a[e] = exp(s[e]) / sum over the edges w->v of exp(s[w->v]).
- ``scaled_sum``: out[v] = r[v] * sum over edges u->v of l[u] x[u] + b + c x[v], each of l, r,
  b, c optional: GraphConv's aggregation with its degree normalisation and bias inside the
  operator, GINConv's (1 + eps) x[v] + sum, and (``halves``) SAGEConv's self and neighbour parts
  from one product.
- ``gat_attention``: GAT's scores, leaky ReLU, edge softmax, dropout mask and weighted sum in one
  operator whose backward recomputes the attention from the scores.

Feature shapes broadcast as the graph package's messages do: the lower-rank side gets trailing
1s. The graph's structure reaches the operators as eight index tensors built once per graph,
context and id type (``layout._Topology.structure``), so nothing leaves the device.

When the library was not built (no compiler), is older than its sources or does not load, one
line on stderr says so and the package keeps its Python kernels. ``GLUON_SUITE_GRAPH_KERNELS``
names another library file, or ``off`` to use the Python kernels without a word; a file it names
must exist (``gluon_suite.utils.env``: a path that names no file is a one-line UserError).
"""
import os
import sys

import mxnet as mx
import numpy as np

from ..utils.env import env
from ..utils.native_lib import load_library

_PKG = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_PKG))
DEFAULT_PATH = os.path.join(_ROOT, "build", "graph_kernels", "libgs_graph_kernels.so")
_SOURCES = os.path.join(_PKG, "csrc")

LOADED = False          # whether the compiled operators are registered with MXNet
REASON = ""             # why not, when they are not


def _load():
    global LOADED, REASON
    setting = env("GLUON_SUITE_GRAPH_KERNELS")   # None (the built library), "off" or an existing file
    LOADED, REASON, notify = load_library(setting, "GLUON_SUITE_GRAPH_KERNELS", DEFAULT_PATH, _SOURCES,
                                          "gs_gspmm", "graph")
    if notify:
        sys.stderr.write(f"gluon_suite.graph: compiled kernels unavailable, using the Python kernels: {REASON}\n")


_load()


def usable(*arrays):
    """Whether the compiled kernels can run on these arrays: loaded, CPU context, float32."""
    if not LOADED:
        return False
    for a in arrays:
        if a is not None and (a.context.device_type != "cpu" or a.dtype != np.float32):
            return False
    return True


_PLACEHOLDERS = {}


def _placeholder(ctx):
    """The one-element stand-in for the unused operand of a copy (its gradient is zero)."""
    key = str(ctx)
    if key not in _PLACEHOLDERS:
        _PLACEHOLDERS[key] = mx.nd.zeros((1,), ctx=ctx)
    return _PLACEHOLDERS[key]


def gspmm(structure, op, reduce_op, lhs, rhs):
    """``reduce_op`` over each destination's incoming edges of ``op(lhs[src], rhs[edge])``;
    ``lhs`` (N_src, ...) or None for copy_rhs, ``rhs`` (E, ...) or None for copy_lhs ->
    (N_dst, broadcast feature shape)."""
    ctx = (lhs if lhs is not None else rhs).context
    lhs = lhs if lhs is not None else _placeholder(ctx)
    rhs = rhs if rhs is not None else _placeholder(ctx)
    return mx.nd.gs_gspmm(lhs, rhs, *structure, op=op, reduce=reduce_op)


def gsddmm(structure, op, lhs, rhs, lhs_target="u", rhs_target="v"):
    """``op(lhs[t_l(e)], rhs[t_r(e)])`` for every edge e -> (E, broadcast feature shape), the
    last axis kept as 1 for ``dot``."""
    ctx = (lhs if lhs is not None else rhs).context
    if lhs is rhs and {lhs_target, rhs_target} == {"u", "v"}:
        # one array on both sides (a homogeneous graph's u_dot_v('h', 'h')): the operator reads it
        # once and gives it one gradient, the two sides' sum, instead of two for autograd to add
        return mx.nd.gs_gsddmm(lhs, _placeholder(ctx), *structure, op=op, lhs_target=lhs_target,
                               rhs_target=rhs_target, same="1")
    lhs = lhs if lhs is not None else _placeholder(ctx)
    rhs = rhs if rhs is not None else _placeholder(ctx)
    return mx.nd.gs_gsddmm(lhs, rhs, *structure, op=op, lhs_target=lhs_target, rhs_target=rhs_target)


def edge_softmax(structure, scores):
    """Softmax of ``scores`` (E, ...) over each destination's incoming edges, per trailing element."""
    return mx.nd.gs_edge_softmax(scores, *structure)


def gat_attention(structure, x, el, er, negative_slope, mask=None):
    """GAT's attention step: x (N_src, H, F), el (N_src, H), er (N_dst, H), mask (E, H) or None
    -> (N_dst, H, F)."""
    m = mask if mask is not None else _placeholder(x.context)
    return mx.nd.gs_gat_attention(x, el, er, m, *structure, slope=repr(float(negative_slope)),
                                  masked="1" if mask is not None else "0")


def scaled_sum(structure, x, left=None, right=None, bias=None, scale_grad=True, self_scale=None,
               self_grad=True, halves=False):
    """``right[v] * sum over edges u->v of left[u] * x[u] + bias + self_scale * x[v]``: x
    (N_src, ...), left (N_src,) or None, right (N_dst,) or None, bias (B,) or None with B dividing
    the row length (repeated along it), self_scale (1,) or None -> (N_dst, ...); the self term
    reads the first N_dst rows of x, a block's destination nodes. ``halves=True``: x is (N_src,
    2 L), each row [self part | neighbour part]; the sum runs over the neighbour parts and the self
    term (self_scale, or 1 without it) reads the self parts: (N_dst, L). Differentiable in all five;
    ``scale_grad=False`` declares left and right constants (a graph's degree normalisers) and
    ``self_grad=False`` self_scale, whose gradients are then zero and cost nothing (MXNet computes
    every input's gradient an operator offers)."""
    ph = _placeholder(x.context)
    return mx.nd.gs_scaled_sum(x, left if left is not None else ph, right if right is not None else ph,
                               bias if bias is not None else ph, self_scale if self_scale is not None else ph,
                               *structure, left=str(int(left is not None)),
                               right=str(int(right is not None)), bias=str(int(bias is not None)),
                               self=str(int(self_scale is not None)), scale_grad=str(int(bool(scale_grad))),
                               self_grad=str(int(bool(self_grad))), halves=str(int(bool(halves))))
