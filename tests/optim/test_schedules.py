"""Learning-rate schedules against hand-computed values, and the elastic ramp's step bound."""
import math

import mxnet as mx
import numpy as np
import pytest
from mxnet import gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
from gluon_suite.optim.schedules import ElasticRamp, Sequential, WarmupConstantDecay, WarmupCosine


def test_warmup_constant_decay_closed_form():
    s = WarmupConstantDecay(max_lr=0.01, total_steps=100, warmup_steps=10, constant_steps=20,
                            min_lr=0.001, power=1.0)
    assert s(1) == pytest.approx(0.001)          # 0.01 * 1/10
    assert s(5) == pytest.approx(0.005)
    assert s(10) == pytest.approx(0.01)
    assert s(11) == s(30) == pytest.approx(0.01)
    assert s(65) == pytest.approx(0.001 + 0.009 * (1 - 35 / 70))   # = 0.0055
    assert s(100) == pytest.approx(0.001) and s(150) == pytest.approx(0.001)
    q = WarmupConstantDecay(1.0, 10, 0, 0, 0.0, power=2.0)
    assert q(5) == pytest.approx(0.25)           # (1 - 5/10)^2


def test_warmup_cosine_closed_form():
    s = WarmupCosine(max_lr=0.4, total_steps=110, warmup_steps=10, min_lr=0.0)
    assert s(5) == pytest.approx(0.2)
    assert s(10) == pytest.approx(0.4)
    assert s(60) == pytest.approx(0.2)           # half-way: (1 + cos(pi/2))/2 = 0.5
    assert s(35) == pytest.approx(0.4 * (1 + math.cos(math.pi / 4)) / 2)
    assert s(110) == 0.0


def test_sequential_phases_restart_their_count():
    s = Sequential([(10, WarmupConstantDecay(1.0, 10, 10)), (20, lambda t: 0.5), (5, lambda t: 0.1 * t)])
    assert s(3) == pytest.approx(0.3) and s(10) == pytest.approx(1.0)
    assert s(11) == 0.5 and s(30) == 0.5
    assert s(31) == pytest.approx(0.1) and s(33) == pytest.approx(0.3)


@pytest.mark.parametrize("new_batch", [512, 128])
def test_elastic_ramp_moves_to_linearly_scaled_target_over_k_steps(new_batch):
    base = lambda t: 0.1  # noqa: E731
    K = 8
    s = ElasticRamp(base, ref_batch=256, ramp_steps=K)
    lrs = [s(t) for t in range(1, 21)]
    assert lrs == [0.1] * 20
    s.set_global_batch(new_batch, step=20)
    target = 0.1 * new_batch / 256
    lrs = [s(20)] + [s(t) for t in range(21, 40)]
    assert lrs[0] == pytest.approx(0.1 + (target - 0.1) / K)
    steps = np.diff([0.1] + lrs)
    assert np.all(np.abs(steps) <= abs(target - 0.1) / K + 1e-12)   # never jumps more than 1/K
    assert lrs[K - 1] == pytest.approx(target) and lrs[-1] == pytest.approx(target)


def test_elastic_ramp_follows_a_decaying_base_and_survives_save_load(tmp_path):
    base = WarmupCosine(0.1, total_steps=100, warmup_steps=0)
    s = ElasticRamp(base, ref_batch=64, ramp_steps=10)
    s(30)
    s.set_global_batch(128)                      # at the last step asked: 30
    mid = s(35)
    expect = s.lr0 + (base(35) * 2 - s.lr0) * 6 / 10
    assert mid == pytest.approx(expect)
    # through a trainer checkpoint
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"lr_scheduler": s}, communicator=LocalCommunicator())
    tr.save_states(str(tmp_path / "t.states"))
    s2 = ElasticRamp(base, ref_batch=64, ramp_steps=10)
    tr2 = DistributedTrainer(net.collect_params(), "sgd", {"lr_scheduler": s2}, communicator=LocalCommunicator())
    tr2.load_states(str(tmp_path / "t.states"))
    assert s2.batch == 128 and s2(35) == pytest.approx(mid)


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_lr=0.1, total_steps=10, warmup_steps=6, constant_steps=5), r"must be <= total_steps \(10\)"),
    (dict(max_lr=-0.1, total_steps=10), "learning rates must be >= 0"),
    (dict(max_lr=0.1, total_steps=10, min_lr=0.2), r"min_lr \(0.2\) must be <= max_lr"),
    (dict(max_lr=0.1, total_steps=0), "total_steps must be >= 1"),
])
def test_bad_schedule_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WarmupConstantDecay(**kwargs)


def test_schedule_drives_the_optimizer_per_update():
    net = gluon.nn.Dense(1, in_units=1)
    net.initialize(mx.init.Zero())
    s = WarmupConstantDecay(1.0, total_steps=4, warmup_steps=2)
    tr = DistributedTrainer(net.collect_params(), "sgd", {"lr_scheduler": s}, communicator=LocalCommunicator())
    lrs = []
    for _ in range(4):
        for p in net.collect_params().values():
            p.grad()[:] = 1.0
            p.list_data()[0]._fresh_grad = True
        tr.step(1)
        lrs.append(tr.learning_rate)
    assert lrs == pytest.approx([0.5, 1.0, 0.5, 0.0])
