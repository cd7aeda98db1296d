"""``HeteroGraph``: DGL's heterogeneous graph with several relations, ``(source type, edge type,
destination type)`` each, for ``import gluon_suite.graph as dgl`` users.

    g = dgl.heterograph({("user", "follows", "user"): (u1, v1), ("user", "plays", "game"): (u2, v2)})
    g.nodes["user"].data["h"] = x_user
    g["plays"].update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))     # or g.update_all(..., etype="plays")

It holds one relation graph per canonical edge type: an ordinary ``Graph`` (keeping the type
names) for a relation within one node type, a ``BipartiteGraph`` between two. Each node type has
one feature frame shared by every relation graph that touches it, and each relation its own edge
frame, so ``g['plays']`` (the relation graph itself, with its cached structures) reads and writes
the heterograph's features, and message passing and the layers run on the same compiled kernels
as on any graph, one relation at a time. Message passing across relations is in
``hetero_message.HeteroMessagePassing``.

Node types and canonical edge types keep the order they are given in (``heterograph`` sorts
them, as DGL does). An edge type name that names several relations is an error wherever a name
is taken: pass the canonical triple."""
import contextlib

import mxnet as mx
import numpy as np

from .base import ALL, GraphError
from .conversion import _idtype
from .digraph import Graph
from .hetero_bipartite import BipartiteGraph
from .hetero_message import HeteroMessagePassing
from .hetero_views import BatchCounts, EdgeDataView, EdgeView, NodeView, TypeDataView, TypeFrame

__all__ = ["HeteroGraph", "relation_graph", "node_frames", "as_hetero"]


def _relation(c, src, dst, counts, idtype, ctx, frames):
    """The relation graph of canonical type ``c`` reading and writing the shared node ``frames``."""
    s, e, d = c
    try:
        if s == d:
            g = Graph((src, dst), num_nodes=counts[s], idtype=idtype, device=ctx)
            g._ntypes, g._etype = (s, s), e
        else:
            g = BipartiteGraph((src, dst), counts[s], counts[d], (s, d), e, idtype, ctx)
    except GraphError as err:
        raise GraphError(f"heterograph: relation {c}: {err}") from None
    g.srcdata, g.dstdata = frames[s], frames[d]
    g.edata = TypeFrame(len(src), f"edges[{c!r}].data", f"{c!r} edges", ctx)
    return g


class _OneRelationOnly(GraphError, AttributeError):
    """A graph function that reads one relation's internals was given a heterograph (also an
    ``AttributeError``, so ``hasattr`` and ``getattr`` with a default still work)."""


