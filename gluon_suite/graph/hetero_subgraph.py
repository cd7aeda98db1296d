"""Subgraphs and reverse edges of heterographs, as DGL's ``dgl.node_subgraph``, ``edge_subgraph``,
``in_subgraph``, ``out_subgraph`` (each a method too: ``g.subgraph``, ``g.edge_subgraph``, ...)
given per-type ids, ``dgl.node_type_subgraph``, ``dgl.edge_type_subgraph`` and
``dgl.add_reverse_edges``. The package's ``node_subgraph`` & co. are this module's: a
heterograph comes here, any other graph goes on to ``subgraph``'s functions unchanged.

On a heterograph, node ids are per type and so are the arguments:

- ``node_subgraph(g, {ntype: ids})``: per type the nodes given (a type left out keeps none), per
  relation the edges with both ends kept, in edge-id order; node i of a type is its ``ids[i]``.
- ``edge_subgraph(g, {etype: eids})``: per relation the edges given (a relation left out keeps
  none); with ``relabel_nodes`` each type keeps the nodes those edges touch, numbered in order of
  first appearance over the relations in ``canonical_etypes`` order, each relation's sources then
  its destinations (as DGL numbers them).
- ``in_subgraph(g, {ntype: ids})`` / ``out_subgraph``: every relation's edges into (out of) the
  given nodes of its destination (source) type, node after node; all nodes are kept unless
  ``relabel_nodes``, which keeps those the edges touch (numbered as ``edge_subgraph`` does).

Every node type and relation stays in the result (with no nodes or edges where nothing is kept),
features are copied for what is kept, and with ``store_ids`` each relation's ``edata[EID]`` and,
where nodes are renumbered, each type's ``ndata[NID]`` map back to the input.

``node_type_subgraph(g, ntypes)`` keeps the given node types and the relations among them;
``edge_type_subgraph(g, etypes)`` keeps the given relations and the node types they touch. Ids do
not change and the features are the input's tensors (not copied). A result with one relation
and no other node type is a ``Graph`` or ``BipartiteGraph``, as ``dgl.heterograph`` gives.

``add_reverse_edges(g)`` appends, per relation within one node type, the reverse of every edge
(self-loops only once unless ``exclude_self=False``); a relation between two types is refused
unless ``ignore_bipartite=True`` keeps it as it is. ``copy_ndata`` keeps the node features,
``copy_edata`` gives each reverse edge its edge's features (otherwise the result has none)."""
import numpy as np

from . import subgraph as _one
from .base import EID, NID, GraphError, take_rows
from .digraph import Graph
from .hetero_bipartite import BipartiteGraph
from .hetero_graph import HeteroGraph

__all__ = ["node_subgraph", "edge_subgraph", "in_subgraph", "out_subgraph", "node_type_subgraph",
           "edge_type_subgraph", "add_reverse_edges"]


def _is_hetero(g):
    return isinstance(g, HeteroGraph)


def _per_type(g, given, what):
    """``{node type: host ids}`` from a dict over ``g``'s node types (a type left out: None)."""
    if not isinstance(given, dict):
        raise GraphError(f"{what}: this heterograph has node types {g.ntypes}; pass a dict {{node type: ids}}")
    unknown = [t for t in given if t not in g._num_nodes]
    if unknown:
        raise GraphError(f"{what}: node type {unknown[0]!r} is not in this graph; its node types are {g.ntypes}")
    return {t: (_one._select(given[t], g._num_nodes[t], f"{what}: nodes of type {t!r}") if t in given else None)
            for t in g._ntypes}


def _per_relation(g, given, what):
    """``{canonical etype: given value}`` from a dict keyed by edge type names or canonical triples."""
    if not isinstance(given, dict):
        raise GraphError(f"{what}: this heterograph has relations {g.canonical_etypes}; pass a dict "
                         "{edge type: edge ids}")
    out = {}
    for key, value in given.items():
        try:
            c = g.to_canonical_etype(key)
        except GraphError as err:
            raise GraphError(f"{what}: {err}") from None
        if c in out:
            raise GraphError(f"{what}: relation {c} is given twice")
        out[c] = value
    return out


