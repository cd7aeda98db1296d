"""The ``Graph``: a directed multigraph with node and edge feature frames and DGL's graph API
(``graph((src, dst), num_nodes=...)``, ``ndata``/``edata``/``srcdata``/``dstdata``, degrees,
``local_scope``, message passing from ``message.MessagePassing``).

    g = graph(([0, 1, 2], [1, 2, 0]), num_nodes=4)
    g.ndata["h"] = mx.nd.random.normal(shape=(4, 8))
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h_sum"))

A graph lives on one MXNet context (``g.device``; ``g.to(ctx)`` moves it) and exposes its ids in
one id type (``g.idtype``, int64 by default, int32 with ``g.int()``/``g.astype``). It keeps its
edges on the host as int64 NumPy arrays (what sampling and transforms work on) and builds the
structures message passing reads (CSR adjacency, incidence matrix, index arrays, degrees) once, on
first use, on its context. Transforms such as ``add_self_loop`` return a new graph, as in DGL;
``add_nodes``/``add_edges``/``remove_edges`` change a graph in place and drop those caches.

This module holds the class, its frames, scopes and batch information, and the functions that
build a graph (``graph``, ``from_scipy``, ``from_networkx``); the derived structures (degrees,
adjacency, cached sparse forms) come from ``structure.GraphStructure`` and the moves between
contexts and id types from ``conversion.GraphConversions``.
"""
import contextlib
import copy

import mxnet as mx
import numpy as np

from .base import GraphError, Frame, as_ids, zero_initializer
from .conversion import GraphConversions, _idtype
from .message import MessagePassing
from .structure import GraphStructure

__all__ = ["Graph", "DGLGraph", "graph", "from_scipy", "from_networkx"]


