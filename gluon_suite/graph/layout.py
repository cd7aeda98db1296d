"""Graph topology: the index tensors the compiled kernels take (``_Topology.structure``, one set
per context), and for the Python kernels the *head layout* and the plumbing that turns a kernel
class into an MXNet custom operator.

MXNet custom operators take only arrays and strings, so a graph reaches them as the ``key`` of its
``_Topology`` in a weak registry (the entry dies with the graph). Multi-head kernels work on a head
layout built once per graph and head count: one CSR matrix of (N_dst * H) x (N_src * H) whose row
v*H + h holds v's incoming edges for head h, so all heads are one sparse product (no loop over
heads, no E x F tensor) and per-destination reductions are 1-D ``reduceat`` calls over contiguous
rows. Products are split by rows over a small thread pool (SciPy and NumPy release the GIL).
"""
import atexit
import functools
import itertools
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

import mxnet as mx
import numpy as np
import scipy.sparse as sp

from ..utils.host_arrays import host_array

_TOPOLOGIES = weakref.WeakValueDictionary()   # a graph holds its topology; the key dies with it
_KEYS = itertools.count()
_CHUNK = 1 << 16


class _Topology:
    """Edges sorted by destination (for segment reductions) and CSR index arrays. What only the
    Python kernels read (``src_sorted``, ``starts``, ``nonempty``, ``seg``) is built on first use,
    so a graph on the compiled kernels holds one E-long host array fewer per name."""

    def __init__(self, src, dst, num_src, num_dst):
        self.src, self.dst = src, dst
        self.num_src, self.num_dst = num_src, num_dst
        self.order = np.argsort(dst, kind="stable")
        self.indptr = np.zeros(num_dst + 1, np.int64)
        np.cumsum(np.bincount(dst, minlength=num_dst), out=self.indptr[1:])
        self._heads, self._structures = {}, {}
        self.key = str(next(_KEYS))
        _TOPOLOGIES[self.key] = self

    @functools.cached_property
    def src_sorted(self):
        """Every edge's source, in destination order."""
        return self.src[self.order]

    @functools.cached_property
    def nonempty(self):
        """Destinations with at least one incoming edge."""
        return np.flatnonzero(np.diff(self.indptr) > 0)

    @functools.cached_property
    def starts(self):
        """Where each non-empty destination's edges begin, in destination order."""
        return self.indptr[:-1][self.nonempty]

    @functools.cached_property
    def seg(self):
        """Segment number of every edge in destination order (for broadcasting per-node values)."""
        return np.repeat(np.arange(len(self.starts)), np.diff(np.append(self.starts, len(self.src))))

    def structure(self, ctx, idtype=None):
        """The eight index tensors the compiled kernels take, on ``ctx`` with ids of ``idtype``
        (int32 or int64; default int32 whenever every id and offset fits, for speed and memory),
        built on first use and cached: destination grouping (indptr, source of each edge, edge
        id), source grouping (indptr, destination, edge id), then src and dst in edge order."""
        if idtype is None:
            fits = max(len(self.src), self.num_src, self.num_dst) < 2 ** 31 - 1
            idtype = np.int32 if fits else np.int64
        idtype = np.dtype(idtype)
        if idtype not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise ValueError(f"graph ids are int32 or int64, not {idtype}")
        key = (str(ctx), idtype.name)
        if key not in self._structures:
            by_src = np.argsort(self.src, kind="stable")
            indptr_s = np.zeros(self.num_src + 1, np.int64)
            np.cumsum(np.bincount(self.src, minlength=self.num_src), out=indptr_s[1:])
            arrays = (self.indptr, self.src[self.order], self.order, indptr_s, self.dst[by_src], by_src,
                      self.src, self.dst)
            # handed over, not copied: mx.nd.array would wait for every queued operator (a graph
            # built during a step, as a link predictor's pair graphs are, would stall the host)
            self._structures[key] = tuple(host_array(np.array(a, dtype=idtype), ctx) for a in arrays)
        return self._structures[key]

    def heads(self, H):
        """The head layout for ``H`` heads (built on first use, then cached)."""
        if H not in self._heads:
            self._heads[H] = _HeadLayout(self, H)
        return self._heads[H]

    def csr(self, values):
        """The (num_dst x num_src) CSR matrix with ``values`` (in edge order) on the edges."""
        return sp.csr_matrix((np.ascontiguousarray(values[self.order], dtype=np.float32), self.src_sorted,
                              self.indptr), shape=(self.num_dst, self.num_src), copy=False)


def by_key(key):
    """The registered topology named ``key``."""
    return _TOPOLOGIES[key]


