"""DGL's per-node and per-edge graph methods that take a user function or return neighbours:
``g.apply_nodes``, ``g.filter_nodes``, ``g.filter_edges``, ``g.predecessors`` and
``g.successors``, on graphs, bipartite graphs, blocks (the destination nodes) and heterographs
(``ntype=`` / ``etype=``).

- ``apply_nodes(func, v=ALL, ntype=None)``: ``func`` gets a ``NodeBatch`` of the nodes ``v``
  (``nodes.data``, ``nodes.nodes()``) and returns ``{name: tensor}`` with one row per node; for
  all nodes each tensor becomes the feature, for some nodes it is written into their rows (a new
  feature is zero on the other rows). Written for all nodes, the result keeps its autograd
  history; written into some rows, it does not (an in-place row update).
- ``filter_nodes(predicate, nodes=ALL, ntype=None)`` / ``filter_edges(predicate, edges=ALL,
  etype=None)``: the ids (of the graph's id type, on its context, in increasing order) for which
  ``predicate`` (a function of a ``NodeBatch`` / ``EdgeBatch`` returning one boolean or 0/1 per
  node / edge) is true.
- ``predecessors(v, etype=None)`` / ``successors(v, etype=None)``: the sources of ``v``'s
  in-edges / the destinations of its out-edges, one per edge (a multigraph repeats a
  neighbour), in the graph's edge order for that node."""
import mxnet as mx
import numpy as np

from .base import ALL, EdgeBatch, GraphError, NodeBatch, as_ids
from .digraph import Graph
from .hetero_graph import HeteroGraph

__all__ = ["apply_nodes", "filter_nodes", "filter_edges", "predecessors", "successors"]


class _TypeNodes:
    """The nodes of one type of a heterograph as a ``NodeBatch`` reads them."""

    def __init__(self, frame, ids):
        self.dstdata, self._ids = frame, ids


def _node_side(g, ntype, what):
    """(the object a NodeBatch reads, the feature frame, the node count) for ``ntype``."""
    if isinstance(g, HeteroGraph):
        if ntype is None:
            if len(g.ntypes) != 1:
                raise GraphError(f"{what}: this heterograph has node types {g.ntypes}; pass ntype=")
            ntype = g.ntypes[0]
        if ntype not in g.ntypes:
            raise GraphError(f"{what}: node type {ntype!r} is not in this graph; its node types are {g.ntypes}")
        frame = g._node_frames[ntype]
        rel = next(iter(g._rels.values()))
        return _TypeNodes(frame, rel._ids), frame, g.num_nodes(ntype)
    return g, g.dstdata, g.num_dst_nodes()


def _chosen(ids, n, what):
    if isinstance(ids, str) and ids == ALL:
        return None
    got = as_ids(ids, what)
    if len(got) and (got.min() < 0 or got.max() >= n):
        bad = int(got[(got < 0) | (got >= n)][0])
        raise GraphError(f"{what} holds id {bad} but the ids are 0..{n - 1}")
    return got


def apply_nodes(g, func, v=ALL, ntype=None):
    """DGL's ``g.apply_nodes`` (module docstring)."""
    if not callable(func):
        raise GraphError("apply_nodes takes a function of a NodeBatch returning {feature name: tensor}")
    side, frame, n = _node_side(g, ntype, "apply_nodes")
    rows = _chosen(v, n, "apply_nodes: v")
    out = func(NodeBatch(side, np.arange(n) if rows is None else rows))
    if not isinstance(out, dict):
        raise GraphError(f"apply_nodes: the function returned {type(out).__name__}; return a dict "
                         "{feature name: tensor with one row per node}")
    want = n if rows is None else len(rows)
    for k, value in out.items():
        if not isinstance(value, mx.nd.NDArray) or value.shape[:1] != (want,):
            shape = getattr(value, "shape", type(value).__name__)
            raise GraphError(f"apply_nodes: feature {k!r} has shape {shape}; it needs one row per node ({want})")
        if rows is None:
            frame[k] = value
            continue
        full = frame[k].copy() if k in frame else mx.nd.zeros((n,) + value.shape[1:], dtype=value.dtype,
                                                                 ctx=value.context)
        if len(rows):
            full[side._ids(rows)] = value
        frame[k] = full


def _true_ids(mask, n, what):
    m = mask.asnumpy() if isinstance(mask, mx.nd.NDArray) else np.asarray(mask)
    m = m.reshape(-1)
    if len(m) != n:
        raise GraphError(f"{what}: the predicate returned {len(m)} values for {n} items; return one per item")
    return np.flatnonzero(m != 0)


def filter_nodes(g, predicate, nodes=ALL, ntype=None):
    """DGL's ``g.filter_nodes`` (module docstring)."""
    side, _, n = _node_side(g, ntype, "filter_nodes")
    rows = _chosen(nodes, n, "filter_nodes: nodes")
    rows = np.arange(n) if rows is None else rows
    keep = rows[_true_ids(predicate(NodeBatch(side, rows)), len(rows), "filter_nodes")]
    return side._ids(np.sort(keep))


def filter_edges(g, predicate, edges=ALL, etype=None):
    """DGL's ``g.filter_edges`` (module docstring)."""
    r = _relation(g, etype, "filter_edges")
    m = r.num_edges()
    rows = _chosen(edges, m, "filter_edges: edges")
    every = _true_ids(predicate(EdgeBatch(r)), m, "filter_edges")
    if rows is not None:
        every = np.intersect1d(every, rows)
    return r._ids(every)


def _relation(g, etype, what):
    if isinstance(g, HeteroGraph):
        if etype is None and len(g.canonical_etypes) != 1:
            raise GraphError(f"{what}: this heterograph has relations {g.canonical_etypes}; pass etype=")
        return g[g.to_canonical_etype(etype)] if etype is not None else g[g.canonical_etypes[0]]
    return g


def predecessors(g, v, etype=None):
    """DGL's ``g.predecessors`` (module docstring)."""
    r = _relation(g, etype, "predecessors")
    src, _ = r.in_edges(v)
    return src


def successors(g, v, etype=None):
    """DGL's ``g.successors`` (module docstring)."""
    r = _relation(g, etype, "successors")
    _, dst = r.out_edges(v)
    return dst


for _cls in (Graph, HeteroGraph):
    _cls.apply_nodes = apply_nodes
    _cls.filter_nodes = filter_nodes
    _cls.filter_edges = filter_edges
    _cls.predecessors = predecessors
    _cls.successors = successors
