"""``dgl.sampling.sample_neighbors`` on a heterograph with several relations: each relation into a
seed's type keeps at most its fan-out of the seed's in-edges (all of them when it has fewer, none
for a 0 fan-out), drawn from the seed's real in-edges (checked against the graph's edge list), with
every node and node feature kept and each drawn edge's features and id; one-line errors."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl

FOLLOWS = ([0, 1, 2, 3, 4, 4], [1, 1, 1, 2, 1, 3])
PLAYS = ([0, 1, 2, 3, 4], [0, 0, 0, 1, 0])


def _g(idtype="int64"):
    g = dgl.heterograph({("user", "follows", "user"): FOLLOWS, ("user", "plays", "game"): PLAYS}, idtype=idtype)
    g.nodes["user"].data["h"] = mx.nd.arange(5)
    g.edges["plays"].data["w"] = mx.nd.array([10, 11, 12, 13, 14])
    return g


@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_each_relation_keeps_at_most_its_fanout_of_the_seeds_in_edges(idtype):
    g = _g(idtype)
    for seed in range(5):
        f = dgl.sampling.sample_neighbors(g, {"game": [0, 1], "user": [1]}, {"plays": 2, "follows": 3},
                                          rng=np.random.RandomState(seed))
        assert f.num_nodes("user") == 5 and f.num_nodes("game") == 2
        u, v = (x.asnumpy().tolist() for x in f.edges(etype="plays"))
        eid = f.edges["plays"].data[dgl.EID].asnumpy().tolist()
        assert [(PLAYS[0][e], PLAYS[1][e]) for e in eid] == list(zip(u, v))          # real edges, their ids
        assert sorted(v) == [0, 0, 1] and len(set(eid)) == 3                           # 2 of game 0's 4, game 1's one
        assert f.edges["plays"].data["w"].asnumpy().tolist() == [10 + e for e in eid]
        u, v = (x.asnumpy().tolist() for x in f.edges(etype="follows"))
        assert v == [1, 1, 1] and set(zip(u, v)) <= set(zip(*FOLLOWS))                 # 3 of user 1's 4
        assert f.nodes["user"].data["h"].asnumpy().tolist() == [0, 1, 2, 3, 4]


def test_a_zero_fanout_or_a_type_without_seeds_draws_nothing_and_minus_one_draws_all():
    g = _g()
    f = dgl.sampling.sample_neighbors(g, {"game": [0]}, {"plays": -1, "follows": 0})
    assert f.num_edges("follows") == 0 and sorted(f.edges["plays"].data[dgl.EID].asnumpy().tolist()) == [0, 1, 2, 4]
    f = dgl.sampling.sample_neighbors(g, {"game": [0]}, 2, edge_dir="out")   # out-edges of games: there are none
    assert f.num_edges() == 0


def test_bad_seeds_and_fanouts_are_one_line_errors():
    g = _g()
    for call, match in ((lambda: dgl.sampling.sample_neighbors(g, [0], 2), "per type"),
                        (lambda: dgl.sampling.sample_neighbors(g, {"game": [5]}, 2), "must lie in 0..1"),
                        (lambda: dgl.sampling.sample_neighbors(g, {"team": [0]}, 2), "node type 'team'"),
                        (lambda: dgl.sampling.sample_neighbors(g, {"game": [0]}, {"plays": 1}), "no number for")):
        with pytest.raises(dgl.DGLError, match=match) as info:
            call()
        assert "\n" not in str(info.value)
