"""A compressor written outside the package, on the public ``Compressor`` interface (``name``,
``summable``, ``_compress`` returning a ``Payload``), passed to ``DistributedTrainer`` as an object:
it trains under ``sync`` and ``cser`` on 2 real Horovod workers, with buckets and with one bucket per
tensor, and every step matches a float64 NumPy reference of the update rules (docs/distributed.md)."""
import os
import sys

import numpy as np
import pytest

from ..conftest import run_horovod

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _custom_compressor_job as job  # noqa: E402

pytestmark = pytest.mark.horovod
N = 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    with open(os.path.join(HERE, "_custom_compressor_job.py"), encoding="utf-8") as f:
        ranks = run_horovod(f.read(), np_=N, tmp_path=tmp_path_factory.mktemp("custom"), timeout=400)
    return [{k: np.array(v) for k, v in r.items()} for r in ranks]


def mask(ratio, step, shape):
    """The strided rule written out: coordinate j of the flattened tensor is sent at step t when
    j = t (mod ratio)."""
    return (np.arange(int(np.prod(shape))) % ratio == step % ratio).reshape(shape).astype(np.float64)


SHAPES = [(job.O,), (job.O, job.D)]


def unflat(v):
    return [v[:job.O].astype(np.float64), v[job.O:].reshape(job.O, job.D).astype(np.float64)]


def update(x, rank):
    """Plain SGD's update u = lr x gradient of the mean over the batch of L2Loss = 0.5 mean_o (xW+b-y)^2."""
    X, Y = (a.astype(np.float64) for a in job.data(rank))
    b, W = x
    gp = (X @ W.T + b - Y) / job.O / job.B
    return [job.LR * gp.sum(0), job.LR * gp.T @ X]


def reference_sync(x0, ratio=2):
    """x <- x - mean_i C_t(u_i): the compressed updates averaged (SGD is linear in the gradient)."""
    x, hist = [a.copy() for a in x0], []
    for t in range(job.STEPS):
        us = [update(x, i) for i in range(N)]
        x = [x[k] - sum(mask(ratio, t, s) * u[k] for u in us) / N for k, s in enumerate(SHAPES)]
        hist.append(np.concatenate([a.ravel() for a in x]))
    return hist


def reference_cser(x0, r1=2, r2=4, period=3):
    """CSER's rule (docs/distributed.md): c = mean C1(u_i); x_i <- x_i - c - (u_i - C1(u_i));
    e_i <- e_i - (u_i - C1(u_i)); every period-th step ce = mean C2(e_i), x_i <- x_i - C2(e_i) + ce,
    e_i <- e_i - C2(e_i)."""
    x = [[a.copy() for a in x0] for _ in range(N)]
    e = [[np.zeros_like(a) for a in x0] for _ in range(N)]
    hist = []
    for t in range(job.STEPS):
        us = [update(x[i], i) for i in range(N)]
        for k, s in enumerate(SHAPES):
            m1 = mask(r1, t, s)
            c = sum(m1 * u[k] for u in us) / N
            for i in range(N):
                r = us[i][k] - m1 * us[i][k]
                x[i][k] = x[i][k] - c - r
                e[i][k] = e[i][k] - r
            if (t + 1) % period == 0:
                m2 = mask(r2, t, s)
                ce = sum(m2 * e[i][k] for i in range(N)) / N
                for i in range(N):
                    x[i][k] = x[i][k] - m2 * e[i][k] + ce
                    e[i][k] = e[i][k] - m2 * e[i][k]
        hist.append([np.concatenate([a.ravel() for a in x[i]]) for i in range(N)])
    return hist


@pytest.mark.parametrize("layout", ["", ".pt"], ids=["buckets", "per-tensor"])
def test_a_user_compressor_under_sync_matches_the_reference(runs, layout):
    a, b = runs[0]["sync" + layout], runs[1]["sync" + layout]
    assert np.array_equal(a, b)                       # one model on both workers
    ref = reference_sync(unflat(a[0]))
    for t in range(job.STEPS):
        assert np.abs(a[t + 1] - ref[t]).max() <= 1e-5, t
    # the compressor mattered: a dense average would have gone elsewhere
    dense = reference_sync(unflat(a[0]), ratio=1)
    assert np.abs(dense[-1] - ref[-1]).max() > 1e-3


@pytest.mark.parametrize("layout", ["", ".pt"], ids=["buckets", "per-tensor"])
def test_a_user_compressor_under_cser_matches_the_reference(runs, layout):
    trajs = [runs[r]["cser" + layout] for r in range(N)]
    assert np.array_equal(trajs[0][0], trajs[1][0])
    ref = reference_cser(unflat(trajs[0][0]))
    for t in range(job.STEPS):
        for i in range(N):
            assert np.abs(trajs[i][t + 1] - ref[t][i]).max() <= 1e-5, (t, i)
    # local models differ between the resets (C1 sends half the update) and the rule is not sync's
    assert np.abs(trajs[0][1] - trajs[1][1]).max() > 1e-4
    assert np.abs(ref[-1][0] - reference_sync(unflat(trajs[0][0]))[-1]).max() > 1e-4
