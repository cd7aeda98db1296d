"""Subgraphs of heterographs (node_subgraph, edge_subgraph, in_subgraph, out_subgraph given per-type
ids), node_type_subgraph, edge_type_subgraph and add_reverse_edges, against hand-worked graphs:
which edges and nodes are kept, how they are renumbered, the ids mapping back, the features that
follow them, on int32 and int64 ids and on cpu(0) and cpu(1)."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn

CTXS = [mx.cpu(0), mx.cpu(1)]
IDS = [np.int32, np.int64]

FOLLOWS = ("user", "follows", "user")
PLAYS = ("user", "plays", "game")
REV = ("game", "played-by", "user")


def make(idtype=np.int64, ctx=mx.cpu(0)):
    """3 users, 2 games: follows 0->1, 1->2, 2->0, 2->2; plays 0->1, 0->0, 2->1; played-by 1->2."""
    g = dgl.heterograph({FOLLOWS: ([0, 1, 2, 2], [1, 2, 0, 2]), PLAYS: ([0, 0, 2], [1, 0, 1]),
                         REV: ([1], [2])}, idtype=idtype, device=ctx)
    g.nodes["user"].data["x"] = mx.nd.array([[10.0], [11.0], [12.0]], ctx=ctx)
    g.nodes["game"].data["x"] = mx.nd.array([[20.0], [21.0]], ctx=ctx)
    g.edges["follows"].data["w"] = mx.nd.array([1.0, 2.0, 3.0, 4.0], ctx=ctx)
    g.edges["plays"].data["w"] = mx.nd.array([5.0, 6.0, 7.0], ctx=ctx)
    return g


def edges(g, c):
    u, v = g.edges(etype=c)
    return list(zip(u.asnumpy().tolist(), v.asnumpy().tolist()))


def col(g, ntype=None, etype=None, key="x"):
    data = g.nodes[ntype].data if ntype else g.edges[etype].data
    return data[key].asnumpy().ravel().tolist()


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDS, ids=lambda t: t.__name__)
def test_node_subgraph_keeps_the_edges_between_the_given_nodes(idtype, ctx):
    g = make(idtype, ctx)
    s = dgl.node_subgraph(g, {"user": [2, 0], "game": [1]})
    assert s.canonical_etypes == g.canonical_etypes and s.idtype == g.idtype and s.device == ctx
    assert (s.num_nodes("user"), s.num_nodes("game")) == (2, 1)
    # users 2, 0 become 0, 1; game 1 becomes 0
    assert edges(s, FOLLOWS) == [(0, 1), (0, 0)]          # edges 2 (2->0) and 3 (2->2), in id order
    assert edges(s, PLAYS) == [(1, 0), (0, 0)]            # edges 0 (0->1) and 2 (2->1)
    assert edges(s, REV) == [(0, 0)]                      # game 1 -> user 2
    assert col(s, "user") == [12.0, 10.0] and col(s, "game") == [21.0]
    assert col(s, etype="follows", key="w") == [3.0, 4.0] and col(s, etype="plays", key="w") == [5.0, 7.0]
    assert col(s, "user", key=dgl.NID) == [2, 0] and col(s, etype="plays", key=dgl.EID) == [0, 2]
    assert s.nodes["user"].data[dgl.NID].dtype == idtype
    # the method, a type left out (no games), and no renumbering
    t = g.subgraph({"user": [0, 1]})
    assert t.num_nodes("game") == 0 and edges(t, FOLLOWS) == [(0, 1)] and t.num_edges(PLAYS) == 0
    k = dgl.node_subgraph(g, {"user": [0, 2], "game": [0, 1]}, relabel_nodes=False)
    assert (k.num_nodes("user"), k.num_nodes("game")) == (3, 2) and dgl.NID not in k.nodes["user"].data
    assert edges(k, FOLLOWS) == [(2, 0), (2, 2)] and col(k, etype="follows", key=dgl.EID) == [2, 3]


def test_node_subgraph_takes_masks_and_refuses_bad_input_in_one_line():
    g = make()
    s = dgl.node_subgraph(g, {"user": np.array([True, False, True]), "game": [0, 1]})
    assert col(s, "user", key=dgl.NID) == [0, 2] and edges(s, PLAYS) == [(0, 1), (0, 0), (1, 1)]
    with pytest.raises(dgl.DGLError, match=r"pass a dict \{node type: ids\}"):
        dgl.node_subgraph(g, [0, 1])
    with pytest.raises(dgl.DGLError, match="node type 'item' is not in this graph"):
        dgl.node_subgraph(g, {"item": [0]})
    with pytest.raises(dgl.DGLError, match="repeats an id"):
        dgl.node_subgraph(g, {"user": [1, 1]})
    with pytest.raises(dgl.DGLError, match=r"id 5 but the graph's ids are 0..2"):
        dgl.node_subgraph(g, {"user": [5]})


@pytest.mark.parametrize("idtype", IDS, ids=lambda t: t.__name__)
def test_edge_subgraph_numbers_nodes_in_first_appearance_over_the_relations(idtype):
    g = make(idtype, mx.cpu(1))
    s = dgl.edge_subgraph(g, {"plays": [2, 0], ("game", "played-by", "user"): [0]})
    # relations in order: played-by (game 1 -> user 2), follows (none), plays (2->1, 0->1)
    # users: 2 (played-by's destination), then plays' sources 2, 0 -> [2, 0]; games: 1 (played-by's
    # source), then plays' destinations 1, 1 -> [1]
    assert col(s, "user", key=dgl.NID) == [2, 0] and col(s, "game", key=dgl.NID) == [1]
    assert edges(s, PLAYS) == [(0, 0), (1, 0)] and col(s, etype="plays", key=dgl.EID) == [2, 0]
    assert col(s, etype="plays", key="w") == [7.0, 5.0] and s.num_edges(FOLLOWS) == 0
    assert edges(s, REV) == [(0, 0)] and col(s, "user") == [12.0, 10.0]
    m = dgl.edge_subgraph(g, {"follows": np.array([False, True, False, True])}, relabel_nodes=False)
    assert m.num_nodes("user") == 3 and edges(m, FOLLOWS) == [(1, 2), (2, 2)] and m.num_edges(PLAYS) == 0
    with pytest.raises(dgl.DGLError, match="edge_subgraph: .*'likes'"):
        dgl.edge_subgraph(g, {"likes": [0]})
    with pytest.raises(dgl.DGLError, match=r"edge ids must lie in 0..2"):
        dgl.edge_subgraph(g, {"plays": [3]})


def test_in_and_out_subgraphs_take_each_relation_s_edges_at_the_given_nodes():
    g = make()
    i = dgl.in_subgraph(g, {"user": [2]})
    # into user 2: follows 1->2 (edge 1), 2->2 (edge 3); played-by 1->2 (edge 0); no game given
    assert g.num_nodes("user") == i.num_nodes("user") == 3
    assert edges(i, FOLLOWS) == [(1, 2), (2, 2)] and col(i, etype="follows", key=dgl.EID) == [1, 3]
    assert edges(i, REV) == [(1, 2)] and i.num_edges(PLAYS) == 0
    assert col(i, "user") == [10.0, 11.0, 12.0]
    o = dgl.out_subgraph(g, {"user": [0]}, relabel_nodes=True)
    # out of user 0: follows 0->1, plays 0->1, 0->0; users 0, 1 (follows), games 1, 0 (plays)
    assert col(o, "user", key=dgl.NID) == [0, 1] and col(o, "game", key=dgl.NID) == [1, 0]
    assert edges(o, FOLLOWS) == [(0, 1)] and edges(o, PLAYS) == [(0, 0), (0, 1)]
    assert g.in_subgraph({"game": [0, 1]}).num_edges(PLAYS) == 3


@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_type_subgraphs_keep_types_and_share_features(ctx):
    g = make(np.int32, ctx)
    u = dgl.node_type_subgraph(g, ["user"])
    assert isinstance(u, dgl.Graph) and not isinstance(u, dgl.HeteroGraph)
    assert u.num_nodes() == 3 and edges(u, None) == [(0, 1), (1, 2), (2, 0), (2, 2)]
    assert u.ndata["x"].asnumpy().ravel().tolist() == [10.0, 11.0, 12.0]
    assert u.edata["w"].asnumpy().tolist() == [1.0, 2.0, 3.0, 4.0]
    assert u.idtype == np.int32 and u.device == ctx
    both = dgl.node_type_subgraph(g, ["game", "user"])
    assert both.canonical_etypes == g.canonical_etypes
    e = dgl.edge_type_subgraph(g, ["plays", REV])
    assert isinstance(e, dgl.HeteroGraph) and e.canonical_etypes == [REV, PLAYS]
    assert e.ntypes == ["game", "user"] and col(e, "game") == [20.0, 21.0]
    p = dgl.edge_type_subgraph(g, ["plays"])
    assert isinstance(p, dgl.BipartiteGraph) and edges(p, None) == [(0, 1), (0, 0), (2, 1)]
    assert p.srcdata["x"].asnumpy().ravel().tolist() == [10.0, 11.0, 12.0]
    assert p.dstdata["x"].asnumpy().ravel().tolist() == [20.0, 21.0]
    # message passing on the kept relation: each game sums its players' x (float64 by hand)
    p.update_all(fn.copy_u("x", "m"), fn.sum("m", "s"))
    np.testing.assert_allclose(p.dstdata["s"].asnumpy().ravel(), [10.0, 10.0 + 12.0])
    with pytest.raises(dgl.DGLError, match="no relation"):
        dgl.node_type_subgraph(g, ["game"])
    with pytest.raises(dgl.DGLError, match="node type 'item' is not in this graph"):
        dgl.node_type_subgraph(g, ["item"])
    with pytest.raises(dgl.DGLError, match="pass a list of edge types"):
        dgl.edge_type_subgraph(g, "plays")
    with pytest.raises(dgl.DGLError, match="takes a heterograph"):
        dgl.edge_type_subgraph(u, ["follows"])


@pytest.mark.parametrize("idtype", IDS, ids=lambda t: t.__name__)
def test_add_reverse_edges(idtype):
    g = make(idtype)
    with pytest.raises(dgl.DGLError, match=r"relation \('game', 'played-by', 'user'\) joins two node types"):
        dgl.add_reverse_edges(g)
    r = dgl.add_reverse_edges(g, ignore_bipartite=True, copy_edata=True)
    # follows: the 4 edges, then the reverse of all but the self-loop 2->2
    assert edges(r, FOLLOWS) == [(0, 1), (1, 2), (2, 0), (2, 2), (1, 0), (2, 1), (0, 2)]
    assert col(r, etype="follows", key="w") == [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0]
    assert edges(r, PLAYS) == edges(g, PLAYS) and col(r, etype="plays", key="w") == [5.0, 6.0, 7.0]
    assert col(r, "user") == [10.0, 11.0, 12.0] and r.idtype == idtype
    all_loops = dgl.add_reverse_edges(g, ignore_bipartite=True, exclude_self=False, copy_ndata=False)
    assert all_loops.num_edges(FOLLOWS) == 8 and "x" not in all_loops.nodes["user"].data
    assert "w" not in all_loops.edges["follows"].data
    h = dgl.graph(([0, 1, 1], [1, 1, 2]), num_nodes=3, idtype=idtype)
    h.edata["w"] = mx.nd.array([1.0, 2.0, 3.0])
    hr = dgl.add_reverse_edges(h, copy_edata=True)
    assert edges(hr, None) == [(0, 1), (1, 1), (1, 2), (1, 0), (2, 1)]
    assert hr.edata["w"].asnumpy().tolist() == [1.0, 2.0, 3.0, 1.0, 3.0]
    with pytest.raises(dgl.DGLError, match="another relation"):
        dgl.add_reverse_edges(dgl.heterograph({PLAYS: ([0], [1])}))


def test_a_one_relation_graph_goes_to_the_one_relation_functions_unchanged():
    h = dgl.graph(([0, 1, 2], [1, 2, 0]), num_nodes=3)
    s = dgl.node_subgraph(h, [0, 1])
    assert edges(s, None) == [(0, 1)] and s.ndata[dgl.NID].asnumpy().tolist() == [0, 1]
    assert dgl.edge_subgraph(h, [2]).num_nodes() == 2
    assert dgl.in_subgraph(h, [0]).num_edges() == 1
