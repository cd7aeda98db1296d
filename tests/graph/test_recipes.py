"""Graph recipes and scripts: sampled GraphSAGE matches full-graph accuracy, scripts run with and
without horovodrun, bad input is one line."""
import json
import os
import subprocess
import sys

import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.graph.recipes import train_graph_classification, train_node_classification
from gluon_suite.utils import UserError

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


def test_both_recipes_save_their_configuration_at_the_start(tmp_path):
    """config.json is in the run folder before the first epoch ends (a stopped run keeps it), with
    the keys of the flags, the defaults filled in and the worker count."""
    quiet = lambda m: None  # noqa: E731
    train_graph_classification({"epochs": 30, "stop_after_epochs": 1, "hidden": 8, "out": str(tmp_path / "g")},
                               LocalCommunicator(), log=quiet)
    saved = json.loads((tmp_path / "g" / "config.json").read_text())
    assert saved["hidden"] == 8 and saved["epochs"] == 30 and saved["stop_after_epochs"] == 1
    assert saved["model"] == "gin" and saved["batch_size"] == 20 and saved["workers"] == 1
    train_node_classification({"dataset": "karate", "epochs": 20, "stop_after_epochs": 1, "out": str(tmp_path / "n")},
                              LocalCommunicator(), log=quiet)
    saved = json.loads((tmp_path / "n" / "config.json").read_text())
    assert saved["dataset"] == "karate" and saved["model"] == "gcn" and saved["fanouts"] == [10, 10]


def test_resume_refuses_a_run_of_another_model(tmp_path):
    quiet = lambda m: None  # noqa: E731
    base = {"dataset": "karate", "epochs": 20, "stop_after_epochs": 1, "out": str(tmp_path)}
    train_node_classification(base, LocalCommunicator(), log=quiet)
    with pytest.raises(UserError, match="is a run of model 'gcn', not 'gat'"):
        train_node_classification({**base, "model": "gat", "resume": "auto"}, LocalCommunicator(), log=quiet)


@pytest.mark.parametrize("recipe,script", [(train_node_classification, "train_node_classification.py"),
                                           (train_graph_classification, "train_graph_classification.py")])
def test_elastic_outside_an_elastic_launch_names_the_script(recipe, script, tmp_path, monkeypatch):
    monkeypatch.delenv("HOROVOD_ELASTIC", raising=False)
    with pytest.raises(UserError, match=f"python scripts/graph/{script} --elastic"):
        recipe({"elastic": True, "out": str(tmp_path)}, LocalCommunicator(), log=lambda m: None)


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
    (["--dataset", "linqs"], "give --data-dir"),
    (["--dataset", "linqs", "--data-dir", "/nonexistent"], "does not exist"),
])
def test_bad_input_one_line(tmp_path, args, needle):
    p = subprocess.run([sys.executable, os.path.join(REPO, "scripts/graph/train_node_classification.py"),
                        *args, "--out", str(tmp_path)], env=ENV, capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and needle in p.stderr


@pytest.mark.parametrize("task, config", [
    ("node", {"dataset": "sbm", "model": "gat", "hidden": 4, "epochs": 12}),
    ("node", {"dataset": "sbm", "model": "sage", "sampled": True, "fanouts": [3, 3], "batch_size": 30, "epochs": 4}),
    ("graph", {"epochs": 12, "hidden": 8}),
])
def test_resumed_run_equals_uninterrupted_run(tmp_path, task, config):
    """Stop after k epochs, resume from the checkpoint: the final parameters and the logged history
    are those of a run that was never interrupted."""
    import mxnet as mx
    import numpy as np
    train = train_node_classification if task == "node" else train_graph_classification
    quiet = {"log": lambda m: None}
    config = {**config, "seed": 3}
    full = train({**config, "out": str(tmp_path / "full")}, LocalCommunicator(), **quiet)
    cut = tmp_path / "cut"
    k = config["epochs"] // 2 - 1
    stopped = train({**config, "out": str(cut), "stop_after_epochs": k}, LocalCommunicator(), **quiet)
    assert json.loads((cut / "state.json").read_text())["epoch"] == k
    assert len(stopped["history"]) < len(full["history"])
    messages = []
    resumed = train({**config, "out": str(cut), "resume": "auto"}, LocalCommunicator(), log=messages.append)
    assert messages[0] == f"resumed from {cut} after epoch {k}"
    for name in ("last.rank0.params", "model.params"):
        a, b = mx.nd.load(str(tmp_path / "full" / name)), mx.nd.load(str(cut / name))
        assert a.keys() == b.keys()
        diff = max(float(np.abs(a[p].asnumpy() - b[p].asnumpy()).max()) for p in a)
        assert diff <= 1e-6, (name, diff)
    strip = lambda h: [{k: v for k, v in r.items() if k != "elapsed_s"} for r in h]  # noqa: E731
    assert strip(resumed["history"]) == strip(full["history"])
    logged = [json.loads(line) for line in (cut / "log.jsonl").read_text().splitlines()]
    assert strip(logged) == strip(full["history"])  # no evaluation logged twice or lost


def test_resume_with_another_worker_count_is_one_line(tmp_path):
    run = tmp_path / "run"
    train_node_classification({"dataset": "karate", "epochs": 2, "out": str(run)}, LocalCommunicator(),
                              log=lambda m: None)
    state = json.loads((run / "state.json").read_text())
    (run / "state.json").write_text(json.dumps({**state, "workers": 2}))   # as if written by 2 workers
    with pytest.raises(UserError) as err:
        train_node_classification({"dataset": "karate", "epochs": 4, "out": str(tmp_path / "other"),
                                   "resume": str(run)}, LocalCommunicator(), log=lambda m: None)
    assert str(err.value) == f"{run} was written by 2 worker(s); resume it with the same number (this job has 1)"
