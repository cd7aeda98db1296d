"""The ``Graph``: a directed multigraph with node and edge feature frames and DGL's graph API
(``graph((src, dst), num_nodes=...)``, ``ndata``/``edata``/``srcdata``/``dstdata``, degrees,
``local_scope``, message passing from ``message.MessagePassing``).

    g = graph(([0, 1, 2], [1, 2, 0]), num_nodes=4)
    g.ndata["h"] = mx.nd.random.normal(shape=(4, 8))
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h_sum"))

A graph keeps its edges as int64 NumPy arrays and builds sparse structures (CSR adjacency,
incidence matrix, the kernels' topology, degrees) once, on first use; its structure never changes
(transforms such as ``add_self_loop`` return a new graph, as in DGL).
"""
import contextlib

import mxnet as mx
import numpy as np

from .base import ALL, GraphError, Frame, as_ids
from .layout import topology
from .message import MessagePassing


class Graph(MessagePassing):
    """A directed graph of ``num_nodes`` nodes with edges ``(src, dst)`` (parallel edges and
    self-loops allowed), DGL's ``DGLGraph`` for one node and one edge type. ``ndata`` (also reachable
    as ``srcdata`` and ``dstdata``) and ``edata`` hold features with one row per node/edge."""

    is_block = False

    def __init__(self, edges, num_nodes=None):
        if not isinstance(edges, (tuple, list)) or len(edges) != 2:
            raise GraphError("a graph is built from a pair (src, dst) of node-id sequences, one entry per edge")
        src, dst = as_ids(edges[0], "src"), as_ids(edges[1], "dst")
        if len(src) != len(dst):
            raise GraphError(f"src has {len(src)} entries but dst has {len(dst)}; give one (src, dst) pair per edge")
        n = int(num_nodes) if num_nodes is not None else int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
        self._setup(src, dst, n, n)

    def _setup(self, src, dst, num_src, num_dst):
        for name, a, n in (("src", src, num_src), ("dst", dst, num_dst)):
            bad = np.flatnonzero((a < 0) | (a >= n))
            if len(bad):
                side = {"src": "source ", "dst": "destination "}[name] if self.is_block else ""
                raise GraphError(f"edge index out of range: {name}[{bad[0]}] = {a[bad[0]]} but the graph has "
                                 f"{n} {side}nodes (ids 0..{n - 1})")
        self._src, self._dst, self._nsrc, self._ndst = src, dst, num_src, num_dst
        self.edata = Frame(len(src), "edata")
        if self.is_block:
            self.srcdata, self.dstdata = Frame(num_src, "srcdata"), Frame(num_dst, "dstdata")
        else:
            self.srcdata = self.dstdata = Frame(num_src, "ndata")
        self._cache = {}
        self._batch_num_nodes = self._batch_num_edges = None

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
        """Node and edge ids are always int64 (DGL's default ``idtype``)."""
        return np.int64

    def nodes(self):
        """All node ids 0..N-1 (int64 NDArray)."""
        return mx.nd.arange(self.num_nodes(), dtype="int64")

    def edges(self, form="uv", order="eid"):
        """The edges as int64 NDArrays, as in DGL: ``form='uv'`` gives ``(src, dst)``, ``'eid'`` the
        edge ids, ``'all'`` ``(src, dst, eid)``; ``order='srcdst'`` sorts by (src, dst)."""
        eid = np.arange(self.num_edges())
        if order == "srcdst":
            eid = np.lexsort((self._dst, self._src))
        elif order != "eid":
            raise GraphError(f"edges(order={order!r}): choose 'eid' or 'srcdst'")
        parts = {"uv": (self._src[eid], self._dst[eid]), "eid": (eid,),
                 "all": (self._src[eid], self._dst[eid], eid)}.get(form)
        if parts is None:
            raise GraphError(f"edges(form={form!r}): choose 'uv', 'eid' or 'all'")
        out = tuple(mx.nd.array(p, dtype="int64") for p in parts)
        return out[0] if form == "eid" else out

    def _degrees(self, kind):
        """In- (per destination) or out-degrees (per source) as a cached int64 NumPy array."""
        def build():
            ids, n = (self._dst, self._ndst) if kind == "in" else (self._src, self._nsrc)
            return np.bincount(ids, minlength=n).astype(np.int64)
        return self._get(kind + "_deg", build)

    def _select_degrees(self, kind, v):
        deg = self._degrees(kind)
        if isinstance(v, str) and v == ALL:
            return mx.nd.array(deg, dtype="int64")
        ids = as_ids(v, "node ids")
        if len(ids) and (ids.min() < 0 or ids.max() >= len(deg)):
            raise GraphError(f"{kind}_degrees: node ids must lie in 0..{len(deg) - 1}")
        if isinstance(v, (int, np.integer)):
            return int(deg[ids[0]])
        return mx.nd.array(deg[ids], dtype="int64")

    def in_degrees(self, v=ALL):
        """In-degree of every node (int64 NDArray), of the nodes ``v``, or of one node (an int)."""
        return self._select_degrees("in", v)

    def out_degrees(self, u=ALL):
        """Out-degree of every node (int64 NDArray), of the nodes ``u``, or of one node (an int)."""
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
        frames = [self.srcdata, self.edata] + ([self.dstdata] if self.is_block else [])
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

    def batch_num_nodes(self):
        """Nodes per graph of the batch (int64 NDArray)."""
        return mx.nd.array(self._batch_sizes()[0], dtype="int64")

    def batch_num_edges(self):
        """Edges per graph of the batch (int64 NDArray)."""
        return mx.nd.array(self._batch_sizes()[1], dtype="int64")

    def _batch_sizes(self):
        if self._batch_num_nodes is None:
            return [self.num_nodes()], [self.num_edges()]
        return list(self._batch_num_nodes), list(self._batch_num_edges)

    # ---- devices and id types -----------------------------------------------------------------
    def to(self, device, **kwargs):
        """A graph with the same structure whose features live on ``device`` (an MXNet context)."""
        g = self._with_edges(self._src, self._dst)
        g._batch_num_nodes, g._batch_num_edges = self._batch_num_nodes, self._batch_num_edges
        for a, b in ((self.srcdata, g.srcdata), (self.dstdata, g.dstdata), (self.edata, g.edata)):
            for k, v in a.items():
                b[k] = v.as_in_context(device)
        return g

    def int(self):
        """The graph itself: ids are always int64 here (DGL's ``g.int()`` switches to int32)."""
        return self

    def long(self):
        """The graph itself (ids are int64)."""
        return self

    def _with_edges(self, src, dst):
        """A featureless graph of the same kind and node counts with other edges."""
        return Graph((src, dst), num_nodes=self._nsrc)

    def __repr__(self):
        return (f"Graph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()}, "
                f"ndata_schemes={sorted(self.ndata)}, edata_schemes={sorted(self.edata)})")

    # ---- cached sparse structures -------------------------------------------------------------
    def _get(self, name, build):
        if name not in self._cache:
            self._cache[name] = build()
        return self._cache[name]

    @property
    def _src_nd(self):
        return self._get("src_nd", lambda: mx.nd.array(self._src, dtype="int64"))

    @property
    def _dst_nd(self):
        return self._get("dst_nd", lambda: mx.nd.array(self._dst, dtype="int64"))

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
            return mx.nd.sparse.csr_matrix((csr.data, csr.indices, csr.indptr), shape=csr.shape)
        return self._get("adj", build)

    def _incidence(self):
        """The (dst node x edge) matrix with a 1 at (dst(e), e)."""
        def build():
            import scipy.sparse as sp
            m = sp.csr_matrix((np.ones(len(self._dst), np.float32), (self._dst, np.arange(len(self._dst)))),
                              shape=(self._ndst, len(self._dst)))
            return mx.nd.sparse.csr_matrix((m.data, m.indices, m.indptr), shape=m.shape)
        return self._get("inc", build)


