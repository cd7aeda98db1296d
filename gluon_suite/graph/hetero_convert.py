"""Between heterographs and homogeneous graphs, as DGL's ``dgl.to_homogeneous``,
``dgl.to_heterogeneous`` and ``dgl.metapath_reachable_graph``.

``to_homogeneous`` numbers the nodes type after type (in ``g.ntypes`` order, each type's ids in
order) and the edges relation after relation (in ``g.canonical_etypes`` order), and records where
each came from: ``ndata[NTYPE]`` / ``edata[ETYPE]`` the type's index (int64, as in DGL),
``ndata[NID]`` / ``edata[EID]`` the id within its type (the graph's id type).
``to_heterogeneous`` is its inverse for a graph carrying such type fields."""
import mxnet as mx
import numpy as np
import scipy.sparse as sp

from .base import EID, NID, GraphError, zeros
from .digraph import Graph
from .hetero_graph import as_hetero, node_frames
from .heterograph import heterograph

NTYPE = "_TYPE"      # ndata key of a node's type index (DGL's dgl.NTYPE)
ETYPE = "_TYPE"      # edata key of an edge's type index (DGL's dgl.ETYPE)

__all__ = ["NTYPE", "ETYPE", "to_homogeneous", "to_heterogeneous", "metapath_reachable_graph"]


def _combine(frames, names, what):
    """``{name: rows of every frame, concatenated}`` for the feature ``names``; each must be in
    every frame with one row shape and dtype."""
    out = {}
    for name in names:
        missing = [t for t, f in frames.items() if name not in f]
        if missing:
            raise GraphError(f"to_homogeneous: {what} feature {name!r} is missing for {missing[0]!r}; every type "
                             "must have it")
        parts = [frames[t][name] for t in frames]
        if len({(p.shape[1:], np.dtype(p.dtype)) for p in parts}) > 1:
            raise GraphError(f"to_homogeneous: {what} feature {name!r} has different row shapes or dtypes across "
                             "types; they must agree to be concatenated")
        parts = [p for p in parts if p.shape[0]]
        out[name] = mx.nd.concat(*parts, dim=0) if len(parts) > 1 else parts[0] if parts else None
    return {k: v for k, v in out.items() if v is not None}


def to_homogeneous(G, ndata=None, edata=None, store_type=True, return_count=False):
    """DGL's ``dgl.to_homogeneous``: one graph of every node and edge of ``G`` (numbered as
    the module docstring says), with the node features named in ``ndata`` and the edge features
    named in ``edata`` concatenated across types (each must exist in every type, with the same
    row shape), ``NID``/``EID`` and, with ``store_type``, ``NTYPE``/``ETYPE``. With
    ``return_count`` also the node count per type and the edge count per relation."""
    hg = as_hetero(G)
    ctx, idtype = hg.device, hg.idtype
    offsets = np.cumsum([0] + [hg.num_nodes(t) for t in hg.ntypes])
    where = {t: offsets[i] for i, t in enumerate(hg.ntypes)}
    rels = [hg._rels[c] for c in hg.canonical_etypes]
    src = np.concatenate([r._src + where[c[0]] for c, r in zip(hg.canonical_etypes, rels)] + [np.zeros(0, np.int64)])
    dst = np.concatenate([r._dst + where[c[2]] for c, r in zip(hg.canonical_etypes, rels)] + [np.zeros(0, np.int64)])
    g = Graph((src, dst), num_nodes=int(offsets[-1]), idtype=idtype, device=ctx)
    ncount = [hg.num_nodes(t) for t in hg.ntypes]
    ecount = [r.num_edges() for r in rels]
    g.ndata.update(_combine({t: hg._node_frames[t] for t in hg.ntypes}, ndata or [], "node"))
    g.edata.update(_combine({c: r.edata for c, r in zip(hg.canonical_etypes, rels)}, edata or [], "edge"))
    g.ndata[NID] = g._ids(np.concatenate([np.arange(n) for n in ncount] + [np.zeros(0, np.int64)]))
    g.edata[EID] = g._ids(np.concatenate([np.arange(n) for n in ecount] + [np.zeros(0, np.int64)]))
    if store_type:
        g.ndata[NTYPE] = mx.nd.array(np.repeat(np.arange(len(ncount)), ncount), ctx=ctx, dtype="int64")
        g.edata[ETYPE] = mx.nd.array(np.repeat(np.arange(len(ecount)), ecount), ctx=ctx, dtype="int64")
    return (g, ncount, ecount) if return_count else g


def _type_ids(frame, field, n_types, what):
    if field not in frame:
        raise GraphError(f"to_heterogeneous: the graph has no {what} feature {field!r} holding each "
                         f"{what}'s type index")
    ids = frame[field].asnumpy().reshape(-1).astype(np.int64)
    if len(ids) and (ids.min() < 0 or ids.max() >= n_types):
        raise GraphError(f"to_heterogeneous: {what} type indices must lie in 0..{n_types - 1} (one per name "
                         f"given), found {int(ids.min() if ids.min() < 0 else ids.max())}")
    return ids


