"""Long end-to-end checks, run by `make test-long` (not by `make test`)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from .conftest import HOROVODRUN, REPO

ENV = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_QUIET="1")


@pytest.mark.long
@pytest.mark.horovod
def test_demo_pipeline_trains_publishes_serves_and_reloads(tmp_path):
    """What `make demo` does, in a temporary folder: >= 0.97 for the reloaded model and a byte
    saving of more than 10x against dense allreduce."""
    env = dict(ENV, GLUON_SUITE_HOME=str(tmp_path / "home"))
    out = tmp_path / "demo"
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(REPO, "scripts/cv/train_classification.py"),
                        "--config", os.path.join(REPO, "configs/cv/digits_resnest14_cser.yaml"),
                        "--out", str(out), "--publish", str(out / "store")],
                       env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    # readable output: no oneDNN notice, no carriage-return bar garbage, one line per epoch from rank 0
    shown = p.stdout + p.stderr
    assert "MKLDNN" not in shown and "\r" not in shown
    assert len(re.findall(r"^\[0\]<stdout>:epoch +\d+ +loss", p.stdout, re.M)) == 15
    assert not re.search(r"^\[1\]<stderr>:epoch", shown, re.M)        # rank 1 shows no progress
    assert all(re.match(r"^\[\d\]<std(out|err)>:", line) for line in p.stdout.splitlines() if line)
    saving = float(re.search(r"\(([\d.]+)x less\)", p.stdout).group(1))
    assert saving > 10
    e = subprocess.run([sys.executable, os.path.join(REPO, "scripts/cv/evaluate.py"), "--model",
                        "resnest14_digits", "--image-size", "16", "--serve", str(out / "store")],
                       env=env, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert e.returncode == 0, e.stderr[-2000:]
    acc = float(re.search(r"test accuracy ([\d.]+)", e.stdout).group(1))
    assert acc >= 0.97, e.stdout


@pytest.mark.long
def test_longer_pretraining_learns_beyond_unigram_statistics(tmp_path):
    """300 steps at sequence length 64: the MLM loss falls to under 60% of its start (the unigram
    level of this corpus is about 70%)."""
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    res = pretrain_bert({"out": str(tmp_path / "b"), "progress": False, "dropout": 0.0, "ckpt_every": 10 ** 6,
                         "phases": [{"seq_len": 64, "batch_size": 32, "steps": 300, "lr": 0.02,
                                     "warmup": 0.1, "constant": 0.3}]}, LocalCommunicator(), log=lambda m: None)
    h = res["history"]
    assert np.mean([r["mlm_loss"] for r in h[-10:]]) <= 0.6 * h[0]["mlm_loss"]
    assert np.mean([r["mlm_acc"] for r in h[-10:]]) > 0.2
