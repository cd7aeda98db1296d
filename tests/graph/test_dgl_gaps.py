"""The smaller DGL API pieces: ``DGLError``, ``dgl.init``, partial message passing (``pull``,
``send_and_recv``, ``prop_nodes``/``prop_edges`` and the traversals behind ``prop_nodes_bfs`` /
``prop_nodes_topo``), edge look-ups (``edge_ids``, ``find_edges``, ``has_edges_between``,
``in_edges``/``out_edges``), ``topk_*`` with a negative ``sortby``, ``nn.Sequential`` and a block's
``num_nodes()``. References: loops over the edge lists in float64 NumPy and DGL's documented
examples worked by hand."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn
from gluon_suite.graph.nn import GraphConv, Sequential, SumPooling

# a multigraph: parallel edges 0->1 (twice), a self-loop 2->2, node 5 receives nothing
SRC = np.array([0, 0, 1, 2, 2, 3, 4, 1, 4, 3, 2])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4, 0, 0, 3])
N = 6
CASES = [(c, t) for c in (mx.cpu(0), mx.cpu(1)) for t in ("int32", "int64")]
IDS = [f"cpu{c.device_id}-{t}" for c, t in CASES]


def make(ctx=mx.cpu(), idtype="int64", seed=0):
    rs = np.random.RandomState(seed)
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    x, w = rs.normal(size=(N, 3)), rs.uniform(0.5, 1.5, size=(len(SRC), 1))
    g.ndata["x"], g.edata["w"] = mx.nd.array(x, ctx=ctx), mx.nd.array(w, ctx=ctx)
    return g, x, w


# ---- DGLError ------------------------------------------------------------------------------
def test_dglerror_is_the_graph_error_and_catches_errors_from_every_corner(tmp_path):
    assert dgl.DGLError is dgl.GraphError and issubclass(dgl.DGLError, ValueError)
    g, _, _ = make()
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x07" * 64)
    sites = [lambda: dgl.graph(([0, 9], [1, 2]), num_nodes=3),                     # edge index out of range
             lambda: g.ndata.__setitem__("y", np.ones((N + 1, 2))),                  # wrong number of rows
             lambda: g.edge_ids(5, 0),                                               # no such edge
             lambda: dgl.heterograph({("a", "r", "b"): ([0], [0]), ("b", "r", "a"): ([0], [0])}).num_edges("r"),
             lambda: dgl.load_graphs(str(junk)),                                     # not a graph file
             lambda: dgl.topk_nodes(g, "x", 2, sortby=3),                            # no such column
             lambda: GraphConv(3, 2)(g, g.ndata["x"]),                               # node 5 has no in-edge
             lambda: dgl.node_subgraph(g, [1, 1]),                                   # repeated node
             lambda: dgl.sampling.sample_neighbors(g, [0], 2, prob="p"),
             lambda: dgl.to_block(g, [0]).ndata]
    caught = 0
    for site in sites:
        try:
            site()
        except dgl.DGLError as e:
            caught += 1
            assert "\n" not in str(e) and str(e)
    assert caught == len(sites)


# ---- dgl.init and initializers ----------------------------------------------------------------
def test_zero_initializer_and_the_graphs_initializer_fill_the_rows_a_pull_does_not_reach():
    z = dgl.init.zero_initializer((3, 2), np.float64, mx.cpu(1), slice(0, 3))
    assert z.shape == (3, 2) and z.dtype == np.float64 and z.context == mx.cpu(1) and not z.asnumpy().any()
    g, x, _ = make()
    g.set_n_initializer(lambda shape, dtype, ctx, ids: mx.nd.full(shape, -7.0, dtype=dtype, ctx=ctx))
    g.pull([1], fn.copy_u("x", "m"), fn.sum("m", "new"))
    out = g.ndata["new"].asnumpy()
    np.testing.assert_allclose(out[1], 2 * x[0], rtol=1e-6)          # 0->1 twice
    assert (np.delete(out, 1, axis=0) == -7.0).all()


# ---- pull / send_and_recv --------------------------------------------------------------------
def reference_sum(x, w, eids, src=SRC, dst=DST):
    out = {}
    for e in eids:
        out.setdefault(dst[e], np.zeros(x.shape[1]))
        out[dst[e]] = out[dst[e]] + x[src[e]] * w[e]
    return out


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_pull_updates_only_the_pulled_rows_with_their_in_edges(ctx, idtype):
    g, x, w = make(ctx, idtype)
    g.ndata["h"] = mx.nd.full((N, 3), 5.0, ctx=ctx)
    v = [4, 0, 5]                                       # node 5 has no in-edge: a built-in reducer gives it 0
    g.pull(mx.nd.array(v, dtype=idtype, ctx=ctx), fn.u_mul_e("x", "w", "m"), fn.sum("m", "h"))
    ref = np.full((N, 3), 5.0)
    ref[5] = 0.0
    for node, val in reference_sum(x, w, [e for e in range(len(SRC)) if DST[e] in v]).items():
        ref[node] = val
    h = g.ndata["h"]
    assert h.context == ctx
    np.testing.assert_allclose(h.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    g.pull([0, 3], fn.copy_u("x", "m"), fn.max("m", "mx"))
    mx_ref = np.zeros((N, 3))
    for node in (0, 3):
        mx_ref[node] = np.max([x[SRC[e]] for e in range(len(SRC)) if DST[e] == node], axis=0)
    np.testing.assert_allclose(g.ndata["mx"].asnumpy(), mx_ref, rtol=1e-6)


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_send_and_recv_on_edge_ids_and_on_node_pairs_with_user_functions(ctx, idtype):
    g, x, w = make(ctx, idtype)
    eids = [1, 4, 9, 10]
    g.send_and_recv(eids, fn.u_mul_e("x", "w", "m"), fn.sum("m", "h"))
    ref = np.zeros((N, 3))
    for node, val in reference_sum(x, w, eids).items():
        ref[node] = val
    np.testing.assert_allclose(g.ndata["h"].asnumpy(), ref, rtol=1e-5, atol=1e-6)
    # the (u, v) form, user-defined message/reduce, and apply_node_func seeing the graph's node ids
    g2, _, _ = make(ctx, idtype)
    seen = []

    def apply(nodes):
        seen.append(nodes.nodes().asnumpy().tolist())
        return {"z": nodes.data["s"] + 1}

    g2.send_and_recv(([2, 3], [0, 0]), lambda e: {"m": e.src["x"] * 2}, lambda n: {"s": n.mailbox["m"].sum(1)},
                     apply)
    ref = np.zeros((N, 3))
    ref[0] = 2 * (x[2] + x[3])
    np.testing.assert_allclose(g2.ndata["s"].asnumpy(), ref, rtol=1e-5, atol=1e-6)
    ref[0] += 1
    np.testing.assert_allclose(g2.ndata["z"].asnumpy(), ref, rtol=1e-5, atol=1e-6)
    assert seen == [[0]]
    g2.send_and_recv([], fn.copy_u("x", "m"), fn.sum("m", "never"))    # no edges: nothing runs
    assert "never" not in g2.ndata


def test_gradients_flow_through_pull_to_the_features_and_the_kept_rows():
    g, x, w = make()
    xs, ws = g.ndata["x"], g.edata["w"]
    xs.attach_grad()
    ws.attach_grad()
    g.ndata["h"] = xs * 1.0
    with mx.autograd.record():
        g.ndata["h"] = xs * 3.0
        g.pull([1, 4], fn.u_mul_e("x", "w", "m"), fn.sum("m", "h"))
        loss = g.ndata["h"].sum()
    loss.backward()
    gx = np.zeros((N, 3))
    gx[[n for n in range(N) if n not in (1, 4)]] += 3.0                 # rows kept from h = 3 x
    gw = np.zeros(len(SRC))
    for e in range(len(SRC)):
        if DST[e] in (1, 4):
            gx[SRC[e]] += w[e, 0]
            gw[e] = x[SRC[e]].sum()
    np.testing.assert_allclose(xs.grad.asnumpy(), gx, rtol=1e-5)
    np.testing.assert_allclose(ws.grad.asnumpy()[:, 0], gw, rtol=1e-5)


def test_pull_writes_the_destination_side_of_a_bipartite_graph():
    g = dgl.heterograph({("u", "r", "v"): ([0, 1, 2, 2], [1, 1, 0, 2])}, num_nodes_dict={"u": 3, "v": 4})
    x = np.arange(6.0).reshape(3, 2)
    g.srcdata["x"] = x
    g.pull([1, 3], fn.copy_u("x", "m"), fn.sum("m", "h"))
    ref = np.zeros((4, 2))
    ref[1] = x[0] + x[1]
    np.testing.assert_allclose(g.dstdata["h"].asnumpy(), ref)


def test_shape_clash_with_an_existing_feature_is_an_error():
    g, _, _ = make()
    g.ndata["h"] = mx.nd.zeros((N, 5))
    with pytest.raises(dgl.DGLError, match="shape"):
        g.pull([1], fn.copy_u("x", "m"), fn.sum("m", "h"))


# ---- prop_nodes / prop_edges and the traversals ------------------------------------------------
# DGL's example graph for the traversals: 0->1, 1->2, 1->3, 2->3, 2->4, 3->5
TS, TD = [0, 1, 1, 2, 2, 3], [1, 2, 3, 3, 4, 5]


@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_traversal_generators_give_dgls_documented_frontiers(idtype):
    g = dgl.graph((TS, TD), idtype=idtype)
    as_lists = lambda fs: [f.asnumpy().tolist() for f in fs]      # noqa: E731
    assert as_lists(dgl.bfs_nodes_generator(g, 0)) == [[0], [1], [2, 3], [4, 5]]
    assert as_lists(dgl.bfs_edges_generator(g, 0)) == [[0], [1, 2], [4, 5]]
    assert as_lists(dgl.topological_nodes_generator(g)) == [[0], [1], [2], [3, 4], [5]]
    assert as_lists(dgl.bfs_nodes_generator(g, 5, reverse=True)) == [[5], [3], [1, 2], [0]]
    assert as_lists(dgl.topological_nodes_generator(g, reverse=True)) == [[4, 5], [3], [2], [1], [0]]
    assert all(f.dtype == np.dtype(idtype) for f in dgl.bfs_nodes_generator(g, 0))
    with pytest.raises(dgl.DGLError, match="cycle"):
        dgl.topological_nodes_generator(dgl.graph(([0, 1], [1, 0])))


def test_prop_nodes_topo_accumulates_along_a_dag_like_a_dynamic_programme():
    g = dgl.graph((TS, TD))
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    g.ndata["h"] = x.reshape(-1, 1)
    g.ndata["x"] = x.reshape(-1, 1)
    dgl.prop_nodes_topo(g, fn.copy_u("h", "m"), fn.sum("m", "s"),
                        apply_node_func=lambda n: {"h": n.data["s"] + n.data["x"]})
    ref = x.copy()                          # h[v] = x[v] + sum over u->v of h[u], in topological order
    for v in [1, 2, 3, 4, 5]:
        ref[v] = x[v] + sum(ref[u] for u, d in zip(TS, TD) if d == v)
    np.testing.assert_allclose(g.ndata["h"].asnumpy()[:, 0], ref)


def test_prop_edges_and_prop_nodes_bfs_run_frontier_after_frontier():
    g = dgl.graph((TS, TD))
    g.ndata["h"] = np.array([[1.0], [0], [0], [0], [0], [0]])
    g.prop_edges([[0], [1, 2], [4, 5]], fn.copy_u("h", "m"), fn.sum("m", "h"))
    # 1 <- 0; then 2, 3 <- 1; then 4 <- 2 and 5 <- 3 (edge 3, 2->3, is not in a frontier)
    assert g.ndata["h"].asnumpy()[:, 0].tolist() == [1, 1, 1, 1, 1, 1]
    g2 = dgl.graph((TS + [0], TD + [0]))                 # a self-loop keeps the source's value when it pulls
    g2.ndata["h"] = np.array([[1.0], [0], [0], [0], [0], [0]])
    dgl.prop_nodes_bfs(g2, 0, fn.copy_u("h", "m"), fn.sum("m", "h"))
    # frontiers [0], [1], [2, 3], [4, 5]: 3 pulls from 1 and 2 in the same step, while 2 is still 0
    assert g2.ndata["h"].asnumpy()[:, 0].tolist() == [1, 1, 1, 1, 1, 1]
    g2.ndata["h"] = np.array([[1.0], [0], [0], [0], [0], [0]])
    g2.prop_nodes([[0], [1], [2], [3]], fn.copy_u("h", "m"), fn.sum("m", "h"))
    assert g2.ndata["h"].asnumpy()[:, 0].tolist() == [1, 1, 1, 2, 0, 0]    # 2 before 3: 3 gets 1 + 1


# ---- edge look-ups ----------------------------------------------------------------------------
@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_edge_ids_find_edges_and_has_edges_between_against_the_edge_list(ctx, idtype):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    first = {}
    for e, (u, v) in enumerate(zip(SRC, DST)):
        first.setdefault((u, v), e)
    u, v = [p[0] for p in first], [p[1] for p in first]
    got = g.edge_ids(u, v)
    assert got.dtype == np.dtype(idtype) and got.context == ctx
    assert got.asnumpy().tolist() == list(first.values())
    assert g.edge_ids(2, 2) == 3 and isinstance(g.edge_ids(2, 2), int)
    assert g.edge_ids(0, [1, 1]).asnumpy().tolist() == [0, 0]          # one side broadcast; smallest parallel id
    eu, ev, e = g.edge_ids([0, 4], [1, 0], return_uv=True)
    assert (eu.asnumpy().tolist(), ev.asnumpy().tolist(), e.asnumpy().tolist()) == ([0, 0, 4], [1, 1, 0], [0, 1, 8])
    with pytest.raises(dgl.DGLError, match="no edge 5 -> 0"):
        g.edge_ids([0, 5], [1, 0])
    with pytest.raises(dgl.DGLError, match="node id 9"):
        g.edge_ids(9, 0)
    fu, fv = g.find_edges([3, 10])
    assert fu.asnumpy().tolist() == [2, 2] and fv.asnumpy().tolist() == [2, 3]
    has = g.has_edges_between([0, 1, 5], [1, 0, 5])
    assert has.asnumpy().tolist() == [True, False, False] and has.context == ctx
    assert g.has_edges_between(4, 3) is True


def test_in_edges_and_out_edges_node_after_node():
    g = dgl.graph((SRC, DST), num_nodes=N)
    for nodes in ([0], [3, 0], [5]):
        eids = [e for n in nodes for e in range(len(SRC)) if DST[e] == n]
        src, dst, eid = g.in_edges(nodes, form="all")
        assert eid.asnumpy().tolist() == eids and src.asnumpy().tolist() == SRC[eids].tolist()
        eids = [e for n in nodes for e in range(len(SRC)) if SRC[e] == n]
        assert g.out_edges(nodes, form="eid").asnumpy().tolist() == eids
    u, v = g.in_edges(2)
    assert u.asnumpy().tolist() == [1, 2] and v.asnumpy().tolist() == [2, 2]


# ---- topk with a negative sortby ----------------------------------------------------------------
@pytest.mark.parametrize("sortby", [-1, -3])
def test_topk_sortby_counts_from_the_last_column_when_negative(sortby):
    rs = np.random.RandomState(3)
    graphs = [dgl.graph(([0, 1], [1, 2]), num_nodes=n) for n in (3, 4)]
    for g in graphs:
        g.ndata["x"] = rs.normal(size=(g.num_nodes(), 3))
    bg = dgl.batch(graphs)
    vals, idx = dgl.topk_nodes(bg, "x", 2, sortby=sortby)
    for b, g in enumerate(graphs):
        x = g.ndata["x"].asnumpy()
        order = np.argsort(-x[:, 3 + sortby], kind="stable")[:2]
        assert idx.asnumpy()[b].tolist() == order.tolist()
        np.testing.assert_allclose(vals.asnumpy()[b], x[order], rtol=1e-6)
    with pytest.raises(dgl.DGLError, match="-1..-3"):
        dgl.topk_nodes(bg, "x", 2, sortby=-4)


# ---- nn.Sequential ------------------------------------------------------------------------------
def test_sequential_runs_layers_on_one_graph_or_one_graph_each():
    g = dgl.add_self_loop(dgl.graph((SRC, DST), num_nodes=N))
    x = mx.nd.array(np.random.RandomState(0).normal(size=(N, 4)))
    net = Sequential()
    net.add(GraphConv(4, 3), GraphConv(3, 2))
    net.initialize(mx.init.Xavier())
    l1, l2 = net[0], net[1]
    np.testing.assert_allclose(net(g, x).asnumpy(), l2(g, l1(g, x)).asnumpy(), rtol=1e-5)
    g2 = dgl.add_self_loop(dgl.graph(([0, 1, 2], [1, 2, 3]), num_nodes=N))
    np.testing.assert_allclose(net([g, g2], x).asnumpy(), l2(g2, l1(g, x)).asnumpy(), rtol=1e-5)
    with pytest.raises(dgl.DGLError, match="one graph per layer"):
        net([g], x)
    with pytest.raises(dgl.DGLError, match="pass a graph"):
        net(x, x)


def test_sequential_passes_a_tuple_on_as_arguments():
    class Split(mx.gluon.nn.Block):
        def forward(self, graph, x):
            return x * 2, x + 1

    class Join(mx.gluon.nn.Block):
        def forward(self, graph, a, b):
            return a - b

    g = dgl.graph(([0], [1]))
    net = Sequential()
    net.add(Split(), Join())
    x = mx.nd.array([[1.0], [4.0]])
    assert net(g, x).asnumpy()[:, 0].tolist() == [0.0, 3.0]              # 2x - (x + 1)
    pool = Sequential()
    pool.add(SumPooling())
    assert pool(g, x).asnumpy().tolist() == [[5.0]]


# ---- a block's node count -----------------------------------------------------------------------
def test_a_blocks_num_nodes_counts_both_sides_as_dgl_does():
    g = dgl.graph((SRC, DST), num_nodes=N)
    b = dgl.to_block(dgl.in_subgraph(g, [0, 3]), [0, 3])     # frontier edges 4, 8, 9 (into 0), 6, 10 (into 3)
    assert b.srcdata[dgl.NID].asnumpy().tolist() == [0, 3, 2, 4]
    assert b.edata[dgl.EID].asnumpy().tolist() == [4, 8, 9, 6, 10]
    assert (b.num_src_nodes(), b.num_dst_nodes(), b.num_nodes(), b.number_of_nodes()) == (4, 2, 6, 6)
    assert b.num_nodes("_N") == b.num_nodes("SRC/_N") == 4 and b.num_nodes("DST/_N") == 2
    with pytest.raises(dgl.DGLError, match="not in this block"):
        b.num_nodes("user")
