"""The detection and segmentation recipes on two real workers (``horovodrun --gloo`` on loopback):
each job ends the same under a fixed-size launch and under an elastic launch that never resizes
(same steps, rates, losses, metrics, checkpoints and best model), and a detection job with CSER
sends fewer bytes than the dense exchange and still learns."""
import json
import os
import subprocess
import sys

import pytest

from ..conftest import HOROVODRUN, REPO, job_output, max_param_diff
from ..distributed.test_elastic_scripts import discovery, elastic  # noqa: F401  (a fixture, a helper)

pytestmark = pytest.mark.horovod
JOB = ["--canvases", "32", "--val-canvases", "16", "--epochs", "2", "--batch-size", "4", "--no-progress",
       "--seed", "5", "--warmup-epochs", "0.5"]


def fixed(script, out, *args):
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(REPO, "scripts", "cv", script), *JOB, *args, "--out", str(out)],
                       capture_output=True, text=True, timeout=500,
                       env=dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1"))
    assert p.returncode == 0, job_output(p)
    return p.stdout


def records(folder):
    return [json.loads(line) for line in open(folder / "log.jsonl")]


@pytest.mark.parametrize("script,metric", [("train_detection.py", "map"),
                                           pytest.param("train_segmentation.py", "miou", marks=pytest.mark.long)],
                         ids=["detection", "segmentation"])
def test_job_is_the_same_fixed_size_and_elastic(discovery, tmp_path, script, metric):  # noqa: F811
    a, b = tmp_path / "fixed", tmp_path / "elastic"
    said_a = fixed(script, a)
    said_b = elastic(discovery, f"cv/{script}", *JOB, "--out", str(b), timeout=500)
    assert said_a.count(f"best {metric}") == said_b.count(f"best {metric}") == 1
    assert "workers over the run: 2" in said_b
    la, lb = records(a), records(b)
    assert [r["epoch"] for r in la] == [r["epoch"] for r in lb] == [1, 2]
    for ra, rb in zip(la, lb):
        assert set(ra) == set(rb)
        # 32 canvases, 2 workers x 4 a step: 4 global steps an epoch
        assert (ra["workers"], ra["global_batch"], ra["step"]) == (rb["workers"], rb["global_batch"], rb["step"]) \
            == (2, 8, 4 * ra["epoch"])
        for key in ("lr", "train_loss", metric, "best_metric"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-4, abs=1e-6), key
    sa, sb = json.load(open(a / "state.json")), json.load(open(b / "state.json"))
    assert (sa["epoch"], sa["step"]) == (sb["epoch"], sb["step"]) == (2, 8) and sb["elastic"]
    assert max_param_diff(a / "last.rank0.params", b / "last.rank0.params") <= 1e-5
    assert max_param_diff(a / "best.params", b / "best.params") <= 1e-5
    assert (a / "summary.csv").read_text().splitlines()[0] == (b / "summary.csv").read_text().splitlines()[0]


@pytest.mark.long
def test_detection_with_cser_sends_fewer_bytes(tmp_path):
    out = tmp_path / "cser"
    said = fixed("train_detection.py", out, "--algorithm", "cser", "--compressor", "grbs", "--ratio", "32",
                 "--period", "4")
    log = records(out)
    assert "cser" in said and log[-1]["train_loss"] < log[0]["train_loss"]
    wire = sum(r["wire_bytes"] for r in log)
    dense = sum(r["dense_wire_bytes"] for r in log)
    assert 0 < wire < dense / 4, (wire, dense)
    config = json.load(open(out / "config.json"))
    assert (config["algorithm"], config["compressor"], config["workers"]) == ("cser", "grbs", 2)
