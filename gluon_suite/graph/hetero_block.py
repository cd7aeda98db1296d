"""Blocks of heterographs (DGL's ``dgl.to_block`` on a heterograph frontier): for sampled training of
a heterograph model, layer by layer, as blocks do for one relation.

A ``HeteroBlock`` has, for every node type, a destination node set (the nodes whose outputs the
layer computes) and a source node set (the destination nodes first, then the other nodes that
send them messages), and for every relation ``(s, e, d)`` a block from the source nodes of type
``s`` to the destination nodes of type ``d``. Each relation is a ``BipartiteGraph`` whose
``srcdata`` is the source frame of ``s`` and ``dstdata`` the destination frame of ``d``, shared by
every relation, so a layer run on ``block[relation]`` (``HeteroGraphConv``) reads and writes the
block's own frames. ``srcdata[NID]``/``dstdata[NID]`` hold each type's original node ids and
``edata[EID]`` each relation's original edge ids."""
import mxnet as mx
import numpy as np

from .base import EID, NID, GraphError, as_ids
from .hetero_bipartite import BipartiteGraph
from .hetero_views import EdgeDataView, EdgeView, TypeDataView, TypeFrame

__all__ = ["HeteroBlock", "to_block_hetero"]


class HeteroBlock:
    """See the module docstring. ``edges``: ``{canonical type: (local src ids, local dst ids)}``;
    ``num_src``/``num_dst``: ``{node type: count}``."""

    is_block = True
    _two_sides = True

    def __init__(self, edges, num_src, num_dst, ntypes, idtype, device):
        self._idtype, self._ctx, self._ntypes = idtype, device, list(ntypes)
        self._nsrc = {t: int(num_src[t]) for t in self._ntypes}
        self._ndst = {t: int(num_dst[t]) for t in self._ntypes}
        self._src_frames = {t: TypeFrame(self._nsrc[t], f"srcnodes[{t!r}].data", f"{t!r} source nodes", device)
                            for t in self._ntypes}
        self._dst_frames = {t: TypeFrame(self._ndst[t], f"dstnodes[{t!r}].data", f"{t!r} destination nodes", device)
                            for t in self._ntypes}
        self._canonical, self._rels, self._by_name = list(edges), {}, {}
        for c, (src, dst) in edges.items():
            s, e, d = c
            rel = BipartiteGraph((src, dst), self._nsrc[s], self._ndst[d], (s, d), e, idtype, device)
            rel.is_block = True
            rel.srcdata, rel.dstdata = self._src_frames[s], self._dst_frames[d]
            rel.edata = TypeFrame(len(src), f"edges[{c!r}].data", f"{c!r} edges", device)
            self._rels[c] = rel
            self._by_name.setdefault(e, []).append(c)

    # ---- types and counts ----------------------------------------------------------------------
    ntypes = property(lambda self: list(self._ntypes))
    srctypes = dsttypes = ntypes
    canonical_etypes = property(lambda self: list(self._canonical))
    etypes = property(lambda self: [c[1] for c in self._canonical])
    idtype = property(lambda self: self._idtype)
    device = property(lambda self: self._ctx)

    def to_canonical_etype(self, etype):
        """The relation ``etype`` (a name or a triple) names; None names the only one."""
        if etype is None and len(self._canonical) == 1:
            return self._canonical[0]
        if isinstance(etype, tuple) and etype in self._rels:
            return etype
        found = self._by_name.get(etype, [])
        if len(found) != 1:
            raise GraphError(f"edge type {etype!r} names {len(found)} relations of this block "
                             f"({', '.join(map(str, self._canonical))}); give one canonical triple")
        return found[0]

    def __getitem__(self, etype):
        """The block of one relation (a ``BipartiteGraph`` sharing this block's frames)."""
        return self._rels[self.to_canonical_etype(etype)]

    _rel = __getitem__

    def _type(self, ntype, counts):
        if ntype is None:
            return sum(counts.values())
        if ntype not in counts:
            raise GraphError(f"node type {ntype!r} is not in this block (it has {', '.join(self._ntypes)})")
        return counts[ntype]

    def num_src_nodes(self, ntype=None):
        """Source nodes of ``ntype`` (all types when None)."""
        return self._type(ntype, self._nsrc)

    def num_dst_nodes(self, ntype=None):
        """Destination nodes of ``ntype`` (all types when None)."""
        return self._type(ntype, self._ndst)

    def num_edges(self, etype=None):
        """Edges of relation ``etype`` (all when None)."""
        if etype is None:
            return sum(r.num_edges() for r in self._rels.values())
        return self[etype].num_edges()

    # ---- views ----------------------------------------------------------------------------------
    @property
    def srcnodes(self):
        """``block.srcnodes['user'].data``: the source frame of a type."""
        return _Side(self._src_frames, self._ntypes)

    @property
    def dstnodes(self):
        """``block.dstnodes['user'].data``: the destination frame of a type."""
        return _Side(self._dst_frames, self._ntypes)

    @property
    def srcdata(self):
        """Source features over the types: items are ``{node type: tensor}``."""
        return TypeDataView(self._src_frames, "srcdata")

    @property
    def dstdata(self):
        """Destination features over the types: items are ``{node type: tensor}``."""
        return TypeDataView(self._dst_frames, "dstdata")

    @property
    def edges(self):
        """``block.edges['plays'].data`` and ``block.edges(etype=...)``."""
        return EdgeView(self)

    @property
    def edata(self):
        """Edge features over the relations: items are ``{canonical type: tensor}``."""
        return EdgeDataView({c: r.edata for c, r in self._rels.items()}, self._canonical)

    def to(self, device, **kwargs):
        """The block with its structure and features on ``device`` (an MXNet context)."""
        if not isinstance(device, mx.Context):
            raise GraphError(f"block.to({device!r}): pass an MXNet context such as mx.cpu() or mx.gpu(0)")
        if device == self._ctx:
            return self
        out = HeteroBlock({c: (r._src, r._dst) for c, r in self._rels.items()}, self._nsrc, self._ndst,
                          self._ntypes, self._idtype, device)
        pairs = [(self._src_frames[t], out._src_frames[t]) for t in self._ntypes]
        pairs += [(self._dst_frames[t], out._dst_frames[t]) for t in self._ntypes]
        pairs += [(r.edata, out._rels[c].edata) for c, r in self._rels.items()]
        for a, b in pairs:
            for k, v in a.items():   # MXNet cannot copy an empty array across contexts: build it there
                b[k] = v.as_in_context(device) if v.size else mx.nd.array(v.asnumpy(), dtype=v.dtype, ctx=device)
        return out

    def __repr__(self):
        return (f"HeteroBlock(num_src_nodes={self._nsrc}, num_dst_nodes={self._ndst}, "
                f"num_edges={ {c: r.num_edges() for c, r in self._rels.items()} })")


