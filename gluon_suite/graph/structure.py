"""The structures a ``Graph`` derives from its edges, built once on first use on the graph's
context and cached until its edges change: degrees (and the degree powers that normalise
GraphConv and mean reductions), the adjacency matrix and tensors (DGL's ``adj``,
``adj_external``, ``adj_tensors``), edge-end id arrays, the topologies the custom kernels read and
the incidence matrix, and the look-ups between node pairs and edge ids (``edge_ids``,
``find_edges``, ``has_edges_between``, ``in_edges``, ``out_edges``). ``GraphStructure`` is a mixin
of ``Graph``: it reads the edges (``_src``, ``_dst``), node counts (``_nsrc``, ``_ndst``), context
and id type that ``Graph`` sets."""
import mxnet as mx
import numpy as np

from .base import ALL, GraphError, as_ids
from .layout import topology


class GraphStructure:
    """Degrees, adjacency and the cached sparse structures of a graph (a mixin of ``Graph``; see
    the module docstring for what it expects of the class it is mixed into)."""

    # ---- degrees ------------------------------------------------------------------------------
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

    def has_zero_in_degree(self):
        """Whether some destination node has no incoming edge (no device round trip)."""
        return bool(self._ndst) and int(self._degrees("in").min()) == 0

    # ---- edge look-ups --------------------------------------------------------------------------
    def _node_ids(self, a, side, what):
        """Node ids ``a`` of the source (``'src'``) or destination side as host int64, checked."""
        ids = as_ids(a, what)
        n = self._nsrc if side == "src" else self._ndst
        if len(ids) and (ids.min() < 0 or ids.max() >= n):
            bad = int(ids[(ids < 0) | (ids >= n)][0])
            raise GraphError(f"{what} holds node id {bad} but the graph's node ids are 0..{n - 1}")
        return ids

    def _pairs(self, u, v, what):
        u, v = self._node_ids(u, "src", what + ": u"), self._node_ids(v, "dst", what + ": v")
        if len(u) == 1 and len(v) != 1:
            u = np.repeat(u, len(v))
        elif len(v) == 1 and len(u) != 1:
            v = np.repeat(v, len(u))
        if len(u) != len(v):
            raise GraphError(f"{what}: u has {len(u)} ids and v {len(v)}; give one (u, v) pair per edge")
        return u, v

    def _pair_lookup(self, u, v):
        """For pairs (u[i], v[i]): the positions [lo, hi) of their edges in ``_edge_keys``' order."""
        def build():
            key = self._src * max(self._ndst, 1) + self._dst
            order = np.argsort(key, kind="stable")          # parallel edges stay in edge-id order
            return key[order], order
        keys, order = self._get("edge_keys", build)
        q = u * max(self._ndst, 1) + v
        return np.searchsorted(keys, q, "left"), np.searchsorted(keys, q, "right"), order

    def edge_ids(self, u, v, return_uv=False, etype=None):
        """DGL's ``edge_ids``: the id of the edge u[i] -> v[i] for every pair (ints, sequences or
        NDArrays; a single id on one side pairs with every id on the other). Between parallel
        edges the smallest id is returned; a pair with no edge is an error. ``return_uv=True``
        returns ``(u, v, eid)`` of every edge between the pairs, parallel ones included."""
        scalar = isinstance(u, (int, np.integer)) and isinstance(v, (int, np.integer))
        u, v = self._pairs(u, v, "edge_ids")
        lo, hi, order = self._pair_lookup(u, v)
        if return_uv:
            counts = hi - lo
            first = np.cumsum(counts) - counts
            e = order[np.repeat(lo - first, counts) + np.arange(int(counts.sum()))]
            return self._ids(self._src[e]), self._ids(self._dst[e]), self._ids(e)
        missing = np.flatnonzero(hi == lo)
        if len(missing):
            i = missing[0]
            raise GraphError(f"edge_ids: there is no edge {u[i]} -> {v[i]} in the graph; test pairs with "
                             "has_edges_between(u, v) first, or pass return_uv=True to get only the edges that exist")
        e = order[lo]
        return int(e[0]) if scalar else self._ids(e)

    def has_edges_between(self, u, v, etype=None):
        """Whether there is an edge u[i] -> v[i] (a bool for two ints, else a bool NDArray)."""
        scalar = isinstance(u, (int, np.integer)) and isinstance(v, (int, np.integer))
        u, v = self._pairs(u, v, "has_edges_between")
        lo, hi, _ = self._pair_lookup(u, v)
        return bool(hi[0] > lo[0]) if scalar else mx.nd.array(hi > lo, dtype=np.bool_, ctx=self._ctx)

    def find_edges(self, eid, etype=None):
        """DGL's ``find_edges``: ``(src, dst)`` of the edges ``eid``."""
        e = as_ids(eid, "find_edges: eid")
        if len(e) and (e.min() < 0 or e.max() >= len(self._src)):
            raise GraphError(f"find_edges: edge ids must lie in 0..{len(self._src) - 1}")
        return self._ids(self._src[e]), self._ids(self._dst[e])

    def _grouped(self, kind):
        """Edge ids grouped by destination (``'in'``) or source (``'out'``), each group in edge-id
        order: ``(indptr, eids)``, cached."""
        def build():
            key, n = (self._dst, self._ndst) if kind == "in" else (self._src, self._nsrc)
            indptr = np.zeros(n + 1, np.int64)
            np.cumsum(np.bincount(key, minlength=n), out=indptr[1:])
            return indptr, np.argsort(key, kind="stable")
        return self._get(("grouped", kind), build)

    def _edges_of(self, kind, nodes):
        """Host ids of the in- or out-edges of ``nodes`` (host ids), node after node."""
        indptr, eids = self._grouped(kind)
        starts, counts = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
        first = np.cumsum(counts) - counts
        return eids[np.repeat(starts - first, counts) + np.arange(int(counts.sum()))]

    def _edge_form(self, e, form, what):
        parts = {"uv": (self._src[e], self._dst[e]), "eid": (e,), "all": (self._src[e], self._dst[e], e)}.get(form)
        if parts is None:
            raise GraphError(f"{what}(form={form!r}): choose 'uv', 'eid' or 'all'")
        out = tuple(self._ids(p) for p in parts)
        return out[0] if form == "eid" else out

    def in_edges(self, v, form="uv", etype=None):
        """DGL's ``in_edges``: the edges into the nodes ``v`` (node after node, each node's in
        edge-id order), as ``(src, dst)`` (``'uv'``), edge ids (``'eid'``) or all three (``'all'``)."""
        return self._edge_form(self._edges_of("in", self._node_ids(v, "dst", "in_edges: v")), form, "in_edges")

    def out_edges(self, u, form="uv", etype=None):
        """DGL's ``out_edges``: the edges out of the nodes ``u``, as ``in_edges`` gives them."""
        return self._edge_form(self._edges_of("out", self._node_ids(u, "src", "out_edges: u")), form, "out_edges")

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
