"""Sparse kernels for message passing, as MXNet custom operators with forward and backward.

MXNet 1.9's ``nd.sparse.dot`` differentiates only the dense side, so products whose edge values
need gradients (``u_mul_e``) and reductions with no sparse-product form (max, edge softmax) run
here over SciPy CSR matrices and NumPy segment reductions. Shapes: node features (N, H, F), edge
values (E, H); a graph is passed as a ``_Topology`` key into a registry (custom operators take
only arrays and strings).

- ``spmm_e``: out[v, h] = sum over edges u->v of e[uv, h] * x[u, h]   (no E x F tensor: one
  CSR product per head); backward dx = A_h^T dy, de = <x[u, h], dy[v, h]> (SDDMM, in chunks).
- ``segment_max``: out[v] = max over edges u->v of m[uv] (0 for no incoming edge); the gradient
  goes to the arg-max edge.
- ``edge_softmax``: a[uv] = exp(s[uv]) / sum over edges w->v of exp(s[wv]); backward
  ds = a * (g - sum_v(g * a)).
"""
import itertools

import mxnet as mx
import numpy as np
import scipy.sparse as sp

_TOPOLOGIES = {}
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
        self.key = str(next(_KEYS))
        _TOPOLOGIES[self.key] = self

    def csr(self, values):
        """The (num_dst x num_src) CSR matrix with ``values`` (in edge order) on the edges."""
        return sp.csr_matrix((np.ascontiguousarray(values[self.order], dtype=np.float32), self.src_sorted,
                              self.indptr), shape=(self.num_dst, self.num_src), copy=False)


def topology(src, dst, num_src, num_dst):
    """Register a graph's topology for the custom operators; returns the key."""
    return _Topology(np.asarray(src, np.int64), np.asarray(dst, np.int64), int(num_src), int(num_dst)).key


_POOL = None


def _parallel(fn, n):
    """Run ``fn(0..n-1)`` on a small thread pool (SciPy's sparse products and NumPy's kernels
    release the GIL); one thread per core, at most 4."""
    global _POOL
    if n <= 1:
        for i in range(n):
            fn(i)
        return
    if _POOL is None:
        import os
        from concurrent.futures import ThreadPoolExecutor
        _POOL = ThreadPoolExecutor(max_workers=max(1, min(4, int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))))
    list(_POOL.map(fn, range(n)))


class _GraphOp(mx.operator.CustomOp):
    """A custom operator bound to a registered graph topology."""

    def __init__(self, key):
        super().__init__()
        self.t = _TOPOLOGIES[key]


class _SpMMe(_GraphOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x, e = in_data[0].asnumpy(), in_data[1].asnumpy()
        out = np.empty((self.t.num_dst,) + x.shape[1:], np.float32)

        def head(h):
            out[:, h, :] = self.t.csr(e[:, h]) @ x[:, h, :]
        _parallel(head, x.shape[1])
        self.assign(out_data[0], req[0], mx.nd.array(out))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x, e, dy = in_data[0].asnumpy(), in_data[1].asnumpy(), out_grad[0].asnumpy()
        dx = np.empty_like(x)
        de = np.empty_like(e)
        t = self.t
        def head(h):
            dx[:, h, :] = t.csr(e[:, h]).T @ dy[:, h, :]

        def chunk(i):  # SDDMM: per-edge dot products, chunk by chunk
            a = i * _CHUNK
            s, d = t.src[a:a + _CHUNK], t.dst[a:a + _CHUNK]
            de[a:a + _CHUNK] = np.einsum("ehf,ehf->eh", x[s], dy[d])
        _parallel(head, x.shape[1])
        _parallel(chunk, -(-len(t.src) // _CHUNK))
        self.assign(in_grad[0], req[0], mx.nd.array(dx))
        self.assign(in_grad[1], req[1], mx.nd.array(de))


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
        self.assign(out_data[0], req[0], mx.nd.array(out))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        dy = out_grad[0].asnumpy()
        dm = np.zeros(in_data[0].shape, np.float32)
        valid = self.arg >= 0
        idx = np.nonzero(valid)
        np.add.at(dm, (self.arg[valid],) + idx[1:], dy[valid])
        self.assign(in_grad[0], req[0], mx.nd.array(dm))


class _EdgeSoftmax(_GraphOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        t = self.t
        s = in_data[0].asnumpy()
        out = np.zeros_like(s)
        if len(t.starts):
            ss = s[t.order]
            ss -= np.maximum.reduceat(ss, t.starts, axis=0)[t.seg]
            np.exp(ss, out=ss)
            ss /= np.add.reduceat(ss, t.starts, axis=0)[t.seg]
            out[t.order] = ss
        self.assign(out_data[0], req[0], mx.nd.array(out))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        t = self.t
        a, g = out_data[0].asnumpy(), out_grad[0].asnumpy()
        ds = np.zeros_like(a)
        if len(t.starts):
            ao, go = a[t.order], g[t.order]
            tot = np.add.reduceat(go * ao, t.starts, axis=0)
            ds[t.order] = ao * (go - tot[t.seg])
        self.assign(in_grad[0], req[0], mx.nd.array(ds))


class _SegmentSum(_GraphOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        m = in_data[0].asnumpy()
        t = self.t
        out = np.zeros((t.num_dst,) + m.shape[1:], np.float32)
        if len(t.starts):
            out[t.nonempty] = np.add.reduceat(m[t.order], t.starts, axis=0)
        self.assign(out_data[0], req[0], mx.nd.array(out))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        dy = out_grad[0].asnumpy()
        self.assign(in_grad[0], req[0], mx.nd.array(dy[self.t.dst]))


def _register(name, op_cls, arguments, out_shape):
    """Register ``op_cls`` as MXNet custom operator ``name`` taking ``arguments`` and a topology
    ``key``; ``out_shape(topology, in_shapes)`` gives the output shape."""
    class Prop(mx.operator.CustomOpProp):
        def __init__(self, key):
            super().__init__(need_top_grad=True)
            self.key = key

        def list_arguments(self):
            return list(arguments)

        def infer_shape(self, in_shape):
            return in_shape, [out_shape(_TOPOLOGIES[self.key], in_shape)], []

        def create_operator(self, ctx, shapes, dtypes):
            return op_cls(self.key)
    Prop.__name__ = op_cls.__name__ + "Prop"
    mx.operator.register(name)(Prop)


def _per_destination(t, in_shape):
    return [t.num_dst] + list(in_shape[0][1:])


_register("gs_spmm_e", _SpMMe, ("x", "e"), _per_destination)
_register("gs_segment_max", _SegmentMax, ("m",), _per_destination)
_register("gs_segment_sum", _SegmentSum, ("m",), _per_destination)
_register("gs_edge_softmax", _EdgeSoftmax, ("s",), lambda t, in_shape: list(in_shape[0]))


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
