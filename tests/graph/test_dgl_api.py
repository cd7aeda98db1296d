"""The DGL-compatible API against independent references: layers against float64 NumPy loops
written from the papers' formulas (and DGL's documented choices), transforms and blocks against
hand-written edge lists, samplers and loaders against the properties DGL documents."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn
from gluon_suite.graph.nn import GATConv, GINConv, GraphConv, SAGEConv
from gluon_suite.utils import UserError

# 6 nodes: a self-loop (2->2), a parallel pair (0->1 twice), node 5 receives nothing, node 4 sends nothing
SRC = np.array([0, 0, 1, 2, 2, 3, 5, 1])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4])
N = 6


def feats(shape, seed=0):
    return np.random.RandomState(seed).normal(size=shape)


def adjacency(src, dst, n_src, n_dst):
    """A[v, u] = number of edges u->v, float64."""
    a = np.zeros((n_dst, n_src))
    np.add.at(a, (dst, src), 1.0)
    return a


# ---- layers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["both", "right", "left", "none"])
def test_graphconv_matches_numpy_normalised_adjacency(norm):
    g = dgl.graph((SRC, DST), num_nodes=N)
    x = feats((N, 5))
    conv = GraphConv(5, 3, norm=norm, allow_zero_in_degree=True)
    conv.initialize()
    conv.bias.set_data(mx.nd.array(feats((3,), 1)))
    out = conv(g, mx.nd.array(x)).asnumpy()
    a = adjacency(SRC, DST, N, N)
    d_in, d_out = np.maximum(a.sum(1), 1), np.maximum(a.sum(0), 1)
    left = {"both": d_in ** -0.5, "right": 1 / d_in, "left": np.ones(N), "none": np.ones(N)}[norm]
    right = {"both": d_out ** -0.5, "right": np.ones(N), "left": 1 / d_out, "none": np.ones(N)}[norm]
    w, b = conv.weight.data().asnumpy(), conv.bias.data().asnumpy()
    ref = (left[:, None] * a * right[None, :]) @ x @ w + b
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_graphconv_external_weight_and_no_weight():
    g = dgl.add_self_loop(dgl.graph((SRC, DST), num_nodes=N))
    x, w = feats((N, 4)), feats((4, 2), 3)
    conv = GraphConv(4, 2, weight=False, bias=False)
    conv.initialize()
    out = conv(g, mx.nd.array(x), mx.nd.array(w)).asnumpy()   # Gluon 1.x: positional only
    a = adjacency(g.edges()[0].asnumpy(), g.edges()[1].asnumpy(), N, N)
    ref = (a.sum(1) ** -0.5)[:, None] * a * (a.sum(0) ** -0.5)[None, :] @ x @ w
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(UserError, match="weight=False"):
        own = GraphConv(4, 2)
        own.initialize()
        own(g, mx.nd.array(x), mx.nd.array(w))
    with pytest.raises(UserError, match="norm"):
        GraphConv(4, 2, norm="sym")


def _dense(layer):
    w = layer.weight.data().asnumpy()
    b = layer.bias.data().asnumpy() if layer.bias is not None else 0.0
    return lambda h: h @ w.T + b


@pytest.mark.parametrize("agg", ["mean", "gcn", "pool"])
def test_sageconv_matches_loop(agg):
    g = dgl.graph((SRC, DST), num_nodes=N)
    x = feats((N, 4), 2)
    conv = SAGEConv(4, 3, agg)
    conv.initialize()
    for p in conv.collect_params().values():          # non-zero biases, so that both are checked
        p.set_data(mx.nd.array(feats(p.shape, 7)))
    out = conv(g, mx.nd.array(x)).asnumpy()
    ref = np.zeros((N, 3))
    for v in range(N):
        nbrs = SRC[DST == v]
        if agg == "mean":
            neigh = x[nbrs].mean(0) if len(nbrs) else np.zeros(4)
            ref[v] = _dense(conv.fc_self)(x[v]) + _dense(conv.fc_neigh)(neigh)
        elif agg == "gcn":
            ref[v] = _dense(conv.fc_neigh)((x[nbrs].sum(0) + x[v]) / (len(nbrs) + 1))
        else:
            pooled = np.maximum(_dense(conv.fc_pool)(x[nbrs]), 0).max(0) if len(nbrs) else np.zeros(4)
            ref[v] = _dense(conv.fc_self)(x[v]) + _dense(conv.fc_neigh)(pooled)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(UserError, match="aggregator_type"):
        SAGEConv(4, 3, "lstm")


@pytest.mark.parametrize("agg", ["sum", "max", "mean"])
def test_ginconv_matches_loop_with_eps(agg):
    g = dgl.graph((SRC, DST), num_nodes=N)
    x = feats((N, 3), 4)
    conv = GINConv(None, agg, init_eps=0.3, learn_eps=True)
    conv.initialize()
    xv = mx.nd.array(x)
    with autograd.record():
        out = conv(g, xv)
        loss = out.sum()
    loss.backward()
    ref = np.zeros((N, 3))
    for v in range(N):
        nb = x[SRC[DST == v]]
        agg_v = np.zeros(3) if not len(nb) else {"sum": nb.sum(0), "max": nb.max(0), "mean": nb.mean(0)}[agg]
        ref[v] = 1.3 * x[v] + agg_v
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    # d(sum of outputs)/d eps = sum of the inputs: eps is learned
    np.testing.assert_allclose(conv.eps.grad().asnumpy(), [x.sum()], rtol=1e-5)
    with pytest.raises(UserError, match="aggregator_type"):
        GINConv(None, "lstm")


def test_gatconv_attention_is_a_softmax_per_destination_and_matches_fused_output():
    g = dgl.add_self_loop(dgl.graph((SRC, DST), num_nodes=N))
    conv = GATConv(4, 2, 3)
    conv.initialize()
    x = mx.nd.array(feats((N, 4), 5))
    fused = conv(g, x).asnumpy()
    out, att = conv(g, x, True)                     # get_attention
    assert out.shape == (N, 3, 2) and att.shape == (g.num_edges(), 3, 1)
    np.testing.assert_allclose(out.asnumpy(), fused, rtol=1e-5, atol=1e-6)
    sums = np.zeros((N, 3))
    np.add.at(sums, g.edges()[1].asnumpy(), att.asnumpy()[:, :, 0])
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)
    with pytest.raises(UserError, match="add self-loops"):
        conv(dgl.graph((SRC, DST), num_nodes=N), x)


def test_gatconv_residual_is_identity_when_sizes_match():
    """DGL's rule: in_feats == out_feats gives an identity residual broadcast over heads."""
    g = dgl.add_self_loop(dgl.graph((SRC, DST), num_nodes=N))
    x = mx.nd.array(feats((N, 2), 6))
    plain, res = GATConv(2, 2, 3, bias=False), GATConv(2, 2, 3, residual=True, bias=False)
    plain.initialize()
    res.initialize()
    for name in ("fc", "attn_l", "attn_r"):
        src = getattr(plain, name)
        (res.fc.weight if name == "fc" else getattr(res, name)).set_data(
            (src.weight if name == "fc" else src).data())
    diff = res(g, x).asnumpy() - plain(g, x).asnumpy()
    np.testing.assert_allclose(diff, np.repeat(x.asnumpy()[:, None, :], 3, axis=1), rtol=1e-5, atol=1e-6)


