"""The ``Graph``: a directed multigraph with node and edge feature dictionaries and DGL-style
message passing on MXNet NDArrays.

    g = Graph(([0, 1, 2], [1, 2, 0]), num_nodes=4)
    g.ndata["h"] = mx.nd.random.normal(shape=(4, 8))
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "h_sum"))

Built-in (message, reduce) pairs run as sparse products and never build an E x F message
tensor: copy_u/u_mul_e with sum/mean are SpMM (MXNet's CSR product, or the ``spmm_e`` custom
operator when edge values need gradients); copy_e with sum/mean is a product with the (node x
edge) incidence matrix. Max reductions and user-defined messages build per-edge messages. Autograd
flows to node and edge features everywhere.
"""
import contextlib

import mxnet as mx
import numpy as np

from ..utils.errors import UserError
from . import ops
from .function import Message, Reduce


# MXNet 1.9's operators take fewer than 2^31 elements by logical shape, sparse inputs included
_MX_LIMIT = 2 ** 31 - 1


class GraphError(UserError):
    """A graph was built or used with inconsistent sizes or indices."""


class _Frame(dict):
    """A feature dictionary whose values must have ``n`` rows."""

    def __init__(self, n, kind):
        super().__init__()
        self.n, self.kind = n, kind

    def __setitem__(self, key, value):
        if not isinstance(value, mx.nd.NDArray):
            value = mx.nd.array(value)
        if value.shape[0] != self.n:
            raise GraphError(f"{self.kind}[{key!r}] has {value.shape[0]} rows but the graph has "
                             f"{self.n} {'nodes' if self.kind == 'ndata' else 'edges'}")
        super().__setitem__(key, value)


class EdgeBatch:
    """What a user-defined message or edge function sees: ``src``, ``dst`` and ``data`` dicts of
    per-edge rows."""

    def __init__(self, g):
        self._g = g
        self.data = g.edata

    @property
    def src(self):
        return {k: mx.nd.take(v, self._g._src_nd) for k, v in self._g.ndata.items()}

    @property
    def dst(self):
        return {k: mx.nd.take(v, self._g._dst_nd) for k, v in self._g.ndata.items()}