class Graph(GraphStructure, GraphConversions, MessagePassing):
    """A directed graph of ``num_nodes`` nodes with edges ``(src, dst)`` (parallel edges and
    self-loops allowed), DGL's ``DGLGraph`` for one node and one edge type. ``ndata`` (also reachable
    as ``srcdata`` and ``dstdata``) and ``edata`` hold features with one row per node/edge.
    ``idtype`` (int32 or int64; default: int32 for int32 arrays, else int64) is the type of the
    ids it hands out, ``device`` (an MXNet context, default the CPU) where it and its features live."""

    is_block = False
    _two_sides = False            # separate source and destination node sets (blocks, bipartite graphs)
    _ntypes, _etype = ("_N", "_N"), "_E"

    def __init__(self, edges, num_nodes=None, idtype=None, device=None):
        if not isinstance(edges, (tuple, list)) or len(edges) != 2:
            raise GraphError("a graph is built from a pair (src, dst) of node-id sequences, one entry per edge")
        self._idtype = _idtype(idtype, edges)
        self._ctx = device or mx.cpu()
        src, dst = as_ids(edges[0], "src"), as_ids(edges[1], "dst")
        if len(src) != len(dst):
            raise GraphError(f"src has {len(src)} entries but dst has {len(dst)}; give one (src, dst) pair per edge")
        n = int(num_nodes) if num_nodes is not None else int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
        self._setup(src, dst, n, n)

    def _setup(self, src, dst, num_src, num_dst):
        for name, a, n in (("src", src, num_src), ("dst", dst, num_dst)):
            bad = np.flatnonzero((a < 0) | (a >= n))
            if len(bad):
                side = {"src": "source ", "dst": "destination "}[name] if self._two_sides else ""
                raise GraphError(f"edge index out of range: {name}[{bad[0]}] = {a[bad[0]]} but the graph has "
                                 f"{n} {side}nodes (ids 0..{n - 1})")
        if self._idtype == np.int32 and max(num_src, num_dst, len(src)) >= 2 ** 31:
            raise GraphError(f"{max(num_src, num_dst, len(src))} ids do not fit int32; use idtype int64 (g.long())")
        self._src, self._dst, self._nsrc, self._ndst = src, dst, num_src, num_dst
        ctx = self._ctx
        self.edata = Frame(len(src), "edata", ctx)
        if self._two_sides:
            self.srcdata, self.dstdata = Frame(num_src, "srcdata", ctx), Frame(num_dst, "dstdata", ctx)
        else:
            self.srcdata = self.dstdata = Frame(num_src, "ndata", ctx)
        self._cache = {}
        self._batch_num_nodes = self._batch_num_edges = None
        self._initializers = {}

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    def from_scipy(cls, matrix):
        """Edge i->j for every stored entry (i, j) of a square SciPy sparse matrix; its values go
        to ``edata['w']`` (module-level ``from_scipy`` follows DGL and stores them only on request)."""
        g = from_scipy(matrix, eweight_name="w")
        return g

    @classmethod
    def from_networkx(cls, nxg):
        """Nodes relabelled 0..n-1 in ``nxg``'s order; an undirected edge becomes two directed ones."""
        return from_networkx(nxg)

    # ---- structure ---------------------------------------------------------------------------
    @property
    def ndata(self):
        """Node features: one row per node."""
        return self.srcdata

    def num_nodes(self, ntype=None):
        """Number of nodes."""
        return self._nsrc

    number_of_nodes = num_nodes

    def num_src_nodes(self, ntype=None):
        """Number of source nodes (all nodes of a graph; a block's input side)."""
        return self._nsrc

    number_of_src_nodes = num_src_nodes

    def num_dst_nodes(self, ntype=None):
        """Number of destination nodes (all nodes of a graph; a block's output side)."""
        return self._ndst

    number_of_dst_nodes = num_dst_nodes

    def num_edges(self, etype=None):
        """Number of edges."""
        return len(self._src)

    number_of_edges = num_edges

    @property
    def idtype(self):
        """The type of the ids the graph hands out: ``np.int64`` (DGL's default) or ``np.int32``
        (DGL's MXNet backend names them the same way)."""
        return self._idtype

    @property
    def device(self):
        """The MXNet context the graph and its features live on."""
        return self._ctx

    @property
    def ctx(self):
        """The graph's context (``device``)."""
        return self._ctx

    def _ids(self, a):
        """Host ids ``a`` as an NDArray of the graph's id type on its context."""
        return mx.nd.array(np.asarray(a), dtype=self._idtype, ctx=self._ctx)

    def nodes(self, ntype=None):
        """All node ids 0..N-1 (in the graph's id type, on its context)."""
        return mx.nd.arange(self.num_nodes(ntype), dtype=self._idtype, ctx=self._ctx)

    def edges(self, form="uv", order="eid", etype=None):
        """The edges as NDArrays of the graph's id type, as in DGL: ``form='uv'`` gives ``(src,
        dst)``, ``'eid'`` the edge ids, ``'all'`` ``(src, dst, eid)``; ``order='srcdst'`` sorts by
        (src, dst)."""
        eid = np.arange(self.num_edges())
        if order == "srcdst":
            eid = np.lexsort((self._dst, self._src))
        elif order != "eid":
            raise GraphError(f"edges(order={order!r}): choose 'eid' or 'srcdst'")
        parts = {"uv": (self._src[eid], self._dst[eid]), "eid": (eid,),
                 "all": (self._src[eid], self._dst[eid], eid)}.get(form)
        if parts is None:
            raise GraphError(f"edges(form={form!r}): choose 'uv', 'eid' or 'all'")
        out = tuple(self._ids(p) for p in parts)
        return out[0] if form == "eid" else out

    all_edges = edges

    def node_attr_schemes(self):
        """``{name: Scheme(shape, dtype)}`` of the node features (DGL's ``node_attr_schemes``)."""
        return self.srcdata.schemes()

    def edge_attr_schemes(self):
        """``{name: Scheme(shape, dtype)}`` of the edge features."""
        return self.edata.schemes()

    @contextlib.contextmanager
    def local_scope(self):
        """Features written inside the block are dropped when it ends (the originals come back);
        in-place changes to a feature tensor stay, as in DGL."""
        frames = [self.srcdata, self.edata] + ([self.dstdata] if self._two_sides else [])
        saved = [dict(f) for f in frames]
        try:
            yield self
        finally:
            for f, s in zip(frames, saved):
                f._restore(s)

    # ---- batching information (set by ``batch``) ----------------------------------------------
    @property
    def batch_size(self):
        """Number of graphs in a batch (1 for a graph that is not a batch)."""
        return len(self._batch_num_nodes) if self._batch_num_nodes is not None else 1

    def local_var(self):
        """DGL's ``local_var``: a graph object sharing this one's structure and feature tensors
        whose feature dictionaries are its own, so features set on it leave this graph alone."""
        g = copy.copy(self)
        g.edata = self.edata._copy()
        g.srcdata = self.srcdata._copy()
        g.dstdata = self.dstdata._copy() if self._two_sides else g.srcdata
        g._initializers = dict(self._initializers)
        return g

    def set_n_initializer(self, initializer, field=None, ntype=None):
        """DGL's ``set_n_initializer``: ``initializer(shape, dtype, ctx, id_range)`` makes the rows of
        node feature ``field`` (every feature when None) for nodes that ``add_nodes`` adds without
        a value for it; zeros by default."""
        self._initializers[("n", field)] = initializer

    def set_e_initializer(self, initializer, field=None, etype=None):
        """As ``set_n_initializer``, for the edge features of edges ``add_edges`` adds."""
        self._initializers[("e", field)] = initializer

    def _initializer(self, kind, field):
        return self._initializers.get((kind, field)) or self._initializers.get((kind, None)) or zero_initializer

    def batch_num_nodes(self, ntype=None):
        """Nodes per graph of the batch (NDArray of the id type)."""
        return self._ids(self._batch_sizes()[0])

    def batch_num_edges(self, etype=None):
        """Edges per graph of the batch (NDArray of the id type)."""
        return self._ids(self._batch_sizes()[1])

    def _batch_sizes(self):
        if self._batch_num_nodes is None:
            return [self.num_nodes()], [self.num_edges()]
        return list(self._batch_num_nodes), list(self._batch_num_edges)

    def _with_edges(self, src, dst):
        """A featureless graph of the same kind, node counts, id type and context with other edges."""
        g = Graph((src, dst), num_nodes=self._nsrc, idtype=self._idtype, device=self._ctx)
        g._ntypes, g._etype = self._ntypes, self._etype
        return g

    # ---- graph and node/edge types (one of each; see ``heterograph`` for bipartite graphs) -------
    @property
    def ntypes(self):
        """Node type names: one (DGL's ``'_N'`` unless named by ``heterograph``)."""
        return list(dict.fromkeys(self._ntypes))

    @property
    def etypes(self):
        """Edge type names: one."""
        return [self._etype]

    @property
    def canonical_etypes(self):
        """``[(source type, edge type, destination type)]``."""
        return [(self._ntypes[0], self._etype, self._ntypes[1])]

    @property
    def srctypes(self):
        """Source node types."""
        return [self._ntypes[0]]

    @property
    def dsttypes(self):
        """Destination node types."""
        return [self._ntypes[1]]

    def is_homogeneous(self):
        """Whether the graph has one node type and one edge type."""
        return not self._two_sides

    @property
    def is_unibipartite(self):
        """Whether sources and destinations are separate node sets."""
        return self._two_sides

    def __repr__(self):
        return (f"Graph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()}, "
                f"ndata_schemes={sorted(self.ndata)}, edata_schemes={sorted(self.edata)})")


