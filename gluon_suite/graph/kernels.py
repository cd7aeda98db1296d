"""The Python message-passing kernels, MXNet custom operators with forward and backward: the
fallback when the compiled kernels (``native``) are not built or cannot take the arrays (another
dtype, a GPU context). They copy features to the host.

MXNet 1.9's ``nd.sparse.dot`` differentiates only the dense side, so products whose edge values
need gradients (``u_mul_e``) and reductions with no sparse-product form (max, edge softmax) run
here over SciPy CSR matrices and NumPy segment reductions. Shapes: node features (N, H, F), edge
values (E, H).

- ``spmm_e``: out[v, h] = sum over edges u->v of e[uv, h] * x[u, h]; backward dx = A^T dy,
  de = <x[u, h], dy[v, h]> (SDDMM, in chunks).
- ``segment_max``: out[v] = max over edges u->v of m[uv] (0 for no incoming edge); the gradient
  goes to the arg-max edge.
- ``segment_sum``: out[v] = sum over edges u->v of m[uv], for graphs beyond MXNet's size limit.
- ``edge_softmax_op``: a[uv] = exp(s[uv]) / sum over edges w->v of exp(s[wv]); backward
  ds = a * (g - sum_v(g * a)).
"""
import mxnet as mx
import numpy as np

from .layout import _flat, _GraphOp, _per_destination, _register

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

