"""The quick-start job runs one loop for a fixed world and under Horovod Elastic: the same short job
on two workers, each on two CPU contexts in float16 (emulated), once with `horovodrun -np 2` and once
under an elastic launch that never resizes, trains the same steps at the same rates and logs the
same records. (The elastic path once refused float16 and several devices.)"""
import json
import os
import subprocess
import sys

import pytest

from ..conftest import HOROVODRUN, REPO, job_output
from ..distributed.test_elastic_scripts import CLI, discovery  # noqa: F401  (a fixture)

pytestmark = pytest.mark.horovod
JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_digits_job.py")


def run(launcher, out, elastic):
    out.mkdir()
    env = dict(os.environ, REPO=REPO, OUT=str(out), ELASTIC="1" if elastic else "0", OMP_NUM_THREADS="1",
               MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_EMULATE_FLOAT16="1")
    p = subprocess.run([*launcher, sys.executable, JOB], capture_output=True, text=True, timeout=400, env=env)
    assert p.returncode == 0, job_output(p)
    return json.load(open(out / "result.json")), [json.loads(line) for line in open(out / "log.jsonl")]


def test_float16_two_device_job_is_the_same_fixed_size_and_elastic(discovery, tmp_path):  # noqa: F811
    fixed, flog = run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo"], tmp_path / "fixed", False)
    elastic, elog = run([CLI, "launch", "--min-np", "2", "--max-np", "3", "--host-discovery-script", discovery[1],
                         "--network-interface", "lo", "--"], tmp_path / "elastic", True)
    assert [r["epoch"] for r in flog] == [r["epoch"] for r in elog] == [1, 2]
    for a, b in zip(flog, elog):
        assert set(a) == set(b)
        assert (a["workers"], a["global_batch"], a["lr"]) == (b["workers"], b["global_batch"], b["lr"]) == (2, 32, 0.05)
        for key in ("train_loss", "train_acc", "test_acc"):
            assert b[key] == pytest.approx(a[key], abs=1e-3), key
    # 1,438 images, 32 per global step: 44 full steps and one of the 30 left over per epoch, each at 0.05
    assert fixed["lrs"] == elastic["lrs"] == [[2, 0.05]] * 90
    assert flog[-1]["train_loss"] < flog[0]["train_loss"] and flog[-1]["test_acc"] >= 0.6
