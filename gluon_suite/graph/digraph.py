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
"""
import contextlib
import copy

import mxnet as mx
import numpy as np

from .base import ALL, GraphError, Frame, as_ids, zero_initializer
from .layout import topology
from .message import MessagePassing


class Graph(MessagePassing):
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

    def _degrees(self, kind):
        """In- (per destination) or out-degrees (per source) as a cached int64 NumPy array."""
        def build():
            ids, n = (self._dst, self._ndst) if kind == "in" else (self._src, self._nsrc)
            return np.bincount(ids, minlength=n).astype(np.int64)
        return self._get(kind + "_deg", build)

    def _select_degrees(self, kind, v):
        deg = self._degrees(kind)
        if isinstance(v, str) and v == ALL:
            return self._ids(deg)
        ids = as_ids(v, "node ids")
        if len(ids) and (ids.min() < 0 or ids.max() >= len(deg)):
            raise GraphError(f"{kind}_degrees: node ids must lie in 0..{len(deg) - 1}")
        if isinstance(v, (int, np.integer)):
            return int(deg[ids[0]])
        return self._ids(deg[ids])

    def in_degrees(self, v=ALL, etype=None):
        """In-degree of every node, of the nodes ``v`` (NDArrays of the id type), or of one node (an int)."""
        return self._select_degrees("in", v)

    def out_degrees(self, u=ALL, etype=None):
        """Out-degree of every node, of the nodes ``u`` (NDArrays of the id type), or of one node (an int)."""
        return self._select_degrees("out", u)

    def _degree_power(self, kind, power, ctx):
        """max(degree, 1) ** power as a cached float32 column NDArray (N, 1) on ``ctx``: the
        normalisers of GraphConv and mean reductions, built once per graph, not per step."""
        def build():
            d = np.maximum(self._degrees(kind), 1).astype(np.float64) ** power
            return mx.nd.array(d.astype(np.float32).reshape(-1, 1), ctx=ctx)
        return self._get((kind, power, str(ctx)), build)

    def node_attr_schemes(self):
        """``{name: Scheme(shape, dtype)}`` of the node features (DGL's ``node_attr_schemes``)."""
        return self.srcdata.schemes()

    def edge_attr_schemes(self):
        """``{name: Scheme(shape, dtype)}`` of the edge features."""
        return self.edata.schemes()

    def has_zero_in_degree(self):
        """Whether some destination node has no incoming edge (no device round trip)."""
        return bool(self._ndst) and int(self._degrees("in").min()) == 0

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

    # ---- devices and id types -----------------------------------------------------------------
    def _clone(self, idtype=None, device=None):
        """The same structure, batch information, initializers and features (moved to ``device``)
        with another id type and/or context."""
        g = copy.copy(self)
        g._idtype = self._idtype if idtype is None else _idtype(idtype, None)
        g._ctx = self._ctx if device is None else device
        if g._idtype == np.int32 and max(self._nsrc, self._ndst, len(self._src)) >= 2 ** 31:
            raise GraphError("the graph's ids do not fit int32; keep idtype int64")
        g._cache = {}          # structures are rebuilt on first use, on the new context
        g._initializers = dict(self._initializers)
        g.edata = Frame(len(self._src), "edata", g._ctx)
        if self._two_sides:
            g.srcdata, g.dstdata = Frame(self._nsrc, "srcdata", g._ctx), Frame(self._ndst, "dstdata", g._ctx)
        else:
            g.srcdata = g.dstdata = Frame(self._nsrc, "ndata", g._ctx)
        frames = [(self.srcdata, g.srcdata), (self.edata, g.edata)]
        if self._two_sides:
            frames.append((self.dstdata, g.dstdata))
        for a, b in frames:
            for k, v in a.items():
                b[k] = v.as_in_context(g._ctx)
        return g

    def to(self, device, **kwargs):
        """DGL's ``g.to(ctx)``: the graph with its structure and features on ``device`` (an MXNet
        context); the graph itself when it is already there."""
        if not isinstance(device, mx.Context):
            raise GraphError(f"g.to({device!r}): pass an MXNet context such as mx.cpu() or mx.gpu(0)")
        return self if device == self._ctx else self._clone(device=device)

    def astype(self, idtype):
        """DGL's ``g.astype``: the graph with ids of type ``idtype`` (int32 or int64: NumPy or
        MXNet types or their names); the graph itself when it already has it."""
        t = _idtype(idtype, None)
        return self if t == self._idtype else self._clone(idtype=t)

    def int(self):
        """The graph with int32 ids (DGL's ``g.int()``)."""
        return self.astype(np.int32)

    def long(self):
        """The graph with int64 ids (DGL's ``g.long()``)."""
        return self.astype(np.int64)

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

    # ---- adjacency ------------------------------------------------------------------------------
    def adj_external(self, transpose=False, ctx=None, scipy_fmt=None, etype=None):
        """DGL's ``adj_external``: the adjacency matrix, rows the sources and columns the
        destinations (with ``transpose``, rows the destinations), an entry counting the edges
        between the two; an MXNet CSR matrix on ``ctx`` (default: the graph's context), or a SciPy
        matrix in ``scipy_fmt`` (``'csr'`` or ``'coo'``; coo keeps one entry per edge)."""
        import scipy.sparse as sp
        rows, cols = (self._dst, self._src) if transpose else (self._src, self._dst)
        shape = (self._ndst, self._nsrc) if transpose else (self._nsrc, self._ndst)
        m = sp.coo_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=shape)
        if scipy_fmt is not None:
            if scipy_fmt not in ("csr", "coo"):
                raise GraphError(f"adj(scipy_fmt={scipy_fmt!r}): choose 'csr' or 'coo'")
            return m.tocsr() if scipy_fmt == "csr" else m
        m = m.tocsr()
        m.sum_duplicates()
        return mx.nd.sparse.csr_matrix((m.data, m.indices, m.indptr), shape=shape, ctx=ctx or self._ctx)

    def adj(self, transpose=False, ctx=None, scipy_fmt=None, etype=None):
        """The adjacency matrix as ``adj_external`` gives it (DGL's MXNet-era ``adj`` signature)."""
        return self.adj_external(transpose, ctx, scipy_fmt, etype)

    adjacency_matrix = adj

    def adj_tensors(self, fmt, etype=None):
        """DGL's ``adj_tensors``: ``'coo'`` gives ``(src, dst)``; ``'csr'`` / ``'csc'`` give
        ``(indptr, indices, edge ids)`` with rows the sources / the destinations."""
        if fmt == "coo":
            return self._ids(self._src), self._ids(self._dst)
        if fmt not in ("csr", "csc"):
            raise GraphError(f"adj_tensors({fmt!r}): choose 'coo', 'csr' or 'csc'")
        key, other, n = (self._src, self._dst, self._nsrc) if fmt == "csr" else (self._dst, self._src, self._ndst)
        order = np.lexsort((other, key))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(key, minlength=n))])
        return self._ids(indptr), self._ids(other[order]), self._ids(order)

    # ---- cached sparse structures -------------------------------------------------------------
    def _get(self, name, build):
        if name not in self._cache:
            self._cache[name] = build()
        return self._cache[name]

    @property
    def _src_nd(self):
        """Every edge's source id, on the graph's context (for gathers)."""
        return self._get("src_nd", lambda: self._ids(self._src))

    @property
    def _dst_nd(self):
        """Every edge's destination id, on the graph's context."""
        return self._get("dst_nd", lambda: self._ids(self._dst))

    def _topology(self):
        return self._get("topo", lambda: topology(self._src, self._dst, self._nsrc, self._ndst))

    def _topo(self):
        """The key of this graph's topology for the custom operators (alive as long as the graph)."""
        return self._topology().key

    def _reverse_topo(self):
        """The topology with every edge reversed (softmax over out-edges, ``norm_by='src'``)."""
        return self._get("rtopo", lambda: topology(self._dst, self._src, self._ndst, self._nsrc)).key

    def _adj_csr(self):
        """The (dst x src) adjacency as an MXNet CSR matrix (parallel edges add up)."""
        def build():
            csr = self._topology().csr(np.ones(len(self._src), np.float32))
            csr.sum_duplicates()
            return mx.nd.sparse.csr_matrix((csr.data, csr.indices, csr.indptr), shape=csr.shape, ctx=self._ctx)
        return self._get("adj", build)

    def _incidence(self):
        """The (dst node x edge) matrix with a 1 at (dst(e), e)."""
        def build():
            import scipy.sparse as sp
            m = sp.csr_matrix((np.ones(len(self._dst), np.float32), (self._dst, np.arange(len(self._dst)))),
                              shape=(self._ndst, len(self._dst)))
            return mx.nd.sparse.csr_matrix((m.data, m.indices, m.indptr), shape=m.shape, ctx=self._ctx)
        return self._get("inc", build)


def _idtype(idtype, edges):
    """``np.int32`` or ``np.int64`` from an id type given as a NumPy or MXNet type or its name;
    when None, int32 if both id arrays are int32 (DGL infers the type from the tensors), else int64."""
    if idtype is None:
        dts = [getattr(a, "dtype", None) for a in (edges or ())]
        return np.int32 if dts and all(d is not None and np.dtype(d) == np.int32 for d in dts) else np.int64
    try:
        t = np.dtype(idtype)
    except TypeError:
        t = None
    if t == np.int32:
        return np.int32
    if t == np.int64:
        return np.int64
    raise GraphError(f"idtype {idtype!r} is not supported; use int32 or int64 (np.int32, np.int64, 'int32', 'int64')")


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
