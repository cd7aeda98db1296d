"""Functional message passing, as DGL's ``dgl.ops``: ``edge_softmax``, ``gspmm``/``gsddmm`` and
their named forms (``copy_u_sum``, ``u_mul_e_sum``, ``u_add_v``, ...), each one call on a graph and
tensors that leaves the graph's features alone.

The kernels behind them live in ``kernels`` (sparse products, segment reductions, edge softmax),
``gat_attention`` (GAT's fused attention step) and ``layout`` (topology, head layout); their names
stay importable from here.
"""
import itertools

import mxnet as mx
import numpy as np

from . import function as fn
from . import native
from .base import ALL, GraphError
from .gat_attention import gat_attention
from .kernels import edge_softmax_op, segment_max, segment_sum, spmm_e
from .layout import by_key, topology


def edge_softmax(graph, logits, eids=ALL, norm_by="dst"):
    """Softmax of per-edge ``logits`` (E, ...) over each node's incoming edges (``norm_by='dst'``)
    or outgoing edges (``'src'``): a[uv] = exp(s[uv]) / sum over edges w->v of exp(s[wv]).
    Differentiable; ``eids`` other than all edges is not supported."""
    if not (isinstance(eids, str) and eids == ALL):
        raise GraphError("edge_softmax over a subset of edges is not supported; pass logits for all edges")
    if logits.shape[0] != graph.num_edges():
        raise GraphError(f"edge_softmax got {logits.shape[0]} logits for {graph.num_edges()} edges; "
                         "give one row per edge")
    if norm_by not in ("dst", "src"):
        raise GraphError(f"edge_softmax(norm_by={norm_by!r}): choose 'dst' or 'src'")
    key = graph._topo() if norm_by == "dst" else graph._reverse_topo()
    if native.usable(logits):
        return native.edge_softmax(by_key(key).structure(logits.context), logits)
    return edge_softmax_op(key, logits)


def segment_reduce(seglen, value, reducer="sum"):
    """DGL's ``dgl.ops.segment_reduce``: rows of ``value`` (sum(seglen), ...) reduced in
    consecutive segments of ``seglen`` rows (a list, NumPy array or NDArray of lengths) by
    ``reducer`` (sum, mean, max, min) -> (len(seglen), ...); an empty segment gives 0.
    Differentiable w.r.t. ``value``; runs as a gSpMM over the segments (the compiled kernels
    when they can take ``value``)."""
    if reducer not in ("sum", "mean", "max", "min"):
        raise GraphError(f"segment_reduce(reducer={reducer!r}): choose sum, mean, max or min")
    lens = seglen.asnumpy() if isinstance(seglen, mx.nd.NDArray) else np.asarray(seglen)
    lens = lens.astype(np.int64).ravel()
    if (lens < 0).any() or lens.sum() != value.shape[0]:
        raise GraphError(f"segment_reduce: seglen must be non-negative and sum to value's {value.shape[0]} rows "
                         f"(they sum to {lens.sum()})")
    seg = np.repeat(np.arange(len(lens)), lens)
    t = topology(np.arange(len(seg)), seg, len(seg), len(lens))
    if native.usable(value):
        return native.gspmm(t.structure(value.context), "copy_rhs", reducer, None, value)
    red = "sum" if reducer == "mean" else reducer
    if red == "sum":
        out = segment_sum(t.key, value)
    else:
        out = segment_max(t.key, value) if red == "max" else -segment_max(t.key, -value)
    if reducer == "mean":
        inv = mx.nd.array(1.0 / np.maximum(lens, 1), ctx=value.context).reshape((-1,) + (1,) * (value.ndim - 1))
        out = mx.nd.broadcast_mul(out, inv)
    return out


_SPMM_OPS = ("add", "sub", "mul", "div", "copy_lhs", "copy_rhs")


