"""The registry's extension point: an algorithm (``every_other``) and a compressor (``strided``)
registered in a test module outside the package (plugin_algorithms.py) train through
``DistributedTrainer`` on 2 real Horovod workers, matching float64 NumPy references of their rules
at every step, and through a training script's ``--algorithm``/``--compressor``, where the bytes
they put on the wire match a count made by hand; an unregistered name is a one-line error that
lists the registered ones (docs/distributed.md, "Your own algorithm or compressor")."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ..conftest import HOROVODRUN, REPO, job_output, run_horovod

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _plugin_job as job  # noqa: E402

N = 2
MODULE = "tests.distributed.plugin_algorithms"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    with open(os.path.join(HERE, "_plugin_job.py"), encoding="utf-8") as f:
        return run_horovod(f.read(), np_=N, tmp_path=tmp_path_factory.mktemp("plugin"), timeout=400)


def grad(x, rank):
    """The gradient of the mean over the batch of L2Loss = 0.5 mean_o (xW+b-y)^2, float64."""
    X, Y = (a.astype(np.float64) for a in job.data(rank))
    b, W = x[:job.O], x[job.O:].reshape(job.O, job.D)
    gp = (X @ W.T + b - Y) / job.O / job.B
    return np.concatenate([gp.sum(0), (gp.T @ X).ravel()])


def reference_every_other(x0, offset):
    """Per worker: x_i <- x_i - lr mean_j g_j(x_j) on steps offset, offset+2, ...; else
    x_i <- x_i - lr g_i(x_i)."""
    xs, hist = [x0.copy() for _ in range(N)], [[x0.copy()] for _ in range(N)]
    for t in range(job.STEPS):
        gs = [grad(x, i) for i, x in enumerate(xs)]
        mean = sum(gs) / N
        xs = [x - job.LR * (mean if (t - offset) % 2 == 0 else g) for x, g in zip(xs, gs)]
        for i in range(N):
            hist[i].append(xs[i].copy())
    return hist


def reference_strided(x0, ratio=2):
    """x <- x - lr mean_i C_t(g_i), C_t keeping coordinates j = t (mod ratio) of the flat vector."""
    x, hist = x0.copy(), [x0.copy()]
    for t in range(job.STEPS):
        keep = (np.arange(x.size) % ratio == t % ratio).astype(np.float64)
        x = x - job.LR * keep * sum(grad(x, i) for i in range(N)) / N
        hist.append(x.copy())
    return hist


@pytest.mark.parametrize("name, offset", [("every_other", 0), ("every_other_offset1", 1)])
def test_registered_algorithm_matches_its_rule(runs, name, offset):
    x0 = np.array(runs[0][name][0], dtype=np.float64)
    want = reference_every_other(x0, offset)
    for rank in range(N):
        got = np.array(runs[rank][name])
        np.testing.assert_allclose(got, np.array(want[rank]), rtol=1e-5, atol=1e-6)
        assert runs[rank][name + ".config"] == {"name": "every_other", "offset": offset}
    # the local steps took the workers' models apart
    assert not np.allclose(runs[0][name][-1], runs[1][name][-1])


@pytest.mark.parametrize("name", ["strided", "strided_by_name"])
def test_registered_compressor_matches_its_rule(runs, name):
    x0 = np.array(runs[0][name][0], dtype=np.float64)
    want = np.array(reference_strided(x0))
    for rank in range(N):
        np.testing.assert_allclose(np.array(runs[rank][name]), want, rtol=1e-5, atol=1e-6)
        assert runs[rank][name + ".config"]["compressor"]["name"] == "strided"


def test_unregistered_names_are_one_line_errors():
    from gluon_suite.distributed import DistributedTrainer, make_algorithm, make_compressor
    from mxnet import gluon
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    want = "unknown algorithm 'every_second'; registered: auto, cser, ef"
    with pytest.raises(ValueError, match=want):
        DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, algorithm="every_second")
    with pytest.raises(ValueError, match="unknown compressor 'stride'.*registered: fp16, grbs"):
        make_compressor("stride")
    with pytest.raises(ValueError, match="cannot import module 'no_such_module'"):
        make_algorithm("no_such_module:every_other")
    with pytest.raises(ValueError, match="algorithm 'every_other' takes no option period"):
        make_algorithm(f"{MODULE}:every_other", period=4)


def _digits(tmp_path, *flags):
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_QUIET="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [HOROVODRUN, "-np", str(N), "-H", f"localhost:{N}", "--gloo", sys.executable,
           os.path.join(REPO, "scripts/cv/train_digits.py"), "--epochs", "1", "--no-progress", "--out", str(out),
           *flags]
    proc = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, job_output(proc, 4000)
    with open(out / "log.jsonl") as f:
        rec = [json.loads(line) for line in f][-1]
    with open(out / "config.json") as f:
        return rec, json.load(f)


def _gradient_values():
    """The trainable values of the script's network, counted here from its parameters."""
    import mxnet as mx
    from gluon_suite.cv.quickstart import digits_cnn
    net = digits_cnn()
    net.initialize()
    net(mx.nd.zeros((1, 1, 8, 8)))
    return sum(int(np.prod(p.shape)) for p in net.collect_params().values() if p.grad_req != "null")


def test_registered_names_through_a_training_script(tmp_path):
    """``--algorithm module:every_other`` sends the dense gradients on every other step, and
    ``--compressor module:strided --ratio 4`` a quarter of the coordinates each step: the bytes on
    this worker's link, against a count by hand (2 workers: a ring allreduce puts 2(n-1)/n = 1 times
    the payload on the link; the network's gradients fit one bucket)."""
    n_values = _gradient_values()
    rec, cfg = _digits(tmp_path / "algo", "--algorithm", f"{MODULE}:every_other")
    assert cfg["algorithm"] == f"{MODULE}:every_other"
    steps = round(rec["dense_wire_bytes"] / (4.0 * n_values))
    assert steps > 10 and rec["dense_wire_bytes"] == 4.0 * n_values * steps
    assert rec["train_wire_bytes"] == 4.0 * n_values * ((steps + 1) // 2)
    rec, cfg = _digits(tmp_path / "comp", "--algorithm", "sync", "--compressor", f"{MODULE}:strided", "--ratio", "4")
    assert cfg["compressor"] == f"{MODULE}:strided" and cfg["ratio"] == 4
    sent = sum(len(range(t % 4, n_values, 4)) for t in range(steps))
    assert rec["train_wire_bytes"] == 4.0 * sent


def test_an_unregistered_name_on_the_command_line_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(REPO, "scripts/cv/train_digits.py"), "--algorithm",
                           "every_second", "--out", str(tmp_path / "x")], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown algorithm 'every_second'" in lines[0], proc.stderr
    assert "registered: auto, cser, ef, local, local_adaalter, sync" in lines[0]
    assert "Traceback" not in proc.stderr and not (tmp_path / "x").exists()
