"""Changing a heterograph in place, as DGL's ``g.add_nodes(num, data, ntype=)``,
``g.add_edges(u, v, data, etype=)``, ``g.remove_edges(eids, etype=)`` and
``g.remove_nodes(nids, ntype=)``. The package's ``add_nodes`` & co. are this module's: a
heterograph is changed here, any other graph by ``mutation``'s functions, unchanged.

Features follow their rows as on a graph: new nodes or edges take the values given in ``data``
or zeros (a feature given only for the new rows is zero on the old ones). ``add_edges`` adds the
nodes its ids reach beyond a type's end first, as DGL does. ``remove_nodes`` drops the nodes'
edges in every relation that touches the type and renumbers the type's other nodes in order;
``store_ids`` keeps the ids before the change in ``NID``/``EID``. A relation graph ``g[etype]``
is changed with its heterograph (the same object); a heterograph made by ``dgl.batch`` counts as
one graph afterwards. ``g.local_var()`` gives a heterograph whose features are its own (the
structure and tensors shared)."""
import copy

import numpy as np

from . import mutation as _one
from .base import GraphError, as_ids, zeros
from .hetero_graph import HeteroGraph

__all__ = ["add_nodes", "add_edges", "remove_edges", "remove_nodes"]


class _ZeroFill:
    """What ``mutation._grow`` reads of a graph, for a heterograph: its context, zeros for new rows."""

    def __init__(self, ctx):
        self.device = ctx

    def _initializer(self, kind, field):
        return lambda shape, dtype, ctx, rows: zeros(shape, dtype, ctx)


def _ntype_of(g, ntype, what):
    if ntype is None:
        if len(g.ntypes) != 1:
            raise GraphError(f"{what}: this heterograph has node types {g.ntypes}; pass ntype=")
        return g.ntypes[0]
    if ntype not in g._num_nodes:
        raise GraphError(f"{what}: node type {ntype!r} is not in this graph; its node types are {g.ntypes}")
    return ntype


def _canonical(g, etype, what):
    if etype is None:
        if len(g.canonical_etypes) != 1:
            raise GraphError(f"{what}: this heterograph has relations {g.canonical_etypes}; pass etype=")
        return g.canonical_etypes[0]
    try:
        return g.to_canonical_etype(etype)
    except GraphError as err:
        raise GraphError(f"{what}: {err}") from None


def _set(r, src, dst, nsrc, ndst):
    """A relation graph's new edges and node counts; its cached structures go."""
    r._src, r._dst, r._nsrc, r._ndst = src, dst, nsrc, ndst
    r._cache = {}
    r._batch_num_nodes = r._batch_num_edges = None


def _refresh(g):
    """Every relation's node counts from the heterograph's, and no batch information."""
    for (s, _, d), r in g._rels.items():
        _set(r, r._src, r._dst, g._num_nodes[s], g._num_nodes[d])
    g.__dict__.pop("_hbatch", None)


def _hetero_add_nodes(g, num, data, ntype):
    t = _ntype_of(g, ntype, "add_nodes")
    num, n = int(num), g._num_nodes[t]
    if num < 0:
        raise GraphError(f"add_nodes: cannot add {num} nodes")
    _one._grow(_ZeroFill(g._ctx), g._node_frames[t], "n", num, data, n)
    g._num_nodes[t] = n + num
    _refresh(g)


def _hetero_add_edges(g, u, v, data, etype):
    c = _canonical(g, etype, "add_edges")
    u, v = _one.edge_pairs(u, v)
    for t, ids in ((c[0], u), (c[2], v)):
        top = int(ids.max(initial=-1)) + 1
        if top > g._num_nodes[t]:
            _hetero_add_nodes(g, top - g._num_nodes[t], None, t)
    r = g._rels[c]
    _one._grow(_ZeroFill(g._ctx), r.edata, "e", len(u), data, r.num_edges())
    _set(r, np.concatenate([r._src, u]), np.concatenate([r._dst, v]), r._nsrc, r._ndst)
    g.__dict__.pop("_hbatch", None)