class Graph:
    """A directed graph of ``num_nodes`` nodes with edges ``(src, dst)`` (parallel edges and
    self-loops allowed). ``ndata``/``edata`` hold features with one row per node/edge."""

    def __init__(self, edges, num_nodes=None):
        src, dst = edges
        src = np.asarray(src.asnumpy() if isinstance(src, mx.nd.NDArray) else src).reshape(-1)
        dst = np.asarray(dst.asnumpy() if isinstance(dst, mx.nd.NDArray) else dst).reshape(-1)
        if len(src) != len(dst):
            raise GraphError(f"src has {len(src)} entries but dst has {len(dst)}; give one (src, dst) pair per edge")
        for name, a in (("src", src), ("dst", dst)):
            if len(a) and (not np.issubdtype(a.dtype, np.integer) and not np.all(np.mod(a, 1) == 0)):
                raise GraphError(f"{name} holds non-integer node ids")
        src, dst = src.astype(np.int64), dst.astype(np.int64)
        n = int(num_nodes) if num_nodes is not None else int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
        for name, a in (("src", src), ("dst", dst)):
            bad = np.flatnonzero((a < 0) | (a >= n))
            if len(bad):
                raise GraphError(f"edge index out of range: {name}[{bad[0]}] = {a[bad[0]]} but the graph has "
                                 f"{n} nodes (ids 0..{n - 1})")
        self._src, self._dst, self._n = src, dst, n
        self.ndata, self.edata = _Frame(n, "ndata"), _Frame(len(src), "edata")
        self._cache = {}

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    def from_scipy(cls, matrix):
        """Edge i->j for every stored entry (i, j) of a square SciPy sparse matrix; its values go
        to ``edata['w']``."""
        coo = matrix.tocoo()
        if coo.shape[0] != coo.shape[1]:
            raise GraphError(f"an adjacency matrix must be square, got {coo.shape}")
        g = cls((coo.row, coo.col), num_nodes=coo.shape[0])
        g.edata["w"] = mx.nd.array(coo.data.astype(np.float32))
        return g

    @classmethod
    def from_networkx(cls, nxg):
        """Nodes relabelled 0..n-1 in ``nxg``'s order; an undirected edge becomes two directed ones."""
        index = {v: i for i, v in enumerate(nxg.nodes())}
        pairs = [(index[u], index[v]) for u, v in nxg.edges()]
        if not nxg.is_directed():
            pairs += [(v, u) for u, v in pairs if u != v]
        src, dst = (np.array(x, np.int64) for x in zip(*pairs)) if pairs else (np.zeros(0, np.int64),) * 2
        return cls((src, dst), num_nodes=len(index))

    # ---- structure ---------------------------------------------------------------------------
    def num_nodes(self):
        """Number of nodes."""
        return self._n

    def num_edges(self):
        """Number of edges."""
        return len(self._src)

    def edges(self):
        """``(src, dst)`` as int64 NumPy arrays."""
        return self._src.copy(), self._dst.copy()

    def in_degrees(self):
        """In-degree of every node (float32 NDArray)."""
        return mx.nd.array(np.bincount(self._dst, minlength=self._n).astype(np.float32))

    def out_degrees(self):
        """Out-degree of every node (float32 NDArray)."""
        return mx.nd.array(np.bincount(self._src, minlength=self._n).astype(np.float32))

    def add_self_loop(self):
        """A new graph with one self-loop added on every node (node features kept, new edges'
        features zero)."""
        loops = np.arange(self._n)
        g = Graph((np.concatenate([self._src, loops]), np.concatenate([self._dst, loops])), self._n)
        for k, v in self.ndata.items():
            g.ndata[k] = v
        for k, v in self.edata.items():
            g.edata[k] = mx.nd.concat(v, mx.nd.zeros((self._n,) + v.shape[1:], dtype=v.dtype), dim=0)
        return g

    def reverse(self):
        """A new graph with every edge reversed (features shared)."""
        g = Graph((self._dst, self._src), self._n)
        g.ndata.update(self.ndata)
        g.edata.update(self.edata)
        return g

    @contextlib.contextmanager
    def local_scope(self):
        """Features written inside the block are dropped when it ends (the originals come back)."""
        nd, ed = dict(self.ndata), dict(self.edata)
        try:
            yield self
        finally:
            dict.clear(self.ndata)
            dict.update(self.ndata, nd)
            dict.clear(self.edata)
            dict.update(self.edata, ed)

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
        return self._get("topo", lambda: ops.topology(self._src, self._dst, self._n, self._n))

    def _topo(self):
        """The key of this graph's topology for the custom operators (alive as long as the graph)."""
        return self._topology().key

    def adj(self):
        """The (dst x src) adjacency as an MXNet CSR matrix (parallel edges add up)."""
        def build():
            csr = self._topology().csr(np.ones(len(self._src), np.float32))
            csr.sum_duplicates()
            return mx.nd.sparse.csr_matrix((csr.data, csr.indices, csr.indptr), shape=csr.shape)
        return self._get("adj", build)

    def _incidence(self):
        """The (node x edge) matrix with a 1 at (dst(e), e)."""
        def build():
            import scipy.sparse as sp
            m = sp.csr_matrix((np.ones(len(self._dst), np.float32), (self._dst, np.arange(len(self._dst)))),
                              shape=(self._n, len(self._dst)))
            return mx.nd.sparse.csr_matrix((m.data, m.indices, m.indptr), shape=m.shape)
        return self._get("inc", build)

    # ---- message passing ----------------------------------------------------------------------
    def _field(self, target, field):
        frame = {"u": self.ndata, "v": self.ndata, "e": self.edata}[target]
        if field not in frame:
            kind = "ndata" if target in "uv" else "edata"
            raise GraphError(f"{kind} has no feature {field!r} (has: {', '.join(frame) or 'none'})")
        return frame[field]

    def _per_edge(self, target, field):
        x = self._field(target, field)
        if target == "u":
            return mx.nd.take(x, self._src_nd)
        if target == "v":
            return mx.nd.take(x, self._dst_nd)
        return x

    def _messages(self, msg):
        """Per-edge messages of a built-in message function (an E x ... tensor)."""
        a = self._per_edge(*msg.lhs)
        if msg.rhs is None:
            return a
        b = self._per_edge(*msg.rhs)
        # DGL broadcasting: trailing dims line up after padding the lower-rank side with 1s
        if a.ndim < b.ndim:
            a = a.reshape(a.shape + (1,) * (b.ndim - a.ndim))
        elif b.ndim < a.ndim:
            b = b.reshape(b.shape + (1,) * (a.ndim - b.ndim))
        op = {"mul": mx.nd.broadcast_mul, "add": mx.nd.broadcast_add, "sub": mx.nd.broadcast_sub}.get(
            msg.op.split("_")[1])
        if msg.op == "u_dot_v":
            return (a * b).sum(axis=-1, keepdims=True)
        return op(a, b)

    def apply_edges(self, func):
        """Compute per-edge features: a built-in message (``fn.u_add_v('el', 'er', 'e')``,
        ``fn.u_dot_v``, ...) or a function of an ``EdgeBatch`` returning a dict."""
        if isinstance(func, Message):
            self.edata[func.out] = self._messages(func)
            return
        if not callable(func):
            raise GraphError("apply_edges takes a built-in message function or a callable")
        for k, v in func(EdgeBatch(self)).items():
            self.edata[k] = v

    def update_all(self, message, reduce):
        """Send messages along every edge and reduce them at each destination into
        ``ndata[reduce.out]``. Nodes without incoming edges get 0."""
        if not isinstance(reduce, Reduce):
            raise GraphError("user-defined reduce functions are not supported; use fn.sum, fn.mean or fn.max")
        if isinstance(message, Message) and message.out != reduce.msg:
            raise GraphError(f"the reduce reads message {reduce.msg!r} but the message function writes {message.out!r}")
        out = None
        if isinstance(message, Message) and reduce.op in ("sum", "mean"):
            out = self._fused(message)
        if out is None:
            if isinstance(message, Message):
                m = self._messages(message)
            else:
                msgs = message(EdgeBatch(self))
                if reduce.msg not in msgs:
                    raise GraphError(f"the message function did not produce {reduce.msg!r}")
                m = msgs[reduce.msg]
            if reduce.op == "max":
                out = ops.segment_max(self._topo(), m)
            else:
                out = self._edge_sum(m)
        if reduce.op == "mean":
            deg = mx.nd.maximum(self.in_degrees(), 1.0).reshape((-1,) + (1,) * (out.ndim - 1))
            out = mx.nd.broadcast_div(out, deg)
        self.ndata[reduce.out] = out

    def _edge_sum(self, m):
        """Sum of per-edge values at each destination: a product with the (node x edge) incidence
        matrix, or a segment sum when that matrix is too large for MXNet."""
        if self._n * max(self.num_edges(), 1) > _MX_LIMIT:
            return ops.segment_sum(self._topo(), m)
        if m.ndim == 2:
            return mx.nd.sparse.dot(self._incidence(), m)
        flat = m.reshape((m.shape[0], -1))
        return mx.nd.sparse.dot(self._incidence(), flat).reshape((self._n,) + m.shape[1:])

    def _fused(self, msg):
        """Sum of messages as one sparse product, or None when the pair has no fused form."""
        if msg.op == "copy_u":
            x = self._field(*msg.lhs)
            if self._n * self._n > _MX_LIMIT:  # beyond MXNet's limit: the SciPy SpMM operator
                ones = mx.nd.ones((self.num_edges(), 1))
                return ops.spmm_e(self._topo(), x.reshape((x.shape[0], 1, -1)), ones).reshape(
                    (self._n,) + x.shape[1:])
            if x.ndim == 2:  # no reshape: its backward would see the sparse product's row_sparse grad
                return mx.nd.sparse.dot(self.adj(), x)
            return mx.nd.sparse.dot(self.adj(), x.reshape((x.shape[0], -1))).reshape((self._n,) + x.shape[1:])
        if msg.op == "copy_e":
            return self._edge_sum(self._field(*msg.lhs))
        if msg.op in ("u_mul_e", "e_mul_u"):
            (tu, fu), (te, fe) = (msg.lhs, msg.rhs) if msg.op == "u_mul_e" else (msg.rhs, msg.lhs)
            x, e = self._field(tu, fu), self._field(te, fe)
            # x: (N, [H,] F...), e: (E,) | (E, 1) | (E, H) | (E, H, 1): one SpMM per head
            E = e.shape[0]
            heads = int(np.prod(e.shape[1:])) if e.ndim > 1 else 1
            if x.ndim >= 2 and heads > 1 and x.shape[1] != heads:
                return None
            xs = x.reshape((x.shape[0], heads, -1))
            out = ops.spmm_e(self._topo(), xs, e.reshape((E, heads)))
            return out.reshape((self._n,) + x.shape[1:])
        return None


def edge_softmax(g, logits):
    """Softmax of per-edge ``logits`` (E, ...) over each node's incoming edges."""
    if logits.shape[0] != g.num_edges():
        raise GraphError(f"edge_softmax got {logits.shape[0]} logits for {g.num_edges()} edges")
    return ops.edge_softmax_op(g._topo(), logits)
