"""Subgraphs and derived graphs (``node_subgraph``/``g.subgraph``, ``edge_subgraph``,
``in_subgraph``, ``out_subgraph``, ``khop_adj``, ``khop_graph``, ``line_graph``) against DGL's
documented examples worked by hand and naive loops over the edge list; id mappings in
``NID``/``EID``, copied features, ``relabel_nodes``, ``store_ids``, ``output_device``, int32 and
int64 ids on two contexts."""
import itertools

import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl

SRC = np.array([0, 0, 1, 2, 2, 3, 4, 1, 4, 3, 2, 5])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4, 0, 0, 3, 5])
N = 7                                               # node 6 is isolated
CASES = [(c, t) for c in (mx.cpu(0), mx.cpu(1)) for t in ("int32", "int64")]
IDS = [f"cpu{c.device_id}-{t}" for c, t in CASES]
CYCLE = ([0, 1, 2, 3, 4], [1, 2, 3, 4, 0])          # DGL's examples: a 5-node cycle


def make(ctx=mx.cpu(), idtype="int64"):
    rs = np.random.RandomState(0)
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    g.ndata["x"] = mx.nd.array(rs.normal(size=(N, 3)), ctx=ctx)
    g.edata["w"] = mx.nd.array(rs.normal(size=(len(SRC), 2)), ctx=ctx)
    return g


def edges_of(g):
    u, v = g.edges()
    return list(zip(u.asnumpy().tolist(), v.asnumpy().tolist()))


def check_ids_and_features(sg, g, nid, eid, ctx, idtype):
    """Every kept edge is the original one renumbered, features are the original rows."""
    assert sg.device == ctx and sg.idtype == np.dtype(idtype).type
    assert sg.ndata[dgl.NID].dtype == np.dtype(idtype) and sg.edata[dgl.EID].dtype == np.dtype(idtype)
    assert sg.ndata[dgl.NID].asnumpy().tolist() == list(nid)
    assert sg.edata[dgl.EID].asnumpy().tolist() == list(eid)
    assert edges_of(sg) == [(nid.index(SRC[e]), nid.index(DST[e])) for e in eid]
    np.testing.assert_array_equal(sg.ndata["x"].asnumpy(), g.ndata["x"].asnumpy()[list(nid)])
    np.testing.assert_array_equal(sg.edata["w"].asnumpy(), g.edata["w"].asnumpy()[list(eid)])


def first_seen(eids):
    out = []
    for n in [SRC[e] for e in eids] + [DST[e] for e in eids]:
        if n not in out:
            out.append(int(n))
    return out


# ---- DGL's documented examples --------------------------------------------------------------
def test_dgls_examples_on_the_five_node_cycle():
    g = dgl.graph(CYCLE)
    g.ndata["x"] = np.arange(10).reshape(5, 2)
    sg = g.subgraph([0, 1, 4])
    assert edges_of(sg) == [(0, 1), (2, 0)] and sg.ndata[dgl.NID].asnumpy().tolist() == [0, 1, 4]
    assert sg.edata[dgl.EID].asnumpy().tolist() == [0, 4]
    assert sg.ndata["x"].asnumpy().tolist() == [[0, 1], [2, 3], [8, 9]]
    sg = dgl.edge_subgraph(g, [0, 4])                    # 0->1, 4->0 with 0, 4, 1 numbered 0, 1, 2
    assert edges_of(sg) == [(0, 2), (1, 0)] and sg.ndata[dgl.NID].asnumpy().tolist() == [0, 4, 1]
    assert sg.ndata["x"].asnumpy().tolist() == [[0, 1], [8, 9], [2, 3]]
    sg = dgl.edge_subgraph(g, [0, 4], relabel_nodes=False)
    assert sg.num_nodes() == 5 and edges_of(sg) == [(0, 1), (4, 0)] and dgl.NID not in sg.ndata
    mask = mx.nd.array([True, False, False, False, True], dtype=np.bool_)
    assert edges_of(dgl.edge_subgraph(g, mask)) == [(0, 2), (1, 0)]
    g.edata["w"] = np.arange(10).reshape(5, 2)
    sg = dgl.in_subgraph(g, [2, 0])
    assert sg.num_nodes() == 5 and edges_of(sg) == [(1, 2), (4, 0)]
    assert sg.edata[dgl.EID].asnumpy().tolist() == [1, 4] and sg.edata["w"].asnumpy().tolist() == [[2, 3], [8, 9]]


