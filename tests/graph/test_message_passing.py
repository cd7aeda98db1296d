"""Every built-in message/reduce pair against a naive per-edge Python loop, forward and gradient,
on random graphs with isolated nodes, self-loops and parallel edges; edge softmax sums to one and
passes a finite-difference check."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

from gluon_suite.graph import Graph, GraphError, edge_softmax
from gluon_suite.graph import function as fn


def random_graph(seed, n=9, e=30):
    rs = np.random.RandomState(seed)
    src = rs.randint(0, n - 2, size=e)          # nodes n-2, n-1 send nothing
    dst = rs.randint(0, n - 2, size=e)          # ... and receive nothing: isolated
    src[:3], dst[:3] = [1, 1, 4], [1, 5, 5]     # a self-loop and a parallel edge for sure
    src[3], dst[3] = 1, 5
    return src, dst, n


def naive(src, dst, n, x, e, op, red):
    """Per-edge loop in float64: message then reduce at the destination."""
    out = np.zeros((n,) + x.shape[1:])
    boxes = [[] for _ in range(n)]
    for k, (u, v) in enumerate(zip(src, dst)):
        if op == "copy_u":
            m = x[u]
        elif op == "copy_e":
            m = e[k]
        elif op == "u_mul_e":
            m = x[u] * e[k].reshape(e[k].shape + (1,) * (x.ndim - e.ndim))
        elif op == "u_add_v":
            m = x[u] + x[v]
        elif op == "u_mul_v":
            m = x[u] * x[v]
        boxes[v].append(m)
    for v in range(n):
        if boxes[v]:
            b = np.stack(boxes[v])
            out[v] = {"sum": b.sum(0), "mean": b.mean(0), "max": b.max(0)}[red]
    return out


CASES = [(op, red) for op in ("copy_u", "copy_e", "u_mul_e", "u_add_v", "u_mul_v")
         for red in ("sum", "mean", "max")]


@pytest.mark.parametrize("op, red", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_builtin_pairs_match_naive_loop_forward_and_gradient(op, red, seed):
    src, dst, n = random_graph(seed)
    rs = np.random.RandomState(100 + seed)
    F = 3
    x = rs.normal(size=(n, F))
    e = rs.normal(size=(len(src), F)) if op == "copy_e" else rs.normal(size=(len(src),))
    w = rs.normal(size=(n, F))              # a random linear functional of the output
    g = Graph((src, dst), num_nodes=n)
    xv, ev = mx.nd.array(x), mx.nd.array(e)
    xv.attach_grad()
    ev.attach_grad()
    g.ndata["x"], g.edata["e"] = xv, ev
    msg = {"copy_u": fn.copy_u("x", "m"), "copy_e": fn.copy_e("e", "m"),
           "u_mul_e": fn.u_mul_e("x", "e", "m"), "u_add_v": fn.u_add_v("x", "x", "m"),
           "u_mul_v": fn.u_mul_v("x", "x", "m")}[op]
    with autograd.record():
        g.update_all(msg, getattr(fn, red)("m", "out"))
        loss = (g.ndata["out"] * mx.nd.array(w)).sum()
    loss.backward()
    ref = naive(src, dst, n, x, e, op, red)
    np.testing.assert_allclose(g.ndata["out"].asnumpy(), ref, rtol=1e-5, atol=1e-5)
    # gradients against central differences of the float64 reference
    h = 1e-6
    for name, arr, got in (("x", x, xv.grad.asnumpy()), ("e", e, ev.grad.asnumpy())):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            p, m = arr.copy(), arr.copy()
            p[idx] += h
            m[idx] -= h
            args = (p, e) if name == "x" else (x, p)
            args_m = (m, e) if name == "x" else (x, m)
            num[idx] = ((naive(src, dst, n, *args, op, red) * w).sum()
                        - (naive(src, dst, n, *args_m, op, red) * w).sum()) / (2 * h)
        np.testing.assert_allclose(got, num, rtol=1e-4, atol=1e-4, err_msg=f"d/d{name}")


def test_multi_head_u_mul_e_is_one_spmm_per_head():
    src, dst, n = random_graph(3)
    rs = np.random.RandomState(0)
    x, a = rs.normal(size=(n, 2, 4)), rs.normal(size=(len(src), 2, 1))
    g = Graph((src, dst), num_nodes=n)
    g.ndata["ft"], g.edata["a"] = mx.nd.array(x), mx.nd.array(a)
    g.update_all(fn.u_mul_e("ft", "a", "m"), fn.sum("m", "h"))
    ref = naive(src, dst, n, x, a, "u_mul_e", "sum")
    np.testing.assert_allclose(g.ndata["h"].asnumpy(), ref, rtol=1e-5, atol=1e-5)


def test_edge_softmax_sums_to_one_and_matches_finite_differences():
    src, dst, n = random_graph(4)
    rs = np.random.RandomState(1)
    s = rs.normal(size=(len(src), 2))
    g = Graph((src, dst), num_nodes=n)
    sv = mx.nd.array(s)
    sv.attach_grad()
    w = rs.normal(size=s.shape)
    with autograd.record():
        a = edge_softmax(g, sv)
        loss = (a * mx.nd.array(w)).sum()
    loss.backward()
    a = a.asnumpy()
    sums = np.zeros((n, 2))
    np.add.at(sums, dst, a)
    has_in = np.bincount(dst, minlength=n) > 0
    np.testing.assert_allclose(sums[has_in], 1.0, rtol=1e-6)

    def f(z):
        out = np.zeros_like(z)
        for v in range(n):
            k = dst == v
            if k.any():
                ez = np.exp(z[k] - z[k].max(0))
                out[k] = ez / ez.sum(0)
        return (out * w).sum()
    num = np.zeros_like(s)
    for idx in np.ndindex(s.shape):
        p, m = s.copy(), s.copy()
        p[idx] += 1e-6
        m[idx] -= 1e-6
        num[idx] = (f(p) - f(m)) / 2e-6
    np.testing.assert_allclose(sv.grad.asnumpy(), num, rtol=1e-4, atol=1e-5)


def test_apply_edges_builtins_and_udf():
    g = Graph(([0, 1, 2], [1, 2, 0]), num_nodes=3)
    g.ndata["a"] = mx.nd.array([[1.0, 2], [3, 4], [5, 6]])
    g.apply_edges(fn.u_add_v("a", "a", "s"))
    np.testing.assert_allclose(g.edata["s"].asnumpy(), [[4, 6], [8, 10], [6, 8]])
    g.apply_edges(fn.u_dot_v("a", "a", "d"))
    np.testing.assert_allclose(g.edata["d"].asnumpy().ravel(), [11, 39, 17])
    g.apply_edges(lambda edges: {"diff": edges.dst["a"] - edges.src["a"]})
    np.testing.assert_allclose(g.edata["diff"].asnumpy(), [[2, 2], [2, 2], [-4, -4]])


def test_structure_and_local_scope():
    g = Graph(([0, 0, 1], [1, 2, 2]), num_nodes=4)
    assert g.in_degrees().asnumpy().tolist() == [0, 1, 2, 0]
    assert g.out_degrees().asnumpy().tolist() == [2, 1, 0, 0]
    g2 = g.add_self_loop()
    assert g2.num_edges() == 7 and g2.in_degrees().asnumpy().tolist() == [1, 2, 3, 1]
    r = g.reverse()
    assert r.edges()[0].asnumpy().tolist() == [1, 2, 2]
    g.ndata["h"] = mx.nd.ones((4, 2))
    with g.local_scope():
        g.ndata["tmp"] = mx.nd.zeros((4, 1))
        g.ndata["h"] = mx.nd.zeros((4, 2))
    assert "tmp" not in g.ndata and g.ndata["h"].asnumpy().sum() == 8


def test_bad_input_names_the_sizes():
    with pytest.raises(GraphError, match=r"edge index out of range: dst\[1\] = 7 but the graph has 5 nodes"):
        Graph(([0, 1], [2, 7]), num_nodes=5)
    with pytest.raises(GraphError, match="src has 2 entries but dst has 3"):
        Graph(([0, 1], [2, 3, 1]))
    g = Graph(([0, 1], [1, 2]), num_nodes=3)
    with pytest.raises(GraphError, match=r"ndata\['h'\] has 4 rows but the graph has 3 nodes"):
        g.ndata["h"] = mx.nd.ones((4, 2))
    with pytest.raises(GraphError, match=r"edata\['w'\] has 3 rows but the graph has 2 edges"):
        g.edata["w"] = mx.nd.ones((3,))
    with pytest.raises(GraphError, match="ndata has no feature 'x'"):
        g.update_all(fn.copy_u("x", "m"), fn.sum("m", "o"))


def naive_gat(src, dst, n, x, el, er, mask, slope=0.2):
    """GAT attention per destination in float64: leaky ReLU scores, softmax over the incoming
    edges (shifted by their own maximum), optional mask, weighted sum of x[src]."""
    out = np.zeros_like(x)
    for v in range(n):
        k = np.flatnonzero(dst == v)
        if len(k):
            s = el[src[k]] + er[v]
            s = np.where(s > 0, s, slope * s)
            a = np.exp(s - s.max(0))
            a /= a.sum(0)
            if mask is not None:
                a = a * mask[k]
            out[v] = (a[:, :, None] * x[src[k]]).sum(0)
    return out


@pytest.mark.parametrize("case", ["plain", "masked", "far_apart_scores"])
def test_fused_gat_attention_matches_naive_loop_forward_and_gradient(case):
    from gluon_suite.graph import ops
    src, dst, n = random_graph(5)
    rs = np.random.RandomState(11)
    H, F = 2, 3
    x, el, er = rs.normal(size=(n, H, F)), rs.normal(size=(n, H)), rs.normal(size=(n, H))
    if case == "far_apart_scores":      # node 5's scores sit ~400 below the rest: no underflow to 0/0
        er[5] -= 2000.0
    mask = (rs.rand(len(src), H) > 0.3) / 0.7 if case == "masked" else None
    w = rs.normal(size=x.shape)
    g = Graph((src, dst), num_nodes=n)
    args = [mx.nd.array(a) for a in (x, el, er)]
    for a in args:
        a.attach_grad()
    layout_mask = None if mask is None else mx.nd.array(mask)
    with autograd.record():
        out = ops.gat_attention(g._topo(), *args, 0.2, layout_mask)
        loss = (out * mx.nd.array(w)).sum()
    loss.backward()
    np.testing.assert_allclose(out.asnumpy(), naive_gat(src, dst, n, x, el, er, mask), rtol=1e-5, atol=1e-5)
    assert np.isfinite(out.asnumpy()).all()
    h = 1e-6
    for i, arr in enumerate((x, el, er)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            p, m = [list((x, el, er)) for _ in range(2)]
            p[i], m[i] = arr.copy(), arr.copy()
            p[i][idx] += h
            m[i][idx] -= h
            num[idx] = ((naive_gat(src, dst, n, *p, mask) - naive_gat(src, dst, n, *m, mask)) * w).sum() / (2 * h)
        np.testing.assert_allclose(args[i].grad.asnumpy(), num, rtol=1e-4, atol=1e-4, err_msg=f"d/d arg {i}")


def test_gat_layer_equals_the_composition_of_builtins():
    """GATConv's fused attention and block-diagonal score product give what apply_edges(u_add_v),
    leaky ReLU, edge_softmax and update_all(u_mul_e, sum) give, values and parameter gradients."""
    from gluon_suite.graph.nn import GATConv
    src, dst, n = random_graph(6)
    g = Graph((src, dst), num_nodes=n)
    layer = GATConv(5, 3, 4, allow_zero_in_degree=True)
    layer.initialize(mx.init.Xavier())
    layer.bias.set_data(mx.nd.random.normal(shape=(12,)))
    feat = mx.nd.random.normal(shape=(n, 5))

    def composed():
        with g.local_scope():
            ft = layer.fc(feat).reshape((-1, 4, 3))
            g.ndata["ft"] = ft
            g.ndata["el"] = mx.nd.broadcast_mul(ft, layer.attn_l.data()).sum(axis=-1)
            g.ndata["er"] = mx.nd.broadcast_mul(ft, layer.attn_r.data()).sum(axis=-1)
            g.apply_edges(fn.u_add_v("el", "er", "e"))
            g.edata["a"] = edge_softmax(g, mx.nd.LeakyReLU(g.edata["e"], slope=0.2))
            g.update_all(fn.u_mul_e("ft", "a", "m"), fn.sum("m", "ft"))
            return mx.nd.broadcast_add(g.ndata["ft"], layer.bias.data().reshape((1, 4, 3)))

    w = mx.nd.random.normal(shape=(n, 4, 3))
    results = []
    for run in (lambda: layer(g, feat), composed):
        with autograd.record():
            out = run()
            loss = (out * w).sum()
        loss.backward()
        results.append((out.asnumpy(), {k: p.grad().asnumpy().copy() for k, p in layer.collect_params().items()}))
    (out_f, grads_f), (out_c, grads_c) = results
    np.testing.assert_allclose(out_f, out_c, rtol=1e-5, atol=1e-5)
    for k in grads_f:
        np.testing.assert_allclose(grads_f[k], grads_c[k], rtol=1e-4, atol=1e-5, err_msg=k)
