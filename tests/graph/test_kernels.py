"""The compiled graph kernels (``gluon_suite.graph.native``) against float64 NumPy references,
forward and gradient (central differences of the reference), on a graph with self-loops, parallel
edges, nodes without incoming edges and an isolated node; multi-head features; int32 and int64
ids; two CPU contexts. The kernels must be built where these tests run (``make setup``)."""
import zlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

from gluon_suite.graph import native
from gluon_suite.graph.layout import topology

CTXS = [mx.cpu(0), mx.cpu(1)]
IDTYPES = [np.int32, np.int64]
H, F = 2, 3


def small_graph():
    """7 nodes: 0->1 twice (parallel), self-loops on 2 and 3, node 5 receives nothing, node 6 is
    isolated, node 4 sends nothing."""
    src = np.array([0, 0, 1, 2, 2, 3, 3, 0, 5, 5, 1, 3, 2])
    dst = np.array([1, 1, 2, 2, 3, 3, 4, 4, 0, 4, 0, 1, 4])
    return src, dst, 7


def test_kernels_are_built_and_loaded():
    assert native.LOADED, f"compiled graph kernels not loaded: {native.REASON}"


def pad(a, b):
    """The lower-rank per-row shape gets trailing 1s (the package's broadcasting rule)."""
    a = a.reshape(a.shape + (1,) * (b.ndim - a.ndim)) if a.ndim < b.ndim else a
    b = b.reshape(b.shape + (1,) * (a.ndim - b.ndim)) if b.ndim < a.ndim else b
    return a, b


def apply(op, a, b):
    if op == "copy_lhs":
        return a
    if op == "copy_rhs":
        return b
    a, b = pad(a, b)
    if op == "dot":
        return (a * b).sum(-1, keepdims=True)
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]


def ref_spmm(src, dst, n, op, red, x, e):
    """Per-edge loop, float64: message, then reduce at the destination (0 for no edge)."""
    msgs = [apply(op, x[u] if x is not None else None, e[k] if e is not None else None)
            for k, u in enumerate(src)]
    shape = np.broadcast_shapes(*[m.shape for m in msgs])
    out = np.zeros((n,) + shape)
    for v in range(n):
        box = [np.broadcast_to(msgs[k], shape) for k in np.flatnonzero(dst == v)]
        if box:
            out[v] = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[red](np.stack(box), axis=0)
    return out


def ref_sddmm(src, dst, op, lt, rt, a, b):
    rows = {"u": src, "v": dst, "e": np.arange(len(src))}
    return np.stack([apply(op, a[rows[lt][k]], b[rows[rt][k]]) for k in range(len(src))])


def ref_softmax(dst, n, s):
    out = np.zeros_like(s)
    for v in range(n):
        k = np.flatnonzero(dst == v)
        if len(k):
            z = np.exp(s[k] - s[k].max(0))
            out[k] = z / z.sum(0)
    return out


def numeric_grads(f, inputs, w, h=1e-6):
    """d sum(f(*inputs) * w) / d input, by central differences in float64."""
    grads = []
    for i, arr in enumerate(inputs):
        if arr is None:
            grads.append(None)
            continue
        g = np.zeros_like(arr)
        for j in np.ndindex(arr.shape):
            args = [a.copy() if a is not None else None for a in inputs]
            args[i][j] += h
            up = (f(*args) * w).sum()
            args[i][j] -= 2 * h
            g[j] = (up - (f(*args) * w).sum()) / (2 * h)
        grads.append(g)
    return grads


def run(fn, arrays, ctx, w):
    """Forward and backward of ``fn`` on float32 copies of ``arrays`` (None stays None) on ``ctx``."""
    nds = [mx.nd.array(a, ctx=ctx) if a is not None else None for a in arrays]
    for a in nds:
        if a is not None:
            a.attach_grad()
    with autograd.record():
        out = fn(*nds)
        loss = (out * mx.nd.array(w, ctx=ctx)).sum()
    loss.backward()
    assert out.context == ctx
    return out.asnumpy(), [a.grad.asnumpy() if a is not None else None for a in nds]


