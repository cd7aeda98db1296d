"""The loss scaler with ``sync`` + ``fp16``: on the compiled kernels in a one-worker job it takes
each bucket's verdict from the float16 cast's finiteness flag (``Payload.finite``) and reads no
flagged gradient again; gradients without a flag (a dense small bucket, MXNet's path, several
workers) are checked with ``multi_all_finite``. Either way an overflow (a float32 value beyond
float16's range, an inf, a NaN) skips the step, changes no weight and halves the scale, and a
finite step is SGD on the unscaled float16 gradient (a hand reference in float64). On two Horovod
workers a float16 sum that overflows where neither worker's payload did also skips, on both."""
import os

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator, make_algorithm, native
from gluon_suite.distributed.loss_scale import DynamicLossScaler

from .test_comm_kernels import needs_library

LR, BATCH = 0.1, 6
# multiples of 1/8: the float32 gradients S * sum(x) are exact, and so is their float16 cast
X = (np.random.RandomState(0).randint(-16, 17, size=(BATCH, 4)) / 8.0).astype(np.float32)


def trainer(min_size=0, comm=None):
    mx.random.seed(0)
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Uniform(0.5))
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": LR}, communicator=comm or LocalCommunicator(),
                            algorithm=make_algorithm("sync", compressor="fp16", min_size=min_size))
    return net, tr


def backward(net, scaler, poison=None):
    with autograd.record():
        loss = net(mx.nd.array(X)).sum() * scaler.scale
    loss.backward()
    if poison is not None:
        name, value = poison
        getattr(net, name).grad()[0] = value


def counting(monkeypatch):
    """Records the sizes of the gradients each ``multi_all_finite`` call reads."""
    seen, real = [], mx.nd.multi_all_finite

    def wrapped(*arrays, **kw):
        seen.append([a.size for a in arrays])
        return real(*arrays, **kw)
    monkeypatch.setattr(mx.nd, "multi_all_finite", wrapped)
    return seen


def weights(net):
    return {n: p.data().asnumpy().astype(np.float64) for n, p in ((k.split("_")[-1], v) for k, v in
                                                                   net.collect_params().items())}


def check_steps(net, tr, scaler):
    """Overflow (1e5: finite in float32, inf in float16), finite, overflow (inf), finite: the
    scale goes 64 -> 32 -> 32 -> 16 -> 16 and each finite step is SGD on the unscaled gradient."""
    w = weights(net)
    backward(net, scaler, ("weight", 1e5))
    assert scaler.step(tr, BATCH) is False and scaler.scale == 32.0 and scaler.skipped == 1
    assert all((weights(net)[k] == w[k]).all() for k in w)
    for poison in (None, ("bias", np.inf), None):
        scale = scaler.scale
        backward(net, scaler, poison)
        taken = scaler.step(tr, BATCH)
        assert taken is (poison is None)
        if not taken:
            assert scaler.scale == scale / 2 and all((weights(net)[k] == w[k]).all() for k in w)
            continue
        # d(S * sum of outputs)/dW = S * ones(3) x (sum of x's rows), /dB = S * BATCH; exact in
        # float16 here; the update divides by BATCH * S
        g = {"weight": scale * np.outer(np.ones(3), X.astype(np.float64).sum(0)), "bias": scale * BATCH * np.ones(3)}
        assert all((np.float16(g[k]).astype(np.float64) == g[k]).all() for k in g)
        want = {k: w[k] - LR * g[k] / (BATCH * scale) for k in w}
        for k in w:
            np.testing.assert_allclose(weights(net)[k], want[k], rtol=1e-6, atol=1e-7)
        w = weights(net)
    assert scaler.scale == 16.0 and scaler.skipped == 2 and tr.step_count == 2


@needs_library
def test_the_cast_flag_gives_the_verdict_and_no_gradient_is_read_again(monkeypatch):
    net, tr = trainer()
    seen = counting(monkeypatch)
    check_steps(net, tr, DynamicLossScaler(init_scale=64.0))
    assert seen == []