def _ids_on(g, idx):
    return next(iter(g._rels.values()))._ids(idx)


def _assemble(g, eids, nodes, store_ids, output_device):
    """The heterograph with, per relation ``c``, the edges ``eids[c]`` (host ids) and, per node type
    ``t``, the nodes ``nodes[t]`` (renumbered 0..; None keeps every node, its features shared and
    no ``NID``)."""
    edges, counts = {}, {}
    pos = {t: None if ids is None else _one._position(ids, g._num_nodes[t]) for t, ids in nodes.items()}
    for c in g._canonical:
        r, e = g._rels[c], eids[c]
        src, dst = r._src[e], r._dst[e]
        if pos[c[0]] is not None:
            src = pos[c[0]][src]
        if pos[c[2]] is not None:
            dst = pos[c[2]][dst]
        edges[c] = (src, dst)
    for t in g._ntypes:
        counts[t] = g._num_nodes[t] if nodes[t] is None else len(nodes[t])
    out = HeteroGraph(edges, counts, g._ntypes, g._idtype, g._ctx)
    for t in g._ntypes:
        frame, rows = g._node_frames[t], nodes[t]
        for k, v in frame.items():
            out._node_frames[t][k] = v if rows is None else take_rows(v, rows, lambda a: _ids_on(g, a))
        if rows is not None and store_ids:
            out._node_frames[t][NID] = _ids_on(g, rows)
    for c in g._canonical:
        r = g._rels[c]
        for k, v in r.edata.items():
            out._rels[c].edata[k] = take_rows(v, eids[c], r._ids)
        if store_ids:
            out._rels[c].edata[EID] = r._ids(eids[c])
    return out if output_device is None else out.to(output_device)


def _touched(g, eids):
    """Per node type the nodes the edges ``eids`` touch, in order of first appearance over the
    relations (``canonical_etypes`` order), each relation's sources, then its destinations."""
    seen = {t: [] for t in g._ntypes}
    for c in g._canonical:
        r = g._rels[c]
        seen[c[0]].append(r._src[eids[c]])
        seen[c[2]].append(r._dst[eids[c]])
    return {t: _one._first_seen(*arrays) for t, arrays in seen.items()}


def _relabelled(g, eids, relabel_nodes, store_ids, output_device):
    nodes = _touched(g, eids) if relabel_nodes else {t: None for t in g._ntypes}
    return _assemble(g, eids, nodes, store_ids, output_device)


def node_subgraph(graph, nodes, *, relabel_nodes=True, store_ids=True, output_device=None):
    """DGL's ``node_subgraph``; a heterograph takes ``{node type: ids}`` (module docstring)."""
    if not _is_hetero(graph):
        return _one.node_subgraph(graph, nodes, relabel_nodes=relabel_nodes, store_ids=store_ids,
                                  output_device=output_device)
    kept = {t: (np.zeros(0, np.int64) if ids is None else ids)
            for t, ids in _per_type(graph, nodes, "node_subgraph").items()}
    eids = {}
    for c in graph._canonical:
        r = graph._rels[c]
        in_s, in_d = np.zeros(graph._num_nodes[c[0]], bool), np.zeros(graph._num_nodes[c[2]], bool)
        in_s[kept[c[0]]], in_d[kept[c[2]]] = True, True
        eids[c] = np.flatnonzero(in_s[r._src] & in_d[r._dst])
    nodes = kept if relabel_nodes else {t: None for t in graph._ntypes}
    return _assemble(graph, eids, nodes, store_ids, output_device)


def edge_subgraph(graph, edges, *, relabel_nodes=True, store_ids=True, output_device=None):
    """DGL's ``edge_subgraph``; a heterograph takes ``{edge type: edge ids or mask}``."""
    if not _is_hetero(graph):
        return _one.edge_subgraph(graph, edges, relabel_nodes=relabel_nodes, store_ids=store_ids,
                                  output_device=output_device)
    given = _per_relation(graph, edges, "edge_subgraph")
    eids = {}
    for c in graph._canonical:
        r, what = graph._rels[c], f"edge_subgraph: edges of {c}"
        if c not in given:
            eids[c] = np.zeros(0, np.int64)
        elif _one._is_mask(given[c]):
            eids[c] = _one._select(given[c], r.num_edges(), what)
        else:
            eids[c] = _one._edge_ids(r, given[c], what)
    return _relabelled(graph, eids, relabel_nodes, store_ids, output_device)


