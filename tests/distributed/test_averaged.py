"""The averaged model's BatchNorm statistics (docs/distributed.md, "The averaged model and
BatchNorm"): on 2 real Horovod workers whose local models have diverged, ``averaged()`` with the
recompute gives the running statistics of a float64 NumPy forward pass of the averaged weights
over the same batches, and restores every local parameter, statistic and gradient exactly
afterwards; the other two choices give what they name."""
import os
import subprocess
import sys

import numpy as np
import pytest

from ..conftest import HOROVODRUN, REPO, job_output

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _averaged_job as job  # noqa: E402

N = 2
EPS = 1e-5


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("averaged")
    env = dict(os.environ, OUT=str(out), OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([HOROVODRUN, "-np", str(N), "-H", f"localhost:{N}", "--gloo", sys.executable,
                        os.path.join(HERE, "_averaged_job.py")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, job_output(p)
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(N)]


def names(rank, prefix, kind):
    return sorted({k[len(prefix) + len(kind) + 2:].rsplit(".", 1)[0] for k in rank
                   if k.startswith(f"{prefix}.{kind}.")})


def param(rank, prefix, name, copy=0):
    return rank[f"{prefix}.param.{name}.{copy}"].astype(np.float64)


def by_suffix(rank, prefix, suffix):
    got = [n for n in names(rank, prefix, "param") if n.endswith(suffix)]
    return got


def reference_statistics(ranks):
    """Float64: average the workers' weights, then per batch of every worker the per-channel mean
    and biased variance at each BatchNorm's input in training mode (batch statistics normalise),
    averaged over all batches."""
    r0 = ranks[0]
    conv_w, conv_b, d1_w, d1_b = (by_suffix(r0, "before", s)[0] for s in (
        "conv0_weight", "conv0_bias", "dense0_weight", "dense0_bias"))
    mean = lambda n: np.mean([param(r, "before", n) for r in ranks], axis=0)  # noqa: E731
    W, b = mean(conv_w)[:, :, 0, 0], mean(conv_b)
    g0 = mean(by_suffix(r0, "before", "batchnorm0_gamma")[0])
    be0 = mean(by_suffix(r0, "before", "batchnorm0_beta")[0])
    W1, b1 = mean(d1_w), mean(d1_b)
    sums = [np.zeros(4), np.zeros(4), np.zeros(6), np.zeros(6)]
    count = 0
    for r in range(len(ranks)):
        for x, _ in job.bn_batches(r)[:job.N_BN_BATCHES]:
            x = x.astype(np.float64)
            h = np.einsum("oc,nchw->nohw", W, x) + b[None, :, None, None]
            m0, v0 = h.mean(axis=(0, 2, 3)), h.var(axis=(0, 2, 3))
            y = g0[None, :, None, None] * (h - m0[None, :, None, None]) / np.sqrt(v0 + EPS)[None, :, None, None]
            y = np.maximum(y + be0[None, :, None, None], 0).reshape(len(x), -1)
            h1 = y @ W1.T + b1
            for k, s in enumerate((m0, v0, h1.mean(axis=0), h1.var(axis=0))):
                sums[k] += s
            count += 1
    return [s / count for s in sums]


def test_recompute_gives_the_float64_statistics_of_the_averaged_weights(ranks):
    want = reference_statistics(ranks)
    for r, rank in enumerate(ranks):
        assert int(rank["recompute.batches"]) == job.N_BN_BATCHES   # the knob caps the batches used
        for copy in range(len(job.CTX)):
            got = [param(rank, "recompute.inside", by_suffix(rank, "before", s)[0], copy) for s in (
                "batchnorm0_running_mean", "batchnorm0_running_var",
                "batchnorm1_running_mean", "batchnorm1_running_var")]
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # the local models did diverge, and so did their own statistics: the test tests something
    a, b = (param(rk, "before", by_suffix(rk, "before", "dense0_weight")[0]) for rk in ranks)
    assert np.abs(a - b).max() > 0.05
    local = param(ranks[0], "before", by_suffix(ranks[0], "before", "batchnorm1_running_var")[0])
    assert np.abs(local - want[3]).max() > 1e-2


@pytest.mark.parametrize("choice", ["recompute", "average", "local"])
def test_averaged_weights_and_the_named_statistics(ranks, choice):
    for rank in ranks:
        for n in names(rank, "before", "param"):
            mean = np.mean([param(rk, "before", n) for rk in ranks], axis=0)
            for copy in range(len(job.CTX)):
                inside = param(rank, f"{choice}.inside", n, copy)
                if "running" not in n:
                    np.testing.assert_allclose(inside, mean, rtol=1e-6, atol=1e-7, err_msg=n)
                elif choice == "average":
                    np.testing.assert_allclose(inside, mean, rtol=1e-6, atol=1e-7, err_msg=n)
                elif choice == "local":
                    np.testing.assert_array_equal(inside, param(rank, "before", n, copy), err_msg=n)


@pytest.mark.parametrize("choice", ["recompute", "average", "local"])
def test_averaged_restores_parameters_statistics_and_gradients_exactly(ranks, choice):
    for rank in ranks:
        before = {k[len("before."):]: v for k, v in rank.items() if k.startswith("before.")}
        after = {k[len(f"{choice}.after."):]: v for k, v in rank.items() if k.startswith(f"{choice}.after.")}
        assert before.keys() == after.keys() and any(k.startswith("grad.") for k in before)
        for k in before:
            np.testing.assert_array_equal(after[k], before[k], err_msg=k)


def test_auto_without_batches_on_a_batchnorm_network_with_local_models_is_a_clear_error(ranks):
    for rank in ranks:
        msg = str(rank["auto_without_batches"])
        assert "pass net= and bn_batches=" in msg and "bn='average'" in msg, msg


def test_recompute_on_one_worker_and_two_contexts_matches_float64():
    """One process (no averaging across workers): the recompute alone, on cpu(0)/cpu(1)."""
    from gluon_suite.distributed import LocalCommunicator
    comm = LocalCommunicator()
    got = job.run(comm, steps=2)
    rank = {k: v for k, v in got.items()}
    want = reference_statistics([rank])
    for copy in range(len(job.CTX)):
        for s, w in zip(("batchnorm0_running_mean", "batchnorm0_running_var",
                         "batchnorm1_running_mean", "batchnorm1_running_var"), want):
            np.testing.assert_allclose(param(rank, "recompute.inside", by_suffix(rank, "before", s)[0], copy),
                                       w, rtol=1e-5, atol=1e-6)
    for k, v in rank.items():
        if k.startswith("before."):
            np.testing.assert_array_equal(rank["recompute.after." + k[7:]], v, err_msg=k)
