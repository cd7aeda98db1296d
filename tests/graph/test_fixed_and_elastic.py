"""The graph recipes run one loop for a fixed world and under Horovod Elastic: the same short job on
two workers, once with `horovodrun -np 2` and once with `--elastic` (an elastic launch that never
resizes), trains the same steps and ends the same way: the same log records, checkpoint record and
parameters, averaged model, config.json and published card."""
import json
import os
import subprocess
import sys

import pytest

from ..conftest import HOROVODRUN, REPO, job_output, max_param_diff
from ..distributed.test_elastic_scripts import discovery, elastic  # noqa: F401  (a fixture and a helper)

pytestmark = pytest.mark.horovod
ARGS = ["--dataset", "sbm", "--model", "sage", "--sampled", "--batch-size", "16", "--epochs", "10", "--seed", "1"]
ENV = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1")


def fixed(out, home):
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(REPO, "scripts", "graph", "train_node_classification.py"), *ARGS,
                        "--out", str(out), "--publish", str(out / "store")],
                       capture_output=True, text=True, timeout=400, env=dict(ENV, GLUON_SUITE_HOME=str(home)))
    assert p.returncode == 0, job_output(p)


def records(path):
    return [json.loads(line) for line in open(path)]


def test_sampled_node_job_is_the_same_fixed_size_and_elastic(discovery, tmp_path):  # noqa: F811
    a, b = tmp_path / "fixed", tmp_path / "elastic"
    fixed(a, tmp_path / "home_a")
    elastic(discovery, "graph/train_node_classification.py", *ARGS, "--out", str(b), "--publish", str(b / "store"),
            env={"GLUON_SUITE_HOME": str(tmp_path / "home_b")})
    # the log: one evaluation (epoch 10) on 2 workers, the same numbers
    la, lb = records(a / "log.jsonl"), records(b / "log.jsonl")
    assert [r["epoch"] for r in la] == [r["epoch"] for r in lb] == [10]
    assert {r["workers"] for r in la + lb} == {2}
    for ra, rb in zip(la, lb):
        assert set(ra) == set(rb) == {"epoch", "loss", "test_acc", "workers", "elapsed_s"}
        assert rb["loss"] == pytest.approx(ra["loss"], rel=1e-5) and rb["test_acc"] == ra["test_acc"]
    # the checkpoint record: same position; the elastic one is marked so
    sa, sb = json.load(open(a / "state.json")), json.load(open(b / "state.json"))
    assert (sa["epoch"], sa["step"], sa["workers"]) == (sb["epoch"], sb["step"], sb["workers"]) == (10, sa["step"], 2)
    # 60 training nodes, 16 x 2 per step: 2 steps per epoch (the remainder joins the second)
    assert sa["step"] == 20 and sb["elastic"] and "elastic" not in sa
    assert max_param_diff(a / "last.rank0.params", b / "last.rank0.params") <= 1e-5
    assert max_param_diff(a / "model.params", b / "model.params") <= 1e-5
    ca, cb = json.load(open(a / "config.json")), json.load(open(b / "config.json"))
    assert {k: v for k, v in ca.items() if k not in ("elastic", "out", "publish")} == \
        {k: v for k, v in cb.items() if k not in ("elastic", "out", "publish")}
    # the published cards: the same metric and hyperparameters (but for the flag itself)
    ka, kb = json.load(open(a / "sage.json")), json.load(open(b / "sage.json"))
    assert ka["metric"] == kb["metric"] and ka["workers"] == kb["workers"] == 2
    drop = ("elastic", "out", "publish")
    assert {k: v for k, v in ka["hyperparameters"].items() if k not in drop} == \
        {k: v for k, v in kb["hyperparameters"].items() if k not in drop}
    for out in (a, b):
        assert "sage" in json.dumps(json.load(open(out / "store" / "index.json")))