def _side_subgraph(graph, nodes, kind, relabel_nodes, store_ids, output_device):
    what = f"{kind}_subgraph"
    per = _per_type(graph, nodes, what)
    eids = {}
    for c in graph._canonical:
        ids = per[c[2] if kind == "in" else c[0]]
        eids[c] = np.zeros(0, np.int64) if ids is None else graph._rels[c]._edges_of(kind, ids)
    return _relabelled(graph, eids, relabel_nodes, store_ids, output_device)


def in_subgraph(graph, nodes, *, relabel_nodes=False, store_ids=True, output_device=None):
    """DGL's ``in_subgraph``; a heterograph takes ``{node type: ids}`` of destination types."""
    if not _is_hetero(graph):
        return _one.in_subgraph(graph, nodes, relabel_nodes=relabel_nodes, store_ids=store_ids,
                                output_device=output_device)
    return _side_subgraph(graph, nodes, "in", relabel_nodes, store_ids, output_device)


def out_subgraph(graph, nodes, *, relabel_nodes=False, store_ids=True, output_device=None):
    """DGL's ``out_subgraph``; a heterograph takes ``{node type: ids}`` of source types."""
    if not _is_hetero(graph):
        return _one.out_subgraph(graph, nodes, relabel_nodes=relabel_nodes, store_ids=store_ids,
                                 output_device=output_device)
    return _side_subgraph(graph, nodes, "out", relabel_nodes, store_ids, output_device)


def _of_types(g, ntypes, canonical, output_device):
    """The graph of ``g``'s node types ``ntypes`` and relations ``canonical`` (ids unchanged,
    features shared): a ``HeteroGraph``, or a one-relation graph as ``dgl.heterograph`` gives."""
    if not canonical:
        raise GraphError("the result would have no relation; keep at least one edge type")
    if len(canonical) == 1 and set(ntypes) == {canonical[0][0], canonical[0][2]}:
        (s, e, d), = canonical
        r = g._rels[canonical[0]]
        if s == d:
            out = Graph((r._src, r._dst), num_nodes=g._num_nodes[s], idtype=g._idtype, device=g._ctx)
            out._ntypes, out._etype = (s, s), e
        else:
            out = BipartiteGraph((r._src, r._dst), g._num_nodes[s], g._num_nodes[d], (s, d), e, g._idtype, g._ctx)
        frames = {s: out.srcdata, d: out.dstdata}
        edata = {canonical[0]: out.edata}
    else:
        out = HeteroGraph({c: (g._rels[c]._src, g._rels[c]._dst) for c in canonical},
                          {t: g._num_nodes[t] for t in ntypes}, ntypes, g._idtype, g._ctx)
        frames = out._node_frames
        edata = {c: out._rels[c].edata for c in canonical}
    for t in ntypes:
        for k, v in g._node_frames[t].items():
            frames[t][k] = v
    for c in canonical:
        for k, v in g._rels[c].edata.items():
            edata[c][k] = v
    return out if output_device is None else out.to(output_device)


def _hetero_only(g, what):
    if not _is_hetero(g):
        raise GraphError(f"{what} takes a heterograph (dgl.heterograph with several relations); this graph has "
                         "one relation")


def node_type_subgraph(graph, ntypes, output_device=None):
    """DGL's ``node_type_subgraph``: the node types ``ntypes`` and every relation between two of
    them (ids unchanged, features shared)."""
    _hetero_only(graph, "node_type_subgraph")
    if isinstance(ntypes, str) or not all(isinstance(t, str) for t in ntypes):
        raise GraphError("node_type_subgraph: pass a list of node type names")
    unknown = [t for t in ntypes if t not in graph._num_nodes]
    if unknown:
        raise GraphError(f"node_type_subgraph: node type {unknown[0]!r} is not in this graph; its node types are "
                         f"{graph.ntypes}")
    keep = [t for t in graph._ntypes if t in set(ntypes)]
    canonical = [c for c in graph._canonical if c[0] in keep and c[2] in keep]
    return _of_types(graph, keep, canonical, output_device)


