"""The structures a ``Graph`` derives from its edges, built once on first use on the graph's
context and cached until its edges change: degrees (and the degree powers that normalise
GraphConv and mean reductions), the adjacency matrix and tensors (DGL's ``adj``,
``adj_external``, ``adj_tensors``), edge-end id arrays, the topologies the custom kernels read and
the incidence matrix. ``GraphStructure`` is a mixin of ``Graph``: it reads the edges (``_src``,
``_dst``), node counts (``_nsrc``, ``_ndst``), context and id type that ``Graph`` sets."""
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
