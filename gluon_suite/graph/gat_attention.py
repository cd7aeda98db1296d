"""GAT's whole attention step as one custom operator on the head layout: scores
el[u, h] + er[v, h], leaky ReLU, edge softmax, optional dropout mask and the weighted sum of
x[u, h], normalised per destination after the product; the backward reuses the forward's
exponentials and per-destination sums instead of recomputing them. ``GATConv`` runs on it; it
equals the composition of built-ins (``apply_edges(u_add_v)``, ``edge_softmax``,
``update_all(u_mul_e, sum)``), which the tests check.
"""
import mxnet as mx
import numpy as np

from . import native
from .layout import _flat, _GraphOp, _per_destination, _register, _total, by_key

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


_register("gs_gat_attention", _GATAttention, ("x", "el", "er"), _per_destination)
_register("gs_gat_attention_masked", _GATAttention, ("x", "el", "er", "mask"), _per_destination)


def _layout_perm(t, H, ctx):
    """The head layout's entry order as an index NDArray on ``ctx`` (cached on the topology)."""
    cache = t.__dict__.setdefault("_perm_nd", {})
    if (H, str(ctx)) not in cache:
        cache[(H, str(ctx))] = mx.nd.array(t.heads(H).perm, ctx=ctx, dtype="int64")
    return cache[(H, str(ctx))]


def gat_attention(key, x, el, er, negative_slope, mask=None):
    """GAT's attention step in one operator: out[v, h] = sum over edges u->v of
    a[uv, h] * mask[uv, h] * x[u, h] with a = edge softmax of leaky_relu(el[u, h] + er[v, h]).
    x (N, H, F), el and er (N, H), mask (E, H) in edge order or None -> (N_dst, H, F). The compiled operator
    runs when it can take the arrays (``native``), this module's Python one otherwise."""
    if native.usable(x, el, er, mask):
        return native.gat_attention(by_key(key).structure(x.context), x, el, er, negative_slope, mask)
    if mask is not None:     # the Python operator takes the mask in its head layout's entry order
        t = by_key(key)
        mask = mx.nd.take(mask.reshape((-1,)), _layout_perm(t, x.shape[1], mask.context)).reshape(mask.shape)
    if mask is None:
        return mx.nd.Custom(x, el, er, key=key, slope=negative_slope, op_type="gs_gat_attention")
    return mx.nd.Custom(x, el, er, mask, key=key, slope=negative_slope, op_type="gs_gat_attention_masked")
