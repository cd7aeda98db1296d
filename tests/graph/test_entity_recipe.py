"""The R-GCN entity-classification recipe (gluon_suite/graph/hetero_recipe.py,
scripts/graph/train_entity_classification.py): the zoo's rgcn_citation loads offline and classifies
the held-out papers with its card's accuracy (counted here from its predictions and the labels);
two Horovod workers train the same model as one process does; bad input is one line."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gluon_suite.graph.hetero_recipe import _split
from gluon_suite.graph.link_data import citation_heterograph
from gluon_suite.model_zoo import get_model

from ..conftest import HOROVODRUN, REPO

SCRIPT = os.path.join(REPO, "scripts", "graph", "train_entity_classification.py")
ENV = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_QUIET="1")


def test_the_zoo_rgcn_classifies_the_held_out_papers_with_its_card_s_accuracy(tmp_path, monkeypatch):
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    card = json.load(open(os.path.join(REPO, "model_zoo", "rgcn_citation.json")))
    g, names = citation_heterograph()
    labels = g.nodes["paper"].data["label"].asnumpy().astype(int)
    _, test = _split(labels, len(names), 20, 0)
    assert len(test) == 180 - 3 * 20
    net = get_model("rgcn_citation", pretrained=True)
    pred = net(g)["paper"].argmax(axis=1).asnumpy().astype(int)
    correct = sum(int(pred[i] == labels[i]) for i in test)
    assert abs(correct / len(test) - card["metric"]["value"]) <= card["tolerance"]


def _run(*args, np_=1):
    cmd = [sys.executable, SCRIPT, *args]
    if np_ > 1:
        cmd = [HOROVODRUN, "-np", str(np_), "-H", f"localhost:{np_}", "--gloo", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=600, cwd=REPO)


@pytest.mark.long
@pytest.mark.horovod
def test_two_workers_train_as_one_process_does(tmp_path):
    # full-graph training: each worker holds the whole graph and its share of the training papers,
    # the gradients averaged, so the two runs see the same loss and accuracy
    one = _run("--epochs", "10", "--out", str(tmp_path / "one"))
    two = _run("--epochs", "10", "--out", str(tmp_path / "two"), np_=2)
    assert one.returncode == 0 and two.returncode == 0, one.stderr[-2000:] + two.stderr[-2000:]
    a = json.loads((tmp_path / "one" / "state.json").read_text())["history"][-1]
    b = json.loads((tmp_path / "two" / "state.json").read_text())["history"][-1]
    assert b["workers"] == 2 and abs(a["test_acc"] - b["test_acc"]) <= 1 / 120 + 1e-9
    assert abs(a["loss"] - b["loss"]) <= 0.05 * max(a["loss"], 1e-3) + 1e-4


def test_bad_input_is_one_line(tmp_path):
    for args, words in ((["--category", "word"], ["--category word", "paper"]),
                        (["--dataset", "tsv"], ["--data-dir"]),
                        (["--train-per-class", "100"], ["none is left"])):
        p = _run(*args, "--epochs", "1", "--out", str(tmp_path / "x"))
        assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
        last = p.stderr.strip().splitlines()[-1]
        assert all(w in last for w in words), last
