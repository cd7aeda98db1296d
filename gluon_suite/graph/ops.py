"""Sparse kernels for message passing, as MXNet custom operators with forward and backward.

MXNet 1.9's ``nd.sparse.dot`` differentiates only the dense side, so products whose edge values
need gradients (``u_mul_e``) and reductions with no sparse-product form (max, edge softmax) run
here over SciPy CSR matrices and NumPy segment reductions. Shapes: node features (N, H, F), edge
values (E, H); a graph is passed as a ``_Topology`` key into a registry (custom operators take
only arrays and strings).

Multi-head kernels work on a *head layout* built once per graph and head count: one CSR matrix of
(N_dst * H) x (N_src * H) whose row v*H + h holds v's incoming edges for head h, so all heads are
one sparse product (no loop over heads, no E x F tensor) and per-destination reductions are 1-D
``reduceat`` calls over contiguous rows. Products are split by rows over a small thread pool.

- ``spmm_e``: out[v, h] = sum over edges u->v of e[uv, h] * x[u, h]; backward dx = A^T dy,
  de = <x[u, h], dy[v, h]> (SDDMM, in chunks).
- ``segment_max``: out[v] = max over edges u->v of m[uv] (0 for no incoming edge); the gradient
  goes to the arg-max edge.
- ``edge_softmax``: a[uv] = exp(s[uv]) / sum over edges w->v of exp(s[wv]); backward
  ds = a * (g - sum_v(g * a)).
- ``gat_attention``: GAT's whole attention step fused, in the head layout: scores
  el[u, h] + er[v, h], leaky ReLU, edge softmax, optional dropout mask, and the weighted sum of
  x[u, h], normalised per destination after the product; the backward reuses the forward's
  exponentials and per-destination sums instead of recomputing them.
"""
import itertools
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

import mxnet as mx
import numpy as np
import scipy.sparse as sp

_TOPOLOGIES = weakref.WeakValueDictionary()   # a graph holds its topology; the key dies with it
_KEYS = itertools.count()
_CHUNK = 1 << 16


class _Topology:
    """Edges sorted by destination (for segment reductions) and CSR index arrays."""

    def __init__(self, src, dst, num_src, num_dst):
        self.src, self.dst = src, dst
        self.num_src, self.num_dst = num_src, num_dst
        self.order = np.argsort(dst, kind="stable")
        d = dst[self.order]
        self.indptr = np.zeros(num_dst + 1, np.int64)
        np.add.at(self.indptr, d + 1, 1)
        self.indptr = np.cumsum(self.indptr)
        self.starts = self.indptr[:-1][np.diff(self.indptr) > 0]     # non-empty segments
        self.nonempty = np.flatnonzero(np.diff(self.indptr) > 0)
        self.src_sorted = src[self.order]
        # segment number of every edge in destination order (for broadcasting per-node values)
        self.seg = np.repeat(np.arange(len(self.starts)), np.diff(np.append(self.starts, len(src))))
        self._heads = {}
        self.key = str(next(_KEYS))
        _TOPOLOGIES[self.key] = self

    def heads(self, H):
        """The head layout for ``H`` heads (built on first use, then cached)."""
        if H not in self._heads:
            self._heads[H] = _HeadLayout(self, H)
        return self._heads[H]

    def csr(self, values):
        """The (num_dst x num_src) CSR matrix with ``values`` (in edge order) on the edges."""
        return sp.csr_matrix((np.ascontiguousarray(values[self.order], dtype=np.float32), self.src_sorted,
                              self.indptr), shape=(self.num_dst, self.num_src), copy=False)


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
    from ..utils.errors import UserError
    raw = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if not raw:
        return max(1, min(4, os.cpu_count() or 1))
    if not raw.isdigit() or int(raw) < 1:
        raise UserError(f"environment variable OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']!r} must be a "
                        "whole number >= 1 (e.g. OMP_NUM_THREADS=1); fix or unset it")
    return min(4, int(raw))


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


