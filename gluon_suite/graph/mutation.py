"""Changing a graph in place, as DGL's ``g.add_nodes``, ``g.add_edges``, ``g.remove_edges`` and
``g.remove_nodes``, and ``rand_graph``. Features follow their rows: new nodes/edges take the values
given in ``data`` or the graph's initializer's (zeros unless ``set_n_initializer`` /
``set_e_initializer`` chose another); a feature given only for the new rows gets initializer
values for the old ones. A mutated graph drops its cached structures and its batch information
(it counts as one graph)."""
import mxnet as mx
import numpy as np

from .base import EID, GraphError, as_ids, zeros
from .digraph import Graph


def _mutable(g, what):
    if g._two_sides:
        raise GraphError(f"{what} changes a graph with one node set; blocks and bipartite graphs are fixed")


def _grow(g, frame, kind, count, data, start):
    """Append ``count`` rows to every feature of ``frame`` (a node or edge frame whose old size is
    ``start``), from ``data`` or the initializer."""
    data = dict(data or {})
    for k, v in data.items():
        if not isinstance(v, mx.nd.NDArray):
            data[k] = v = mx.nd.array(v, ctx=g.device)
        if v.shape[0] != count:
            raise GraphError(f"data[{k!r}] has {v.shape[0]} rows for {count} new {'nodes' if kind == 'n' else 'edges'}")
        if v.context != g.device:
            raise GraphError(f"data[{k!r}] is on {v.context} but the graph is on {g.device}")
    old = dict(frame)
    frame.n = start + count
    for k in set(old) | set(data):
        ref = old[k] if k in old else data[k]
        init = g._initializer(kind, k)
        head = old[k] if k in old else init((start,) + ref.shape[1:], ref.dtype, g.device, slice(0, start))
        tail = data[k] if k in data else init((count,) + ref.shape[1:], ref.dtype, g.device,
                                               slice(start, start + count))
        dict.__setitem__(frame, k, mx.nd.concat(head, tail.astype(ref.dtype), dim=0) if start else tail)


def _restructure(g, src, dst, n):
    g._src, g._dst, g._nsrc, g._ndst = src, dst, n, n
    g._cache = {}
    g._batch_num_nodes = g._batch_num_edges = None


def add_nodes(g, num, data=None, ntype=None):
    """Add ``num`` nodes (ids N..N+num-1) to ``g`` in place; ``data`` maps feature names to their
    (num, ...) rows."""
    _mutable(g, "add_nodes")
    num, n = int(num), g.num_nodes()
    if num < 0:
        raise GraphError(f"add_nodes: cannot add {num} nodes")
    _grow(g, g.ndata, "n", num, data, n)
    _restructure(g, g._src, g._dst, n + num)


def edge_pairs(u, v):
    """``add_edges``' ids as two equal-length int64 arrays (a single id on one side repeated),
    each >= 0, or a one-line GraphError."""
    u, v = as_ids(u, "u"), as_ids(v, "v")
    if len(u) == 1 and len(v) > 1:
        u = np.repeat(u, len(v))
    elif len(v) == 1 and len(u) > 1:
        v = np.repeat(v, len(u))
    if len(u) != len(v):
        raise GraphError(f"add_edges: u has {len(u)} ids and v {len(v)}; give one (u, v) pair per edge")
    if len(u) and min(u.min(), v.min()) < 0:
        raise GraphError("add_edges: node ids must be >= 0")
    return u, v


def add_edges(g, u, v, data=None, etype=None):
    """Add edges ``u[i] -> v[i]`` to ``g`` in place (one side may be a single id, repeated); nodes
    beyond the graph's end are added first, as in DGL. ``data`` maps edge feature names to rows."""
    _mutable(g, "add_edges")
    u, v = edge_pairs(u, v)
    top = int(max(u.max(initial=-1), v.max(initial=-1))) + 1
    if top > g.num_nodes():
        add_nodes(g, top - g.num_nodes())
    _grow(g, g.edata, "e", len(u), data, g.num_edges())
    _restructure(g, np.concatenate([g._src, u]), np.concatenate([g._dst, v]), g.num_nodes())


def remove_edges(g, eids, etype=None, store_ids=False):
    """Remove the edges ``eids`` from ``g`` in place; the others keep their order and features
    (with ``store_ids``, ``edata[EID]`` holds their ids before the removal)."""
    _mutable(g, "remove_edges")
    ids = as_ids(eids, "eids")
    if len(ids) and (ids.min() < 0 or ids.max() >= g.num_edges()):
        raise GraphError(f"remove_edges: edge ids must lie in 0..{g.num_edges() - 1}")
    keep = np.setdiff1d(np.arange(g.num_edges()), ids)
    _keep_rows(g, g.edata, keep, store_ids)
    _restructure(g, g._src[keep], g._dst[keep], g.num_nodes())


def remove_nodes(g, nids, ntype=None, store_ids=False):
    """Remove the nodes ``nids`` and their edges from ``g`` in place; the other nodes are
    renumbered in order (with ``store_ids``, ``ndata[NID]``/``edata[EID]`` hold the old ids)."""
    _mutable(g, "remove_nodes")
    ids = as_ids(nids, "nids")
    n = g.num_nodes()
    if len(ids) and (ids.min() < 0 or ids.max() >= n):
        raise GraphError(f"remove_nodes: node ids must lie in 0..{n - 1}")
    gone = np.zeros(n, bool)
    gone[ids] = True
    keep_nodes = np.flatnonzero(~gone)
    new_id = np.cumsum(~gone) - 1
    keep_edges = np.flatnonzero(~gone[g._src] & ~gone[g._dst])
    _keep_rows(g, g.edata, keep_edges, store_ids)
    _keep_rows(g, g.ndata, keep_nodes, store_ids)
    _restructure(g, new_id[g._src[keep_edges]], new_id[g._dst[keep_edges]], len(keep_nodes))


def _keep_rows(g, frame, keep, store_ids):
    idx = g._ids(keep)
    rows = {k: (mx.nd.take(v, idx) if len(keep) else zeros((0,) + v.shape[1:], v.dtype, v.context))
            for k, v in frame.items()}
    if store_ids:
        rows[EID] = idx
    dict.clear(frame)
    frame.n = len(keep)
    dict.update(frame, rows)


for _f in (add_nodes, add_edges, remove_edges, remove_nodes):
    setattr(Graph, _f.__name__, _f)


def rand_graph(num_nodes, num_edges, idtype=np.int64, device=None):
    """DGL's ``rand_graph``: ``num_nodes`` nodes and ``num_edges`` distinct edges drawn uniformly
    from all ordered node pairs (self-loops included), from the sampler's generator (``dgl.seed``)."""
    from .sampling import default_rng
    n, e = int(num_nodes), int(num_edges)
    if e > n * n:
        raise GraphError(f"rand_graph: {e} distinct edges do not fit in {n} nodes ({n * n} ordered pairs)")
    rng, picked = default_rng(), np.zeros(0, np.int64)
    while len(picked) < e:
        draw = rng.randint(0, n * n, size=2 * (e - len(picked)) + 16, dtype=np.int64)
        both = np.concatenate([picked, draw])
        _, first = np.unique(both, return_index=True)
        picked = both[np.sort(first)]                    # distinct pairs, in drawing order
    picked = picked[:e]
    return Graph((picked // max(n, 1), picked % max(n, 1)), num_nodes=n, idtype=idtype, device=device)
