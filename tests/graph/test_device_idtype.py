"""Graphs on any context with int32 or int64 ids: DGL's ``idtype``/``device``/``astype``/
``int``/``long``/``to`` and ``graph(..., idtype=, device=)``; message passing, layers, sampling,
blocks, batching and readouts on the graph's context, with ``mx.cpu(0)``/``mx.cpu(1)`` standing in
for two devices. References: dense float64 NumPy adjacency products and loops."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn
from gluon_suite.graph.nn import GATConv, GINConv, GraphConv, SAGEConv, SumPooling
from gluon_suite.utils import UserError

SRC = np.array([0, 0, 1, 2, 2, 3, 5, 1, 4, 0])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4, 0, 5])
N = 6
CTXS = [mx.cpu(0), mx.cpu(1)]
CASES = [(c, t) for c in CTXS for t in ("int32", "int64")]
IDS = [f"cpu{c.device_id}-{t}" for c, t in CASES]


def adjacency():
    a = np.zeros((N, N))
    np.add.at(a, (DST, SRC), 1.0)
    return a


def feats(shape, seed=0):
    return np.random.RandomState(seed).normal(size=shape)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_graph_reports_and_hands_out_its_id_type_and_context(ctx, idtype):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    assert g.idtype == np.dtype(idtype).type and g.device == ctx
    u, v = g.edges()
    for arr in (u, v, g.nodes(), g.in_degrees(), g.out_degrees(), g.edges(form="eid"), g.batch_num_nodes()):
        assert arr.dtype == np.dtype(idtype) and arr.context == ctx
    assert u.asnumpy().tolist() == SRC.tolist() and v.asnumpy().tolist() == DST.tolist()
    assert g.in_degrees().asnumpy().tolist() == np.bincount(DST, minlength=N).tolist()


def test_idtype_is_inferred_from_int32_arrays_and_defaults_to_int64():
    assert dgl.graph((SRC.astype(np.int32), DST.astype(np.int32))).idtype == np.int32
    assert dgl.graph((mx.nd.array(SRC, dtype="int32"), mx.nd.array(DST, dtype="int32"))).idtype == np.int32
    assert dgl.graph((SRC.tolist(), DST.tolist())).idtype == np.int64
    assert dgl.graph(("coo", (SRC, DST))).num_edges() == len(SRC)
    with pytest.raises(UserError, match="int32 or int64"):
        dgl.graph((SRC, DST), idtype="float32")


def test_astype_int_long_and_to_copy_structure_and_features():
    g = dgl.graph((SRC, DST), num_nodes=N)
    g.ndata["h"] = mx.nd.array(feats((N, 2)))
    g.edata["w"] = mx.nd.array(feats((len(SRC),), 1))
    g32 = g.int()
    assert g32.idtype == np.int32 and g.idtype == np.int64 and g.long() is g and g32.long().idtype == np.int64
    assert g.astype("int64") is g and g.astype(np.int32).idtype == np.int32
    g1 = g32.to(mx.cpu(1))
    assert g1.device == mx.cpu(1) and g.device == mx.cpu(0) and g1.idtype == np.int32
    assert g1.ndata["h"].context == mx.cpu(1) and g1.edata["w"].context == mx.cpu(1)
    np.testing.assert_array_equal(g1.ndata["h"].asnumpy(), g.ndata["h"].asnumpy())
    assert g1.edges()[0].asnumpy().tolist() == SRC.tolist()
    g1.ndata["x"] = mx.nd.ones((N, 1), ctx=mx.cpu(1))
    assert "x" not in g.ndata                                    # a copy, not a view
    with pytest.raises(UserError, match="MXNet context"):
        g.to("cuda:0")


def test_a_feature_on_another_context_is_refused_with_the_fix():
    g = dgl.graph((SRC, DST), num_nodes=N, device=mx.cpu(1))
    with pytest.raises(UserError, match=r"g.to\("):
        g.ndata["h"] = mx.nd.ones((N, 2), ctx=mx.cpu(0))
    g.ndata["h"] = np.ones((N, 2))                               # host data goes to the graph's context
    assert g.ndata["h"].context == mx.cpu(1)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_message_passing_runs_on_the_graphs_context(ctx, idtype):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    x, w = feats((N, 3)), feats((len(SRC),), 2)
    g.ndata["x"] = mx.nd.array(x, ctx=ctx)
    g.edata["w"] = mx.nd.array(w, ctx=ctx)
    a = adjacency()
    g.update_all(fn.copy_u("x", "m"), fn.sum("m", "s"))
    g.update_all(fn.u_mul_e("x", "w", "m"), fn.sum("m", "ws"))
    g.update_all(fn.copy_u("x", "m"), fn.max("m", "mx"))
    g.update_all(lambda e: {"m": e.src["x"] * 2}, lambda nb: {"udf": nb.mailbox["m"].sum(axis=1)})
    g.apply_edges(fn.u_sub_v("x", "x", "d"))
    wa = np.zeros((N, N))
    np.add.at(wa, (DST, SRC), w)
    refmax = np.array([x[SRC[DST == v]].max(0) if (DST == v).any() else np.zeros(3) for v in range(N)])
    for key, ref in (("s", a @ x), ("ws", wa @ x), ("mx", refmax), ("udf", 2 * a @ x)):
        assert g.ndata[key].context == ctx, key
        np.testing.assert_allclose(g.ndata[key].asnumpy(), ref, rtol=1e-5, atol=1e-5)
    assert g.edata["d"].context == ctx
    np.testing.assert_allclose(g.edata["d"].asnumpy(), x[SRC] - x[DST], rtol=1e-5, atol=1e-6)
    soft = dgl.ops.edge_softmax(g, g.edata["w"])
    assert soft.context == ctx
    ref = np.exp(w) / np.array([np.exp(w[DST == DST[i]]).sum() for i in range(len(SRC))])
    np.testing.assert_allclose(soft.asnumpy(), ref, rtol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_layers_run_on_the_graphs_context_and_match_numpy(ctx, idtype):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    x = feats((N, 4))
    xn = mx.nd.array(x, ctx=ctx)
    a = adjacency()
    d_in, d_out = np.maximum(a.sum(1), 1), np.maximum(a.sum(0), 1)

    conv = GraphConv(4, 3, allow_zero_in_degree=True)
    conv.initialize(ctx=ctx)
    out = conv(g, xn)
    w = conv.weight.data(ctx).asnumpy()
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), (d_in ** -0.5)[:, None] * a * (d_out ** -0.5)[None, :] @ x @ w,
                               rtol=1e-5, atol=1e-5)

    sage = SAGEConv(4, 3, "mean")
    sage.initialize(ctx=ctx)
    out = sage(g, xn)
    mean = (a / np.maximum(a.sum(1, keepdims=True), 1)) @ x
    ref = x @ sage.fc_self.weight.data(ctx).asnumpy().T + sage.fc_self.bias.data(ctx).asnumpy() + \
        mean @ sage.fc_neigh.weight.data(ctx).asnumpy().T + sage.fc_neigh.bias.data(ctx).asnumpy()
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)

    gin = GINConv(None, "sum", init_eps=0.5)
    gin.initialize(ctx=ctx)
    out = gin(g, xn)
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), 1.5 * x + a @ x, rtol=1e-5, atol=1e-5)

    gat = GATConv(4, 2, num_heads=2, allow_zero_in_degree=True)
    gat.initialize(ctx=ctx)
    out = gat(g, xn)
    assert out.context == ctx
    ft = (x @ gat.fc.weight.data(ctx).asnumpy().T).reshape(N, 2, 2)
    el = (ft * gat.attn_l.data(ctx).asnumpy()).sum(-1)
    er = (ft * gat.attn_r.data(ctx).asnumpy()).sum(-1)
    s = el[SRC] + er[DST]
    s = np.where(s > 0, s, 0.2 * s)
    ref = np.zeros((N, 2, 2))
    for v in range(N):
        ids = np.flatnonzero(DST == v)
        if len(ids):
            att = np.exp(s[ids]) / np.exp(s[ids]).sum(0)
            ref[v] = (att[:, :, None] * ft[SRC[ids]]).sum(0)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_sampling_blocks_and_loader_keep_context_and_id_type(ctx, idtype):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    g.ndata["x"] = mx.nd.array(feats((N, 4)), ctx=ctx)
    dgl.seed(1)
    frontier = dgl.sampling.sample_neighbors(g, [0, 4], 1)
    assert frontier.device == ctx and frontier.idtype == g.idtype
    assert frontier.edata[dgl.EID].dtype == np.dtype(idtype) and frontier.edata[dgl.EID].context == ctx
    for eid in frontier.edata[dgl.EID].asnumpy():                # real in-edges of the seeds
        assert DST[eid] in (0, 4)
    block = dgl.to_block(frontier, [0, 4])
    assert block.device == ctx and block.idtype == g.idtype
    assert block.srcdata[dgl.NID].dtype == np.dtype(idtype) and block.srcdata[dgl.NID].context == ctx
    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(2)
    loader = dgl.dataloading.DataLoader(g, np.arange(N), sampler, batch_size=3)
    conv = SAGEConv(4, 2, "mean")
    conv.initialize(ctx=ctx)
    full = conv(g, g.ndata["x"]).asnumpy()
    for input_nodes, output_nodes, blocks in loader:
        assert input_nodes.context == ctx and input_nodes.dtype == np.dtype(idtype)
        assert all(b.device == ctx and b.idtype == g.idtype for b in blocks)
        out = conv(blocks[-1], g.ndata["x"][blocks[-1].srcdata[dgl.NID]])      # the last layer's rows
        assert out.context == ctx
        np.testing.assert_allclose(out.asnumpy(), full[output_nodes.asnumpy()], rtol=1e-5, atol=1e-5)


def test_loader_moves_blocks_to_the_requested_device():
    g = dgl.graph((SRC, DST), num_nodes=N)
    loader = dgl.dataloading.DataLoader(g, np.arange(N), dgl.dataloading.MultiLayerFullNeighborSampler(1),
                                        batch_size=4, device=mx.cpu(1))
    for input_nodes, output_nodes, blocks in loader:
        assert input_nodes.context == mx.cpu(1) and output_nodes.context == mx.cpu(1)
        assert blocks[0].device == mx.cpu(1) and blocks[0].srcdata[dgl.NID].context == mx.cpu(1)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_transforms_batch_and_readout_keep_context_and_id_type(ctx, idtype):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    g.ndata["x"] = mx.nd.array(feats((N, 2)), ctx=ctx)
    for h in (dgl.add_self_loop(g), dgl.remove_self_loop(g), dgl.reverse(g), dgl.to_bidirected(g),
              dgl.edge_subgraph(g, [0, 2])):
        assert h.device == ctx and h.idtype == g.idtype
    bg = dgl.batch([g, g])
    assert bg.device == ctx and bg.idtype == g.idtype and bg.batch_num_nodes().dtype == np.dtype(idtype)
    out = SumPooling()(bg, bg.ndata["x"])
    assert out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), np.tile(g.ndata["x"].asnumpy().sum(0), (2, 1)), rtol=1e-5)
    assert all(u.device == ctx and u.idtype == g.idtype for u in dgl.unbatch(bg))
    with pytest.raises(UserError, match="g.to"):
        dgl.batch([g, g.to(mx.cpu(1) if ctx == mx.cpu(0) else mx.cpu(0))])


def test_int32_refuses_graphs_whose_ids_do_not_fit():
    g = dgl.graph(([0], [1]), num_nodes=2)
    g._nsrc = g._ndst = 2 ** 31                    # pretend: building such a graph would take gigabytes
    with pytest.raises(UserError, match="int32"):
        g.int()
