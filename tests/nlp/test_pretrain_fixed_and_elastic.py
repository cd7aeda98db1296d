"""BERT pretraining runs one loop for a fixed world and under Horovod Elastic: the same short job on
two workers, once with `horovodrun -np 2` and once under an elastic launch that never resizes,
draws the same instances at every step (with gradient accumulation, across several passes over a
small corpus) and ends the same way: the same per-step log, checkpoint record and parameters."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from ..conftest import HOROVODRUN, REPO, job_output, max_param_diff
from ..distributed.test_elastic_scripts import discovery, elastic  # noqa: F401  (a fixture and a helper)

pytestmark = pytest.mark.horovod
STEPS = 7
ARGS = ["--min-freq", "1", "--phase", f"seq_len=32,batch_size=4,accumulate=2,steps={STEPS},lr=0.01",
        "--ckpt-every", "3", "--seed", "5", "--no-progress"]


def corpus(path):
    from gluon_suite.nlp.text import write_corpus
    rs = np.random.RandomState(0)
    words = "alpha bravo charlie delta echo foxtrot golf hotel".split()
    write_corpus([[f"the film was {'good' if (d + i) % 2 else 'bad'} and {' '.join(rs.choice(words, 4))} ."
                   for i in range(4)] for d in range(12)], path)


def records(path):
    return [json.loads(line) for line in open(path)]


def test_pretraining_is_the_same_fixed_size_and_elastic(discovery, tmp_path):  # noqa: F811
    corpus(tmp_path / "corpus.txt")
    args = [*ARGS, "--corpus", str(tmp_path / "corpus.txt")]
    a, b = tmp_path / "fixed", tmp_path / "elastic"
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(REPO, "scripts", "nlp", "pretrain_bert.py"), *args, "--out", str(a)],
                       capture_output=True, text=True, timeout=400,
                       env=dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1"))
    assert p.returncode == 0, job_output(p)
    stdout = elastic(discovery, "nlp/pretrain_bert.py", *args, "--out", str(b))
    assert "phase 1 done" in stdout and "phase 1 done" in p.stdout

    # 12 documents of 4 sentences give a few dozen instances, fewer than 3 steps of 2 workers x 4 x 2:
    # the job makes several passes, in steps of 16 instances and a last one of what is left (one
    # instance left, fewer than the workers, would join the step before)
    la, lb = records(a / "log.jsonl"), records(b / "log.jsonl")
    n = int(re.search(r"phase 1: seq 32, (\d+) instances", p.stdout).group(1))
    per_pass = [16] * (n // 16) + ([n % 16] if n % 16 > 1 else [])
    per_pass[-1] += n % 16 if n % 16 == 1 else 0
    assert len(per_pass) < STEPS, n   # more than one pass in the run
    expected = (per_pass * STEPS)[:STEPS]
    assert [r["step"] for r in la] == [r["step"] for r in lb] == list(range(1, STEPS + 1))
    assert [r["global_batch"] for r in la] == [r["global_batch"] for r in lb] == expected
    for ra, rb in zip(la, lb):
        assert set(ra) == set(rb)
        assert ra["workers"] == rb["workers"] == 2 and ra["phase"] == rb["phase"] == 1
        for key in ("lr", "mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc", "loss"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-5, abs=1e-7), (ra["step"], key)
    assert la[-1]["mlm_loss"] < la[0]["mlm_loss"]

    # the checkpoint record: phase 1 complete (the next phase at step 0), the same history
    sa, sb = json.load(open(a / "state.json")), json.load(open(b / "state.json"))
    assert (sa["phase"], sa["step"], sa["workers"]) == (sb["phase"], sb["step"], sb["workers"]) == (1, 0, 2)
    assert sb["elastic"] and "elastic" not in sa
    assert [r["step"] for r in sa["history"]] == [r["step"] for r in sb["history"]] == list(range(1, STEPS + 1))
    assert max_param_diff(a / "ckpt.rank0.params", b / "ckpt.rank0.params") <= 1e-5
    ca, cb = json.load(open(a / "config.json")), json.load(open(b / "config.json"))
    drop = ("elastic", "out")
    assert {k: v for k, v in ca.items() if k not in drop} == {k: v for k, v in cb.items() if k not in drop}