def edge_type_subgraph(graph, etypes, output_device=None):
    """DGL's ``edge_type_subgraph``: the relations ``etypes`` (names or canonical triples) and the
    node types they touch (ids unchanged, features shared)."""
    _hetero_only(graph, "edge_type_subgraph")
    if isinstance(etypes, (str, tuple)):
        raise GraphError("edge_type_subgraph: pass a list of edge types (names or canonical triples)")
    chosen = set()
    for key in etypes:
        try:
            chosen.add(graph.to_canonical_etype(key))
        except GraphError as err:
            raise GraphError(f"edge_type_subgraph: {err}") from None
    canonical = [c for c in graph._canonical if c in chosen]
    touched = {t for c in canonical for t in (c[0], c[2])}
    return _of_types(graph, [t for t in graph._ntypes if t in touched], canonical, output_device)


def _reversed(src, dst, exclude_self):
    """(src, dst) with the reverse edges appended, and the input edge each new edge copies."""
    keep = np.flatnonzero(src != dst) if exclude_self else np.arange(len(src))
    return (np.concatenate([src, dst[keep]]), np.concatenate([dst, src[keep]]),
            np.concatenate([np.arange(len(src)), keep]))


def add_reverse_edges(g, readonly=None, copy_ndata=True, copy_edata=False, ignore_bipartite=False,
                      exclude_self=True):
    """DGL's ``add_reverse_edges`` (module docstring): a new graph with the reverse of every edge
    appended after the edges (per relation within one node type on a heterograph). ``readonly`` is
    accepted and ignored, as in DGL (graphs are immutable there too)."""
    if isinstance(g, BipartiteGraph) or getattr(g, "is_block", False):
        raise GraphError("add_reverse_edges: the reverse of an edge between two node types is another relation; "
                         "build it with dgl.heterograph, or use a heterograph with ignore_bipartite=True")
    if not _is_hetero(g):
        src, dst, back = _reversed(g._src, g._dst, exclude_self)
        out = Graph((src, dst), num_nodes=g.num_nodes(), idtype=g.idtype, device=g.device)
        out._ntypes, out._etype = g._ntypes, g._etype
        if copy_ndata:
            for k, v in g.ndata.items():
                out.ndata[k] = v
        if copy_edata:
            for k, v in g.edata.items():
                out.edata[k] = take_rows(v, back, g._ids)
        return out
    edges, backs = {}, {}
    for c in g._canonical:
        r = g._rels[c]
        if c[0] != c[2]:
            if not ignore_bipartite:
                raise GraphError(f"add_reverse_edges: relation {c} joins two node types; its reverse would be "
                                 "another relation. Pass ignore_bipartite=True to keep such relations as they are")
            edges[c], backs[c] = (r._src, r._dst), np.arange(r.num_edges())
            continue
        src, dst, backs[c] = _reversed(r._src, r._dst, exclude_self)
        edges[c] = (src, dst)
    out = HeteroGraph(edges, g._num_nodes, g._ntypes, g._idtype, g._ctx)
    if copy_ndata:
        for t in g._ntypes:
            for k, v in g._node_frames[t].items():
                out._node_frames[t][k] = v
    if copy_edata:
        for c in g._canonical:
            for k, v in g._rels[c].edata.items():
                out._rels[c].edata[k] = take_rows(v, backs[c], g._rels[c]._ids)
    return out


HeteroGraph.subgraph = node_subgraph
HeteroGraph.node_subgraph = node_subgraph
HeteroGraph.edge_subgraph = edge_subgraph
HeteroGraph.in_subgraph = in_subgraph
HeteroGraph.out_subgraph = out_subgraph
