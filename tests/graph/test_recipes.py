"""Graph recipes and scripts: sampled GraphSAGE matches full-graph accuracy, scripts run with and
without horovodrun, bad input is one line."""
import os
import subprocess
import sys

import pytest

from gluon_suite.dist import LocalCommunicator
from gluon_suite.graph.recipes import train_graph_classification, train_node_classification

from ..conftest import HOROVODRUN, REPO

ENV = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1")


def test_sampled_sage_within_two_points_of_full_graph(tmp_path):
    base = {"dataset": "sbm", "model": "sage", "seed": 2, "out": str(tmp_path / "o")}
    full = train_node_classification({**base, "epochs": 60}, LocalCommunicator(), log=lambda m: None)
    sampled = train_node_classification({**base, "epochs": 30, "sampled": True, "fanouts": [5, 5],
                                         "batch_size": 20}, LocalCommunicator(), log=lambda m: None)
    assert full["test_acc"] >= 0.9
    assert sampled["test_acc"] >= full["test_acc"] - 0.02, (sampled, full)


def test_gin_recipe_on_families(tmp_path):
    res = train_graph_classification({"epochs": 40, "out": str(tmp_path)}, LocalCommunicator(), log=lambda m: None)
    assert res["test_acc"] >= 0.9
    assert (tmp_path / "log.jsonl").exists() and (tmp_path / "model.params").exists()


@pytest.mark.horovod
def test_node_script_on_two_workers(tmp_path):
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(REPO, "scripts/graph/train_node_classification.py"), "--dataset", "karate",
                        "--model", "gcn", "--epochs", "60", "--lr", "0.02", "--out", str(tmp_path / "k")],
                       env=ENV, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    acc = float(p.stdout.strip().splitlines()[-1].split()[-1])
    assert acc >= 0.9


@pytest.mark.parametrize("args, needle", [
    (["--dataset", "linqs"], "pass --data-dir"),
    (["--dataset", "linqs", "--data-dir", "/nonexistent"], "does not exist"),
])
def test_bad_input_one_line(tmp_path, args, needle):
    p = subprocess.run([sys.executable, os.path.join(REPO, "scripts/graph/train_node_classification.py"),
                        *args, "--out", str(tmp_path)], env=ENV, capture_output=True, text=True)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and needle in p.stderr