def topology(src, dst, num_src, num_dst):
    """Register a graph's topology for the custom operators; returns it (its ``key`` names it to
    the operators). The registry holds it only as long as the caller does."""
    return _Topology(np.asarray(src, np.int64), np.asarray(dst, np.int64), int(num_src), int(num_dst))


class _HeadLayout:
    """(N_dst * H) x (N_src * H) CSR structure: row v*H + h holds, in destination-sorted edge order,
    the edges u->v for head h, at column u*H + h. ``rows``/``cols`` give every entry's row and
    column, ``perm`` its index into an (E, H) array in the graph's edge order (flattened).
    ``parts`` split the rows into ranges of about equal entries, one per worker thread."""

    def __init__(self, t, H):
        E = len(t.src)
        self.H, self.num_rows, self.num_cols = H, t.num_dst * H, t.num_src * H
        idx = np.int32 if max(E * H, self.num_rows, self.num_cols) < 2 ** 31 - 1 else np.int64
        deg = np.diff(t.indptr)
        d = t.dst[t.order]
        heads = np.arange(H)
        # entry (k-th sorted edge, head h) sits at indptr[v]*H + h*deg[v] + (k - indptr[v])
        pos = (t.indptr[d] * (H - 1) + np.arange(E))[:, None] + heads * deg[d][:, None]
        pos = pos.ravel()
        self.cols, self.rows, self.perm = (np.empty(E * H, idx) for _ in range(3))
        self.cols[pos] = (t.src_sorted[:, None] * H + heads).ravel()
        self.rows[pos] = (d[:, None] * H + heads).ravel()
        self.perm[pos] = (t.order[:, None] * H + heads).ravel()
        del pos
        self.indptr = np.append((t.indptr[:-1, None] * H + heads * deg[:, None]).ravel(), E * H).astype(idx)
        rowdeg = np.repeat(deg, H)
        self.nonempty = np.flatnonzero(rowdeg > 0)
        self.starts = self.indptr[:-1][self.nonempty]
        self.counts = rowdeg[self.nonempty]
        cuts = np.searchsorted(self.indptr, np.linspace(0, E * H, _threads() + 1)[1:-1])
        self.parts = [_Rows(self, int(r0), int(r1)) for r0, r1 in
                      zip(np.r_[0, cuts], np.r_[cuts, self.num_rows]) if r1 > r0]

    def map(self, fn):
        """``fn(part)`` for every part, on the thread pool; returns the results in order."""
        res = [None] * len(self.parts)

        def run(i):
            res[i] = fn(self.parts[i])
        _parallel(run, len(self.parts))
        return res

    def spmm(self, data, x):
        """A(data) @ x for x (N_src * H, F) -> (N_dst * H, F)."""
        out = np.empty((self.num_rows, x.shape[1]), np.float32)

        def part(r):
            out[r.r0:r.r1] = r.matrix(data[r.lo:r.hi]) @ x
        self.map(part)
        return out

    def spmm_t(self, data, y):
        """A(data)^T @ y for y (N_dst * H, F) -> (N_src * H, F)."""
        return _total(self.map(lambda r: r.matrix(data[r.lo:r.hi]).T @ y[r.r0:r.r1]), (self.num_cols, y.shape[1]))

    def sddmm(self, x, y):
        """<x[col], y[row]> for every entry, x (N_src * H, F), y (N_dst * H, F) -> (nnz,)."""
        out = np.empty(len(self.cols), np.float32)
        self.map(lambda r: r.sddmm(x, y, out[r.lo:r.hi]))
        return out

    def softmax(self, s):
        """Softmax of entry values over each row, in place."""
        def part(r):
            v = s[r.lo:r.hi]
            v -= r.expand(r.row_max(v))
            np.exp(v, out=v)
            v /= r.expand(r.row_sum(v))
        self.map(part)
        return s

    def softmax_backward(self, a, g):
        """ds = a * (g - row sum of g * a), in place on g."""
        def part(r):
            v, w = g[r.lo:r.hi], a[r.lo:r.hi]
            v -= r.expand(r.row_sum(v * w))
            v *= w
        self.map(part)
        return g


