"""Changing a heterograph in place (add_nodes, add_edges, remove_edges, remove_nodes with
ntype=/etype=) and its local_var, against hand-worked graphs: counts, edges, features that follow their rows,
relation graphs that change with their heterograph, message passing afterwards; int32/int64 ids,
cpu(0)/cpu(1)."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn

FOLLOWS, PLAYS = ("user", "follows", "user"), ("user", "plays", "game")


def make(idtype=np.int64, ctx=mx.cpu(0)):
    """3 users, 2 games: follows 0->1, 1->2; plays 0->1, 2->0, 2->1."""
    g = dgl.heterograph({FOLLOWS: ([0, 1], [1, 2]), PLAYS: ([0, 2, 2], [1, 0, 1])}, idtype=idtype, device=ctx)
    g.nodes["user"].data["x"] = mx.nd.array([[1.0], [2.0], [3.0]], ctx=ctx)
    g.nodes["game"].data["p"] = mx.nd.array([10.0, 20.0], ctx=ctx)
    g.edges["plays"].data["w"] = mx.nd.array([5.0, 6.0, 7.0], ctx=ctx)
    return g


def edges(g, c):
    u, v = g.edges(etype=c)
    return list(zip(u.asnumpy().tolist(), v.asnumpy().tolist()))


def col(frame, k):
    return frame[k].asnumpy().ravel().tolist()


@pytest.mark.parametrize("ctx", [mx.cpu(0), mx.cpu(1)], ids=str)
@pytest.mark.parametrize("idtype", [np.int32, np.int64], ids=lambda t: t.__name__)
def test_add_nodes_and_edges(idtype, ctx):
    g = make(idtype, ctx)
    plays = g["plays"]
    g.add_nodes(2, {"p": mx.nd.array([30.0, 40.0], ctx=ctx)}, ntype="game")
    assert g.num_nodes("game") == 4 and col(g.nodes["game"].data, "p") == [10.0, 20.0, 30.0, 40.0]
    assert plays.num_dst_nodes() == 4            # the relation graph changed with its heterograph
    g.add_nodes(1, ntype="user")                 # no data: zeros
    assert col(g.nodes["user"].data, "x") == [1.0, 2.0, 3.0, 0.0] and g["follows"].num_nodes() == 4
    # ids past a type's end add its nodes first; a feature given for the new edges only is zero
    # on the old ones
    g.add_edges([3, 5], [3, 0], {"w": mx.nd.array([8.0, 9.0], ctx=ctx)}, etype="plays")
    assert g.num_nodes("user") == 6 and edges(g, PLAYS)[-2:] == [(3, 3), (5, 0)]
    assert col(g.edges["plays"].data, "w") == [5.0, 6.0, 7.0, 8.0, 9.0]
    g.add_edges(0, [2, 3], etype=FOLLOWS)
    assert edges(g, FOLLOWS) == [(0, 1), (1, 2), (0, 2), (0, 3)]
    assert g.idtype == idtype and g.edges(etype="follows")[0].dtype == idtype
    # message passing sees the new structure: each game sums the x of its players
    g.update_all(fn.copy_u("x", "m"), fn.sum("m", "s"), etype="plays")
    # game 0: users 2 and 5 (3.0 + 0), game 1: users 0 and 2 (1 + 3), game 3: user 3 (0)
    assert col(g.nodes["game"].data, "s") == [3.0, 4.0, 0.0, 0.0]


def test_remove_edges_and_nodes():
    g = make()
    g.remove_edges([1], etype="plays", store_ids=True)
    assert edges(g, PLAYS) == [(0, 1), (2, 1)] and col(g.edges["plays"].data, "w") == [5.0, 7.0]
    assert col(g.edges["plays"].data, dgl.EID) == [0, 2]
    g = make()
    g.remove_nodes([0], ntype="user", store_ids=True)
    # users 1, 2 become 0, 1; follows keeps 1->2 as 0->1; plays keeps 2->0, 2->1 as 1->0, 1->1
    assert g.num_nodes("user") == 2 and g.num_nodes("game") == 2
    assert edges(g, FOLLOWS) == [(0, 1)] and edges(g, PLAYS) == [(1, 0), (1, 1)]
    assert col(g.nodes["user"].data, "x") == [2.0, 3.0] and col(g.nodes["user"].data, dgl.NID) == [1, 2]
    assert col(g.edges["plays"].data, "w") == [6.0, 7.0] and col(g.edges["plays"].data, dgl.EID) == [1, 2]
    assert g["plays"].num_src_nodes() == 2
    g.remove_nodes([1], ntype="game")
    assert g.num_nodes("game") == 1 and edges(g, PLAYS) == [(1, 0)] and col(g.nodes["game"].data, "p") == [10.0]


def test_batch_counts_go_and_mistakes_are_one_line():
    b = dgl.batch([make(), make()])
    assert b.batch_size == 2
    b.add_nodes(1, ntype="game")
    assert b.batch_size == 1
    g = make()
    cases = [(lambda: g.add_nodes(1), r"node types \['game', 'user'\]; pass ntype="),
             (lambda: g.add_edges([0], [1]), "pass etype="),
             (lambda: g.add_edges([0, 1], [1], etype="likes"), "likes"),
             (lambda: g.add_edges([0, 1, 2], [1, 0], etype="plays"), "u has 3 ids and v 2"),
             (lambda: g.remove_edges([3], etype="plays"), r"edge ids of \('user', 'plays', 'game'\) must lie in 0..2"),
             (lambda: g.remove_nodes([7], ntype="user"), r"'user' node ids must lie in 0..2"),
             (lambda: g.add_nodes(2, {"p": mx.nd.ones(3)}, ntype="game"), "3 rows for 2 new nodes")]
    for call, msg in cases:
        with pytest.raises(dgl.DGLError, match=msg) as info:
            call()
        assert "\n" not in str(info.value)
    h = dgl.graph(([0], [1]))
    dgl.add_nodes(h, 2)                          # a graph goes on to the one-relation functions
    assert h.num_nodes() == 4


def test_local_var_keeps_new_features_off_the_heterograph():
    g = make()
    lv = g.local_var()
    lv.nodes["user"].data["x2"] = lv.nodes["user"].data["x"] * 2
    lv.edges["plays"].data["w"] = mx.nd.zeros(3)
    lv.update_all(fn.copy_u("x", "m"), fn.sum("m", "s"), etype="plays")
    # games: game 0 from user 2 (3.0), game 1 from users 0 and 2 (1.0 + 3.0)
    assert col(lv.nodes["game"].data, "s") == [3.0, 4.0]
    assert "x2" not in g.nodes["user"].data and "s" not in g.nodes["game"].data
    assert col(g.edges["plays"].data, "w") == [5.0, 6.0, 7.0]
    assert col(lv.nodes["user"].data, "x") == [1.0, 2.0, 3.0]          # the tensors are shared
    assert edges(lv, PLAYS) == edges(g, PLAYS)