class _SpMMe(_GraphOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy().astype(np.float32, copy=False)
        N, H, F = x.shape
        L = self.t.heads(H)
        self.data = _flat(in_data[1])[L.perm]
        out = L.spmm(self.data, x.reshape(N * H, F))
        self.assign(out_data[0], req[0], out.reshape((-1, H, F)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x = in_data[0].asnumpy().astype(np.float32, copy=False)
        N, H, F = x.shape
        L = self.t.heads(H)
        dy = out_grad[0].asnumpy().astype(np.float32, copy=False).reshape(-1, F)
        if req[0] != "null":
            self.assign(in_grad[0], req[0], L.spmm_t(self.data, dy).reshape(x.shape))
        if req[1] != "null":
            de = np.empty(len(L.perm), np.float32)
            de[L.perm] = L.sddmm(x.reshape(N * H, F), dy)
            self.assign(in_grad[1], req[1], de.reshape(in_data[1].shape))


class _GATAttention(_GraphOp):
    """Inputs x (N_src, H, F), el (N_src, H), er (N_dst, H)[, mask (E, H)]; output (N_dst, H, F).

    Each part of the head layout runs on its own thread: scores, leaky ReLU, p = exp(score - c)
    with c the part's largest score (softmax is shift-invariant per row; a row whose sum z would
    underflow is redone with its own maximum), out = (A(p * mask) @ x) / z per row. The backward
    keeps p and z: with dy' = dy / z, dx = A(p * mask)^T dy' and the weight gradient is the SDDMM
    <x[u], dy'[v]>, so the normalised attention is never materialised."""

    def __init__(self, key, slope):
        super().__init__(key)
        self.slope = float(slope)

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy().astype(np.float32, copy=False)
        N, H, F = x.shape
        x = x.reshape(N * H, F)
        L = self.t.heads(H)
        el, er = _flat(in_data[1]), _flat(in_data[2])
        # the dropout mask is i.i.d. per (edge, head), so it applies in layout order as it comes
        mask = _flat(in_data[3]) if len(in_data) > 3 else None
        nnz = len(L.cols)
        p, neg = np.empty(nnz, np.float32), np.empty(nnz, bool)
        w = np.empty(nnz, np.float32) if mask is not None else p
        z, out = np.empty(L.num_rows, np.float32), np.empty((L.num_rows, F), np.float32)

        def part(r):
            s = p[r.lo:r.hi]
            np.take(el, r.cols, out=s, mode="clip")
            s += np.take(er, r.rows)
            np.less(s, 0, out=neg[r.lo:r.hi])
            np.multiply(s, self.slope, out=s, where=neg[r.lo:r.hi])
            if len(s):
                s -= s.max()
            np.exp(s, out=s)
            zr = r.row_sum(s)
            if len(r.counts) and (zr[r.nonempty] < 1e-20 * r.counts).any():
                # a row far below the part's maximum: per-row maxima for this part
                np.take(el, r.cols, out=s, mode="clip")
                s += np.take(er, r.rows)
                np.multiply(s, self.slope, out=s, where=neg[r.lo:r.hi])
                s -= r.expand(r.row_max(s))
                np.exp(s, out=s)
                zr = r.row_sum(s)
            zr[zr == 0] = 1                                    # rows without edges: out stays 0
            z[r.r0:r.r1] = zr
            if mask is not None:
                np.multiply(s, mask[r.lo:r.hi], out=w[r.lo:r.hi])
            out[r.r0:r.r1] = r.matrix(w[r.lo:r.hi]) @ x
            out[r.r0:r.r1] /= zr[:, None]
        L.map(part)
        self.p, self.neg, self.z, self.mask, self.w = p, neg, z, mask, w
        self.assign(out_data[0], req[0], out.reshape((-1, H, F)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x = in_data[0].asnumpy().astype(np.float32, copy=False)
        N, H, F = x.shape
        x = x.reshape(N * H, F)
        L = self.t.heads(H)
        dy = out_grad[0].asnumpy().astype(np.float32, copy=False).reshape(-1, F) / self.z[:, None]
        p, mask = self.p, self.mask
        der = np.empty(L.num_rows, np.float32)
        ones = np.ones((L.num_rows, 1), np.float32)

        def part(r):
            dx = r.matrix(self.w[r.lo:r.hi]).T @ dy[r.r0:r.r1]
            g = np.empty(r.hi - r.lo, np.float32)
            r.sddmm(x, dy, g)                                  # d loss / d weight, divided by z
            if mask is not None:
                g *= mask[r.lo:r.hi]
            pr = p[r.lo:r.hi]
            g *= pr                                            # a * da, times z
            g -= pr * r.expand(r.row_sum(g) / self.z[r.r0:r.r1])
            np.multiply(g, self.slope, out=g, where=self.neg[r.lo:r.hi])
            der[r.r0:r.r1] = r.row_sum(g)
            return dx, r.matrix(g).T @ ones[r.r0:r.r1]
        res = L.map(part)
        self.assign(in_grad[0], req[0], _total([d for d, _ in res], x.shape).reshape((N, H, F)))
        self.assign(in_grad[1], req[1], _total([e for _, e in res], (L.num_cols, 1)).reshape((-1, H)))
        self.assign(in_grad[2], req[2], der.reshape((-1, H)))
        if len(in_grad) > 3:
            self.assign(in_grad[3], req[3], mx.nd.zeros(in_grad[3].shape))


class _SegmentMax(_GraphOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        m = in_data[0].asnumpy()
        t = self.t
        out = np.zeros((t.num_dst,) + m.shape[1:], np.float32)
        self.arg = np.full((t.num_dst,) + m.shape[1:], -1, np.int64)
        if len(t.starts):
            ms = m[t.order]
            out[t.nonempty] = np.maximum.reduceat(ms, t.starts, axis=0)
            # the first edge (in sorted order) reaching the maximum takes the gradient
            hit = ms == out[t.nonempty][t.seg]
            pos = np.where(hit, np.arange(len(ms)).reshape((-1,) + (1,) * (ms.ndim - 1)), len(ms))
            first = np.minimum.reduceat(pos, t.starts, axis=0)
            self.arg[t.nonempty] = t.order[first]
        self.assign(out_data[0], req[0], out)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        dy = out_grad[0].asnumpy()
        dm = np.zeros(in_data[0].shape, np.float32)
        valid = self.arg >= 0
        idx = np.nonzero(valid)
        np.add.at(dm, (self.arg[valid],) + idx[1:], dy[valid])
        self.assign(in_grad[0], req[0], dm)


class _EdgeSoftmax(_GraphOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        L = self.t.heads(int(np.prod(in_data[0].shape[1:])))
        self.a = L.softmax(_flat(in_data[0])[L.perm])
        out = np.empty(len(L.perm), np.float32)
        out[L.perm] = self.a
        self.assign(out_data[0], req[0], out.reshape(in_data[0].shape))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        L = self.t.heads(int(np.prod(in_data[0].shape[1:])))
        ds = np.empty(len(L.perm), np.float32)
        ds[L.perm] = L.softmax_backward(self.a, _flat(out_grad[0])[L.perm])
        self.assign(in_grad[0], req[0], ds.reshape(in_data[0].shape))


class _SegmentSum(_GraphOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        m = in_data[0].asnumpy()
        t = self.t
        out = np.zeros((t.num_dst,) + m.shape[1:], np.float32)
        if len(t.starts):
            out[t.nonempty] = np.add.reduceat(m[t.order], t.starts, axis=0)
        self.assign(out_data[0], req[0], out)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        dy = out_grad[0].asnumpy()
        self.assign(in_grad[0], req[0], dy[self.t.dst])


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
    return [t.num_dst] + list(in_shape[0][1:])


_register("gs_spmm_e", _SpMMe, ("x", "e"), _per_destination)
_register("gs_segment_max", _SegmentMax, ("m",), _per_destination)
_register("gs_segment_sum", _SegmentSum, ("m",), _per_destination)
_register("gs_edge_softmax", _EdgeSoftmax, ("s",), lambda t, in_shape: list(in_shape[0]))
_register("gs_gat_attention", _GATAttention, ("x", "el", "er"), _per_destination)
_register("gs_gat_attention_masked", _GATAttention, ("x", "el", "er", "mask"), _per_destination)


def segment_sum(key, m):
    """Sum of edge values m (E, ...) at each destination -> (N_dst, ...), for graphs whose
    (node x edge) matrix exceeds MXNet's 2^31-element operator limit."""
    return mx.nd.Custom(m, key=key, op_type="gs_segment_sum")


def spmm_e(key, x, e):
    """Sum over incoming edges of e * x[src]: x (N, H, F), e (E, H) -> (N_dst, H, F)."""
    return mx.nd.Custom(x, e, key=key, op_type="gs_spmm_e")


def segment_max(key, m):
    """Max over each destination's incoming edge values m (E, ...) -> (N_dst, ...)."""
    return mx.nd.Custom(m, key=key, op_type="gs_segment_max")


def edge_softmax_op(key, s):
    """Softmax of edge scores s (E, ...) over each destination's incoming edges."""
    return mx.nd.Custom(s, key=key, op_type="gs_edge_softmax")


def gat_attention(key, x, el, er, negative_slope, mask=None):
    """GAT's attention step in one operator: out[v, h] = sum over edges u->v of
    a[uv, h] * mask[uv, h] * x[u, h] with a = edge softmax of leaky_relu(el[u, h] + er[v, h]).
    x (N, H, F), el and er (N, H), mask (E, H) or None -> (N_dst, H, F)."""
    if mask is None:
        return mx.nd.Custom(x, el, er, key=key, slope=negative_slope, op_type="gs_gat_attention")
    return mx.nd.Custom(x, el, er, mask, key=key, slope=negative_slope, op_type="gs_gat_attention_masked")
