"""``dgl.batch``/``dgl.unbatch`` on heterographs with several relations: node ids offset per node
type, edges of each relation side by side, features concatenated per type, per-graph counts, and
unbatch giving back each graph as it was (compared with the graphs the test built)."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl

REL = [("user", "follows", "user"), ("user", "plays", "game")]


def _g(follows, plays, users, games, seed):
    g = dgl.heterograph({REL[0]: follows, REL[1]: plays}, num_nodes_dict={"user": users, "game": games})
    rng = np.random.RandomState(seed)
    g.nodes["user"].data["h"] = mx.nd.array(rng.rand(users, 3))
    g.nodes["game"].data["h"] = mx.nd.array(rng.rand(games, 3))
    g.edges["plays"].data["w"] = mx.nd.array(rng.rand(len(plays[0])))
    return g


def _pair():
    return (_g(([0, 1], [1, 2]), ([0, 2], [1, 0]), 3, 2, 0),
            _g(([1], [0]), ([0, 1, 1], [0, 0, 2]), 2, 3, 1))


def test_batch_offsets_ids_per_type_and_concatenates_features():
    a, b = _pair()
    bg = dgl.batch([a, b])
    assert (bg.num_nodes("user"), bg.num_nodes("game")) == (5, 5) and bg.batch_size == 2
    assert bg.batch_num_nodes("user").asnumpy().tolist() == [3, 2]
    assert bg.batch_num_nodes("game").asnumpy().tolist() == [2, 3]
    assert bg.batch_num_edges("plays").asnumpy().tolist() == [2, 3]
    u, v = bg.edges(etype="follows")
    assert u.asnumpy().tolist() == [0, 1, 4] and v.asnumpy().tolist() == [1, 2, 3]     # b's users from 3
    u, v = bg.edges(etype="plays")
    assert u.asnumpy().tolist() == [0, 2, 3, 4, 4] and v.asnumpy().tolist() == [1, 0, 2, 2, 4]   # b's games from 2
    for t in ("user", "game"):
        want = np.concatenate([a.nodes[t].data["h"].asnumpy(), b.nodes[t].data["h"].asnumpy()])
        np.testing.assert_array_equal(bg.nodes[t].data["h"].asnumpy(), want)
    # message passing on the batch equals message passing on each graph
    bg.update_all(dgl.function.u_mul_e("h", "w", "m"), dgl.function.sum("m", "s"), etype="plays")
    for g in (a, b):
        g.update_all(dgl.function.u_mul_e("h", "w", "m"), dgl.function.sum("m", "s"), etype="plays")
    want = np.concatenate([a.nodes["game"].data["s"].asnumpy(), b.nodes["game"].data["s"].asnumpy()])
    np.testing.assert_allclose(bg.nodes["game"].data["s"].asnumpy(), want, rtol=1e-6)


def test_unbatch_gives_back_each_graph():
    a, b = _pair()
    for orig, got in zip((a, b), dgl.unbatch(dgl.batch([a, b]))):
        assert got.canonical_etypes == REL
        for t in ("user", "game"):
            assert got.num_nodes(t) == orig.num_nodes(t)
            np.testing.assert_array_equal(got.nodes[t].data["h"].asnumpy(), orig.nodes[t].data["h"].asnumpy())
        for c in REL:
            assert [x.asnumpy().tolist() for x in got.edges(etype=c)] == [x.asnumpy().tolist()
                                                                          for x in orig.edges(etype=c)]
        np.testing.assert_array_equal(got.edges["plays"].data["w"].asnumpy(), orig.edges["plays"].data["w"].asnumpy())


def test_a_batch_of_batches_keeps_every_graph():
    a, b = _pair()
    got = dgl.unbatch(dgl.batch([dgl.batch([a, b]), a]))
    assert [g.num_nodes("user") for g in got] == [3, 2, 3]


def test_graphs_with_other_relations_are_refused():
    a, _ = _pair()
    other = dgl.heterograph({("user", "rates", "game"): ([0], [0])})
    with pytest.raises(dgl.DGLError, match="same node types and relations"):
        dgl.batch([a, other])


def test_readouts_of_a_heterograph_batch_work_per_type():
    a, b = _pair()
    bg = dgl.batch([a, b])
    ha, hb = a.nodes["game"].data["h"].asnumpy(), b.nodes["game"].data["h"].asnumpy()
    np.testing.assert_allclose(dgl.sum_nodes(bg, "h", ntype="game").asnumpy(), [ha.sum(0), hb.sum(0)], rtol=1e-6)
    np.testing.assert_allclose(dgl.readout_nodes(bg, "h", op="max", ntype="user").asnumpy(),
                               [a.nodes["user"].data["h"].asnumpy().max(0), b.nodes["user"].data["h"].asnumpy().max(0)],
                               rtol=1e-6)
    wa, wb = a.edges["plays"].data["w"].asnumpy(), b.edges["plays"].data["w"].asnumpy()
    np.testing.assert_allclose(dgl.mean_edges(bg, "w", etype="plays").asnumpy(), [wa.mean(), wb.mean()], rtol=1e-6)
    out = dgl.broadcast_nodes(bg, mx.nd.array([[1.0], [2.0]]), ntype="game")
    assert out.asnumpy().ravel().tolist() == [1, 1, 2, 2, 2]
    with pytest.raises(dgl.DGLError, match="name the node type"):
        dgl.sum_nodes(bg, "h")