@needs_library
def test_a_dense_small_bucket_is_checked_alone_beside_the_flagged_one(monkeypatch):
    net, tr = trainer(min_size=5)        # the bias (3 values) goes dense, in its own bucket
    seen = counting(monkeypatch)
    check_steps(net, tr, DynamicLossScaler(init_scale=64.0))
    assert seen and all(sizes == [3] for sizes in seen)


def test_on_mxnets_path_every_gradient_is_checked(monkeypatch):
    monkeypatch.setattr(native, "LOADED", False)
    net, tr = trainer()
    seen = counting(monkeypatch)
    check_steps(net, tr, DynamicLossScaler(init_scale=64.0))
    assert len(seen) == 4 and all(sorted(sizes) == [3, 12] for sizes in seen)


@needs_library
def test_flags_are_taken_once_and_not_kept_past_the_update_or_given_with_several_workers():
    net, tr = trainer()
    scaler = DynamicLossScaler(init_scale=64.0)
    backward(net, scaler)
    tr.allreduce_grads()
    flags = tr.algorithm.take_finite_flags()
    assert len(flags) == 1 and float(next(iter(flags.values())).asscalar()) == 1.0
    assert tr.algorithm.take_finite_flags() == {}
    tr.allreduce_grads()
    tr.update(BATCH)
    assert tr.algorithm.take_finite_flags() == {}
    comm = LocalCommunicator()
    net, tr = trainer(comm=comm)
    comm.size = 2                         # a float16 sum over workers can overflow: no flag stands for it
    backward(net, scaler)
    tr.allreduce_grads()
    assert tr.algorithm.take_finite_flags() == {}


JOB = """
import json, os
import numpy as np, mxnet as mx
from mxnet import autograd, gluon
from gluon_suite.distributed import DistributedTrainer, get_communicator, make_algorithm
from gluon_suite.distributed.loss_scale import DynamicLossScaler
comm = get_communicator()
mx.random.seed(0)
net = gluon.nn.Dense(3, in_units=4)
net.initialize(mx.init.Uniform(0.5))
tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, communicator=comm,
                        algorithm=make_algorithm("sync", compressor="fp16"))
scaler = DynamicLossScaler(init_scale=16.0)
taken = []
for step in range(4):
    x = mx.nd.array(np.random.RandomState(step * 2 + comm.rank).normal(size=(5, 4)))
    with autograd.record():
        loss = net(x).sum() * scaler.scale
    loss.backward()
    if step == 1 and comm.rank == 1:   # worker 1's payload overflows float16
        net.weight.grad()[0, 0] = 7e4
    if step == 2:                      # both payloads finite, their float16 sum is not
        net.weight.grad()[0, 0] = 4e4
    taken.append(scaler.step(tr, 5))
from gluon_suite.distributed import native
json.dump({"taken": taken, "scale": scaler.scale, "w": net.weight.data().asnumpy().tolist(),
           "steps": tr.step_count, "loaded": native.LOADED},
          open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w"))
"""


@pytest.mark.horovod
@pytest.mark.parametrize("kernels", ["built", "off"])
def test_two_workers_skip_together_on_a_payload_or_a_sum_that_overflows_float16(horovod, kernels, monkeypatch):
    """Worker 1's payload overflows at step 1: both skip. At step 2 both payloads are finite and
    their float16 sum is not: Horovod's float16 allreduce (MXNet's operators) overflows and both
    skip; with the compiled kernels the payloads are averaged in float32 (their mean, 4e4 times the
    scale, is finite) and both take the step."""
    if kernels == "off":
        monkeypatch.setenv("GLUON_SUITE_COMM_KERNELS", "off")
    r0, r1 = horovod(JOB)
    if r0["loaded"]:
        assert r0["taken"] == r1["taken"] == [True, False, True, True]
        assert r0["scale"] == r1["scale"] == 8.0 and r0["steps"] == r1["steps"] == 3
    else:
        assert kernels == "off" or not os.path.exists(native.DEFAULT_PATH)
        assert r0["taken"] == r1["taken"] == [True, False, False, True]
        assert r0["scale"] == r1["scale"] == 4.0 and r0["steps"] == r1["steps"] == 2
    assert np.isfinite(r0["w"]).all()
    np.testing.assert_array_equal(r0["w"], r1["w"])
