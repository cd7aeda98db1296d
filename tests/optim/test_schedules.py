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


def test_elastic_ramp_moves_to_a_larger_batch_target_over_k_steps():
    base = lambda t: 0.1  # noqa: E731
    K = 8
    s = ElasticRamp(base, ref_batch=256, ramp_steps=K)
    lrs = [s(t) for t in range(1, 21)]
    assert lrs == [0.1] * 20
    s.set_global_batch(512, step=20)
    target = 0.2
    lrs = [s(20)] + [s(t) for t in range(21, 40)]
    assert lrs[0] == pytest.approx(0.1 + (target - 0.1) / K)
    steps = np.diff([0.1] + lrs)
    assert np.all(steps >= 0) and np.all(steps <= (target - 0.1) / K + 1e-12)   # never jumps more than 1/K
    assert lrs[K - 1] == pytest.approx(target) and lrs[-1] == pytest.approx(target)


# 8 -> 32 -> 128 -> 16 workers of 8 samples, base rate 0.1 x B/256 (0.025 at 8 workers), K = 4.
# Hand-computed: growth at step 11 from 0.025 to 0.1 in quarters (0.025 + 0.075 k/4), growth at 21
# from 0.1 to 0.4 (0.1 + 0.3 k/4), shrink at 31 to 0.05.
WALK = [(11, 32 * 8), (21, 128 * 8), (31, 16 * 8)]
EXPECTED_GROWTH = {11: 0.04375, 12: 0.0625, 13: 0.08125, 14: 0.1, 20: 0.1,
                   21: 0.175, 22: 0.25, 23: 0.325, 24: 0.4, 30: 0.4}


def _walk(down):
    s = ElasticRamp(lambda t: 0.025, ref_batch=64, ramp_steps=4, global_batch=64, down=down)
    resizes, lrs = dict(WALK), {}
    for t in range(1, 41):
        if t in resizes:
            s.set_global_batch(resizes[t], step=t)
        lrs[t] = s(t)
    return lrs


def test_elastic_ramp_walk_8_32_128_16_ramps_up_and_jumps_down():
    lrs = _walk("jump")
    assert all(lrs[t] == pytest.approx(0.025) for t in range(1, 11))
    for t, v in EXPECTED_GROWTH.items():
        assert lrs[t] == pytest.approx(v), t
    # after the shrink, every step runs at the 16-worker target 0.1 x 128/256 = 0.05, never above
    assert all(lrs[t] == pytest.approx(0.05) for t in range(31, 41))
    # and at no step of the walk is the rate above the target of the batch in force
    in_force = {t: 0.025 * (8 if t < 11 else 32 if t < 21 else 128 if t < 31 else 16) / 8 for t in lrs}
    assert all(lrs[t] <= in_force[t] + 1e-12 for t in lrs)


def test_elastic_ramp_down_ramp_is_the_explicit_two_way_variant():
    lrs = _walk("ramp")
    for t, v in EXPECTED_GROWTH.items():
        assert lrs[t] == pytest.approx(v), t
    # from 0.4 down to 0.05 in quarters: 0.4 - 0.35 k/4
    assert [lrs[t] for t in (31, 32, 33, 34, 35)] == pytest.approx([0.3125, 0.225, 0.1375, 0.05, 0.05])


def test_elastic_ramp_shrink_in_the_middle_of_a_growth_ramp_drops_to_the_new_target():
    s = ElasticRamp(lambda t: 0.1, ref_batch=100, ramp_steps=10)
    s(5)
    s.set_global_batch(400, step=6)          # ramp from 0.1 towards 0.4
    assert s(6) == pytest.approx(0.13) and s(7) == pytest.approx(0.16)
    s.set_global_batch(100, step=8)          # at 0.19 on the way up, three quarters leave
    assert [s(t) for t in (8, 9, 20)] == pytest.approx([0.1, 0.1, 0.1])


def test_elastic_ramp_shrink_to_a_target_above_the_rate_in_force_keeps_ramping_up():
    # a shrink (400 -> 200) while the rate is still below the smaller batch's target: it keeps
    # climbing from where it is (0.19) to the new target 0.2 over K steps, never above it
    s = ElasticRamp(lambda t: 0.1, ref_batch=100, ramp_steps=10)
    s(5)
    s.set_global_batch(400, step=6)
    s(7)
    s.set_global_batch(200, step=8)
    assert [s(t) for t in (8, 9, 17, 30)] == pytest.approx([0.191, 0.192, 0.2, 0.2])


def test_elastic_ramp_never_exceeds_the_target_when_the_base_decays_during_growth():
    base = lambda t: 0.1 if t < 12 else 0.01  # noqa: E731  (a step decay inside the ramp)
    s = ElasticRamp(base, ref_batch=10, ramp_steps=10)
    s(9)
    s.set_global_batch(20, step=10)          # ramp from 0.1 towards 0.2 ...
    assert s(10) == pytest.approx(0.11) and s(11) == pytest.approx(0.12)
    # ... then the base drops to 0.01: the target is 0.02, the straight ramp would give 0.1 - 0.08 x 3/10
    assert s(12) == pytest.approx(0.02) and s(30) == pytest.approx(0.02)


def test_elastic_ramp_rejects_an_unknown_down_policy():
    with pytest.raises(ValueError, match="down must be one of jump, ramp"):
        ElasticRamp(lambda t: 0.1, ref_batch=8, down="smooth")


def test_elastic_ramp_state_written_before_the_down_policy_existed_still_loads():
    # the exact keys an earlier release wrote into checkpoints and elastic commits: a shrink from
    # 256 to 64 at step 40 from rate 0.2 (base 0.1 for 128)
    old = {"batch": 64, "ref_batch": 128, "t0": 40, "lr0": 0.2, "last_t": 41}
    s = ElasticRamp(lambda t: 0.1, ref_batch=128, ramp_steps=10)
    s.load_state_dict(old)
    assert s(42) == pytest.approx(0.05)      # the new default: the 64-sample target at once
    r = ElasticRamp(lambda t: 0.1, ref_batch=128, ramp_steps=10, down="ramp")
    r.load_state_dict(old)
    assert r(42) == pytest.approx(0.2 + (0.05 - 0.2) * 3 / 10)


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