class _Side:
    """``block.srcnodes`` / ``block.dstnodes``: ``view[ntype].data`` is that type's frame."""

    def __init__(self, frames, types):
        self._frames, self._types = frames, types

    def __getitem__(self, ntype):
        if ntype not in self._frames:
            raise GraphError(f"node type {ntype!r} is not in this block (it has {', '.join(self._types)})")
        return type("NodeSpace", (), {"data": self._frames[ntype]})()


def to_block_hetero(g, dst_nodes=None, include_dst_in_src=True, src_nodes=None):
    """DGL's ``to_block`` of a heterograph frontier ``g`` towards ``dst_nodes`` (``{node type: ids}``;
    default: every node with an in-edge, per type in id order). A type's source nodes are its
    destination nodes (with ``include_dst_in_src``), then the other sources of its out-edges, in
    order of first appearance over the relations in canonical order, each relation's edges in id
    order; edges keep ``g``'s order within a relation. ``src_nodes`` (``{node type: ids}``) gives each
    type's source nodes and their order instead; it must hold every source of the edges."""
    rels = {c: (g[c]._src, g[c]._dst) for c in g.canonical_etypes}
    if dst_nodes is None:
        dst = {t: np.unique(np.concatenate([d for c, (_, d) in rels.items() if c[2] == t] or [np.zeros(0, np.int64)]))
               for t in g.ntypes}
    else:
        if not isinstance(dst_nodes, dict):
            raise GraphError("to_block: give dst_nodes per node type ({ntype: ids}) for a heterograph")
        unknown = [t for t in dst_nodes if t not in g.ntypes]
        if unknown:
            raise GraphError(f"to_block: node type {unknown[0]!r} is not in the graph (it has {', '.join(g.ntypes)})")
        dst = {t: as_ids(dst_nodes.get(t, []), f"dst_nodes[{t!r}]") for t in g.ntypes}
    pos = {}
    for t in g.ntypes:
        if len(np.unique(dst[t])) != len(dst[t]):
            raise GraphError(f"to_block: dst_nodes[{t!r}] repeats a node")
        if len(dst[t]) and (dst[t].min() < 0 or dst[t].max() >= g.num_nodes(t)):
            raise GraphError(f"to_block: dst_nodes[{t!r}] must lie in 0..{g.num_nodes(t) - 1}")
        pos[t] = np.full(g.num_nodes(t), -1, np.int64)
        pos[t][dst[t]] = np.arange(len(dst[t]))
    for c, (_, d) in rels.items():
        if len(d) and (pos[c[2]][d] < 0).any():
            raise GraphError(f"to_block: a {c[2]!r} node receives a {c} edge but is not among dst_nodes; pass "
                             "every destination of the frontier's edges")
    if src_nodes is not None:
        if not isinstance(src_nodes, dict):
            raise GraphError("to_block: give src_nodes per node type ({ntype: ids}) for a heterograph")
        src = {t: [int(v) for v in as_ids(src_nodes.get(t, []), f"src_nodes[{t!r}]")] for t in g.ntypes}
    else:
        src = {t: list(dst[t]) if include_dst_in_src else [] for t in g.ntypes}
    spos = {t: np.full(g.num_nodes(t), -1, np.int64) for t in g.ntypes}
    for t in g.ntypes:
        if len(set(src[t])) != len(src[t]) or any(not 0 <= v < g.num_nodes(t) for v in src[t]):
            raise GraphError(f"to_block: src_nodes[{t!r}] must be distinct ids in 0..{g.num_nodes(t) - 1}")
        spos[t][np.asarray(src[t], np.int64)] = np.arange(len(src[t]))
    for c, (s, _) in rels.items():
        t = c[0]
        first = s[np.sort(np.unique(s, return_index=True)[1])] if len(s) else s
        new = [int(v) for v in first if spos[t][v] < 0]
        if new and src_nodes is not None:
            raise GraphError(f"to_block: src_nodes[{t!r}] lacks node {new[0]}, a source of {c} edges; give every "
                             "source of the frontier's edges")
        spos[t][np.asarray(new, np.int64)] = np.arange(len(src[t]), len(src[t]) + len(new))
        src[t] += new
    b = HeteroBlock({c: (spos[c[0]][s], pos[c[2]][d]) for c, (s, d) in rels.items()},
                    {t: len(v) for t, v in src.items()}, {t: len(v) for t, v in dst.items()}, g.ntypes,
                    g.idtype, g.device)
    idt = np.dtype(g.idtype).name
    for t in g.ntypes:
        b._src_frames[t][NID] = mx.nd.array(np.asarray(src[t], np.int64), dtype=idt, ctx=g.device)
        b._dst_frames[t][NID] = mx.nd.array(dst[t], dtype=idt, ctx=g.device)
    for c in g.canonical_etypes:
        e = g[c].edata
        b[c].edata[EID] = e[EID] if EID in e else mx.nd.arange(g[c].num_edges(), dtype=idt, ctx=g.device)
    return b