def _hetero_remove_edges(g, eids, etype, store_ids):
    c = _canonical(g, etype, "remove_edges")
    r = g._rels[c]
    ids = as_ids(eids, "eids")
    if len(ids) and (ids.min() < 0 or ids.max() >= r.num_edges()):
        raise GraphError(f"remove_edges: edge ids of {c} must lie in 0..{r.num_edges() - 1}")
    keep = np.setdiff1d(np.arange(r.num_edges()), ids)
    _one._keep_rows(r, r.edata, keep, store_ids)
    _set(r, r._src[keep], r._dst[keep], r._nsrc, r._ndst)
    g.__dict__.pop("_hbatch", None)


def _hetero_remove_nodes(g, nids, ntype, store_ids):
    t = _ntype_of(g, ntype, "remove_nodes")
    n = g._num_nodes[t]
    ids = as_ids(nids, "nids")
    if len(ids) and (ids.min() < 0 or ids.max() >= n):
        raise GraphError(f"remove_nodes: {t!r} node ids must lie in 0..{n - 1}")
    gone = np.zeros(n, bool)
    gone[ids] = True
    keep_nodes = np.flatnonzero(~gone)
    new_id = np.cumsum(~gone) - 1
    for (s, _, d), r in g._rels.items():
        if t not in (s, d):
            continue
        ok = np.ones(r.num_edges(), bool)
        src, dst = r._src, r._dst
        if s == t:
            ok &= ~gone[src]
        if d == t:
            ok &= ~gone[dst]
        keep = np.flatnonzero(ok)
        _one._keep_rows(r, r.edata, keep, store_ids)
        src, dst = src[keep], dst[keep]
        r._src = new_id[src] if s == t else src
        r._dst = new_id[dst] if d == t else dst
    rel = next(iter(g._rels.values()))
    _one._keep_rows(rel, g._node_frames[t], keep_nodes, store_ids)
    g._num_nodes[t] = len(keep_nodes)
    _refresh(g)


def add_nodes(g, num, data=None, ntype=None):
    """Add ``num`` nodes (of ``ntype`` on a heterograph) to ``g`` in place (module docstring)."""
    if isinstance(g, HeteroGraph):
        return _hetero_add_nodes(g, num, data, ntype)
    return _one.add_nodes(g, num, data, ntype)


def add_edges(g, u, v, data=None, etype=None):
    """Add edges ``u[i] -> v[i]`` (of ``etype`` on a heterograph) to ``g`` in place."""
    if isinstance(g, HeteroGraph):
        return _hetero_add_edges(g, u, v, data, etype)
    return _one.add_edges(g, u, v, data, etype)


def remove_edges(g, eids, etype=None, store_ids=False):
    """Remove the edges ``eids`` (of ``etype`` on a heterograph) from ``g`` in place."""
    if isinstance(g, HeteroGraph):
        return _hetero_remove_edges(g, eids, etype, store_ids)
    return _one.remove_edges(g, eids, etype, store_ids)


def remove_nodes(g, nids, ntype=None, store_ids=False):
    """Remove the nodes ``nids`` (of ``ntype`` on a heterograph) and their edges from ``g`` in place."""
    if isinstance(g, HeteroGraph):
        return _hetero_remove_nodes(g, nids, ntype, store_ids)
    return _one.remove_nodes(g, nids, ntype, store_ids)


def local_var(g):
    """DGL's ``local_var`` of a heterograph: a heterograph object sharing ``g``'s structure,
    relation structures and feature tensors whose feature dictionaries (per node type and
    relation) are its own, so features set on it leave ``g`` alone."""
    out = copy.copy(g)
    out._node_frames = {t: f._copy() for t, f in g._node_frames.items()}
    out._rels = {}
    for c, r in g._rels.items():
        local = copy.copy(r)
        local.srcdata, local.dstdata = out._node_frames[c[0]], out._node_frames[c[2]]
        local.edata = r.edata._copy()
        out._rels[c] = local
    return out


for _f in (add_nodes, add_edges, remove_edges, remove_nodes, local_var):
    setattr(HeteroGraph, _f.__name__, _f)