class _Rows:
    """Rows [r0, r1) of a head layout and their entries [lo, hi): a CSR block, per-row reductions
    (``reduceat`` over the non-empty rows) and per-row values expanded to the entries."""

    def __init__(self, L, r0, r1):
        self.r0, self.r1, self.lo, self.hi = r0, r1, int(L.indptr[r0]), int(L.indptr[r1])
        a, b = np.searchsorted(L.nonempty, [r0, r1])
        self.nonempty, self.starts, self.counts = L.nonempty[a:b] - r0, L.starts[a:b] - self.lo, L.counts[a:b]
        self.indptr = L.indptr[r0:r1 + 1] - self.lo
        self.cols, self.rows, self.num_cols = L.cols[self.lo:self.hi], L.rows[self.lo:self.hi], L.num_cols

    def matrix(self, data):
        """The block's CSR matrix with entry values ``data``."""
        return sp.csr_matrix((data, self.cols, self.indptr), shape=(self.r1 - self.r0, self.num_cols), copy=False)

    def row_sum(self, v):
        out = np.zeros(self.r1 - self.r0, np.float32)
        if len(self.starts):
            out[self.nonempty] = np.add.reduceat(v, self.starts)
        return out

    def row_max(self, v):
        out = np.zeros(self.r1 - self.r0, np.float32)
        if len(self.starts):
            out[self.nonempty] = np.maximum.reduceat(v, self.starts)
        return out

    def expand(self, per_row):
        """Per-row values repeated over each row's entries."""
        return np.repeat(per_row[self.nonempty], self.counts)

    def sddmm(self, x, y, out):
        for a in range(0, self.hi - self.lo, _CHUNK):
            b = a + _CHUNK
            np.einsum("ef,ef->e", np.take(x, self.cols[a:b], axis=0), np.take(y, self.rows[a:b], axis=0),
                      out=out[a:b])


def _total(partials, shape):
    """The sum of per-part results (zeros for none)."""
    if not partials:
        return np.zeros(shape, np.float32)
    out = partials[0]
    for p in partials[1:]:
        out += p
    return out.astype(np.float32, copy=False)


_POOL = None


def _threads():
    """Worker threads for the kernels: one per core (``OMP_NUM_THREADS`` if set; its first number
    when it is a per-level list like ``4,2``), at most 4. A value that is not a whole number >= 1
    is a UserError naming the variable."""
    from ..utils.env import env
    threads = env("OMP_NUM_THREADS")
    return min(4, threads) if threads else max(1, min(4, os.cpu_count() or 1))


def _parallel(fn, n):
    """Run ``fn(0..n-1)`` on a small thread pool (SciPy's sparse products and NumPy's kernels
    release the GIL)."""
    global _POOL
    if n <= 1 or _threads() == 1:
        for i in range(n):
            fn(i)
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_threads())
    list(_POOL.map(fn, range(n)))


def _finish_pending_work():
    """Wait for every queued MXNet operation before MXNet shuts its engine down at exit. The
    Python kernels are MXNet custom operators; one still queued when the interpreter exits can
    leave MXNet's shutdown hanging or aborting ("terminate called without an active exception"),
    as about one run in five of a short script that ends right after a message-passing call did.
    Registered after MXNet's own exit handler, so it runs first."""
    try:
        mx.nd.waitall()
    except Exception:  # noqa: BLE001 - an error of the user's last operation was theirs to see
        pass


atexit.register(_finish_pending_work)


class _GraphOp(mx.operator.CustomOp):
    """A custom operator bound to a registered graph topology."""

    def __init__(self, key):
        super().__init__()
        self.t = _TOPOLOGIES[key]

    def assign(self, dst, req, src):
        """``CustomOp.assign`` that takes a NumPy array too (one copy into ``dst``, no temporary
        NDArray)."""
        if isinstance(src, np.ndarray) and req != "add":
            src = src.reshape(dst.shape)
        elif isinstance(src, np.ndarray):
            src = mx.nd.array(src.reshape(dst.shape))
        super().assign(dst, req, src)


def _flat(nd):
    return np.ascontiguousarray(nd.asnumpy(), np.float32).reshape(-1)


def _register(name, op_cls, arguments, out_shape):
    """Register ``op_cls`` as MXNet custom operator ``name`` taking ``arguments``, a topology
    ``key`` and ``op_cls``'s other keyword parameters (as strings); ``out_shape(topology,
    in_shapes)`` gives the output shape."""
    class Prop(mx.operator.CustomOpProp):
        def __init__(self, key, **params):
            super().__init__(need_top_grad=True)
            self.key, self.params = key, params

        def list_arguments(self):
            return list(arguments)

        def infer_shape(self, in_shape):
            return in_shape, [out_shape(_TOPOLOGIES[self.key], in_shape)], []

        def create_operator(self, ctx, shapes, dtypes):
            return op_cls(self.key, **self.params)
    Prop.__name__ = op_cls.__name__ + "Prop"
    mx.operator.register(name)(Prop)


def _per_destination(t, in_shape):
    """Output shape of a per-destination reduction: (N_dst, ...) of the first input."""
    return [t.num_dst] + list(in_shape[0][1:])