def test_dgls_line_graph_and_khop_examples():
    g = dgl.graph(([0, 1, 1, 2, 2], [2, 0, 2, 0, 1]))
    assert edges_of(g.line_graph()) == list(zip([0, 0, 1, 2, 2, 3, 4, 4], [3, 4, 0, 3, 4, 0, 1, 2]))
    assert edges_of(g.line_graph(backtracking=False)) == [(0, 4), (1, 0), (2, 3), (4, 1)]
    assert edges_of(dgl.khop_graph(dgl.graph(([0, 1], [1, 2])), 2)) == [(0, 2)]
    ring = dgl.graph(([0, 1, 2, 3, 4, 0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 1, 2, 3, 4, 0]))
    assert dgl.khop_adj(ring, 3).asnumpy().tolist() == [[1, 3, 3, 1, 0], [0, 1, 3, 3, 1], [1, 0, 1, 3, 3],
                                                        [3, 1, 0, 1, 3], [3, 3, 1, 0, 1]]
    assert dgl.khop_graph(ring, 1).num_edges() == 10 and dgl.khop_graph(ring, 3).num_edges() == 40


# ---- against loops --------------------------------------------------------------------------
@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_node_subgraph_keeps_the_edges_between_the_nodes_in_edge_id_order(ctx, idtype):
    g = make(ctx, idtype)
    nodes = [4, 0, 3, 6, 2]
    sg = dgl.node_subgraph(g, mx.nd.array(nodes, dtype=idtype, ctx=ctx))
    eid = [e for e in range(len(SRC)) if SRC[e] in nodes and DST[e] in nodes]
    check_ids_and_features(sg, g, nodes, eid, ctx, idtype)
    mask = np.isin(np.arange(N), nodes)
    check_ids_and_features(g.subgraph(mask), g, sorted(nodes), eid, ctx, idtype)
    whole = g.subgraph(nodes, relabel_nodes=False)
    assert whole.num_nodes() == N and dgl.NID not in whole.ndata and whole.ndata["x"] is g.ndata["x"]
    assert edges_of(whole) == [(SRC[e], DST[e]) for e in eid]
    bare = g.subgraph(nodes, store_ids=False)
    assert dgl.NID not in bare.ndata and dgl.EID not in bare.edata and bare.num_edges() == len(eid)
    other = mx.cpu(1) if ctx == mx.cpu(0) else mx.cpu(0)
    moved = g.subgraph(nodes, output_device=other)
    assert moved.device == other and moved.ndata["x"].context == other


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_edge_in_and_out_subgraphs_number_nodes_by_first_appearance(ctx, idtype):
    g = make(ctx, idtype)
    eid = [9, 2, 11, 4]
    check_ids_and_features(dgl.edge_subgraph(g, eid), g, first_seen(eid), eid, ctx, idtype)
    for fn_, key, nodes in ((dgl.in_subgraph, DST, [3, 0]), (dgl.out_subgraph, SRC, [2, 5])):
        eid = [e for n in nodes for e in range(len(SRC)) if key[e] == n]
        sg = fn_(g, nodes, relabel_nodes=True)
        check_ids_and_features(sg, g, first_seen(eid), eid, ctx, idtype)
        whole = fn_(g, nodes)
        assert whole.num_nodes() == N and edges_of(whole) == [(SRC[e], DST[e]) for e in eid]
        assert whole.edata[dgl.EID].asnumpy().tolist() == eid and whole.ndata["x"] is g.ndata["x"]
        assert getattr(g, fn_.__name__)(nodes).num_edges() == len(eid)


