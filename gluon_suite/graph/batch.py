"""Batching many small graphs into one block-diagonal graph, and per-graph readouts."""
import mxnet as mx
import numpy as np

from . import ops
from .graph import Graph, GraphError


def batch(graphs):
    """One graph holding ``graphs`` side by side (node ids offset); features present in every
    graph are concatenated. ``unbatch`` reverses it; readouts reduce per graph."""
    if not graphs:
        raise GraphError("batch needs at least one graph")
    offs = np.cumsum([0] + [g.num_nodes() for g in graphs])
    src = np.concatenate([g._src + o for g, o in zip(graphs, offs)])
    dst = np.concatenate([g._dst + o for g, o in zip(graphs, offs)])
    bg = Graph((src, dst), num_nodes=int(offs[-1]))
    for attr, frame in (("ndata", bg.ndata), ("edata", bg.edata)):
        keys = set.intersection(*(set(getattr(g, attr)) for g in graphs))
        for k in sorted(keys):
            frame[k] = mx.nd.concat(*[getattr(g, attr)[k] for g in graphs], dim=0)
    bg.batch_num_nodes = [g.num_nodes() for g in graphs]
    bg.batch_num_edges = [g.num_edges() for g in graphs]
    return bg


def unbatch(bg):
    """The graphs that ``batch`` put together, with their features."""
    nn_, ne = getattr(bg, "batch_num_nodes", [bg.num_nodes()]), getattr(bg, "batch_num_edges", [bg.num_edges()])
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
    sizes = getattr(bg, "batch_num_nodes", [bg.num_nodes()])
    topo = bg._cache.get("readout")
    if topo is None:
        gid = np.repeat(np.arange(len(sizes)), sizes)
        topo = bg._cache["readout"] = ops.topology(np.arange(bg.num_nodes()), gid, bg.num_nodes(), len(sizes))
    return topo.key, np.asarray(sizes, np.float32)


def readout_nodes(bg, feat, op="sum"):
    """Per-graph ``sum``, ``mean`` or ``max`` of node feature ``feat`` (a name or an NDArray)."""
    x = bg.ndata[feat] if isinstance(feat, str) else feat
    key, sizes = _graph_topology(bg)
    if op == "max":
        return ops.segment_max(key, x)
    out = ops.segment_sum(key, x)
    if op == "mean":
        out = mx.nd.broadcast_div(out, mx.nd.array(np.maximum(sizes, 1)).reshape((-1,) + (1,) * (x.ndim - 1)))
    elif op != "sum":
        raise GraphError(f"unknown readout {op!r}; choose sum, mean or max")
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
