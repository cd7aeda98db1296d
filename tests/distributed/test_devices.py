"""Several contexts per worker (GluonCV's split_and_load, one parameter copy per context): a worker
on two CPU contexts equals a worker on one context with the same batch, for every algorithm and
compressor, all copies stay identical, and states save and load; the same under 2 Horovod
workers x 2 contexts. (The one-context run is the reference: gluon.Trainer semantics say the
optimizer sees the gradient summed over the worker's contexts, i.e. the one-context gradient.)"""
import os
import sys

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator

from ..conftest import HOROVODRUN, REPO, job_output

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _devices_job as job  # noqa: E402

CONFIGS = list(job.CONFIGS)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_two_contexts_equal_one_context_with_the_same_batch(cfg):
    _, _, one = job.train(job.CTX1, cfg, LocalCommunicator())
    net, _, two = job.train(job.CTX2, cfg, LocalCommunicator())
    one, two = np.array(one), np.array(two)
    assert np.abs(one[-1] - one[0]).max() > 0.05          # it trained
    np.testing.assert_allclose(two, one, rtol=0, atol=1e-5)
    # every parameter's copies are identical, bit for bit, and live on their own context
    for p in net.collect_params().values():
        copies = p.list_data()
        assert [c.context for c in copies] == job.CTX2
        np.testing.assert_array_equal(copies[1].asnumpy(), copies[0].asnumpy())


def test_the_optimizer_sees_the_gradient_summed_over_contexts():
    """One plain SGD step (no momentum, no wd): w1 = w0 - lr * sum over both halves of the batch
    of dL/dw / B, the same as the float64 gradient of the whole batch computed with NumPy."""
    net = job.build(job.CTX2)
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            communicator=LocalCommunicator())
    x, y = job.batches(0)[0]
    xs = mx.gluon.utils.split_and_load(mx.nd.array(x), job.CTX2)
    ys = mx.gluon.utils.split_and_load(mx.nd.array(y), job.CTX2)
    loss_fn = mx.gluon.loss.L2Loss()
    with mx.autograd.record():
        losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
    mx.autograd.backward(losses)
    tr.step(job.B)
    W0, b0, W1, b1 = (w.astype(np.float64) for w in job.initial_weights())
    X, Y = x.astype(np.float64), y.astype(np.float64)
    pre = X @ W0.T + b0
    h = np.maximum(pre, 0)
    g = (h @ W1.T + b1 - Y) / job.O / job.B      # dL/dout of L2Loss (mean over outputs) / B
    gh = (g @ W1) * (pre > 0)
    expected = [W0 - 0.1 * gh.T @ X, b0 - 0.1 * gh.sum(0), W1 - 0.1 * g.T @ h, b1 - 0.1 * g.sum(0)]
    for p, e in zip(net.collect_params().values(), expected):
        for copy in p.list_data():
            np.testing.assert_allclose(copy.asnumpy(), e, rtol=0, atol=1e-6)


@pytest.mark.parametrize("cfg", ["ef_topk", "cser_grbs", "local_adaalter"])
def test_save_and_load_states_with_two_contexts_resume_exactly(cfg, tmp_path):
    _, _, whole = job.train(job.CTX2, cfg, LocalCommunicator())
    net, tr, first = job.train(job.CTX2, cfg, LocalCommunicator(), steps=10)
    tr.save_states(str(tmp_path / "tr.states"))
    net2 = job.build(job.CTX2)
    for p2, p in zip(net2.collect_params().values(), net.collect_params().values()):
        p2.set_data(p.data(job.CTX2[0]))
    (opt, opt_params), kwargs = job.CONFIGS[cfg]
    tr2 = DistributedTrainer(net2.collect_params(), opt, dict(opt_params),
                             communicator=LocalCommunicator(), seed=3, **kwargs)
    tr2.load_states(str(tmp_path / "tr.states"))
    _, _, rest = job.train(job.CTX2, cfg, net=net2, trainer=tr2, steps=10, start=10)
    np.testing.assert_allclose(np.array(first + rest), np.array(whole), rtol=0, atol=1e-6)


