"""The graph checkpoints of the zoo load offline with a fresh cache, through get_model alone, and
score what their cards state on the embedded data they were trained on."""
import json
import os

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.graph.batch import batch
from gluon_suite.graph.recipes import graph_dataset, node_dataset
from gluon_suite.model_zoo import get_model, list_models

from ..conftest import REPO


def card_of(name):
    with open(os.path.join(REPO, "model_zoo", f"{name}.json")) as f:
        return json.load(f)


@pytest.fixture
def offline_fresh_home(tmp_path, monkeypatch):
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)


@pytest.mark.parametrize("name", ["gcn_sbm", "gat_sbm"])
def test_node_classifiers_from_the_zoo(offline_fresh_home, name):
    assert name in list_models(pretrained=True)
    card = card_of(name)
    hp = card["hyperparameters"]
    g, _, test, _ = node_dataset({"dataset": hp["dataset"], "seed": hp["seed"], "data_dir": None})
    g = g.add_self_loop()
    net = get_model(name, pretrained=True)
    pred = net(g, g.ndata["feat"]).argmax(axis=1).asnumpy()
    acc = float((pred[test] == g.ndata["label"].asnumpy()[test]).mean())
    assert abs(acc - card["metric"]["value"]) < 1e-9
    assert os.path.exists(os.path.join(REPO, card["training_log"]))


def test_graph_classifier_from_the_zoo(offline_fresh_home):
    card = card_of("gin_families")
    hp = card["hyperparameters"]
    graphs, labels, _ = graph_dataset({"dataset": hp["dataset"], "seed": hp["seed"], "data_dir": None})
    test = np.random.RandomState(hp["seed"]).permutation(len(graphs))[int(0.75 * len(graphs)):]
    net = get_model("gin_families", pretrained=True)
    bg = batch([graphs[j] for j in test])
    acc = float((net(bg, bg.ndata["feat"]).argmax(axis=1).asnumpy() == labels[test]).mean())
    assert abs(acc - card["metric"]["value"]) < 1e-9
