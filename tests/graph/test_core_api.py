"""The rest of DGL's core graph API against loops over hand-made data: readouts with DGL's
signatures, adjacency accessors, in-place mutation with initializers, ``local_var`` and
``rand_graph``."""
import mxnet as mx
import numpy as np
import pytest
import scipy.sparse as sp

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn
from gluon_suite.utils import UserError

SIZES = [3, 0, 5, 1]          # a batch with an empty graph


def batched(seed=0, ctx=mx.cpu()):
    rs = np.random.RandomState(seed)
    graphs = []
    for n in SIZES:
        e = 2 * n
        g = dgl.graph((rs.randint(0, max(n, 1), e), rs.randint(0, max(n, 1), e)) if n else ([], []), num_nodes=n,
                      device=ctx)
        g.ndata["x"] = mx.nd.array(rs.normal(size=(n, 3)), ctx=ctx)
        g.ndata["w"] = mx.nd.array(rs.uniform(size=(n, 1)), ctx=ctx)
        g.edata["y"] = mx.nd.array(rs.normal(size=(e, 2)), ctx=ctx)
        graphs.append(g)
    return graphs, dgl.batch(graphs)


def per_graph(graphs, frame, key, f, width):
    return np.array([f(getattr(g, frame)[key].asnumpy()) if getattr(g, frame)[key].shape[0] else np.zeros(width)
                     for g in graphs])


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("ctx", [mx.cpu(0), mx.cpu(1)], ids=["cpu0", "cpu1"])
def test_readouts_match_per_graph_numpy(op, ctx):
    graphs, bg = batched(ctx=ctx)
    f = {"sum": lambda a: a.sum(0), "mean": lambda a: a.mean(0), "max": lambda a: a.max(0),
         "min": lambda a: a.min(0)}[op]
    out = dgl.readout_nodes(bg, "x", op=op)
    assert out.shape == (len(SIZES), 3) and out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), per_graph(graphs, "ndata", "x", f, 3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(getattr(dgl, f"{op}_nodes")(bg, "x").asnumpy(), out.asnumpy(), rtol=1e-6)
    weighted = dgl.readout_nodes(bg, "x", weight="w", op=op).asnumpy()
    ref = np.array([f(g.ndata["x"].asnumpy() * g.ndata["w"].asnumpy()) if g.num_nodes() else np.zeros(3)
                    for g in graphs])
    np.testing.assert_allclose(weighted, ref, rtol=1e-5, atol=1e-6)
    edges = getattr(dgl, f"{op}_edges")(bg, "y")
    np.testing.assert_allclose(edges.asnumpy(), per_graph(graphs, "edata", "y", f, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dgl.readout_edges(bg, "y", op=op).asnumpy(), edges.asnumpy(), rtol=1e-6)


def test_readout_on_one_graph_and_gradient_of_weighted_sum():
    g = dgl.graph(([0, 1], [1, 2]), num_nodes=3)
    x, w = mx.nd.array([[1.0], [2.0], [4.0]]), mx.nd.array([[0.5], [1.0], [2.0]])
    x.attach_grad()
    with mx.autograd.record():
        g.ndata["x"], g.ndata["w"] = x, w
        out = dgl.sum_nodes(g, "x", "w")
    out.backward()
    assert out.asnumpy().tolist() == [[10.5]]
    assert x.grad.asnumpy().ravel().tolist() == [0.5, 1.0, 2.0]
    with pytest.raises(UserError, match="unknown readout"):
        dgl.readout_nodes(g, "x", op="median")


def test_softmax_and_broadcast_nodes_and_edges():
    graphs, bg = batched(1)
    soft = dgl.softmax_nodes(bg, "x").asnumpy()
    ref = np.concatenate([np.exp(g.ndata["x"].asnumpy()) / np.exp(g.ndata["x"].asnumpy()).sum(0)
                          for g in graphs if g.num_nodes()])
    np.testing.assert_allclose(soft, ref, rtol=1e-5)
    esoft = dgl.softmax_edges(bg, "y").asnumpy()
    eref = np.concatenate([np.exp(g.edata["y"].asnumpy()) / np.exp(g.edata["y"].asnumpy()).sum(0)
                           for g in graphs if g.num_edges()])
    np.testing.assert_allclose(esoft, eref, rtol=1e-5)
    gf = mx.nd.array(np.arange(len(SIZES) * 2).reshape(-1, 2))
    out = dgl.broadcast_nodes(bg, gf).asnumpy()
    np.testing.assert_array_equal(out, np.repeat(gf.asnumpy(), SIZES, axis=0))
    out = dgl.broadcast_edges(bg, gf).asnumpy()
    np.testing.assert_array_equal(out, np.repeat(gf.asnumpy(), [2 * n for n in SIZES], axis=0))
    with pytest.raises(UserError, match="one row per graph"):
        dgl.broadcast_nodes(bg, mx.nd.ones((2, 2)))


@pytest.mark.parametrize("descending", [True, False])
def test_topk_nodes_per_column_and_sorted_by_one(descending):
    graphs, bg = batched(2)
    k = 4
    vals, idx = dgl.topk_nodes(bg, "x", k, descending=descending)
    assert vals.shape == (len(SIZES), k, 3) and idx.shape == (len(SIZES), k, 3)
    for b, g in enumerate(graphs):
        x = g.ndata["x"].asnumpy()
        n = len(x)
        for d in range(3):
            order = np.argsort(-x[:, d] if descending else x[:, d], kind="stable")[:k]
            np.testing.assert_allclose(vals.asnumpy()[b, :len(order), d], x[order, d], rtol=1e-6)
            assert idx.asnumpy()[b, :len(order), d].tolist() == order.tolist()
            assert (vals.asnumpy()[b, n:, d] == 0).all()
    vals, idx = dgl.topk_nodes(bg, "x", 2, descending=descending, sortby=1)
    assert vals.shape == (len(SIZES), 2, 3) and idx.shape == (len(SIZES), 2)
    for b, g in enumerate(graphs):
        x = g.ndata["x"].asnumpy()
        order = np.argsort(-x[:, 1] if descending else x[:, 1], kind="stable")[:2]
        np.testing.assert_allclose(vals.asnumpy()[b, :len(order)], x[order], rtol=1e-6)
        assert idx.asnumpy()[b, :len(order)].tolist() == order.tolist()
    evals, _ = dgl.topk_edges(bg, "y", 1)
    ref = per_graph(graphs, "edata", "y", lambda a: a.max(0), 2)
    np.testing.assert_allclose(evals.asnumpy()[:, 0], ref, rtol=1e-6)


def test_adjacency_accessors():
    src, dst = np.array([0, 0, 2, 1, 0]), np.array([1, 1, 0, 2, 2])
    g = dgl.graph((src, dst), num_nodes=3, device=mx.cpu(1))
    ref = np.zeros((3, 3))
    np.add.at(ref, (src, dst), 1)
    a = g.adj_external()
    assert a.stype == "csr" and a.context == mx.cpu(1)
    np.testing.assert_array_equal(a.asnumpy(), ref)
    np.testing.assert_array_equal(g.adj(transpose=True, ctx=mx.cpu(0)).asnumpy(), ref.T)
    m = g.adj_external(scipy_fmt="coo")
    assert isinstance(m, sp.coo_matrix) and m.nnz == len(src)
    np.testing.assert_array_equal(g.adj(scipy_fmt="csr").toarray(), ref)
    indptr, indices, eids = (t.asnumpy() for t in g.adj_tensors("csr"))
    rebuilt = [(r, indices[k], eids[k]) for r in range(3) for k in range(indptr[r], indptr[r + 1])]
    assert sorted(rebuilt) == sorted(zip(src, dst, range(len(src))))
    indptr, indices, eids = (t.asnumpy() for t in g.adj_tensors("csc"))
    rebuilt = [(indices[k], c, eids[k]) for c in range(3) for k in range(indptr[c], indptr[c + 1])]
    assert sorted(rebuilt) == sorted(zip(src, dst, range(len(src))))


def test_add_nodes_and_edges_in_place_with_features_and_initializers():
    g = dgl.graph(([0, 1], [1, 2]), num_nodes=3)
    g.ndata["h"] = mx.nd.array([[1.0], [2.0], [3.0]])
    g.edata["w"] = mx.nd.array([10.0, 20.0])
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))        # build caches before changing the graph
    g.set_n_initializer(lambda shape, dtype, ctx, id_range: mx.nd.full(shape, -1, dtype=dtype, ctx=ctx))
    g.add_nodes(2, {"t": mx.nd.array([[7.0], [8.0]])})
    assert g.num_nodes() == 5
    assert g.ndata["h"].asnumpy().ravel().tolist() == [1, 2, 3, -1, -1]
    assert g.ndata["t"].asnumpy().ravel().tolist() == [-1, -1, -1, 7, 8]
    g.add_edges([4, 2], 6, {"w": mx.nd.array([30.0, 40.0])})   # node 6 does not exist yet: 5 and 6 are added
    assert g.num_nodes() == 7 and g.num_edges() == 4
    assert g.edges()[0].asnumpy().tolist() == [0, 1, 4, 2] and g.edges()[1].asnumpy().tolist() == [1, 2, 6, 6]
    assert g.edata["w"].asnumpy().tolist() == [10, 20, 30, 40]
    g.add_edges([3], [0])                                      # default edge initializer: zeros
    assert g.edata["w"].asnumpy().tolist() == [10, 20, 30, 40, 0]
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))
    a = np.zeros((7, 7))
    np.add.at(a, (g.edges()[1].asnumpy(), g.edges()[0].asnumpy()), 1)
    np.testing.assert_allclose(g.ndata["s"].asnumpy(), a @ g.ndata["h"].asnumpy())
    assert g.in_degrees().asnumpy().tolist() == a.sum(1).tolist()