def to_heterogeneous(G, ntypes, etypes, ntype_field=NTYPE, etype_field=ETYPE, metagraph=None):
    """DGL's ``dgl.to_heterogeneous``: the heterograph of a homogeneous ``G`` whose
    ``ndata[ntype_field]`` / ``edata[etype_field]`` give each node's index into ``ntypes`` and
    each edge's into ``etypes`` (names). A node's id within its type is its rank among the nodes
    of that type; each relation ``(ntypes[type of src], etypes[i], ntypes[type of dst])`` found
    among the edges keeps their order. Every other node and edge feature is copied, and
    ``ndata[NID]`` / ``edata[EID]`` hold the ids in ``G``. ``metagraph`` is not taken."""
    if metagraph is not None:
        raise GraphError("to_heterogeneous(metagraph=...) is not supported; the relations are read from the edges")
    if not isinstance(G, Graph) or G._two_sides or G.is_block:
        raise GraphError("to_heterogeneous takes a homogeneous graph (one node set), not a block, a bipartite "
                         "graph or a heterograph")
    ntypes, etypes = list(ntypes), list(etypes)
    if len(set(ntypes)) != len(ntypes):
        raise GraphError(f"to_heterogeneous: node type names repeat in {ntypes}")
    nt = _type_ids(G.ndata, ntype_field, len(ntypes), "node")
    et = _type_ids(G.edata, etype_field, len(etypes), "edge")
    counts = np.bincount(nt, minlength=len(ntypes))
    local = np.zeros(len(nt), np.int64)
    groups = []
    for i in range(len(ntypes)):
        members = np.flatnonzero(nt == i)
        local[members] = np.arange(len(members))
        groups.append(members)
    src, dst = G._src, G._dst
    triple = np.stack([nt[src], et, nt[dst]], 1) if len(src) else np.zeros((0, 3), np.int64)
    kinds, which = np.unique(triple, axis=0, return_inverse=True)
    which = np.asarray(which).reshape(-1)
    data, edge_groups = {}, {}
    for k, (s, e, d) in enumerate(kinds):
        c = (ntypes[s], etypes[e], ntypes[d])
        eids = np.flatnonzero(which == k)
        data[c], edge_groups[c] = (local[src[eids]], local[dst[eids]]), eids
    if not data:
        raise GraphError("to_heterogeneous: the graph has no edges, so no relation can be read from it")
    out = heterograph(data, dict(zip(ntypes, counts.tolist())), idtype=G.idtype, device=G.device)
    hg = as_hetero(out)
    frames = hg._node_frames
    for key, value in G.ndata.items():
        if key not in (ntype_field, NID):
            for i, t in enumerate(ntypes):
                frames[t][key] = (mx.nd.take(value, G._ids(groups[i])) if len(groups[i]) else
                                  zeros((0,) + value.shape[1:], value.dtype, value.context))
    for key, value in G.edata.items():
        if key not in (etype_field, EID):
            for c, eids in edge_groups.items():
                hg._rels[c].edata[key] = mx.nd.take(value, G._ids(eids))
    for i, t in enumerate(ntypes):
        frames[t][NID] = G._ids(groups[i])
    for c, eids in edge_groups.items():
        hg._rels[c].edata[EID] = G._ids(eids)
    return out


def metapath_reachable_graph(g, metapath):
    """DGL's ``dgl.metapath_reachable_graph``: the graph with an edge u->v (one, however many
    walks) for every node v reachable from u along the relations of ``metapath`` in turn; its
    edges are sorted by (u, v). A ``Graph`` of the first relation's source type when the walk
    returns to it, else a ``BipartiteGraph``; the end types' node features are shared with ``g``."""
    hg = as_hetero(g)
    if not metapath:
        raise GraphError("metapath_reachable_graph: give at least one edge type")
    chain = [hg.to_canonical_etype(e) for e in metapath]
    for a, b in zip(chain, chain[1:]):
        if a[2] != b[0]:
            raise GraphError(f"metapath_reachable_graph: {a} ends at {a[2]!r} but {b} starts at {b[0]!r}; "
                             "each relation must start where the previous one ends")
    adj = None
    for c in chain:
        r = hg._rels[c]
        m = sp.csr_matrix((np.ones(r.num_edges()), (r._src, r._dst)), shape=(r.num_src_nodes(), r.num_dst_nodes()))
        adj = m if adj is None else adj @ m
    u, v = adj.nonzero()
    order = np.lexsort((v, u))
    stype, dtype = chain[0][0], chain[-1][2]
    new = heterograph({(stype, "_E", dtype): (u[order], v[order])},
                      {stype: adj.shape[0], dtype: adj.shape[1]}, idtype=hg.idtype, device=hg.device)
    frames = node_frames(new)
    frames[stype].update(hg._node_frames[stype])
    if dtype != stype:
        frames[dtype].update(hg._node_frames[dtype])
    return new
