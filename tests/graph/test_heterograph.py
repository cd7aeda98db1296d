"""One-relation heterographs: ``heterograph({('_U', '_E', '_V'): (u, v)})`` bipartite graphs with
``srcdata``/``dstdata`` and the layers on them (against float64 NumPy products with the
rectangular adjacency), one node type giving an ordinary graph, and several relations giving a
``HeteroGraph`` (tested in test_heterograph_multi.py)."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn
from gluon_suite.graph.nn import GATConv, GINConv, GraphConv, SAGEConv
from gluon_suite.utils import UserError

U = np.array([0, 0, 1, 2, 3, 3, 3])
V = np.array([0, 1, 1, 2, 0, 2, 2])
NU, NV = 5, 4          # source 4 sends nothing, destination 3 receives nothing


def bipartite(**kwargs):
    return dgl.heterograph({("_U", "_E", "_V"): (U, V)}, num_nodes_dict={"_U": NU, "_V": NV}, **kwargs)


def adjacency():
    a = np.zeros((NV, NU))
    np.add.at(a, (V, U), 1.0)
    return a


def feats(shape, seed=0):
    return np.random.RandomState(seed).normal(size=shape)


def test_bipartite_graph_has_two_node_sets():
    g = bipartite()
    assert (g.num_src_nodes(), g.num_dst_nodes(), g.num_edges()) == (NU, NV, len(U))
    assert g.number_of_src_nodes() == NU and g.num_nodes() == NU + NV
    assert (g.num_nodes("_U"), g.num_nodes("_V")) == (NU, NV)
    assert g.canonical_etypes == [("_U", "_E", "_V")] and g.ntypes == ["_U", "_V"] and g.etypes == ["_E"]
    assert g.srctypes == ["_U"] and g.dsttypes == ["_V"] and g.is_unibipartite and not g.is_block
    assert g.in_degrees().asnumpy().tolist() == np.bincount(V, minlength=NV).tolist()
    assert g.out_degrees().asnumpy().tolist() == np.bincount(U, minlength=NU).tolist()
    assert g.nodes("_V").asnumpy().tolist() == list(range(NV))
    g.srcdata["h"] = mx.nd.ones((NU, 2))
    g.dstdata["h"] = mx.nd.zeros((NV, 3))
    with pytest.raises(UserError, match="srcdata or g.dstdata"):
        g.ndata
    with pytest.raises(UserError, match="rows"):
        g.dstdata["x"] = mx.nd.ones((NU, 1))
    with pytest.raises(UserError, match="one node set"):
        dgl.add_self_loop(g)


def test_default_counts_are_the_largest_ids_and_types_come_from_the_key():
    g = dgl.heterograph({("user", "rates", "item"): (U, V)})
    assert (g.num_src_nodes(), g.num_dst_nodes()) == (U.max() + 1, V.max() + 1)
    assert g.canonical_etypes == [("user", "rates", "item")]
    assert g.num_nodes("item") == V.max() + 1
    with pytest.raises(UserError, match="not in this graph"):
        g.num_nodes("game")


def test_one_node_type_gives_an_ordinary_graph_with_its_names():
    g = dgl.heterograph({("user", "follows", "user"): (U, V)}, num_nodes_dict={"user": NU})
    assert not g.is_unibipartite and g.num_nodes() == NU and g.ntypes == ["user"] and g.etypes == ["follows"]
    g.ndata["h"] = mx.nd.ones((NU, 1))
    assert dgl.add_self_loop(g).canonical_etypes == [("user", "follows", "user")]


def test_several_relations_or_an_extra_node_type_give_a_heterograph():
    g = dgl.heterograph({("user", "follows", "user"): (U, U), ("user", "rates", "item"): (U, V)})
    assert isinstance(g, dgl.HeteroGraph) and g.canonical_etypes == [("user", "follows", "user"),
                                                                     ("user", "rates", "item")]
    g = dgl.heterograph({("_U", "_E", "_V"): (U, V)}, num_nodes_dict={"_U": 5, "_V": 4, "game": 2})
    assert isinstance(g, dgl.HeteroGraph) and g.num_nodes("game") == 2 and g.num_edges() == len(U)
    with pytest.raises(UserError, match="given twice"):
        dgl.heterograph({"r": (U, U), ("_N", "r", "_N"): (U, U)})


def test_message_passing_reads_srcdata_and_writes_dstdata():
    g = bipartite()
    x, w = feats((NU, 3)), feats((len(U),), 1)
    g.srcdata["x"] = mx.nd.array(x)
    g.dstdata["y"] = mx.nd.array(feats((NV, 3), 2))
    g.edata["w"] = mx.nd.array(w)
    g.update_all(fn.copy_u("x", "m"), fn.sum("m", "s"))
    g.update_all(fn.u_mul_e("x", "w", "m"), fn.max("m", "mx"))
    g.apply_edges(fn.u_dot_v("x", "y", "d"))
    np.testing.assert_allclose(g.dstdata["s"].asnumpy(), adjacency() @ x, rtol=1e-5, atol=1e-6)
    ref = np.array([(w[V == v, None] * x[U[V == v]]).max(0) if (V == v).any() else np.zeros(3) for v in range(NV)])
    np.testing.assert_allclose(g.dstdata["mx"].asnumpy(), ref, rtol=1e-5, atol=1e-6)
    y = g.dstdata["y"].asnumpy()
    np.testing.assert_allclose(g.edata["d"].asnumpy().ravel(), (x[U] * y[V]).sum(1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ctx, idtype", [(mx.cpu(0), "int64"), (mx.cpu(1), "int32")], ids=["cpu0-int64", "cpu1-int32"])
def test_layers_take_a_bipartite_graph_and_a_feature_pair(ctx, idtype):
    g = bipartite(idtype=idtype, device=ctx)
    assert g.device == ctx and g.idtype == np.dtype(idtype).type
    xs, xd = feats((NU, 4)), feats((NV, 4), 3)
    pair = (mx.nd.array(xs, ctx=ctx), mx.nd.array(xd, ctx=ctx))
    a = adjacency()
    d_in, d_out = np.maximum(a.sum(1), 1), np.maximum(a.sum(0), 1)

    conv = GraphConv(4, 2, norm="both", allow_zero_in_degree=True)
    conv.initialize(ctx=ctx)
    out = conv(g, pair)
    ref = (d_in ** -0.5)[:, None] * a * (d_out ** -0.5)[None, :] @ xs @ conv.weight.data(ctx).asnumpy()
    assert out.shape == (NV, 2) and out.context == ctx
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(UserError, match="no incoming edge"):
        GraphConv(4, 2)(g, pair)

    sage = SAGEConv((4, 4), 2, "mean")
    sage.initialize(ctx=ctx)
    out = sage(g, pair)
    p = lambda d: (d.weight.data(ctx).asnumpy(), d.bias.data(ctx).asnumpy())  # noqa: E731
    (ws, bs), (wn, bn) = p(sage.fc_self), p(sage.fc_neigh)
    ref = xd @ ws.T + bs + ((a / np.maximum(a.sum(1, keepdims=True), 1)) @ xs) @ wn.T + bn
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)

    gin = GINConv(None, "max", init_eps=0.1)
    gin.initialize(ctx=ctx)
    ref = 1.1 * xd + np.array([xs[U[V == v]].max(0) if (V == v).any() else np.zeros(4) for v in range(NV)])
    np.testing.assert_allclose(gin(g, pair).asnumpy(), ref, rtol=1e-5, atol=1e-5)

    gat = GATConv((4, 4), 3, num_heads=2, allow_zero_in_degree=True)
    gat.initialize(ctx=ctx)
    out = gat(g, pair)
    assert out.shape == (NV, 2, 3) and out.context == ctx
    fs = (xs @ gat.fc_src.weight.data(ctx).asnumpy().T).reshape(NU, 2, 3)
    fd = (xd @ gat.fc_dst.weight.data(ctx).asnumpy().T).reshape(NV, 2, 3)
    s = (fs * gat.attn_l.data(ctx).asnumpy()).sum(-1)[U] + (fd * gat.attn_r.data(ctx).asnumpy()).sum(-1)[V]
    s = np.where(s > 0, s, 0.2 * s)
    ref = np.zeros((NV, 2, 3))
    for v in range(NV):
        ids = np.flatnonzero(V == v)
        if len(ids):
            att = np.exp(s[ids]) / np.exp(s[ids]).sum(0)
            ref[v] = (att[:, :, None] * fs[U[ids]]).sum(0)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_create_block_builds_a_block_from_pairs():
    b = dgl.create_block((U, V), num_src_nodes=NU, num_dst_nodes=NV)
    assert b.is_block and (b.num_src_nodes(), b.num_dst_nodes()) == (NU, NV)
    b2 = dgl.create_block({("_N", "_E", "_N"): (U, V)}, {"_N": NU}, {"_N": NV}, idtype="int32")
    assert b2.idtype == np.int32 and b2.num_edges() == len(U)