def graph(data, num_nodes=None, idtype=None, device=None, **kwargs):
    """DGL's ``dgl.graph``: a graph from ``(src, dst)`` node-id sequences (lists, NumPy arrays or
    NDArrays) with ``num_nodes`` nodes (default: the largest id + 1). ``idtype`` is accepted for
    compatibility; ids are int64 whatever it says."""
    g = Graph(data, num_nodes=num_nodes)
    return g.to(device) if device is not None else g


DGLGraph = Graph


def from_scipy(sp_mat, eweight_name=None, idtype=None):
    """DGL's ``dgl.from_scipy``: edge i->j for every stored entry (i, j) of a square SciPy sparse
    matrix; with ``eweight_name`` the entries' values become that edge feature."""
    coo = sp_mat.tocoo()
    if coo.shape[0] != coo.shape[1]:
        raise GraphError(f"an adjacency matrix must be square, got {coo.shape}")
    g = Graph((coo.row, coo.col), num_nodes=coo.shape[0])
    if eweight_name is not None:
        g.edata[eweight_name] = mx.nd.array(coo.data.astype(np.float32))
    return g


def from_networkx(nx_graph, node_attrs=None, edge_attrs=None, idtype=None):
    """DGL's ``dgl.from_networkx``: nodes relabelled 0..n-1 in the graph's order; an undirected
    edge becomes two directed ones (u->v, then v->u; a self-loop once); ``node_attrs`` /
    ``edge_attrs`` name numeric attributes to copy into ``ndata`` / ``edata``."""
    index = {v: i for i, v in enumerate(nx_graph.nodes())}
    triples = [(index[u], index[v], d) for u, v, d in nx_graph.edges(data=True)]
    if not nx_graph.is_directed():
        triples += [(v, u, d) for u, v, d in triples if u != v]
    src = np.array([t[0] for t in triples], np.int64)
    dst = np.array([t[1] for t in triples], np.int64)
    g = Graph((src, dst), num_nodes=len(index))
    for name in node_attrs or []:
        g.ndata[name] = mx.nd.array([nx_graph.nodes[v][name] for v in nx_graph.nodes()])
    for name in edge_attrs or []:
        g.edata[name] = mx.nd.array([t[2][name] for t in triples])
    return g