def test_remove_edges_and_nodes_keep_the_rest_in_order():
    g = dgl.graph(([0, 1, 2, 3, 0], [1, 2, 3, 0, 2]), num_nodes=4)
    g.ndata["h"] = mx.nd.array([[0.0], [1.0], [2.0], [3.0]])
    g.edata["w"] = mx.nd.array([0.0, 1.0, 2.0, 3.0, 4.0])
    g.remove_edges([1, 3], store_ids=True)
    assert g.edges()[0].asnumpy().tolist() == [0, 2, 0] and g.edges()[1].asnumpy().tolist() == [1, 3, 2]
    assert g.edata["w"].asnumpy().tolist() == [0, 2, 4] and g.edata[dgl.EID].asnumpy().tolist() == [0, 2, 4]
    g.remove_nodes([1])
    assert g.num_nodes() == 3 and g.ndata["h"].asnumpy().ravel().tolist() == [0, 2, 3]
    assert g.edges()[0].asnumpy().tolist() == [1, 0] and g.edges()[1].asnumpy().tolist() == [2, 1]
    assert g.edata["w"].asnumpy().tolist() == [2, 4]
    with pytest.raises(UserError, match="edge ids"):
        g.remove_edges([5])


def test_local_var_keeps_new_features_off_the_original():
    g = dgl.graph(([0, 1], [1, 2]), num_nodes=3)
    g.ndata["h"] = mx.nd.ones((3, 1))
    lv = g.local_var()
    lv.ndata["tmp"] = mx.nd.zeros((3, 1))
    lv.update_all(fn.copy_u("h", "m"), fn.sum("m", "h"))
    assert "tmp" not in g.ndata and g.ndata["h"].asnumpy().ravel().tolist() == [1, 1, 1]
    assert lv.ndata["h"].asnumpy().ravel().tolist() == [0, 1, 1]


def test_rand_graph_draws_distinct_pairs_reproducibly():
    dgl.seed(3)
    g = dgl.rand_graph(20, 150, idtype="int32", device=mx.cpu(1))
    assert g.num_nodes() == 20 and g.num_edges() == 150 and g.idtype == np.int32 and g.device == mx.cpu(1)
    pairs = set(zip(*(t.asnumpy().tolist() for t in g.edges())))
    assert len(pairs) == 150
    dgl.seed(3)
    assert set(zip(*(t.asnumpy().tolist() for t in dgl.rand_graph(20, 150).edges()))) == pairs
    assert dgl.rand_graph(3, 9).num_edges() == 9
    with pytest.raises(UserError, match="do not fit"):
        dgl.rand_graph(3, 10)