def away_from_zero(rs, shape):
    return rs.uniform(0.5, 1.5, size=shape) * rs.choice([-1, 1], size=shape)


SPMM_CASES = [("copy_lhs", None), ("copy_rhs", (H, F))] + [
    (op, es) for op in ("add", "sub", "mul", "div") for es in ((), (H,), (H, 1), (H, F))]


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("red", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("op, eshape", SPMM_CASES, ids=lambda c: str(c).replace(" ", ""))
def test_gspmm_forward_and_gradients(op, eshape, red, idtype, ctx):
    src, dst, n = small_graph()
    rs = np.random.RandomState(zlib.crc32(repr((op, eshape, red)).encode()))
    x = None if op == "copy_rhs" else rs.normal(size=(n, H, F))
    e = None if op == "copy_lhs" else (away_from_zero(rs, (len(src),) + eshape) if op == "div"
                                       else rs.normal(size=(len(src),) + eshape))
    if op == "copy_rhs":
        e = rs.normal(size=(len(src),) + eshape)
    S = topology(src, dst, n, n).structure(ctx, idtype)
    assert all(s.dtype == np.dtype(idtype) and s.context == ctx for s in S)
    expect = ref_spmm(src, dst, n, op, red, x, e)
    w = rs.normal(size=expect.shape)
    out, (gx, ge) = run(lambda a, b: native.gspmm(S, op, red, a, b), [x, e], ctx, w)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
    nx, ne = numeric_grads(lambda a, b: ref_spmm(src, dst, n, op, red, a, b), [x, e], w)
    for got, want in ((gx, nx), (ge, ne)):
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


SDDMM_TARGETS = [("u", "v"), ("v", "u"), ("u", "e"), ("e", "u"), ("v", "e"), ("e", "v")]


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "dot", "copy_lhs", "copy_rhs"])
@pytest.mark.parametrize("lt, rt", SDDMM_TARGETS)
def test_gsddmm_forward_and_gradients(lt, rt, op, idtype, ctx):
    src, dst, n = small_graph()
    rs = np.random.RandomState(zlib.crc32(repr((lt, rt, op)).encode()))
    rows = {"u": n, "v": n, "e": len(src)}
    a = rs.normal(size=(rows[lt], H, F))
    b = (away_from_zero if op == "div" else lambda r, s: r.normal(size=s))(rs, (rows[rt], H, 1 if op != "dot" else F))
    S = topology(src, dst, n, n).structure(ctx, idtype)
    expect = ref_sddmm(src, dst, op, lt, rt, a, b)
    w = rs.normal(size=expect.shape)
    out, grads = run(lambda p, q: native.gsddmm(S, op, p, q, lt, rt), [a, b], ctx, w)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
    for got, want in zip(grads, numeric_grads(lambda p, q: ref_sddmm(src, dst, op, lt, rt, p, q), [a, b], w)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "dot"])