def test_subgraphs_of_bipartite_graphs_and_blocks():
    g = dgl.heterograph({("u", "r", "v"): ([0, 1, 2, 2, 3], [1, 1, 0, 2, 2])}, num_nodes_dict={"u": 4, "v": 3})
    g.srcdata["a"] = np.arange(4.0)
    g.dstdata["b"] = np.arange(3.0) * 10
    sg = dgl.node_subgraph(g, {"u": [2, 1], "v": [2, 1]})
    assert isinstance(sg, dgl.BipartiteGraph) and (sg.num_src_nodes(), sg.num_dst_nodes()) == (2, 2)
    assert edges_of(sg) == [(1, 1), (0, 0)] and sg.edata[dgl.EID].asnumpy().tolist() == [1, 3]
    assert sg.srcdata["a"].asnumpy().tolist() == [2, 1] and sg.dstdata["b"].asnumpy().tolist() == [20, 10]
    assert sg.srcdata[dgl.NID].asnumpy().tolist() == [2, 1] and sg.ntypes == ["u", "v"]
    sg = dgl.edge_subgraph(g, [4, 0])                    # each side numbered on its own
    assert sg.srcdata[dgl.NID].asnumpy().tolist() == [3, 0] and sg.dstdata[dgl.NID].asnumpy().tolist() == [2, 1]
    assert edges_of(sg) == [(0, 0), (1, 1)]
    assert dgl.node_subgraph(g, {"u": [0]}).num_dst_nodes() == 0      # a missing type keeps none of its nodes
    assert edges_of(dgl.in_subgraph(g, [2], relabel_nodes=True)) == [(0, 0), (1, 0)]   # 2->2, 3->2
    block = dgl.to_block(dgl.graph(([0, 1, 2], [1, 2, 2])), [1, 2])
    kept = dgl.edge_subgraph(block, [2], relabel_nodes=False)
    assert kept.is_block and kept.num_src_nodes() == block.num_src_nodes() and kept.num_edges() == 1
    for bad in (lambda: dgl.edge_subgraph(block, [0]), lambda: dgl.node_subgraph(block, [0]),
                lambda: dgl.in_subgraph(block, [0]), lambda: dgl.node_subgraph(g, [0]),
                lambda: dgl.line_graph(g), lambda: dgl.khop_graph(g, 2)):
        with pytest.raises(dgl.DGLError):
            bad()


@pytest.mark.parametrize("k", [1, 2, 3])
def test_khop_graph_has_one_edge_per_walk_of_length_k(k):
    g = make()
    walks = {}
    for path in itertools.product(range(len(SRC)), repeat=k):
        if all(DST[a] == SRC[b] for a, b in zip(path, path[1:])):
            key = (SRC[path[0]], DST[path[-1]])
            walks[key] = walks.get(key, 0) + 1
    ref = sorted(p for p, c in walks.items() for _ in range(c))
    kg = dgl.khop_graph(g, k)
    assert edges_of(kg) == ref and kg.ndata["x"] is g.ndata["x"] and not kg.edata
    assert "x" not in dgl.khop_graph(g, k, copy_ndata=False).ndata
    a = np.zeros((N, N))
    np.add.at(a, (SRC, DST), 1.0)
    np.testing.assert_array_equal(dgl.khop_adj(g, k).asnumpy(), np.linalg.matrix_power(a, k))


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
@pytest.mark.parametrize("backtracking", [True, False])
def test_line_graph_against_the_double_loop(ctx, idtype, backtracking):
    g = make(ctx, idtype)
    ref = [(i, j) for i in range(len(SRC)) for j in range(len(SRC))
           if i != j and DST[i] == SRC[j] and (backtracking or DST[j] != SRC[i])]
    lg = dgl.line_graph(g, backtracking=backtracking, shared=True)
    assert edges_of(lg) == ref and lg.num_nodes() == len(SRC)
    assert lg.device == ctx and lg.idtype == np.dtype(idtype).type and lg.ndata["w"] is g.edata["w"]
    assert not g.line_graph().ndata


def test_bad_selections_are_one_line_errors_that_say_what_to_give():
    g = make()
    for call, match in ((lambda: g.subgraph([1, 1]), "repeats"), (lambda: g.subgraph([0, 7]), "id 7"),
                        (lambda: g.subgraph(np.ones(3, bool)), "one entry per item"),
                        (lambda: dgl.edge_subgraph(g, [12]), "0..11"),
                        (lambda: dgl.in_subgraph(g, [-1]), "id -1"),
                        (lambda: dgl.khop_graph(g, 0), ">= 1"),
                        (lambda: g.subgraph({"user": [0]}), "one node type")):
        with pytest.raises(dgl.DGLError, match=match) as info:
            call()
        assert "\n" not in str(info.value)


def test_empty_selections_give_empty_graphs_with_feature_columns():
    g = make()
    sg = g.subgraph([6])
    assert sg.num_nodes() == 1 and sg.num_edges() == 0 and sg.edata["w"].shape == (0, 2)
    sg = dgl.edge_subgraph(g, [])
    assert sg.num_nodes() == 0 and sg.ndata["x"].shape == (0, 3) and sg.edata[dgl.EID].shape == (0,)
