"""SIGINT/SIGTERM during a training script: one line naming where it stopped, exit 130/143, no
traceback, nothing half-written, and ``--resume auto`` ends with the same model as a run that was
never interrupted (vision, graphs, language). The signal is sent once the run has committed a
checkpoint (a condition on state.json, not a sleep)."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import mxnet as mx
import numpy as np
import pytest

from .conftest import REPO

ENV = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO)
ENV.pop("GLUON_SUITE_VERBOSE", None)
LINE = re.compile(r"^interrupted at (epoch|phase) (\d+) step (\d+); resume with --resume auto$")


def script(*parts):
    return [sys.executable, os.path.join(REPO, "scripts", *parts)]


def committed(out, key, least):
    try:
        return json.loads((out / "state.json").read_text()).get(key, 0) >= least
    except (OSError, ValueError):   # not written yet (the commit is atomic: never half a file)
        return False


def interrupt(cmd, out, sig, key, least, timeout=300):
    """Start ``cmd``, wait until its state.json has ``key`` >= ``least``, send ``sig``; returns the
    finished process's (returncode, stdout, stderr)."""
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + timeout
    while not committed(out, key, least):
        assert proc.poll() is None, "the run ended before it could be interrupted:\n" + proc.stderr.read()
        assert time.time() < deadline, "no checkpoint was committed in time"
        time.sleep(0.02)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=timeout)
    return proc.returncode, stdout, stderr


def params_of(path):
    return {k: v.asnumpy() for k, v in mx.nd.load(str(path)).items()}


def assert_same_model(a, b):
    pa, pb = params_of(a), params_of(b)
    assert pa.keys() == pb.keys()
    assert max(float(np.abs(pa[k] - pb[k]).max()) for k in pa) <= 1e-6


def assert_clean_stop(rc, stderr, sig, out):
    assert rc == 128 + sig, stderr[-2000:]
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and LINE.match(lines[0]), stderr[-2000:]
    assert not [f for f in os.listdir(out) if f.startswith(".tmp-")]   # nothing half-written
    return LINE.match(lines[0])


CASES = {
    "cv": (("cv", "train_classification.py"),
           ["--model", "resnet14_digits", "--image-size", "16", "--batch-size", "64", "--no-progress",
            "--epochs", "4", "--lr", "0.05", "--seed", "3"], "epoch", 1, "last.rank0.params"),
    "graph": (("graph", "train_node_classification.py"),
              ["--dataset", "sbm", "--model", "gcn", "--epochs", "300", "--seed", "2"],
              "epoch", 20, "last.rank0.params"),
    "nlp": (("nlp", "pretrain_bert.py"),
            ["--phase", "seq_len=32,batch_size=16,steps=40,lr=0.02,warmup=0.1,constant=0.3",
             "--ckpt-every", "10", "--no-progress", "--seed", "4"], "step", 10, "ckpt.rank0.params"),
}


@pytest.mark.parametrize("domain,sig", [("cv", signal.SIGINT), ("graph", signal.SIGTERM),
                                        ("nlp", signal.SIGINT)])
def test_interrupted_run_resumes_to_the_uninterrupted_result(tmp_path, domain, sig):
    parts, args, key, least, params = CASES[domain]
    full, cut = tmp_path / "full", tmp_path / "cut"
    p = subprocess.run(script(*parts) + args + ["--out", str(full)], env=ENV, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]

    rc, _, stderr = interrupt(script(*parts) + args + ["--out", str(cut)], cut, sig, key, least)
    m = assert_clean_stop(rc, stderr, sig, cut)
    state = json.loads((cut / "state.json").read_text())
    if domain == "nlp":
        assert m.group(1) == "phase" and m.group(2) == "1" and int(m.group(3)) >= state["step"]
    else:
        assert m.group(1) == "epoch" and int(m.group(2)) in (state["epoch"], state["epoch"] + 1)

    p = subprocess.run(script(*parts) + args + ["--out", str(cut), "--resume", "auto"], env=ENV,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "resumed from" in p.stdout
    assert_same_model(full / params, cut / params)
    logged = [json.loads(line) for line in (cut / "log.jsonl").read_text().splitlines()]
    reference = [json.loads(line) for line in (full / "log.jsonl").read_text().splitlines()]
    assert [r.get("epoch", r.get("step")) for r in logged] == [r.get("epoch", r.get("step")) for r in reference]


def test_a_script_without_checkpoints_says_so(tmp_path):
    """train_digits.py keeps no checkpoints: the line says what to do instead of --resume."""
    log = tmp_path / "log.jsonl"
    proc = subprocess.Popen(script("cv", "train_digits.py") + ["--epochs", "200", "--no-progress",
                                                                "--out", str(tmp_path)],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while not (log.exists() and log.read_text().count("\n") >= 1):
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130 and "Traceback" not in stderr
    assert re.match(r"^interrupted at epoch \d+ step \d+; train_digits.py keeps no checkpoints",
                    stderr.strip().splitlines()[-1]), stderr
