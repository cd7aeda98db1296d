"""The classification recipe and script: outputs, exact resume after SIGKILL, bad input."""
import json
import os
import signal
import subprocess
import sys
import time

import cv2
import mxnet as mx
import numpy as np
import pytest

from gluon_suite.cv.recipe import ClassificationConfig
from gluon_suite.utils import UserError

from ..conftest import HOROVODRUN, REPO

SCRIPT = os.path.join(REPO, "scripts", "cv", "train_classification.py")
ENV = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
           MXNET_ENGINE_TYPE="NaiveEngine")
TINY = ["--model", "resnet14_digits", "--image-size", "16", "--batch-size", "64", "--no-progress",
        "--algorithm", "cser", "--compressor", "grbs", "--ratio", "8", "--period", "2",
        "--label-smoothing", "0.1", "--mixup", "0.2", "--mixup-off-epochs", "1", "--lr", "0.05"]


def run(args, **kw):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, env=ENV,
                          timeout=600, **kw)


def test_outputs_logs_and_checkpoints(tmp_path):
    out = tmp_path / "run"
    p = run(TINY + ["--epochs", "2", "--out", str(out), "--profile-comm", "--link-mbit", "1000"])
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [json.loads(l) for l in (out / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in lines] == [1, 2]
    # the measured side: synchronisation time, scaling factor, link utilisation
    assert 0 <= lines[0]["sync_s"] <= lines[0]["epoch_time_s"]
    assert 0 < lines[0]["measured_scaling_factor"] <= 1 and lines[0]["link_utilisation"] >= 0
    assert {"train_loss", "test_acc", "lr", "wire_bytes", "samples_per_s"} <= set(lines[0])
    # one worker is its own average: its running BatchNorm statistics are evaluated as they are
    assert [r["test_bn"] for r in lines] == ["none", "none"]
    assert (out / "summary.csv").read_text().splitlines()[0].startswith("epoch,")
    cfg = json.loads((out / "config.json").read_text())
    # one worker: nothing to send, so the grbs compressor asked for is not applied, and the log says so
    assert cfg["algorithm"] == "cser" and cfg["compressor"] == "none" and cfg["ratio"] is None
    assert cfg["workers"] == 1 and "note: one worker: nothing is communicated" in p.stdout
    for f in ("best.params", "last.rank0.params", "last.rank0.states", "state.json"):
        assert (out / f).exists(), f
    assert "best test accuracy" in p.stdout


def test_resume_after_sigkill_equals_uninterrupted_run(tmp_path):
    args = TINY + ["--epochs", "3", "--seed", "5"]
    full = tmp_path / "full"
    assert run(args + ["--out", str(full)]).returncode == 0

    # the run to kill cannot get past epoch 2 (--stop-after-epochs 2 ends it there, resumably), so
    # however late the kill lands, at least one of the 3 epochs is left for the resume to do
    cut = tmp_path / "cut"
    proc = subprocess.Popen([sys.executable, SCRIPT, *args, "--out", str(cut), "--stop-after-epochs", "2"],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    st, guard = cut / "state.json", time.time() + 600
    while proc.poll() is None and not (st.exists() and json.loads(st.read_text())["epoch"] >= 1):
        assert time.time() < guard, "no epoch was committed in 10 minutes"   # a hung run, not a slow one
        time.sleep(0.05)            # state.json is committed atomically: never half a file
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=300)
    done = json.loads(st.read_text())["epoch"]
    assert done in (1, 2)
    p = run(args + ["--out", str(cut), "--resume", "auto"])
    assert p.returncode == 0, p.stderr[-2000:]
    assert f"resumed from {cut} after epoch {done}" in p.stdout
    a = mx.nd.load(str(full / "last.rank0.params"))
    b = mx.nd.load(str(cut / "last.rank0.params"))
    assert a.keys() == b.keys()
    diff = max(float(np.abs(a[k].asnumpy() - b[k].asnumpy()).max()) for k in a)
    assert diff <= 1e-6
    epochs = [json.loads(l)["epoch"] for l in (cut / "log.jsonl").read_text().splitlines()]
    assert epochs == [1, 2, 3]  # no epoch logged twice or lost


class _Comm:
    def __init__(self, size):
        self.size, self.rank = size, 0


def test_averaged_bn_choice_reaches_the_evaluation(tmp_path):
    """--averaged-bn recompute: each epoch's test accuracy is that of the model with BatchNorm
    statistics recomputed, and the log says so (docs/distributed.md, comparing algorithms)."""
    out = tmp_path / "run"
    p = run(TINY + ["--epochs", "1", "--out", str(out), "--averaged-bn", "recompute"])
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [json.loads(l) for l in (out / "log.jsonl").read_text().splitlines()]
    assert [r["test_bn"] for r in lines] == ["recompute"]
    assert json.loads((out / "config.json").read_text())["averaged_bn"] == "recompute"


def test_global_batch_must_divide_across_workers():
    with pytest.raises(UserError, match="global batch size 33 does not divide across 2 workers"):
        ClassificationConfig.from_dict({"global_batch_size": 33}).check(_Comm(2))
    cfg = ClassificationConfig.from_dict({"global_batch_size": 64})
    cfg.check(_Comm(2))
    assert cfg.per_worker_batch(_Comm(2)) == 32


@pytest.mark.parametrize("args, needle", [
    (["--dataset", "cifar10", "--data-dir", "/nonexistent/cifar"], "does not exist"),
    (["--model", "resnest14_digitz"], "did you mean: resnest14_digits"),
    (["--dataset", "folder", "--data-dir", "FLAT"], "one sub-folder per class"),
    (["--dataset", "folder", "--data-dir", "ZERO"], "train/b/0.jpg is empty (0 bytes)"),
    (["--dataset", "cifar10", "--data-dir", "CUT"], "truncated"),
    (["--epochs", "0"], "--epochs/--num-epochs: must be a whole number >= 1"),
    (["--averaged-bn", "running"], "'running'"),
    (["--config", "/nonexistent.yaml"], "config file /nonexistent.yaml does not exist"),
])
def test_bad_input_is_one_line_and_nonzero(tmp_path, args, needle):
    flat = tmp_path / "flat" / "train"
    flat.mkdir(parents=True)
    (flat / "x.png").write_bytes(b"")
    cut = tmp_path / "cut" / "cifar-10-batches-bin"
    cut.mkdir(parents=True)
    for f in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        (cut / f).write_bytes(b"\0" * 3073 * 2 + b"\1" * 10)
    for c in ("a", "b"):   # an image folder whose one image of class b is a zero-byte file
        (tmp_path / "zero" / "train" / c).mkdir(parents=True)
        (tmp_path / "zero" / "val" / c).mkdir(parents=True)
    (tmp_path / "zero" / "train" / "b" / "0.jpg").write_bytes(b"")
    for part in ("train/a/0.png", "val/a/0.png", "val/b/0.png"):
        cv2.imwrite(str(tmp_path / "zero" / part), np.zeros((8, 8, 3), np.uint8))
    args = [a.replace("FLAT", str(tmp_path / "flat")).replace("CUT", str(tmp_path / "cut"))
            .replace("ZERO", str(tmp_path / "zero")) for a in args]
    p = run(args + ["--out", str(tmp_path / "o")])
    assert p.returncode != 0
    assert not (tmp_path / "o").exists()        # refused before the run folder is made
    assert "Traceback" not in p.stderr
    errors = [l for l in p.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and needle in errors[0], p.stderr[-1500:]


@pytest.mark.horovod
def test_indivisible_global_batch_under_horovodrun(tmp_path):
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable, SCRIPT,
                        "--global-batch-size", "33", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert p.returncode != 0
    ours = [l for l in (p.stdout + p.stderr).splitlines() if "error:" in l and "[" in l]
    assert any("global batch size 33 does not divide across 2 workers" in l for l in ours)
    worker_lines = [l for l in (p.stdout + p.stderr).splitlines() if l.startswith(("[0]", "[1]"))]
    assert not any("Traceback" in l for l in worker_lines)