# ---- message passing extras -------------------------------------------------------------------
def test_keyword_builtins_min_reduce_and_udf_reduce_match_loop():
    g = dgl.graph((SRC, DST), num_nodes=N)
    x = feats((N, 2), 8)
    g.ndata["h"] = x
    g.update_all(fn.copy_u(u="h", out="m"), fn.min(msg="m", out="lo"))
    g.update_all(fn.copy_src(src="h", out="m"), lambda nodes: {"hi": nodes.mailbox["m"].max(axis=1)})
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"), apply_node_func=lambda nodes: {"s2": nodes.data["s"] * 2})
    for v in range(N):
        nb = x[SRC[DST == v]]
        np.testing.assert_allclose(g.ndata["lo"].asnumpy()[v], nb.min(0) if len(nb) else 0, rtol=1e-6)
        np.testing.assert_allclose(g.ndata["hi"].asnumpy()[v], nb.max(0) if len(nb) else 0, rtol=1e-6)
        np.testing.assert_allclose(g.ndata["s2"].asnumpy()[v], 2 * nb.sum(0), rtol=1e-6, atol=1e-12)


def test_ops_edge_softmax_by_source_gspmm_and_gsddmm_match_loops():
    g = dgl.graph((SRC, DST), num_nodes=N)
    s, x, w = feats((len(SRC), 2), 9), feats((N, 3), 10), feats((len(SRC),), 11)
    a = dgl.ops.edge_softmax(g, mx.nd.array(s), norm_by="src").asnumpy()
    for u in range(N):
        k = SRC == u
        if k.any():
            e = np.exp(s[k] - s[k].max(0))
            np.testing.assert_allclose(a[k], e / e.sum(0), rtol=1e-5)
    out = dgl.ops.u_mul_e_sum(g, mx.nd.array(x), mx.nd.array(w.reshape(-1, 1))).asnumpy()
    ref = np.zeros((N, 3))
    np.add.at(ref, DST, x[SRC] * w[:, None])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    dots = dgl.ops.gsddmm(g, "dot", mx.nd.array(x), mx.nd.array(x), "u", "v").asnumpy()
    np.testing.assert_allclose(dots[:, 0], (x[SRC] * x[DST]).sum(1), rtol=1e-5)
    assert "h" not in g.ndata and not g.edata          # functional: the graph keeps no temporaries


