"""apply_nodes, filter_nodes, filter_edges, predecessors and successors on graphs, blocks and
heterographs, against hand-worked graphs, on int32 and int64 ids and cpu(0) and cpu(1)."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

import gluon_suite.graph as dgl

CTXS = [mx.cpu(0), mx.cpu(1)]
IDS = [np.int32, np.int64]


def ids(a):
    return a.asnumpy().tolist()


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("idtype", IDS, ids=lambda t: t.__name__)
def test_on_a_graph(idtype, ctx):
    # 0->1, 1->2, 2->0, 2->2, 0->1 (a multigraph)
    g = dgl.graph(([0, 1, 2, 2, 0], [1, 2, 0, 2, 1]), num_nodes=4, idtype=idtype, device=ctx)
    g.ndata["x"] = mx.nd.array([1.0, 2.0, 3.0, 4.0], ctx=ctx)
    g.edata["w"] = mx.nd.array([1.0, 5.0, 2.0, 7.0, 3.0], ctx=ctx)
    g.apply_nodes(lambda nodes: {"y": nodes.data["x"] * 2 + nodes.nodes().astype("float32")})
    assert ids(g.ndata["y"]) == [2.0, 5.0, 8.0, 11.0]
    # some rows: the others keep their values; a new feature is zero elsewhere
    g.apply_nodes(lambda nodes: {"y": -nodes.data["x"], "z": nodes.nodes().astype("float32") + 10}, v=[3, 1])
    assert ids(g.ndata["y"]) == [2.0, -2.0, 8.0, -4.0] and ids(g.ndata["z"]) == [0.0, 11.0, 0.0, 13.0]
    kept = g.filter_nodes(lambda nodes: nodes.data["x"] > 1.5)
    assert ids(kept) == [1, 2, 3] and kept.dtype == idtype and kept.context == ctx
    assert ids(g.filter_nodes(lambda nodes: nodes.data["x"] > 1.5, nodes=[3, 0, 2])) == [2, 3]
    assert ids(g.filter_edges(lambda edges: edges.data["w"] > 2.5)) == [1, 3, 4]
    assert ids(g.filter_edges(lambda edges: edges.src["x"] == edges.dst["x"])) == [3]   # the self-loop
    assert ids(g.filter_edges(lambda edges: edges.data["w"] > 2.5, edges=[0, 4, 3])) == [3, 4]
    assert ids(g.predecessors(1)) == [0, 0] and ids(g.predecessors(2)) == [1, 2]
    assert ids(g.successors(2)) == [0, 2] and ids(g.successors(3)) == []


def test_apply_nodes_on_all_nodes_keeps_autograd():
    g = dgl.graph(([0, 1], [1, 2]))
    x = mx.nd.array([[1.0], [2.0], [3.0]])
    x.attach_grad()
    with autograd.record():
        g.ndata["x"] = x
        g.apply_nodes(lambda nodes: {"y": nodes.data["x"] ** 2})
        loss = g.ndata["y"].sum()
    loss.backward()
    assert ids(x.grad) == [[2.0], [4.0], [6.0]]


def test_on_a_heterograph_and_a_block():
    hg = dgl.heterograph({("user", "follows", "user"): ([0, 1], [1, 2]), ("user", "plays", "game"): ([0, 2, 2], [1, 0, 1])})
    hg.nodes["game"].data["p"] = mx.nd.array([3.0, 9.0])
    hg.apply_nodes(lambda nodes: {"q": nodes.data["p"] + 1}, ntype="game")
    assert ids(hg.nodes["game"].data["q"]) == [4.0, 10.0] and "q" not in hg.nodes["user"].data
    assert ids(hg.filter_nodes(lambda nodes: nodes.data["p"] > 5, ntype="game")) == [1]
    assert ids(hg.predecessors(1, etype="plays")) == [0, 2] and ids(hg.successors(0, etype="follows")) == [1]
    assert ids(hg.filter_edges(lambda edges: edges.dst["p"] > 5, etype="plays")) == [0, 2]
    with pytest.raises(dgl.DGLError, match=r"node types \['game', 'user'\]; pass ntype="):
        hg.apply_nodes(lambda nodes: {})
    with pytest.raises(dgl.DGLError, match="pass etype="):
        hg.successors(0)
    block = dgl.to_block(dgl.graph(([0, 2], [1, 1]), num_nodes=3), [1])
    block.dstdata["x"] = mx.nd.array([5.0])
    block.apply_nodes(lambda nodes: {"y": nodes.data["x"] * 3})
    assert ids(block.dstdata["y"]) == [15.0]


def test_mistakes_are_one_line_errors():
    g = dgl.graph(([0, 1], [1, 2]))
    g.ndata["x"] = mx.nd.array([1.0, 2.0, 3.0])
    cases = [(lambda: g.apply_nodes(lambda nodes: nodes.data["x"]), "returned NDArray; return a dict"),
             (lambda: g.apply_nodes(lambda nodes: {"y": mx.nd.ones(2)}), r"shape \(2,\); it needs one row per node \(3\)"),
             (lambda: g.apply_nodes(lambda nodes: {"y": mx.nd.ones(3)}, v=[5]), r"id 5 but the ids are 0..2"),
             (lambda: g.filter_nodes(lambda nodes: mx.nd.ones(2)), "returned 2 values for 3 items"),
             (lambda: g.apply_nodes("double"), "takes a function of a NodeBatch")]
    for call, msg in cases:
        with pytest.raises(dgl.DGLError, match=msg) as info:
            call()
        assert "\n" not in str(info.value)
