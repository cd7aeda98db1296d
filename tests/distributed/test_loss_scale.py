"""Dynamic loss scaling: the scale follows the rule (halve on overflow, double after a window of
finite steps, within bounds), an overflowing step changes nothing, a finite step equals plain SGD
on the unscaled gradient (float64 reference), and two Horovod workers skip together when only one
of them overflows."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
from gluon_suite.distributed.loss_scale import DynamicLossScaler


def test_the_scale_follows_the_rule():
    s = DynamicLossScaler(init_scale=8.0, window=3, min_scale=2.0, max_scale=32.0)
    # finite x3 -> 16; finite x2, overflow -> 8 (counter reset); finite x3 -> 16; x3 -> 32; x3 -> 32
    seq = [True] * 3 + [True, True, False] + [True] * 9
    scales = []
    for finite in seq:
        s.update(finite)
        scales.append(s.scale)
    assert scales == [8, 8, 16, 16, 16, 8, 8, 8, 16, 16, 16, 32, 32, 32, 32]
    for _ in range(5):
        s.update(False)
    assert s.scale == 2.0 and s.skipped == 6   # the floor holds
    t = DynamicLossScaler()
    t.load_state_dict(s.state_dict())
    assert (t.scale, t.good_steps, t.skipped) == (2.0, 0, 6)
    class State:   # an elastic state: counters are attributes
        pass
    st = State()
    s.store_counters(st)
    assert (st.loss_scale, st.loss_scale_good_steps, st.loss_scale_skipped) == (2.0, 0, 6)
    st.loss_scale = 64.0           # a restore to the last commit
    s.load_counters(st)
    assert s.scale == 64.0 and s.counters() == {"loss_scale": 64.0, "loss_scale_good_steps": 0,
                                                "loss_scale_skipped": 6}
    with pytest.raises(ValueError, match="init_scale"):
        DynamicLossScaler(init_scale=0.5)


def _net_and_trainer(ctx):
    mx.random.seed(0)
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Uniform(0.5), ctx=ctx)
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            communicator=LocalCommunicator())
    return net, tr


@pytest.mark.parametrize("ctx", [[mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]])
def test_overflow_skips_and_a_finite_step_is_sgd_on_the_unscaled_gradient(ctx):
    net, tr = _net_and_trainer(ctx)
    scaler = DynamicLossScaler(init_scale=64.0)
    x = np.random.RandomState(0).normal(size=(6, 4))
    w0, b0 = (p.data(ctx[0]).asnumpy().astype(np.float64) for p in net.collect_params().values())

    def backward(poison=False):
        xs = gluon.utils.split_and_load(mx.nd.array(x), ctx)
        with autograd.record():
            losses = [net(a).sum() * scaler.scale for a in xs]
        autograd.backward(losses)
        if poison:   # an overflow on the last context only
            g = net.weight.list_grad()[-1]
            g[0, 0] = np.inf
    backward(poison=True)
    assert scaler.step(tr, 6) is False and scaler.scale == 32.0
    for p in net.collect_params().values():   # nothing moved
        for d in p.list_data():
            assert (d.asnumpy() == (w0 if p.name.endswith("weight") else b0)).all()
    backward()
    assert scaler.step(tr, 6) is True and scaler.scale == 32.0
    # d(sum of outputs)/dW = ones(3) x sum of rows of x; the update divides by the batch only
    gw = np.outer(np.ones(3), x.sum(axis=0)) / 6
    gb = np.ones(3) * 6 / 6
    for p in net.collect_params().values():
        want = w0 - 0.1 * gw if p.name.endswith("weight") else b0 - 0.1 * gb
        for d in p.list_data():
            np.testing.assert_allclose(d.asnumpy(), want, rtol=1e-6, atol=1e-6)


JOB = """
import json, os
import numpy as np, mxnet as mx
from mxnet import autograd, gluon
from gluon_suite.distributed import DistributedTrainer, get_communicator
from gluon_suite.distributed.loss_scale import DynamicLossScaler
comm = get_communicator()
out = {}
for algorithm, kw in (("sync", {}), ("local", {"period": 2})):
    mx.random.seed(0)
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Uniform(0.5))
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, communicator=comm,
                            algorithm=algorithm, prefix=algorithm + ".", **kw)
    scaler = DynamicLossScaler(init_scale=16.0)
    taken = []
    for step in range(4):
        x = mx.nd.array(np.random.RandomState(step * 2 + comm.rank).normal(size=(5, 4)))
        with autograd.record():
            loss = net(x).sum() * scaler.scale
        loss.backward()
        if step == 1 and comm.rank == 1:   # only worker 1 overflows, at step 1
            net.weight.grad()[0, 0] = np.nan
        taken.append(scaler.step(tr, 5))
    out[algorithm] = {"taken": taken, "scale": scaler.scale, "skipped": scaler.skipped,
                      "w": net.weight.data().asnumpy().tolist(), "steps": tr.step_count}
json.dump(out, open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w"))
"""


def test_two_workers_skip_together_when_one_overflows(horovod):
    r0, r1 = horovod(JOB)
    for algorithm in ("sync", "local"):
        a, b = r0[algorithm], r1[algorithm]
        assert a["taken"] == b["taken"] == [True, False, True, True], algorithm
        assert a["scale"] == b["scale"] == 8.0 and a["skipped"] == b["skipped"] == 1
        assert a["steps"] == b["steps"] == 3
        assert np.isfinite(a["w"]).all() and np.isfinite(b["w"]).all()
    np.testing.assert_allclose(r0["sync"]["w"], r1["sync"]["w"], rtol=0, atol=0)