@pytest.mark.parametrize("lt, rt", [("u", "v"), ("v", "u")])
def test_gsddmm_with_one_array_on_both_sides_gives_it_one_summed_gradient(lt, rt, op, idtype, ctx, monkeypatch):
    """u_dot_v('h', 'h') on a homogeneous graph passes one array as both operands: the operator
    runs in its one-operand mode (called once, with a placeholder second input) and the array's
    gradient is the sum over both sides, against central differences of the float64 formula."""
    src, dst, n = small_graph()
    rs = np.random.RandomState(zlib.crc32(repr(("same", lt, rt, op)).encode()))
    x = rs.normal(size=(n, H, F))
    S = topology(src, dst, n, n).structure(ctx, idtype)
    calls = []
    real = mx.nd.gs_gsddmm
    monkeypatch.setattr(mx.nd, "gs_gsddmm", lambda *a, **k: calls.append((a[1].shape, k.get("same"))) or real(*a, **k))
    expect = ref_sddmm(src, dst, op, lt, rt, x, x)
    w = rs.normal(size=expect.shape)
    out, (gx,) = run(lambda p: native.gsddmm(S, op, p, p, lt, rt), [x], ctx, w)
    assert calls == [((1,), "1")]
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
    (want,) = numeric_grads(lambda p: ref_sddmm(src, dst, op, lt, rt, p, p), [x], w)
    np.testing.assert_allclose(gx, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("shape", [(), (H,), (H, 1)])
def test_edge_softmax_forward_and_gradient(shape, idtype, ctx):
    src, dst, n = small_graph()
    rs = np.random.RandomState(3)
    s = rs.normal(size=(len(src),) + shape) * 3
    S = topology(src, dst, n, n).structure(ctx, idtype)
    expect = ref_softmax(dst, n, s)
    w = rs.normal(size=s.shape)
    out, (gs,) = run(lambda a: native.edge_softmax(S, a), [s], ctx, w)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gs, numeric_grads(lambda a: ref_softmax(dst, n, a), [s], w)[0], rtol=1e-4, atol=1e-5)