def graph(data, num_nodes=None, idtype=None, device=None, **kwargs):
    """DGL's ``dgl.graph``: a graph from ``(src, dst)`` node-id sequences (lists, NumPy arrays or
    NDArrays; DGL's ``('coo', (src, dst))`` too) with ``num_nodes`` nodes (default: the largest
    id + 1), ids of type ``idtype`` (int32 or int64; default: inferred, see ``Graph``) on
    ``device`` (an MXNet context; default the CPU)."""
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str):
        if data[0] != "coo":
            raise GraphError(f"graph(({data[0]!r}, ...)): only the 'coo' form (src, dst) is supported")
        data = data[1]
    return Graph(data, num_nodes=num_nodes, idtype=idtype, device=device)


DGLGraph = Graph


def from_scipy(sp_mat, eweight_name=None, idtype=None, device=None):
    """DGL's ``dgl.from_scipy``: edge i->j for every stored entry (i, j) of a square SciPy sparse
    matrix; with ``eweight_name`` the entries' values become that edge feature."""
    coo = sp_mat.tocoo()
    if coo.shape[0] != coo.shape[1]:
        raise GraphError(f"an adjacency matrix must be square, got {coo.shape}")
    g = Graph((coo.row, coo.col), num_nodes=coo.shape[0], idtype=idtype or np.int64, device=device)
    if eweight_name is not None:
        g.edata[eweight_name] = mx.nd.array(coo.data.astype(np.float32), ctx=g.device)
    return g


def from_networkx(nx_graph, node_attrs=None, edge_attrs=None, idtype=None, device=None):
    """DGL's ``dgl.from_networkx``: nodes relabelled 0..n-1 in the graph's order; an undirected
    edge becomes two directed ones (u->v, then v->u; a self-loop once); ``node_attrs`` /
    ``edge_attrs`` name numeric attributes to copy into ``ndata`` / ``edata``."""
    index = {v: i for i, v in enumerate(nx_graph.nodes())}
    triples = [(index[u], index[v], d) for u, v, d in nx_graph.edges(data=True)]
    if not nx_graph.is_directed():
        triples += [(v, u, d) for u, v, d in triples if u != v]
    src = np.array([t[0] for t in triples], np.int64)
    dst = np.array([t[1] for t in triples], np.int64)
    g = Graph((src, dst), num_nodes=len(index), idtype=idtype or np.int64, device=device)
    for name in node_attrs or []:
        g.ndata[name] = mx.nd.array([nx_graph.nodes[v][name] for v in nx_graph.nodes()], ctx=g.device)
    for name in edge_attrs or []:
        g.edata[name] = mx.nd.array([t[2][name] for t in triples], ctx=g.device)
    return g
