"""Heterographs with several relations: construction (types sorted as DGL sorts them, node counts
inferred or given, id types and contexts), per-type views and relation slices, and message
passing one relation at a time or across relations with every cross-type reducer, against
float64 NumPy references on a small hand-made graph."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn

# users follow users, play games; developers develop games. Game 0 is reached by both relations
# into games, game 1 by developers only, game 2 by users only, game 3 by none; users 3 and 4 by none.
REL = {("user", "follows", "user"): ([0, 1, 2, 1], [1, 2, 2, 0]),
       ("user", "plays", "game"): ([0, 1, 1, 2, 3], [0, 0, 2, 2, 2]),
       ("developer", "develops", "game"): ([0, 1], [0, 1])}
COUNTS = {"user": 5, "game": 4, "developer": 2}
CASES = [(mx.cpu(0), "int64"), (mx.cpu(1), "int32")]
IDS = ["cpu0-int64", "cpu1-int32"]


def make(ctx=mx.cpu(), idtype="int64", **kwargs):
    return dgl.heterograph(REL, dict(COUNTS), idtype=idtype, device=ctx, **kwargs)


def adj(c):
    """(destinations x sources) float64 adjacency of relation ``c``."""
    s, d = map(np.asarray, REL[c])
    a = np.zeros((COUNTS[c[2]], COUNTS[c[0]]))
    np.add.at(a, (d, s), 1.0)
    return a


def feats(shape, seed):
    return np.random.RandomState(seed).normal(size=shape)


def put(g, name, values):
    for t, v in values.items():
        g.nodes[t].data[name] = mx.nd.array(v, ctx=g.device)


# ---- construction and types -------------------------------------------------------------------
@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_types_are_sorted_and_counts_are_per_type(ctx, idtype):
    g = make(ctx, idtype)
    assert isinstance(g, dgl.HeteroGraph) and g.device == ctx and g.idtype == np.dtype(idtype).type
    assert g.ntypes == ["developer", "game", "user"]
    assert g.canonical_etypes == sorted(REL) and g.etypes == ["develops", "follows", "plays"]
    assert [g.num_nodes(t) for t in g.ntypes] == [2, 4, 5] and g.num_nodes() == 11 == g.number_of_nodes()
    assert g.num_edges("plays") == 5 and g.num_edges(("user", "follows", "user")) == 4 and g.num_edges() == 11
    assert not g.is_homogeneous() and not g.is_unibipartite and g.srctypes == g.ntypes == g.dsttypes
    u, v = g.edges(etype="plays")
    assert u.dtype == np.dtype(idtype) and u.context == ctx
    assert (u.asnumpy().tolist(), v.asnumpy().tolist()) == REL[("user", "plays", "game")]
    assert g.edges(form="eid", etype="develops").asnumpy().tolist() == [0, 1]
    assert g.nodes("game").asnumpy().tolist() == [0, 1, 2, 3] and g.nodes("game").dtype == np.dtype(idtype)
    np.testing.assert_array_equal(g.in_degrees(etype="plays").asnumpy(), adj(("user", "plays", "game")).sum(1))
    np.testing.assert_array_equal(g.out_degrees(etype="follows").asnumpy(), adj(("user", "follows", "user")).sum(0))
    assert g.in_degrees(2, etype="plays") == 3 and g.edge_ids(1, 2, etype="plays") == 2


def test_counts_default_to_the_largest_id_over_every_relation_and_extra_types_exist():
    g = dgl.heterograph({("a", "r", "b"): ([0, 3], [1, 0]), ("b", "s", "a"): ([2], [5])}, {"c": 4})
    assert (g.num_nodes("a"), g.num_nodes("b"), g.num_nodes("c")) == (6, 3, 4)
    assert g.ntypes == ["a", "b", "c"] and g.idtype == np.int64
    one = dgl.heterograph({("a", "r", "a"): ([0], [1])}, {"a": 3, "z": 2})
    assert isinstance(one, dgl.HeteroGraph) and one.num_nodes("z") == 2 and one.ntypes == ["a", "z"]
    typed = dgl.heterograph({("a", "r", "b"): (np.array([0], np.int32), np.array([1], np.int32)),
                             ("b", "s", "a"): (np.array([0], np.int32), np.array([0], np.int32))})
    assert typed.idtype == np.int32


def test_mistakes_are_one_line_dgl_errors():
    g = dgl.heterograph({("user", "follows", "user"): ([0], [1]), ("developer", "follows", "game"): ([0], [0]),
                         ("user", "plays", "game"): ([0], [0])})
    sites = [lambda: g.num_edges("follows"), lambda: g.edges["follows"], lambda: g["follows"],
             lambda: g.in_degrees(), lambda: g.num_nodes("nobody"), lambda: g["user", "likes", "game"],
             lambda: g[slice(None), "follows", slice(None)], lambda: g.nodes(),
             lambda: g.nodes["user"].data.__setitem__("h", np.ones((7, 2))),
             lambda: g.ndata.__setitem__("h", np.ones((2, 1))),
             lambda: dgl.heterograph({("a", "r", "b"): ([0, 5], [0, 0]), ("b", "s", "a"): ([0], [0])}, {"a": 2}),
             lambda: g.update_all(fn.copy_u("x", "m"), fn.mean("m", "y")),
             lambda: g.multi_update_all({"plays": (fn.copy_u("x", "m"), fn.sum("m", "y"))}, "prod"),
             lambda: dgl.batch([g, g["plays"]]), lambda: dgl.to_block(g, [0]), lambda: dgl.node_subgraph(g, [0])]
    for site in sites:
        with pytest.raises(dgl.DGLError) as info:
            site()
        assert "\n" not in str(info.value)
    with pytest.raises(dgl.DGLError, match=r"one relation.*g\[etype\]"):
        dgl.khop_graph(g, 2)
    with pytest.raises(dgl.DGLError, match=r"node types .*; pass a dict \{node type: ids\}"):
        dgl.node_subgraph(g, [0])
    assert not hasattr(g, "_src") and not hasattr(g, "nothing")
    with pytest.raises(dgl.DGLError, match="ambiguous.*canonical"):
        g.num_edges("follows")
    assert g.num_edges(("developer", "follows", "game")) == 1
    assert g[slice(None), "follows", "game"] is g["developer", "follows", "game"]
    with pytest.raises(dgl.DGLError, match="relation .*'a', 'r', 'b'.*out of range"):
        dgl.heterograph({("a", "r", "b"): ([0, 5], [0, 0]), ("b", "s", "a"): ([0], [0])}, {"a": 2})


# ---- views, slices, scopes, contexts ------------------------------------------------------------
def test_type_views_and_relation_slices_share_the_features():
    g = make()
    x = feats((5, 2), 0)
    g.nodes["user"].data["x"] = x                      # NumPy goes to the graph's context
    assert g["follows"].ndata["x"] is g.nodes["user"].data["x"]
    assert g["plays"].srcdata["x"] is g.nodes["user"].data["x"] and "x" not in g["plays"].dstdata
    g["plays"].dstdata["y"] = mx.nd.ones((4, 1))
    assert g.nodes["game"].data["y"].shape == (4, 1)
    g.edges["plays"].data["w"] = mx.nd.arange(5)
    assert g.edges[("user", "plays", "game")].data["w"] is g["plays"].edata["w"]
    assert g["user", "plays", "game"] is g["plays"]
    assert set(g.ndata["x"]) == {"user"} and "y" in g.ndata and "w" in g.edata
    assert list(g.edata["w"]) == [("user", "plays", "game")]
    g.ndata["z"] = {"game": np.zeros((4, 4)), "developer": np.ones((2, 4))}
    assert g.nodes["developer"].data["z"].shape == (2, 4) and "z" not in g.nodes["user"].data
    g.edata["v"] = {"develops": np.ones(2)}
    assert g.edges["develops"].data["v"].shape == (2,)
    del g.ndata["z"]
    assert "z" not in g.ndata
    with g.local_scope():
        g.nodes["user"].data["tmp"] = mx.nd.zeros((5, 1))
        g.edges["follows"].data["tmp"] = mx.nd.zeros((4, 1))
        g.nodes["user"].data["x"] = mx.nd.zeros((5, 2))
    assert "tmp" not in g.nodes["user"].data and "tmp" not in g.edges["follows"].data
    np.testing.assert_allclose(g.nodes["user"].data["x"].asnumpy(), x, rtol=1e-6)


def test_one_node_type_with_several_relations_has_plain_ndata():
    g = dgl.heterograph({("n", "a", "n"): ([0, 1], [1, 2]), ("n", "b", "n"): ([2], [0])})
    g.ndata["h"] = mx.nd.array([[1.0], [2.0], [4.0]])
    assert g.nodes["n"].data["h"] is g.ndata["h"] and g.ntypes == ["n"] and g.etypes == ["a", "b"]
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))        # across both relations
    assert g.ndata["s"].asnumpy().ravel().tolist() == [4.0, 1.0, 2.0]


def test_a_unibipartite_heterograph_has_source_and_destination_views():
    g = dgl.heterograph({("user", "plays", "game"): ([0, 1], [0, 0]), ("store", "sells", "game"): ([0], [1])})
    assert g.is_unibipartite and g.srctypes == ["store", "user"] and g.dsttypes == ["game"]
    assert g.num_src_nodes() == 3 and g.num_dst_nodes("game") == 2
    g.dstdata["h"] = mx.nd.ones((2, 1))
    assert g.dstnodes["game"].data["h"] is g.nodes["game"].data["h"]
    assert g.srcnodes("store").asnumpy().tolist() == [0]
    with pytest.raises(dgl.DGLError, match="not in this graph"):
        g.dstnodes["user"]


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_to_and_astype_keep_structure_and_features(ctx, idtype):
    g = make()
    g.nodes["user"].data["x"] = mx.nd.arange(5)
    g.edges["plays"].data["w"] = mx.nd.arange(5) * 2
    h = g.to(ctx).astype(idtype)
    assert h.device == ctx and h.idtype == np.dtype(idtype).type and h["plays"].device == ctx
    assert h.nodes["user"].data["x"].context == ctx and h.edges["plays"].data["w"].asnumpy().tolist() == [0, 2, 4, 6, 8]
    assert h.edges(etype="plays")[0].dtype == np.dtype(idtype) and h.num_edges() == g.num_edges()
    assert g.to(mx.cpu(0)) is g and g.long() is g and g.int().idtype == np.int32
    with pytest.raises(dgl.DGLError, match="is on"):
        h.nodes["user"].data["y"] = mx.nd.ones((5,), ctx=mx.cpu(2))


# ---- message passing ------------------------------------------------------------------------------
@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_update_all_and_apply_edges_on_one_relation(ctx, idtype):
    g = make(ctx, idtype)
    xu, xg = feats((5, 3), 1), feats((4, 3), 2)
    w = feats((5,), 3)
    put(g, "x", {"user": xu, "game": xg})
    g.edges["plays"].data["w"] = mx.nd.array(w, ctx=ctx)
    c = ("user", "plays", "game")
    g.update_all(fn.copy_u("x", "m"), fn.sum("m", "s"), etype="plays")
    np.testing.assert_allclose(g.nodes["game"].data["s"].asnumpy(), adj(c) @ xu, rtol=1e-5, atol=1e-6)
    assert "s" not in g.nodes["user"].data
    g["plays"].update_all(fn.u_mul_e("x", "w", "m"), fn.mean("m", "mean"))
    s, d = map(np.asarray, REL[c])
    ref = np.zeros((4, 3))
    np.add.at(ref, d, xu[s] * w[:, None])
    ref /= np.maximum(adj(c).sum(1), 1)[:, None]
    np.testing.assert_allclose(g.nodes["game"].data["mean"].asnumpy(), ref, rtol=1e-5, atol=1e-6)
    g.update_all(fn.copy_u("x", "m"), fn.max("m", "mx"), etype=("user", "follows", "user"))
    fs, fd = map(np.asarray, REL[("user", "follows", "user")])
    ref = np.array([xu[fs[fd == v]].max(0) if (fd == v).any() else np.zeros(3) for v in range(5)])
    np.testing.assert_allclose(g.nodes["user"].data["mx"].asnumpy(), ref, rtol=1e-6)
    g.apply_edges(fn.u_dot_v("x", "x", "dot"), etype="plays")
    np.testing.assert_allclose(g.edges["plays"].data["dot"].asnumpy().ravel(), (xu[s] * xg[d]).sum(1), rtol=1e-5)
    g.apply_edges(lambda e: {"sum": e.src["x"] + e.dst["x"]}, etype="plays")
    np.testing.assert_allclose(g.edges["plays"].data["sum"].asnumpy(), xu[s] + xg[d], rtol=1e-6)


def test_apply_edges_without_etype_runs_a_builtin_on_every_relation_with_its_operands():
    g = make()
    put(g, "x", {"user": feats((5, 2), 4), "game": feats((4, 2), 5)})      # developers have no "x"
    g.apply_edges(fn.u_sub_v("x", "x", "d"))
    for c in [("user", "follows", "user"), ("user", "plays", "game")]:
        s, d = map(np.asarray, REL[c])
        xs, xd = g.nodes[c[0]].data["x"].asnumpy(), g.nodes[c[2]].data["x"].asnumpy()
        np.testing.assert_allclose(g.edges[c].data["d"].asnumpy(), xs[s] - xd[d], rtol=1e-6)
    assert "d" not in g.edges["develops"].data
    with pytest.raises(dgl.DGLError, match="etype"):
        g.apply_edges(lambda e: {"y": e.src["x"]})


def per_relation(xs, reducer):
    """{relation: (N_dst, F) float64 reduction of copy_u messages, and reached (N_dst,) bool}."""
    out = {}
    for c in sorted(REL):
        s, d = map(np.asarray, REL[c])
        n = COUNTS[c[2]]
        x = xs[c[0]]
        vals = [x[s[d == v]] for v in range(n)]
        reached = np.array([len(v) > 0 for v in vals])
        red = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[reducer]
        out[c] = (np.array([red(v, axis=0) if len(v) else np.zeros(x.shape[1]) for v in vals]), reached)
    return out


@pytest.mark.parametrize("cross", ["sum", "mean", "max", "min", "stack"])
@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_multi_update_all_merges_relations_with_each_cross_reducer(ctx, idtype, cross):
    g = make(ctx, idtype)
    xs = {"user": feats((5, 2), 6) - 3.0, "developer": feats((2, 2), 7) - 3.0, "game": feats((4, 2), 8)}
    put(g, "x", xs)
    intra = "max" if cross in ("max", "min") else "sum"
    reduce = getattr(fn, intra)
    g.multi_update_all({c: (fn.copy_u("x", "m"), reduce("m", "h")) for c in REL}, cross)
    ref = per_relation(xs, intra)
    game = [ref[("developer", "develops", "game")], ref[("user", "plays", "game")]]   # canonical order
    if cross == "stack":
        want = np.stack([v for v, _ in game], 1)
    elif cross in ("sum", "mean"):
        want = getattr(np, cross)([v for v, _ in game], axis=0)
    else:   # relations that do not reach a node are left out; a node none reaches gets 0
        vals = np.stack([np.where(r[:, None], v, -np.inf if cross == "max" else np.inf) for v, r in game])
        want = getattr(np, cross)(vals, axis=0)
        want[~np.isfinite(want)] = 0
    np.testing.assert_allclose(g.nodes["game"].data["h"].asnumpy(), want, rtol=1e-5, atol=1e-6)
    user = ref[("user", "follows", "user")][0]
    np.testing.assert_allclose(g.nodes["user"].data["h"].asnumpy(), user[:, None] if cross == "stack" else user,
                               rtol=1e-5, atol=1e-6)
    assert "h" not in g.nodes["developer"].data


def test_update_all_over_every_relation_is_the_reduction_over_all_incoming_edges():
    g = make()
    xs = {"user": feats((5, 2), 9) - 5.0, "developer": feats((2, 2), 10) - 5.0}    # all negative
    put(g, "x", xs)
    g.update_all(fn.copy_u("x", "m"), fn.max("m", "mx"))
    g.update_all(fn.copy_u("x", "m"), fn.sum("m", "s"), lambda nodes: {"s2": nodes.data["s"] * 2})
    for name, red in (("mx", np.max), ("s", np.sum)):
        ref = np.zeros((4, 2))
        for v in range(4):
            msgs = [xs[c[0]][np.asarray(REL[c][0])[np.asarray(REL[c][1]) == v]] for c in REL if c[2] == "game"]
            msgs = np.concatenate(msgs)
            ref[v] = red(msgs, axis=0) if len(msgs) else 0
        np.testing.assert_allclose(g.nodes["game"].data[name].asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g.nodes["game"].data["s2"].asnumpy(), 2 * g.nodes["game"].data["s"].asnumpy())


def test_multi_update_all_with_user_functions_and_a_callable_cross_reducer():
    g = make()
    xs = {"user": feats((5, 2), 11), "developer": feats((2, 2), 12)}
    put(g, "x", xs)
    udf = (lambda e: {"m": e.src["x"] * 2}, lambda n: {"h": n.mailbox["m"].sum(axis=1)})
    g.multi_update_all({"plays": udf, "develops": udf + (lambda n: {"h": n.data["h"] + 1},)},
                       lambda ts: ts[0] - ts[1])
    ref = per_relation(xs, "sum")
    dev, plays = ref[("developer", "develops", "game")][0], ref[("user", "plays", "game")][0]
    np.testing.assert_allclose(g.nodes["game"].data["h"].asnumpy(), (2 * dev + 1) - 2 * plays, rtol=1e-5, atol=1e-6)


def test_gradients_flow_through_every_relation_and_the_cross_reducer():
    g = make()
    xu, xd = mx.nd.array(feats((5, 2), 13)), mx.nd.array(feats((2, 2), 14))
    xu.attach_grad()
    xd.attach_grad()
    with autograd.record():
        g.nodes["user"].data["x"], g.nodes["developer"].data["x"] = xu, xd
        g.multi_update_all({c: (fn.copy_u("x", "m"), fn.sum("m", "h")) for c in REL}, "mean")
        loss = g.nodes["game"].data["h"].sum() + g.nodes["user"].data["h"].sum()
    loss.backward()
    # d loss / d x_u = (out-degree along plays) / 2 (mean of two relations into game) + out-degree along follows
    plays = adj(("user", "plays", "game")).sum(0) / 2 + adj(("user", "follows", "user")).sum(0)
    np.testing.assert_allclose(xu.grad.asnumpy(), np.repeat(plays[:, None], 2, 1), rtol=1e-6)
    np.testing.assert_allclose(xd.grad.asnumpy(), np.repeat(adj(("developer", "develops", "game")).sum(0)[:, None] / 2,
                                                            2, 1), rtol=1e-6)


def test_pull_and_send_and_recv_on_one_relation():
    g = make()
    xu = feats((5, 1), 15)
    g.nodes["user"].data["x"] = xu
    g.pull([2, 3], fn.copy_u("x", "m"), fn.sum("m", "h"), etype="plays")
    np.testing.assert_allclose(g.nodes["game"].data["h"].asnumpy().ravel(), [0, 0, xu[1:4, 0].sum(), 0], rtol=1e-5)
    g.send_and_recv([0], fn.copy_u("x", "m"), fn.sum("m", "f"), etype="follows")
    np.testing.assert_allclose(g.nodes["user"].data["f"].asnumpy().ravel(), [0, xu[0, 0], 0, 0, 0], rtol=1e-6)