def ref_gat(src, dst, n, x, el, er, mask, slope=0.2):
    s = el[src] + er[dst]
    a = ref_softmax(dst, n, np.where(s > 0, s, slope * s))
    if mask is not None:
        a = a * mask
    out = np.zeros((n,) + x.shape[1:])
    np.add.at(out, dst, a[:, :, None] * x[src])
    return out


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("masked", [False, True])
def test_gat_attention_forward_and_gradients(masked, idtype, ctx):
    src, dst, n = small_graph()
    rs = np.random.RandomState(5)
    x, el, er = rs.normal(size=(n, H, F)), rs.normal(size=(n, H)), rs.normal(size=(n, H))
    mask = (rs.rand(len(src), H) > 0.3) / 0.7 if masked else None
    S = topology(src, dst, n, n).structure(ctx, idtype)
    expect = ref_gat(src, dst, n, x, el, er, mask)
    w = rs.normal(size=expect.shape)
    m = mx.nd.array(mask, ctx=ctx) if masked else None
    out, grads = run(lambda *a: native.gat_attention(S, *a, 0.2, m), [x, el, er], ctx, w)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
    for got, want in zip(grads, numeric_grads(lambda *a: ref_gat(src, dst, n, *a, mask), [x, el, er], w)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_bipartite_structure_and_no_edges():
    """A block-like graph (3 sources, 2 destinations) and a graph without edges."""
    ctx = mx.cpu()
    src, dst = np.array([0, 2, 2, 1]), np.array([1, 1, 0, 1])
    S = topology(src, dst, 3, 2).structure(ctx, np.int32)
    x = np.random.RandomState(0).normal(size=(3, 4))
    w = np.ones((2, 4))
    out, (gx,) = run(lambda a: native.gspmm(S, "copy_lhs", "sum", a, None), [x], ctx, w)
    np.testing.assert_allclose(out, ref_spmm(src, dst, 2, "copy_lhs", "sum", x, None), rtol=1e-6)
    np.testing.assert_allclose(gx, np.bincount(src, minlength=3)[:, None] * np.ones((3, 4)))
    E0 = topology(np.array([], np.int64), np.array([], np.int64), 4, 4).structure(ctx, np.int64)
    out, (gx,) = run(lambda a: native.gspmm(E0, "copy_lhs", "max", a, None), [x[:1].repeat(4, 0)], ctx,
                       np.ones((4, 4)))
    assert (out == 0).all() and (gx == 0).all()


@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("red", ["max", "min"])
def test_gspmm_copy_u_extreme_ties_go_to_the_first_edge(red, idtype):
    """copy_u max/min on wide rows (the backward splits columns over threads) with ties between
    different sources: each element's gradient goes to the source of the first edge (in edge id
    order) that reaches the extreme, as a per-element float64 reference says."""
    rs = np.random.RandomState(11)
    n, L = 9, 40
    src = np.array([3, 1, 2, 4, 1, 5, 2, 6, 7, 0, 8, 3])
    dst = np.array([0, 0, 0, 0, 2, 2, 2, 8, 8, 1, 1, 1])
    x = rs.randint(-3, 4, size=(n, L)).astype(np.float64)       # small integers: many exact ties
    x[2] = x[1]
    dy = rs.normal(size=(n, L))
    want_out, want_dx = np.zeros((n, L)), np.zeros((n, L))
    pick = np.argmax if red == "max" else np.argmin
    for v in range(n):
        ks = np.flatnonzero(dst == v)
        if len(ks) == 0:
            continue
        vals = x[src[ks]]
        first = pick(vals, axis=0)                 # numpy returns the first occurrence
        want_out[v] = vals[first, np.arange(L)]
        np.add.at(want_dx, (src[ks[first]], np.arange(L)), dy[v])
    S = topology(src, dst, n, n).structure(mx.cpu(), idtype)
    xn = mx.nd.array(x)
    xn.attach_grad()
    with autograd.record():
        out = native.gspmm(S, "copy_lhs", red, xn, None)
    out.backward(mx.nd.array(dy))
    np.testing.assert_array_equal(out.asnumpy(), want_out)
    np.testing.assert_allclose(xn.grad.asnumpy(), want_dx, rtol=1e-6, atol=1e-6)


# ---- the row widths with a fixed-size accumulator (8, 16, 32, 64, 128) and one without ----------
def dense_adjacency(src, dst, n):
    """A[v, u] = the number of edges u -> v (parallel edges count twice), float64."""
    A = np.zeros((n, n))
    np.add.at(A, (dst, src), 1.0)
    return A


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("width", [8, 16, 32, 64, 128, 24])
def test_wide_rows_sum_mean_and_scaled_sum_against_dense_products(width, idtype, ctx):
    """copy_u with sum and mean, and the scaled sum with both scales and a bias, forward and
    gradients, against float64 dense-adjacency products, at the widths that have a fixed-size
    accumulator and at one that does not."""
    src, dst, n = small_graph()
    rs = np.random.RandomState(width)
    A = dense_adjacency(src, dst, n)
    deg = A.sum(1)
    x, w = rs.normal(size=(n, width)), rs.normal(size=(n, width))
    S = topology(src, dst, n, n).structure(ctx, idtype)

    out, (gx, _) = run(lambda a, b: native.gspmm(S, "copy_lhs", "sum", a, b), [x, None], ctx, w)
    np.testing.assert_allclose(out, A @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, A.T @ w, rtol=1e-5, atol=1e-5)

    inv = np.where(deg > 0, 1.0 / np.maximum(deg, 1), 0.0)[:, None]
    out, (gx, _) = run(lambda a, b: native.gspmm(S, "copy_lhs", "mean", a, b), [x, None], ctx, w)
    np.testing.assert_allclose(out, inv * (A @ x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, A.T @ (inv * w), rtol=1e-5, atol=1e-5)

    left, right, bias = rs.uniform(0.2, 2.0, n), rs.uniform(0.2, 2.0, n), rs.normal(size=width)
    out, (gx, gl, gr, gb) = run(lambda *a: native.scaled_sum(S, *a), [x, left, right, bias], ctx, w)
    agg = A @ (left[:, None] * x)
    back = A.T @ (right[:, None] * w)
    np.testing.assert_allclose(out, right[:, None] * agg + bias, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, left[:, None] * back, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gl, (x * back).sum(1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gr, (w * agg).sum(1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, w.sum(0), rtol=1e-4, atol=1e-4)
