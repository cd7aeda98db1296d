"""GNN layers learn the standard small tasks (graph classification with GIN: tests/graph/
test_recipes.py); batching, readouts and data loaders behave."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.graph import Graph, GraphError, batch, max_nodes, mean_nodes, sum_nodes, unbatch
from gluon_suite.graph.data import GINDataset, karate_club, load_linqs, load_tu, register_data_args, sbm_graph
from gluon_suite.graph.nn import GATConv, GraphConv, SAGEConv


def _train_nodes(model, g, feat, labels, train_idx, epochs, lr=0.01):
    model.initialize(mx.init.Xavier(), force_reinit=True)
    tr = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": lr, "wd": 5e-4})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    idx = mx.nd.array(train_idx)
    for _ in range(epochs):
        with autograd.record():
            out = model(g, feat)
            loss = loss_fn(mx.nd.take(out, idx), mx.nd.take(labels, idx)).mean()
        loss.backward()
        tr.step(1)
    return model(g, feat).argmax(axis=1).asnumpy()


class TwoLayer(gluon.Block):
    def __init__(self, kind, in_f, hid, out_f):
        super().__init__()
        with self.name_scope():
            if kind == "gcn":
                self.l1, self.l2 = GraphConv(in_f, hid, activation=mx.nd.relu), GraphConv(hid, out_f)
            elif kind == "gat":
                self.l1, self.l2 = GATConv(in_f, hid, 4, activation=lambda x: mx.nd.LeakyReLU(x, act_type="elu")), GATConv(hid * 4, out_f, 1)
            else:
                self.l1, self.l2 = SAGEConv(in_f, hid, "mean", activation=mx.nd.relu), SAGEConv(hid, out_f, "mean")
        self.kind = kind

    def forward(self, g, x):
        h = self.l1(g, x)
        if self.kind == "gat":
            h = h.reshape((h.shape[0], -1))
        h = self.l2(g, h)
        return h.reshape((h.shape[0], -1))


def test_gcn_on_karate_with_one_label_per_faction():
    mx.random.seed(0)
    g = karate_club().add_self_loop()
    labels = g.ndata["label"]
    pred = _train_nodes(TwoLayer("gcn", 34, 16, 2), g, g.ndata["feat"], labels, [0, 33], 60, lr=0.02)
    acc = (pred == labels.asnumpy()).mean()
    assert acc >= 0.9, acc


@pytest.mark.parametrize("kind", ["gcn", "gat", "sage"])
def test_node_classification_on_noisy_sbm(kind):
    mx.random.seed(1)
    g = sbm_graph(seed=3, noise=1.0)
    if kind != "sage":
        g = g.add_self_loop()
    n = g.num_nodes()
    rs = np.random.RandomState(0)
    perm = rs.permutation(n)
    train, test = perm[:60], perm[150:]
    labels = g.ndata["label"]
    pred = _train_nodes(TwoLayer(kind, 16, 16, 3), g, g.ndata["feat"], labels, train, 80)
    acc = (pred[test] == labels.asnumpy()[test]).mean()
    assert acc >= 0.9, (kind, acc)


def test_batch_unbatch_and_readouts():
    g1 = Graph(([0, 1], [1, 2]), num_nodes=3)
    g2 = Graph(([0], [1]), num_nodes=2)
    g1.ndata["x"] = mx.nd.array([[1.0], [2], [3]])
    g2.ndata["x"] = mx.nd.array([[10.0], [-4]])
    g1.edata["w"], g2.edata["w"] = mx.nd.array([1.0, 2]), mx.nd.array([3.0])
    bg = batch([g1, g2])
    assert bg.num_nodes() == 5 and bg.edges()[0].asnumpy().tolist() == [0, 1, 3]
    assert sum_nodes(bg, "x").asnumpy().ravel().tolist() == [6, 6]
    assert mean_nodes(bg, "x").asnumpy().ravel().tolist() == [2, 3]
    assert max_nodes(bg, "x").asnumpy().ravel().tolist() == [3, 10]
    a, b = unbatch(bg)
    assert a.edges()[1].asnumpy().tolist() == [1, 2] and b.edges()[0].asnumpy().tolist() == [0]
    assert b.ndata["x"].asnumpy().ravel().tolist() == [10, -4] and b.edata["w"].asnumpy().tolist() == [3]


def test_zero_in_degree_is_refused_with_the_fix():
    g = Graph(([0, 1], [1, 2]), num_nodes=3)
    conv = GraphConv(2, 2)
    conv.initialize()
    with pytest.raises(GraphError, match="add self-loops"):
        conv(g, mx.nd.ones((3, 2)))
    conv2 = GraphConv(2, 2, allow_zero_in_degree=True)
    conv2.initialize()
    assert conv2(g, mx.nd.ones((3, 2))).shape == (3, 2)


def test_linqs_loader_and_errors(tmp_path):
    (tmp_path / "cora.content").write_text("p1 1 0 1 A\np2 0 1 0 B\np3 1 1 0 A\n")
    (tmp_path / "cora.cites").write_text("p1 p2\np3 p1\np9 p1\n")
    with pytest.raises(GraphError, match=r"cora.cites:3: paper p9 is not in .*cora.content"):
        load_linqs(str(tmp_path))
    g, classes = load_linqs(str(tmp_path), dangling="drop")
    assert classes == ["A", "B"] and g.num_nodes() == 3 and g.num_edges() == 4
    assert g.ndata["feat"].shape == (3, 3) and g.ndata["label"].asnumpy().tolist() == [0, 1, 0]
    (tmp_path / "cora.content").write_text("p1 1 0 1 A\np2 0 1 B\n")
    with pytest.raises(GraphError, match=r"cora.content:2: 2 attributes, the first line had 3"):
        load_linqs(str(tmp_path))
    # a NaN or an infinity among the attributes would train to NaN weights without a word
    for bad in ("nan", "-inf", "Infinity"):
        (tmp_path / "cora.content").write_text(f"p1 1 0 1 A\np2 0 {bad} 0 B\np3 1 1 0 A\n")
        with pytest.raises(GraphError, match=rf"cora.content:2: attribute '{bad}' is not a finite number"):
            load_linqs(str(tmp_path))


def test_tu_loader_and_errors(tmp_path):
    d = tmp_path
    (d / "T_A.txt").write_text("1, 2\n2, 1\n3, 4\n4, 3\n4, 5\n5, 4\n")
    (d / "T_graph_indicator.txt").write_text("1\n1\n2\n2\n2\n")
    (d / "T_graph_labels.txt").write_text("1\n-1\n")
    (d / "T_node_labels.txt").write_text("0\n1\n0\n0\n2\n")
    graphs, y = load_tu(str(d), "T")
    assert [g.num_nodes() for g in graphs] == [2, 3] and [g.num_edges() for g in graphs] == [2, 4]
    assert y.tolist() == [1, 0] and graphs[1].ndata["feat"].shape == (3, 3)
    (d / "T_A.txt").write_text("1, 2\n2; 1\n")
    with pytest.raises(GraphError, match=r"T_A.txt:2: expected 'i, j'"):
        load_tu(str(d), "T")
    (d / "T_A.txt").write_text("1, 2\n2, 9\n")
    with pytest.raises(GraphError, match=r"T_A.txt:2: node id out of range 1..5"):
        load_tu(str(d), "T")
    for bad in ("nan", "inf"):
        (d / "T_A.txt").write_text(f"1, 2\n2, {bad}\n")
        with pytest.raises(GraphError, match=r"T_A.txt:2: expected integers"):
            load_tu(str(d), "T")


def test_gin_dataset_reads_like_dgls(tmp_path):
    """DGL's ``GINDataset(name, self_loop, degree_as_nlabel)``: the embedded 'families', a TU folder
    by ``raw_dir``, self-loops on request, degree one-hots as ``attr``; ``node_attr_schemes``."""
    plain, looped = GINDataset("families", False), GINDataset("families", True)
    g, label = plain[0]
    assert len(plain) == 160 and plain.gclasses == 4 and plain.dim_nfeats == 1 and label.dtype == np.int64
    assert looped[0][0].num_edges() == g.num_edges() + g.num_nodes()
    assert g.node_attr_schemes()["attr"] == ((1,), np.float32) and g.edge_attr_schemes() == {}
    tags = GINDataset("families", False, degree_as_nlabel=True)
    deg = tags[1][0].in_degrees().asnumpy()
    assert (tags[1][0].ndata["attr"].asnumpy().argmax(1) == deg).all()
    with pytest.raises(GraphError, match=r"GINDataset\('MUTAG'\): the embedded data set is 'families'.*raw_dir"):
        GINDataset("MUTAG", True)
    (tmp_path / "T_A.txt").write_text("1, 2\n2, 1\n")
    (tmp_path / "T_graph_indicator.txt").write_text("1\n1\n")
    (tmp_path / "T_graph_labels.txt").write_text("0\n")
    assert GINDataset("T", True, raw_dir=str(tmp_path))[0][0].num_edges() == 4


def test_register_data_args_adds_dataset():
    import argparse
    parser = argparse.ArgumentParser()
    register_data_args(parser)
    assert parser.parse_args(["--dataset", "sbm"]).dataset == "sbm"
