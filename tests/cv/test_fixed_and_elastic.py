"""The vision jobs run one loop for a fixed world and under Horovod Elastic: the same short job on two
workers, once with `horovodrun -np 2` and once under an elastic launch that never resizes, trains the
same steps at the same rates and ends the same way. The quick-start job does so on two CPU contexts
per worker in float16 (emulated; its elastic path once refused both), the classification recipe
with its checkpoints, best model, published card and a stop after the first epoch (which its
elastic path once ignored)."""
import json
import os
import subprocess
import sys

import pytest

from ..conftest import HOROVODRUN, REPO, job_output, max_param_diff
from ..distributed.test_elastic_scripts import discovery, elastic, launcher  # noqa: F401  (a fixture, helpers)

pytestmark = pytest.mark.horovod
JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_digits_job.py")


def run(launcher, out, elastic):
    out.mkdir()
    env = dict(os.environ, REPO=REPO, OUT=str(out), ELASTIC="1" if elastic else "0", OMP_NUM_THREADS="1",
               MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_EMULATE_FLOAT16="1")
    p = subprocess.run([*launcher, sys.executable, JOB], capture_output=True, text=True, timeout=400, env=env)
    assert p.returncode == 0, job_output(p)
    return json.load(open(out / "result.json")), [json.loads(line) for line in open(out / "log.jsonl")]


@pytest.mark.long   # make test's time budget; the long tier runs it
def test_float16_two_device_job_is_the_same_fixed_size_and_elastic(discovery, tmp_path):  # noqa: F811
    fixed, flog = run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo"], tmp_path / "fixed", False)
    elastic, elog = run(launcher(discovery[1]), tmp_path / "elastic", True)
    assert [r["epoch"] for r in flog] == [r["epoch"] for r in elog] == [1, 2]
    for a, b in zip(flog, elog):
        assert set(a) == set(b)
        assert (a["workers"], a["global_batch"], a["lr"]) == (b["workers"], b["global_batch"], b["lr"]) == (2, 32, 0.05)
        for key in ("train_loss", "train_acc", "test_acc"):
            assert b[key] == pytest.approx(a[key], abs=1e-3), key
    # 1,438 images, 32 per global step: 44 full steps and one of the 30 left over per epoch, each at 0.05
    assert fixed["lrs"] == elastic["lrs"] == [[2, 0.05]] * 90
    assert flog[-1]["train_loss"] < flog[0]["train_loss"] and flog[-1]["test_acc"] >= 0.6


CLS = ["--model", "digits_cnn", "--image-size", "16", "--epochs", "3", "--stop-after-epochs", "2", "--lr", "0.1", "--warmup-epochs", "0.5",
       "--batch-size", "32", "--mixup", "0.2", "--no-progress", "--seed", "4"]


def test_classification_job_is_the_same_fixed_size_and_elastic(discovery, tmp_path):  # noqa: F811
    a, b = tmp_path / "fixed", tmp_path / "elastic"
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(REPO, "scripts", "cv", "train_classification.py"), *CLS, "--out", str(a),
                        "--publish", str(a / "store")], capture_output=True, text=True, timeout=400,
                       env=dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
                                GLUON_SUITE_HOME=str(tmp_path / "home_a")))
    assert p.returncode == 0, job_output(p)
    said = elastic(discovery, "cv/train_classification.py", *CLS, "--out", str(b), "--publish", str(b / "store"),
                   env={"GLUON_SUITE_HOME": str(tmp_path / "home_b")})
    assert "workers over the run: 2; best test accuracy" in said
    la = [json.loads(line) for line in open(a / "log.jsonl")]
    lb = [json.loads(line) for line in open(b / "log.jsonl")]
    assert [r["epoch"] for r in la] == [r["epoch"] for r in lb] == [1, 2]      # stopped after 2 of 3
    for ra, rb in zip(la, lb):
        assert set(ra) == set(rb)
        # 1,438 images, 64 per global step: 22 steps and one of the 30 left over per epoch
        assert (ra["workers"], ra["global_batch"], ra["step"]) == (rb["workers"], rb["global_batch"], rb["step"])
        assert ra["step"] == 23 * ra["epoch"] and ra["workers"] == 2 and ra["global_batch"] == 64
        for key in ("lr", "train_loss", "train_acc", "test_acc", "best_acc"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-4, abs=1e-6), key
    assert lb[-1]["train_loss"] < lb[0]["train_loss"] and (b / "best.params").exists()
    assert (a / "summary.csv").read_text().splitlines()[0] == (b / "summary.csv").read_text().splitlines()[0]
    sa, sb = json.load(open(a / "state.json")), json.load(open(b / "state.json"))
    assert (sa["epoch"], sa["step"]) == (sb["epoch"], sb["step"]) == (2, 46) and sb["elastic"]
    assert sb["best_acc"] == pytest.approx(sa["best_acc"], rel=1e-4)
    assert max_param_diff(a / "last.rank0.params", b / "last.rank0.params") <= 1e-5
    assert max_param_diff(a / "best.params", b / "best.params") <= 1e-5
    ka, kb = json.load(open(a / "digits_cnn.json")), json.load(open(b / "digits_cnn.json"))
    assert kb["metric"]["value"] == pytest.approx(ka["metric"]["value"], rel=1e-4) and ka["workers"] == kb["workers"] == 2
    drop = ("elastic", "out", "publish")
    assert {k: v for k, v in ka["hyperparameters"].items() if k not in drop} == \
        {k: v for k, v in kb["hyperparameters"].items() if k not in drop}