# ---- structure and transforms ----------------------------------------------------------------
def test_degrees_counts_and_names():
    g = dgl.graph((SRC, DST), num_nodes=N)
    assert g.num_nodes() == g.number_of_nodes() == g.num_src_nodes() == g.num_dst_nodes() == 6
    assert g.num_edges() == g.number_of_edges() == 8
    assert g.in_degrees().asnumpy().tolist() == [1, 2, 2, 1, 2, 0] and g.in_degrees().dtype == np.int64
    assert g.out_degrees().asnumpy().tolist() == [2, 2, 2, 1, 0, 1]
    assert g.in_degrees(4) == 2 and g.out_degrees([0, 3]).asnumpy().tolist() == [2, 1]
    assert g.srcdata is g.ndata and g.dstdata is g.ndata


def test_add_remove_self_loop_and_to_bidirected_against_hand_lists():
    g = dgl.graph(([0, 1, 1, 2], [1, 1, 2, 2]), num_nodes=3)
    g.edata["w"] = mx.nd.array([[1.0], [2.0], [3.0], [4.0]])
    g.ndata["h"] = mx.nd.array([5.0, 6.0, 7.0])
    r = dgl.remove_self_loop(g)
    assert r.edges()[0].asnumpy().tolist() == [0, 1] and r.edges()[1].asnumpy().tolist() == [1, 2]
    assert r.edata["w"].asnumpy().ravel().tolist() == [1, 3] and r.ndata["h"].asnumpy().tolist() == [5, 6, 7]
    a = dgl.add_self_loop(r)                                  # DGL: appended, features filled with 1
    assert a.edges()[0].asnumpy().tolist() == [0, 1, 0, 1, 2] and a.edges()[1].asnumpy().tolist() == [1, 2, 0, 1, 2]
    assert a.edata["w"].asnumpy().ravel().tolist() == [1, 3, 1, 1, 1]
    s = r.add_self_loop(fill_data="sum")                      # the node's incoming edges' sum
    assert s.edata["w"].asnumpy().ravel().tolist() == [1, 3, 0, 1, 3]
    b = dgl.to_bidirected(dgl.graph(([0, 1, 2, 0, 0], [1, 2, 0, 2, 1]), num_nodes=4))
    pairs = list(zip(b.edges()[0].asnumpy().tolist(), b.edges()[1].asnumpy().tolist()))
    assert pairs == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)] and b.num_nodes() == 4
    rev = dgl.reverse(dgl.graph(([0, 0], [1, 2]), num_nodes=3))
    assert rev.edges()[0].asnumpy().tolist() == [1, 2] and rev.edges()[1].asnumpy().tolist() == [0, 0]


def test_batch_sizes_are_dgl_methods():
    g1, g2 = dgl.graph(([0, 1], [1, 2]), num_nodes=3), dgl.graph(([0], [1]), num_nodes=2)
    bg = dgl.batch([g1, g2])
    assert bg.batch_size == 2 and bg.batch_num_nodes().asnumpy().tolist() == [3, 2]
    assert bg.batch_num_edges().asnumpy().tolist() == [2, 1]
    assert [h.num_edges() for h in dgl.unbatch(dgl.remove_self_loop(bg))] == [2, 1]


