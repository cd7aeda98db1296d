"""Batching many small graphs into one block-diagonal graph, and per-graph readouts (DGL's
``dgl.batch``, ``dgl.unbatch``, ``dgl.sum_nodes`` & co.)."""
import mxnet as mx
import numpy as np

from .base import ALL, GraphError
from .digraph import Graph
from .kernels import segment_max, segment_sum
from .layout import topology


def batch(graphs, ndata=ALL, edata=ALL):
    """One graph holding ``graphs`` side by side (node ids offset). Features are concatenated:
    ``ndata``/``edata`` name which (default: those present in every graph; DGL instead requires
    every graph to have the same ones). ``unbatch`` reverses it; readouts reduce per graph."""
    graphs = list(graphs)
    if not graphs:
        raise GraphError("batch needs at least one graph")
    offs = np.cumsum([0] + [g.num_nodes() for g in graphs])
    src = np.concatenate([g._src + o for g, o in zip(graphs, offs)])
    dst = np.concatenate([g._dst + o for g, o in zip(graphs, offs)])
    bg = Graph((src, dst), num_nodes=int(offs[-1]))
    for attr, names in (("ndata", ndata), ("edata", edata)):
        common = set.intersection(*(set(getattr(g, attr)) for g in graphs))
        keys = sorted(common) if isinstance(names, str) and names == ALL else list(names or [])
        for k in keys:
            if k not in common:
                raise GraphError(f"batch: {attr}[{k!r}] is missing from some of the graphs")
            getattr(bg, attr)[k] = mx.nd.concat(*[getattr(g, attr)[k] for g in graphs], dim=0)
    bg._batch_num_nodes = sum((g._batch_sizes()[0] for g in graphs), [])
    bg._batch_num_edges = sum((g._batch_sizes()[1] for g in graphs), [])
    return bg


def unbatch(bg):
    """The graphs that ``batch`` put together, with their features."""
    nn_, ne = bg._batch_sizes()
    noff, eoff = np.cumsum([0] + nn_), np.cumsum([0] + ne)
    out = []
    for i in range(len(nn_)):
        s, d = bg._src[eoff[i]:eoff[i + 1]] - noff[i], bg._dst[eoff[i]:eoff[i + 1]] - noff[i]
        g = Graph((s, d), num_nodes=nn_[i])
        for k, v in bg.ndata.items():
            g.ndata[k] = v[int(noff[i]):int(noff[i + 1])]
        for k, v in bg.edata.items():
            g.edata[k] = v[int(eoff[i]):int(eoff[i + 1])]
        out.append(g)
    return out


def _graph_topology(bg):
    sizes = bg._batch_sizes()[0]

    def build():
        gid = np.repeat(np.arange(len(sizes)), sizes)
        return topology(np.arange(bg.num_nodes()), gid, bg.num_nodes(), len(sizes))
    return bg._get("readout", build).key, np.asarray(sizes, np.float32)


def readout_nodes(bg, feat, op="sum"):
    """Per-graph ``sum``, ``mean`` or ``max`` of node feature ``feat`` (a name or an NDArray);
    an empty graph reads 0."""
    x = bg.ndata[feat] if isinstance(feat, str) else feat
    if op not in ("sum", "mean", "max"):
        raise GraphError(f"unknown readout {op!r}; choose sum, mean or max")
    key, sizes = _graph_topology(bg)
    if op == "max":
        return segment_max(key, x)
    out = segment_sum(key, x)
    if op == "mean":
        out = mx.nd.broadcast_div(out, mx.nd.array(np.maximum(sizes, 1), ctx=out.context).reshape(
            (-1,) + (1,) * (x.ndim - 1)))
    return out


def sum_nodes(bg, feat):
    """Per-graph sum of a node feature."""
    return readout_nodes(bg, feat, "sum")


def mean_nodes(bg, feat):
    """Per-graph mean of a node feature."""
    return readout_nodes(bg, feat, "mean")


def max_nodes(bg, feat):
    """Per-graph max of a node feature."""
    return readout_nodes(bg, feat, "max")