def gspmm(g, op, reduce_op, lhs_data, rhs_data):
    """Generalised sparse-dense product, as ``dgl.ops.gspmm``: message ``op`` (add, sub, mul, div
    of source features ``lhs_data`` and edge features ``rhs_data``, or copy_lhs / copy_rhs) reduced
    by ``reduce_op`` (sum, mean, max, min) at each destination."""
    if op not in _SPMM_OPS or reduce_op not in ("sum", "mean", "max", "min"):
        raise GraphError(f"gspmm(op={op!r}, reduce_op={reduce_op!r}): op is one of {', '.join(_SPMM_OPS)}, "
                         "reduce_op one of sum, mean, max, min")
    with g.local_scope():
        if op != "copy_rhs":
            g.srcdata["_l"] = lhs_data
        if op != "copy_lhs":
            g.edata["_r"] = rhs_data
        msg = fn.copy_u("_l", "_m") if op == "copy_lhs" else fn.copy_e("_r", "_m") if op == "copy_rhs" \
            else getattr(fn, f"u_{op}_e")("_l", "_r", "_m")
        g.update_all(msg, getattr(fn, reduce_op)("_m", "_out"))
        return g.dstdata["_out"]


def gsddmm(g, op, lhs_data, rhs_data, lhs_target="u", rhs_target="v"):
    """Generalised sampled dense-dense product, as ``dgl.ops.gsddmm``: per-edge ``op`` (add, sub,
    mul, div, dot, copy_lhs, copy_rhs) of ``lhs_data`` on ``lhs_target`` and ``rhs_data`` on
    ``rhs_target`` (u: source nodes, v: destination nodes, e: edges)."""
    if lhs_target not in "uve" or rhs_target not in "uve" or len(lhs_target + rhs_target) != 2:
        raise GraphError("gsddmm targets are 'u', 'v' or 'e'")
    with g.local_scope():
        for name, target, data in (("_l", lhs_target, lhs_data), ("_r", rhs_target, rhs_data)):
            if data is not None and not (op == "copy_lhs" and name == "_r") and not (op == "copy_rhs" and name == "_l"):
                g._frame(target)[name] = data
        if op in ("copy_lhs", "copy_rhs"):
            target, name = (lhs_target, "_l") if op == "copy_lhs" else (rhs_target, "_r")
            g.apply_edges(getattr(fn, f"copy_{target}")(name, "_out"))
        elif op in ("add", "sub", "mul", "div", "dot") and lhs_target != rhs_target:
            g.apply_edges(getattr(fn, f"{lhs_target}_{op}_{rhs_target}")("_l", "_r", "_out"))
        else:
            raise GraphError(f"gsddmm(op={op!r}) on {lhs_target}/{rhs_target}: op is add, sub, mul, div, dot, "
                             "copy_lhs or copy_rhs and the two targets differ")
        return g.edata["_out"]


def _named_spmm(name, op, reduce_op):
    def f(g, *data):
        lhs, rhs = (data[0], None) if op == "copy_lhs" else (None, data[0]) if op == "copy_rhs" else data
        return gspmm(g, op, reduce_op, lhs, rhs)
    f.__name__ = name
    f.__doc__ = f"``gspmm(g, {op!r}, {reduce_op!r}, ...)``: DGL's ``dgl.ops.{name}``."
    return f


def _named_sddmm(name, lhs, op, rhs):
    def f(g, lhs_data, rhs_data):
        return gsddmm(g, op, lhs_data, rhs_data, lhs, rhs)
    f.__name__ = name
    f.__doc__ = f"``gsddmm(g, {op!r}, lhs, rhs, {lhs!r}, {rhs!r})``: DGL's ``dgl.ops.{name}``."
    return f


_NAMED = {}
for _red in ("sum", "mean", "max", "min"):
    _NAMED[f"copy_u_{_red}"] = _named_spmm(f"copy_u_{_red}", "copy_lhs", _red)
    _NAMED[f"copy_e_{_red}"] = _named_spmm(f"copy_e_{_red}", "copy_rhs", _red)
    for _op in ("add", "sub", "mul", "div"):
        _NAMED[f"u_{_op}_e_{_red}"] = _named_spmm(f"u_{_op}_e_{_red}", _op, _red)
for _l, _r in itertools.permutations("uve", 2):
    for _op in ("add", "sub", "mul", "div", "dot"):
        _NAMED[f"{_l}_{_op}_{_r}"] = _named_sddmm(f"{_l}_{_op}_{_r}", _l, _op, _r)
globals().update(_NAMED)

__all__ = ["edge_softmax", "segment_reduce", "gspmm", "gsddmm", "gat_attention", "spmm_e", "segment_max", "segment_sum",
           "edge_softmax_op", "topology"] + list(_NAMED)