# ---- blocks, sampling, loaders -------------------------------------------------------------------
def test_to_block_maps_sources_and_destinations():
    # frontier on 7 nodes: edges 4->1, 2->1, 1->3, 6->3, 4->3 towards dst_nodes [3, 1]
    frontier = dgl.graph(([4, 2, 1, 6, 4], [1, 1, 3, 3, 3]), num_nodes=7)
    b = dgl.to_block(frontier, [3, 1])
    assert b.is_block and b.num_dst_nodes() == 2 and b.num_src_nodes() == 5
    # destinations first, then the other sources in order of first appearance: 4, 2, 6
    assert b.srcdata[dgl.NID].asnumpy().tolist() == [3, 1, 4, 2, 6]
    assert b.dstdata[dgl.NID].asnumpy().tolist() == [3, 1]
    assert b.edges()[0].asnumpy().tolist() == [2, 3, 1, 4, 2] and b.edges()[1].asnumpy().tolist() == [1, 1, 0, 0, 0]
    assert b.edata[dgl.EID].asnumpy().tolist() == [0, 1, 2, 3, 4]
    assert b.in_degrees().asnumpy().tolist() == [3, 2] and b.out_degrees().asnumpy().tolist() == [0, 1, 2, 1, 1]
    with pytest.raises(UserError, match="srcdata or block.dstdata"):
        b.ndata
    with pytest.raises(UserError, match="not among dst_nodes"):
        dgl.to_block(frontier, [3])


def test_layers_on_a_full_neighbour_block_equal_the_full_graph_rows():
    g = dgl.add_self_loop(dgl.graph((SRC, DST), num_nodes=N))
    x = mx.nd.array(feats((N, 4), 12))
    seeds = np.array([4, 0])
    block = dgl.dataloading.MultiLayerFullNeighborSampler(1).sample_blocks(g, seeds)[0]
    xs = x[block.srcdata[dgl.NID]]
    for layer in (GraphConv(4, 3, norm="right"), SAGEConv(4, 3, "mean"), GATConv(4, 2, 2), GINConv(None, "sum")):
        layer.initialize()
        full, part = layer(g, x).asnumpy()[seeds], layer(block, xs).asnumpy()
        np.testing.assert_allclose(part, full, rtol=1e-5, atol=1e-6, err_msg=type(layer).__name__)


def test_sample_neighbors_draws_real_in_edges_up_to_fanout():
    g = dgl.graph((np.repeat(np.arange(10), 10), np.tile(np.arange(10), 10)), num_nodes=10)
    dgl.seed(3)
    sg = dgl.sampling.sample_neighbors(g, [0, 5], 4)
    src, dst = (a.asnumpy() for a in sg.edges())
    eid = sg.edata[dgl.EID].asnumpy()
    assert sg.num_nodes() == 10 and sorted(np.bincount(dst, minlength=10)[[0, 5]]) == [4, 4]
    assert (g.edges()[0].asnumpy()[eid] == src).all() and (g.edges()[1].asnumpy()[eid] == dst).all()
    assert len(set(eid.tolist())) == len(eid)                 # without replacement
    dgl.seed(3)
    assert (dgl.sampling.sample_neighbors(g, [0, 5], 4).edata[dgl.EID].asnumpy() == eid).all()


def test_node_dataloader_covers_every_seed_once_with_chained_blocks():
    g = dgl.add_self_loop(dgl.graph((SRC, DST), num_nodes=N))
    sampler = dgl.dataloading.MultiLayerNeighborSampler([2, 3])
    loader = dgl.dataloading.NodeDataLoader(g, np.arange(N), sampler, batch_size=4, shuffle=True)
    seen = []
    assert len(loader) == 2
    for input_nodes, output_nodes, blocks in loader:
        assert len(blocks) == 2
        assert (input_nodes.asnumpy() == blocks[0].srcdata[dgl.NID].asnumpy()).all()
        assert (blocks[0].dstdata[dgl.NID].asnumpy() == blocks[1].srcdata[dgl.NID].asnumpy()).all()
        assert (blocks[1].dstdata[dgl.NID].asnumpy() == output_nodes.asnumpy()).all()
        assert blocks[1].in_degrees().asnumpy().max() <= 3
        seen += output_nodes.asnumpy().tolist()
    assert sorted(seen) == list(range(N))