class HeteroGraph(HeteroMessagePassing, BatchCounts):
    """A graph with node types ``ntypes`` and relations ``canonical_etypes`` (see the module
    docstring). ``edges`` maps each canonical type to host id arrays ``(src, dst)`` (int64),
    ``num_nodes`` each node type to its count; ``idtype`` (int32/int64) and ``device`` (an MXNet
    context) as for ``Graph``. Build one with ``dgl.heterograph``."""

    is_block = False

    def __init__(self, edges, num_nodes, ntypes, idtype=np.int64, device=None):
        self._idtype, self._ctx = _idtype(idtype, None), device or mx.cpu()
        self._ntypes = list(ntypes)
        self._num_nodes = {t: int(num_nodes[t]) for t in self._ntypes}
        self._canonical = list(edges)
        self._node_frames = {t: TypeFrame(n, f"nodes[{t!r}].data", f"{t!r} nodes", self._ctx)
                             for t, n in self._num_nodes.items()}
        self._rels = {c: _relation(c, s, d, self._num_nodes, self._idtype, self._ctx, self._node_frames)
                      for c, (s, d) in edges.items()}
        self._by_name = {}
        for c in self._canonical:
            self._by_name.setdefault(c[1], []).append(c)

    @classmethod
    def _wrap(cls, rel):
        """A heterograph view of a one-relation ``Graph`` or ``BipartiteGraph``: the same relation
        graph object and its frames (nothing copied)."""
        g = cls.__new__(cls)
        g._idtype, g._ctx = rel.idtype, rel.device
        s, e, d = rel.canonical_etypes[0]
        g._ntypes = list(dict.fromkeys((s, d)))
        g._num_nodes = {s: rel.num_src_nodes(), d: rel.num_dst_nodes()}
        g._canonical, g._rels, g._by_name = [(s, e, d)], {(s, e, d): rel}, {e: [(s, e, d)]}
        g._node_frames = {s: rel.srcdata, d: rel.dstdata}
        return g

    def __getattr__(self, name):
        # reached only for attributes the class lacks: the internals of a one-relation graph that
        # functions such as batch, to_block or node_subgraph read
        if name.startswith("_") and not name.startswith("__"):
            raise _OneRelationOnly(f"this takes a graph with one relation, not a heterograph with "
                                   f"{len(self.__dict__.get('_canonical', ()))} relations; pass one relation "
                                   "(g[etype]) or dgl.to_homogeneous(g)")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ---- types -------------------------------------------------------------------------------
    @property
    def ntypes(self):
        """Node type names."""
        return list(self._ntypes)

    @property
    def etypes(self):
        """Edge type names, one per relation (in ``canonical_etypes`` order; a name may repeat)."""
        return [c[1] for c in self._canonical]

    @property
    def canonical_etypes(self):
        """``(source type, edge type, destination type)`` of every relation."""
        return list(self._canonical)

    @property
    def is_unibipartite(self):
        """Whether no node type is both a source and a destination of some relation."""
        return not ({c[0] for c in self._canonical} & {c[2] for c in self._canonical})

    @property
    def srctypes(self):
        """Source node types: those of the relations' sources on a uni-bipartite graph, else all."""
        if self.is_unibipartite and self._canonical:
            return [t for t in self._ntypes if any(c[0] == t for c in self._canonical)]
        return self.ntypes

    @property
    def dsttypes(self):
        """Destination node types: the relations' destinations on a uni-bipartite graph, else all."""
        if self.is_unibipartite and self._canonical:
            return [t for t in self._ntypes if t not in self.srctypes]
        return self.ntypes

    def is_homogeneous(self):
        """Whether the graph has one node type and one edge type."""
        return len(self._ntypes) == 1 and len(self._canonical) == 1

    def to_canonical_etype(self, etype):
        """The ``(source type, edge type, destination type)`` that ``etype`` (a name or a
        triple) names; None names the only relation. A name shared by several relations, or
        one that names none, is a GraphError."""
        if etype is None:
            if len(self._canonical) != 1:
                raise GraphError(f"name the edge type (etype=...): the graph has {len(self._canonical)} relations "
                                 f"({', '.join(map(str, self._canonical))})")
            return self._canonical[0]
        if isinstance(etype, tuple):
            if etype not in self._rels:
                raise GraphError(f"relation {etype} is not in this graph (it has "
                                 f"{', '.join(map(str, self._canonical))})")
            return etype
        found = self._by_name.get(etype)
        if not found:
            raise GraphError(f"edge type {etype!r} is not in this graph (it has "
                             f"{', '.join(map(repr, dict.fromkeys(self.etypes)))})")
        if len(found) > 1:
            raise GraphError(f"edge type {etype!r} is ambiguous: it names {', '.join(map(str, found))}; "
                             "use the canonical (srctype, etype, dsttype) triple")
        return found[0]

    def _rel(self, etype):
        return self._rels[self.to_canonical_etype(etype)]

    def _ntype(self, ntype):
        if ntype not in self._num_nodes:
            raise GraphError(f"node type {ntype!r} is not in this graph (it has {', '.join(map(repr, self._ntypes))})")
        return ntype

    def __getitem__(self, key):
        """The relation graph ``g['plays']`` or ``g['user', 'plays', 'game']`` (``:`` stands for
        any type when that leaves one relation); it shares the heterograph's features."""
        if not isinstance(key, tuple):
            return self._rel(key)
        if len(key) != 3:
            raise GraphError("g[...] takes an edge type or a (srctype, etype, dsttype) triple")
        wild = [k == slice(None) for k in key]
        if not any(wild):
            return self._rel(key)
        found = [c for c in self._canonical if all(w or a == b for w, a, b in zip(wild, c, key))]
        if len(found) != 1:
            names = ", ".join(map(str, found)) or "none"
            raise GraphError(f"g[{key}] matches {len(found)} relations ({names}); relation slices of one relation "
                             "only: combining several into one graph is not supported")
        return self._rels[found[0]]

    # ---- sizes and ids ------------------------------------------------------------------------
    def num_nodes(self, ntype=None):
        """Nodes of type ``ntype``, or of all types together when None."""
        if ntype is None:
            return sum(self._num_nodes.values())
        return self._num_nodes[self._ntype(ntype)]

    number_of_nodes = num_nodes

    def num_src_nodes(self, ntype=None):
        """Nodes of source type ``ntype`` (all source types together when None)."""
        return sum(self._num_nodes[t] for t in self.srctypes) if ntype is None else self.num_nodes(ntype)

    def num_dst_nodes(self, ntype=None):
        """Nodes of destination type ``ntype`` (all destination types together when None)."""
        return sum(self._num_nodes[t] for t in self.dsttypes) if ntype is None else self.num_nodes(ntype)

    number_of_src_nodes, number_of_dst_nodes = num_src_nodes, num_dst_nodes

    def num_edges(self, etype=None):
        """Edges of relation ``etype`` (a name or a triple), or of all relations when None."""
        if etype is None:
            return sum(r.num_edges() for r in self._rels.values())
        return self._rel(etype).num_edges()

    number_of_edges = num_edges

    @property
    def idtype(self):
        """The id type of the ids the graph hands out (``np.int32`` or ``np.int64``)."""
        return self._idtype

    @property
    def device(self):
        """The MXNet context the graph and its features live on."""
        return self._ctx

    ctx = device

    # ---- views ----------------------------------------------------------------------------------
    @property
    def nodes(self):
        """``g.nodes['user'].data`` (features of a type) and ``g.nodes('user')`` (its ids)."""
        return NodeView(self, self._ntypes)

    @property
    def srcnodes(self):
        """``nodes`` over the source types (all types unless the graph is uni-bipartite)."""
        return NodeView(self, self.srctypes)

    @property
    def dstnodes(self):
        """``nodes`` over the destination types (all types unless the graph is uni-bipartite)."""
        return NodeView(self, self.dsttypes)

    @property
    def edges(self):
        """``g.edges['plays'].data`` (features of a relation) and ``g.edges(form, order, etype)``."""
        return EdgeView(self)

    def all_edges(self, form="uv", order="eid", etype=None):
        """``g.edges(form, order, etype)``."""
        return self._rel(etype).edges(form=form, order=order)

    def _data(self, types):
        if len(types) == 1:
            return self._node_frames[types[0]]
        return TypeDataView({t: self._node_frames[t] for t in types}, "node")

    @property
    def ndata(self):
        """The node features: the frame of the only node type, or a view whose items are dicts
        ``{node type: tensor}``."""
        return self._data(self._ntypes)

    @property
    def srcdata(self):
        """``ndata`` over the source types."""
        return self._data(self.srctypes)

    @property
    def dstdata(self):
        """``ndata`` over the destination types."""
        return self._data(self.dsttypes)

    @property
    def edata(self):
        """The edge features: the frame of the only relation, or a view whose items are dicts
        ``{canonical edge type: tensor}`` (assignments may name a relation by its edge type)."""
        if len(self._canonical) == 1:
            return self._rels[self._canonical[0]].edata
        return EdgeDataView({c: r.edata for c, r in self._rels.items()}, self.to_canonical_etype)

    # ---- structure of one relation ---------------------------------------------------------------
    def in_degrees(self, v=ALL, etype=None):
        """In-degrees along relation ``etype`` (see ``Graph.in_degrees``)."""
        return self._rel(etype).in_degrees(v)

    def out_degrees(self, u=ALL, etype=None):
        """Out-degrees along relation ``etype``."""
        return self._rel(etype).out_degrees(u)

    def has_zero_in_degree(self, etype=None):
        """Whether a destination node of relation ``etype`` has no incoming edge of it."""
        return self._rel(etype).has_zero_in_degree()

    def edge_ids(self, u, v, return_uv=False, etype=None):
        """Edge ids of relation ``etype`` between node pairs (see ``Graph.edge_ids``)."""
        return self._rel(etype).edge_ids(u, v, return_uv)

    def has_edges_between(self, u, v, etype=None):
        """Whether relation ``etype`` has an edge u->v, per pair."""
        return self._rel(etype).has_edges_between(u, v)

    def find_edges(self, eid, etype=None):
        """``(src, dst)`` of edges ``eid`` of relation ``etype``."""
        return self._rel(etype).find_edges(eid)

    def in_edges(self, v, form="uv", etype=None):
        """Edges of relation ``etype`` into nodes ``v``."""
        return self._rel(etype).in_edges(v, form)

    def out_edges(self, u, form="uv", etype=None):
        """Edges of relation ``etype`` out of nodes ``u``."""
        return self._rel(etype).out_edges(u, form)

    def adj_external(self, transpose=False, ctx=None, scipy_fmt=None, etype=None):
        """Adjacency matrix of relation ``etype`` (rows the sources; see ``Graph.adj_external``)."""
        return self._rel(etype).adj_external(transpose, ctx, scipy_fmt)

    def adj(self, transpose=False, ctx=None, scipy_fmt=None, etype=None):
        """``adj_external`` of relation ``etype``."""
        return self._rel(etype).adj(transpose, ctx, scipy_fmt)

    # ---- scopes, contexts, id types ---------------------------------------------------------------
    def _frames(self):
        return list(self._node_frames.values()) + [r.edata for r in self._rels.values()]

    @contextlib.contextmanager
    def local_scope(self):
        """Features written inside the block, of any type, are dropped when it ends."""
        frames = self._frames()
        saved = [dict(f) for f in frames]
        try:
            yield self
        finally:
            for f, s in zip(frames, saved):
                f._restore(s)

    def _clone(self, idtype=None, device=None):
        g = HeteroGraph({c: (r._src, r._dst) for c, r in self._rels.items()}, self._num_nodes, self._ntypes,
                        self._idtype if idtype is None else idtype, self._ctx if device is None else device)
        pairs = [(self._node_frames[t], g._node_frames[t]) for t in self._ntypes]
        pairs += [(self._rels[c].edata, g._rels[c].edata) for c in self._canonical]
        for a, b in pairs:
            for k, v in a.items():
                b[k] = v.as_in_context(g._ctx)
        return g

    def to(self, device, **kwargs):
        """The graph with its structure and features on ``device`` (an MXNet context)."""
        if not isinstance(device, mx.Context):
            raise GraphError(f"g.to({device!r}): pass an MXNet context such as mx.cpu() or mx.gpu(0)")
        return self if device == self._ctx else self._clone(device=device)

    def astype(self, idtype):
        """The graph with ids of type ``idtype`` (int32 or int64)."""
        t = _idtype(idtype, None)
        return self if t == self._idtype else self._clone(idtype=t)

    def int(self):
        """The graph with int32 ids."""
        return self.astype(np.int32)

    def long(self):
        """The graph with int64 ids."""
        return self.astype(np.int64)

    def __repr__(self):
        nodes = {t: self._num_nodes[t] for t in self._ntypes}
        edges = {c: self._rels[c].num_edges() for c in self._canonical}
        return f"HeteroGraph(num_nodes={nodes}, num_edges={edges}, metagraph={[(s, d, e) for s, e, d in edges]})"


def as_hetero(g):
    """``g`` as a ``HeteroGraph``: itself, or a view of a one-relation graph (not a block)."""
    if isinstance(g, HeteroGraph):
        return g
    if not isinstance(g, Graph) or g.is_block:
        raise GraphError(f"expected a graph or heterograph, got {type(g).__name__}")
    return HeteroGraph._wrap(g)


def relation_graph(g, c):
    """The graph of relation ``c`` of ``g``: ``g[c]`` for a heterograph, ``g`` itself for a
    graph with one relation."""
    return g[c] if isinstance(g, HeteroGraph) or type(g).__name__ == "HeteroBlock" else g


def node_frames(g):
    """``{node type: feature frame}`` of a graph or heterograph."""
    return as_hetero(g)._node_frames