@pytest.fixture(scope="module")
def horovod_runs(tmp_path_factory):
    import subprocess
    out = tmp_path_factory.mktemp("devices")
    env = dict(os.environ, OUT=str(out), OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(HERE, "_devices_job.py")], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, job_output(p)
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(2)]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_two_horovod_workers_with_two_contexts_equal_one_context_workers(horovod_runs, cfg):
    for r, run in enumerate(horovod_runs):
        one, two = run[f"{cfg}.one"], run[f"{cfg}.two"]
        assert np.abs(one[-1] - one[0]).max() > 0.05
        np.testing.assert_allclose(two, one, rtol=0, atol=1e-5, err_msg=f"rank {r}")
        np.testing.assert_array_equal(run[f"{cfg}.copy1"], two[-1], err_msg=f"rank {r}")
    if not any(k in cfg for k in ("local", "cser")):   # one global model: the same on both workers
        np.testing.assert_allclose(horovod_runs[1][f"{cfg}.two"], horovod_runs[0][f"{cfg}.two"],
                                   rtol=0, atol=1e-6)
    else:   # local models: the workers' different data must show (the collectives are not no-ops)
        assert np.abs(horovod_runs[1][f"{cfg}.two"] - horovod_runs[0][f"{cfg}.two"]).max() > 1e-4


def test_deferred_initialisation_reaches_every_context_copy_under_horovod(horovod_runs):
    """Ranks draw different initial weights; rank 0's are broadcast to every copy of every
    worker at initialisation, so 2 contexts (rank-specific seeds) equal 1 context (seed 0)."""
    for r, run in enumerate(horovod_runs):
        np.testing.assert_allclose(run["deferred.two"], run["deferred.one"], rtol=0, atol=1e-5,
                                   err_msg=f"rank {r}")
        np.testing.assert_array_equal(run["deferred.two.copy1"], run["deferred.two"][-1])


def test_averaged_model_reaches_every_context_copy_and_is_restored(horovod_runs):
    last = [run["cser_grbs.two"][-1] for run in horovod_runs]
    assert np.abs(last[0] - last[1]).max() > 1e-4            # the local models differ
    for run, mine in zip(horovod_runs, last):
        for copy in run["averaged"]:
            np.testing.assert_allclose(copy, (last[0] + last[1]) / 2, rtol=0, atol=1e-6)
        for copy in run["restored"]:
            np.testing.assert_array_equal(copy, mine)


@pytest.mark.parametrize("cfg", ["ef_topk", "local_adaalter"])
def test_loaded_states_live_on_the_parameters_device(cfg, tmp_path):
    """State files load onto the CPU; the optimizer and algorithm states must come back on the
    parameters' (primary) context, here cpu(1), as they would on a GPU."""
    ctx = [mx.cpu(1), mx.cpu(0)]
    net, tr, _ = job.train(ctx, cfg, LocalCommunicator(), steps=3)
    tr.save_states(str(tmp_path / "tr.states"))
    (opt, opt_params), kwargs = job.CONFIGS[cfg]
    tr2 = DistributedTrainer(net.collect_params(), opt, dict(opt_params),
                             communicator=LocalCommunicator(), seed=3, **kwargs)
    tr2.load_states(str(tmp_path / "tr.states"))
    states = [s for st in tr2._updaters[0].states.values()
              for s in (st if isinstance(st, (tuple, list)) else [st]) if s is not None]
    assert states and all(s.context == mx.cpu(1) for s in states)
    assert all(a.context == mx.cpu(1) for a in tr2.algorithm.state_arrays().values())


@pytest.mark.parametrize("algorithm", ["ef", "cser", "local"])
def test_algorithms_that_write_weights_refuse_float16_master_weights(algorithm):
    net = job.build(job.CTX1)
    net.cast("float16")
    params = net.collect_params()
    with pytest.raises(ValueError, match="multi_precision"):
        DistributedTrainer(params, "sgd", {"learning_rate": 0.1, "multi_precision": True},
                           algorithm=algorithm, communicator=LocalCommunicator())
    # sync (gradients only) is fine, and so is float32 with the flag set (MXNet ignores it there)
    DistributedTrainer(params, "sgd", {"learning_rate": 0.1, "multi_precision": True},
                       communicator=LocalCommunicator())
    DistributedTrainer(job.build(job.CTX1).collect_params(), "sgd",
                       {"learning_rate": 0.1, "multi_precision": True}, algorithm=algorithm,
                       communicator=LocalCommunicator())
