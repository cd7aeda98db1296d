"""The Dynamic SGD regime bench (bench/dynamic_sgd_bn.py, protocol dynamic_sgd_regime): the
per-worker (ghost) BatchNorm against an independent float64 NumPy reference of W separate
BatchNorm layers, the whole network's gradient against the mean of the workers' gradients, the
loss spike and stability rules, the pilot's choice of rate, the refusal to run without the pilot's
rate, and the decision rule, against hand-computed values."""
import json
import os

import numpy as np
import pytest

from gluon_suite.evidence import protocols
from gluon_suite.utils.errors import UserError

from ..conftest import REPO, load_script

bench = load_script("bench/dynamic_sgd_bn.py")
EPS = 1e-5


def bn_forward(x, gamma, beta):
    """One worker's BatchNorm in training mode (NumPy, float64): statistics over (N, H, W)."""
    mu = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    xhat = (x - mu) / np.sqrt(var + EPS)
    return xhat * gamma[None, :, None, None] + beta[None, :, None, None], xhat, var


def bn_backward(dy, x, gamma):
    """The textbook BatchNorm backward of one worker: (dx, dgamma, dbeta)."""
    _, xhat, var = bn_forward(x, gamma, np.zeros_like(gamma))
    m = x.shape[0] * x.shape[2] * x.shape[3]
    dbeta, dgamma = dy.sum(axis=(0, 2, 3)), (dy * xhat).sum(axis=(0, 2, 3))
    dx = gamma[None, :, None, None] / (m * np.sqrt(var + EPS)) * (
        m * dy - dbeta[None, :, None, None] - xhat * dgamma[None, :, None, None])
    return dx, dgamma, dbeta


@pytest.fixture(scope="module")
def case():
    """4 workers of 3 samples, 2 channels, 3x3 maps; gamma, beta and the loss weights R."""
    rng = np.random.RandomState(0)
    return {"x": rng.randn(12, 2, 3, 3) * 2 + 1, "gamma": np.array([1.5, 0.5]), "beta": np.array([0.2, -0.3]),
            "R": rng.randn(12, 2, 3, 3), "workers": 4}


def ghost(case, running="mean"):
    import mxnet as mx
    from mxnet import nd
    blk = bench.GhostBatchNorm(2, 3, running=running)
    blk.initialize()
    blk.cast("float64")
    blk.gamma.set_data(nd.array(case["gamma"], dtype="float64"))
    blk.beta.set_data(nd.array(case["beta"], dtype="float64"))
    return blk, mx


def test_the_numpy_reference_backward_matches_finite_differences(case):
    x, gamma, R = case["x"][:3], case["gamma"], case["R"][:3]
    loss = lambda xx, g: (bn_forward(xx, g, case["beta"])[0] * R).sum()  # noqa: E731
    dx, dgamma, _ = bn_backward(R, x, gamma)
    h = 1e-6
    for idx in [(0, 0, 0, 0), (1, 1, 2, 1), (2, 0, 1, 2)]:
        e = np.zeros_like(x)
        e[idx] = h
        assert (loss(x + e, gamma) - loss(x - e, gamma)) / (2 * h) == pytest.approx(dx[idx], rel=1e-6, abs=1e-8)
    e = np.array([h, 0.0])
    assert (loss(x, gamma + e) - loss(x, gamma - e)) / (2 * h) == pytest.approx(dgamma[0], rel=1e-6)


def test_forward_equals_separate_per_worker_batchnorms(case):
    from mxnet import autograd, nd
    blk, _ = ghost(case)
    with autograd.record():
        y = blk(nd.array(case["x"], dtype="float64"))
    ref = np.concatenate([bn_forward(xw, case["gamma"], case["beta"])[0] for xw in np.split(case["x"], 4)])
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=0, atol=1e-12)


def test_gradient_equals_the_mean_of_the_per_worker_gradients(case):
    # the simulation's loss is the mean over all 12 samples = the mean over workers of each
    # worker's mean loss; per sample the loss is sum(y * R)
    from mxnet import autograd, nd
    blk, _ = ghost(case)
    x = nd.array(case["x"], dtype="float64")
    x.attach_grad()
    with autograd.record():
        loss = (blk(x) * nd.array(case["R"], dtype="float64")).sum() / 12
    loss.backward()
    per = [bn_backward(Rw / 3, xw, case["gamma"]) for xw, Rw in zip(np.split(case["x"], 4), np.split(case["R"], 4))]
    np.testing.assert_allclose(blk.gamma.grad().asnumpy(), np.mean([p[1] for p in per], axis=0), rtol=1e-12)
    np.testing.assert_allclose(blk.beta.grad().asnumpy(), np.mean([p[2] for p in per], axis=0), rtol=1e-12)
    # each sample's gradient is its worker's, divided by the number of workers
    np.testing.assert_allclose(x.grad.asnumpy(), np.concatenate([p[0] for p in per]) / 4, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("running", ["mean", "first"])
def test_running_statistics_and_evaluation(case, running):
    from mxnet import autograd, nd
    blk, _ = ghost(case, running)
    with autograd.record():
        blk(nd.array(case["x"], dtype="float64"))
    groups = np.split(case["x"], 4)
    mu = np.array([g.mean(axis=(0, 2, 3)) for g in groups])
    var = np.array([g.var(axis=(0, 2, 3)) for g in groups])       # biased, as MXNet's BatchNorm
    mu, var = (mu.mean(axis=0), var.mean(axis=0)) if running == "mean" else (mu[0], var[0])
    np.testing.assert_allclose(blk.running_mean.data().asnumpy(), 0.1 * mu, rtol=1e-9)
    np.testing.assert_allclose(blk.running_var.data().asnumpy(), 0.9 + 0.1 * var, rtol=1e-9)
    # outside training: the running statistics, for a batch of any size
    x = case["x"][:5]
    rm, rv = blk.running_mean.data().asnumpy(), blk.running_var.data().asnumpy()
    ref = ((x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + EPS) * case["gamma"][None, :, None, None]
           + case["beta"][None, :, None, None])
    np.testing.assert_allclose(blk(nd.array(x, dtype="float64")).asnumpy(), ref, rtol=1e-9)


def test_one_group_is_mxnet_s_own_batchnorm():
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    x = nd.array(np.random.RandomState(1).randn(8, 3, 4, 4) * 3 - 1)
    mine, ref = bench.GhostBatchNorm(3, 8), gluon.nn.BatchNorm(in_channels=3, momentum=0.9)
    out = []
    for b in (mine, ref):       # (MXNet with oneDNN writes its running statistics in backward)
        b.initialize(mx.init.Xavier())
        with autograd.record():
            y = b(x)
        y.backward()
        out.append(y.asnumpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-4, atol=1e-5)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(mine, name).data().asnumpy(), getattr(ref, name).data().asnumpy(),
                                   rtol=1e-5)


def test_the_network_s_gradient_is_the_mean_of_the_workers_gradients():
    # bench/dynamic_sgd_bn.py's CNN in float64: one pass over 3 workers' batches of 4 images
    # against three per-worker passes (each its own BatchNorm), averaged as an allreduce would
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    cfg = {**bench.CONFIG, "per_worker": 4, "channels": [2, 3]}
    net = bench.build_bn_net(cfg)
    net.initialize(mx.init.Xavier())
    net.cast("float64")
    rng = np.random.RandomState(2)
    x, y = nd.array(rng.rand(12, 1, 28, 28), dtype="float64"), nd.array(rng.randint(0, 10, 12), dtype="float64")
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]

    def grads(xb, yb):
        with autograd.record():
            loss = loss_fn(net(xb), yb).mean()
        loss.backward()
        return [p.grad().asnumpy().copy() for p in params]
    whole = grads(x, y)
    workers = [grads(x[i:i + 4], y[i:i + 4]) for i in (0, 4, 8)]
    for k, g in enumerate(whole):
        np.testing.assert_allclose(g, np.mean([w[k] for w in workers], axis=0), rtol=1e-10, atol=1e-14)


def test_bad_groups_and_choices_are_refused():
    from mxnet import autograd, nd
    with pytest.raises(ValueError, match="running"):
        bench.GhostBatchNorm(2, 4, running="rank0")
    blk = bench.GhostBatchNorm(2, 4)
    blk.initialize()
    with pytest.raises(ValueError, match="whole number of groups"), autograd.record():
        blk(nd.ones((6, 2, 3, 3)))


def test_spikes_and_instability_by_hand():
    # 2 workers for steps 1-4, 4 for 5-6, 1 for 7-8; window 2
    counts = [None, 2, 2, 2, 2, 4, 4, 1, 1]
    loss = [2.3, 1.0, 0.8, 0.6, 0.9, 0.5, 0.7, 0.4]
    s = bench.spikes(loss, counts, 2)
    assert s["2_4"] == pytest.approx(0.9 - 0.7)          # max of steps 5-6 less the mean of steps 3-4
    assert s["4_1"] == pytest.approx(0.7 - 0.7)          # max of steps 7-8 less the mean of steps 5-6
    assert bench.spikes(loss[:5] + [None] * 3, counts, 2) == {"2_4": None, "4_1": None}
    assert not bench.is_unstable(loss, 2.0)
    assert bench.is_unstable(loss[:3] + [4.7], 2.0) and not bench.is_unstable(loss[:3] + [4.6], 2.0)
    assert bench.is_unstable(loss[:3] + [None], 2.0) and bench.is_unstable([float("nan")], 2.0)


def test_the_pilot_s_rule_by_hand():
    row = lambda lr, bad, acc: {"lr_per_256": lr, "unstable": bad, "final_acc": acc}  # noqa: E731
    # 0.8 is the first unstable rate; of 0.1-0.4 the best is 0.975 and 0.4 is within 1 point
    rows = [row(0.1, 0, 0.96), row(0.2, 0, 0.975), row(0.4, 0, 0.966), row(0.8, 1, 0.99), row(1.6, 0, 0.99)]
    assert bench.choose_rate(rows, 0.01) == 0.4
    assert bench.choose_rate(rows, 0.005) == 0.2                 # 0.4 is 0.9 points short
    assert bench.choose_rate(list(reversed(rows)), 0.01) == 0.4  # grid order, whatever the input order
    assert bench.choose_rate([row(0.05, 1, 0.1)], 0.01) is None


def _runs(unstable):
    return [{"arm": a, "seed": s, "metrics": {"unstable": u}} for (a, s), u in unstable.items()]


def test_the_decision_rule_by_hand():
    ids = ["s1", "s2", "f"]
    res = lambda *o: {i: {"outcome": x} for i, x in zip(ids, o)}  # noqa: E731
    stable = _runs({("jump", 0): 0, ("ramp", 0): 0, ("jump", 1): 0, ("ramp", 1): 0})
    assert bench.decide_default(res("inconclusive", "fails", "inconclusive"), stable, ids, True)["default"] == "jump"
    d = bench.decide_default(res("inconclusive", "holds", "inconclusive"), stable, ids, True)
    assert d["default"] == "ramp" and d["growth_criteria_holding"] == ["s2"]
    # jump unstable in seed 1 where ramp is not keeps ramp; both unstable does not
    jump1 = _runs({("jump", 0): 0, ("ramp", 0): 0, ("jump", 1): 1, ("ramp", 1): 0})
    d = bench.decide_default(res("inconclusive", "inconclusive", "inconclusive"), jump1, ids, True)
    assert d["default"] == "ramp" and d["seeds_jump_unstable_ramp_not"] == [1]
    both = _runs({("jump", 0): 1, ("ramp", 0): 1})
    assert bench.decide_default(res("inconclusive", "inconclusive", "fails"), both, ids, True)["default"] == "jump"
    assert bench.decide_default(res("holds", "holds", "holds"), stable, ids, False)["default"].startswith("not decided")


def test_the_protocol_fixes_the_plan_and_runs_at_the_pilot_s_rate():
    p = protocols.load(REPO, "dynamic_sgd_regime")
    full, quick = p.params(), p.params(quick=True)
    assert p.bench == "dynamic_sgd_bn" and p.arms() == ["jump", "ramp"] and p.seeds() == [0, 1, 2, 3, 4]
    # the rate is the committed pilot's choice: the largest grid rate below the first unstable one
    # whose mean final accuracy is within acc_margin of the best (recomputed here from its runs)
    with open(os.path.join(REPO, full["pilot"]["file"])) as fh:
        pilot = json.load(fh)
    runs = pilot["runs"]
    first_bad = min([r["lr_per_256"] for r in runs if r["unstable"]], default=float("inf"))
    ok = sorted({r["lr_per_256"] for r in runs if r["lr_per_256"] < first_bad})
    acc = {lr: sum(r["final_acc"] for r in runs if r["lr_per_256"] == lr)
           / len([r for r in runs if r["lr_per_256"] == lr]) for lr in ok}
    best = max(acc.values())
    chosen = max(lr for lr in ok if acc[lr] >= best - full["pilot"]["acc_margin"])
    assert full["lr_per_256"] == chosen == pilot["chosen"]["lr_per_256"] and quick["lr_per_256"] == 0.1
    assert full["momentum"] == 0.9 and full["workers"] == [8, 32, 128, 16] and full["ramp_steps"] == 20
    counts = bench.dsgd.plan({**bench.CONFIG, **full}, 4000)
    assert len(counts) - 1 == 292 and bench.dsgd.resize_steps(counts) == [(126, 8, 32), (173, 32, 128), (205, 128, 16)]
    crit = {c["id"]: c for c in p.criteria}
    for i in full["decision_criteria"]:      # each a "ramp better than jump" comparison
        assert crit[i]["test"] == "better" and (crit[i]["a"], crit[i]["b"]) == ("ramp", "jump")
    assert set(full["pilot"]["seeds"]).isdisjoint(p.seeds())


def test_a_run_refuses_the_placeholder_and_a_rate_that_is_not_the_pilot_s(tmp_path):
    p = protocols.load(REPO, "dynamic_sgd_regime")
    cfg = {**p.params(), "lr_per_256": None}       # the protocol as it stood before its pilot
    with pytest.raises(UserError, match="placeholder"):
        bench.check_rate(cfg, str(tmp_path), quick=False)
    cfg["lr_per_256"] = 0.4
    with pytest.raises(UserError, match="missing"):
        bench.check_rate(cfg, str(tmp_path), quick=False)
    pilot = tmp_path / cfg["pilot"]["file"]
    pilot.parent.mkdir(parents=True)
    ran = {k: v for k, v in p.params().items() if k != "lr_per_256"}
    pilot.write_text(json.dumps({"chosen": {"lr_per_256": 0.8}, "params": ran, "rates": []}))
    with pytest.raises(UserError, match="chose 0.8"):
        bench.check_rate(cfg, str(tmp_path), quick=False)
    pilot.write_text(json.dumps({"chosen": {"lr_per_256": 0.4}, "params": {**ran, "window": 10}, "rates": []}))
    with pytest.raises(UserError, match="differ"):
        bench.check_rate(cfg, str(tmp_path), quick=False)
    pilot.write_text(json.dumps({"chosen": {"lr_per_256": 0.4}, "params": ran, "rates": []}))
    assert bench.check_rate(cfg, str(tmp_path), quick=False)["chosen"] == {"lr_per_256": 0.4}
    assert "quick" in bench.check_rate({**cfg, "lr_per_256": 0.1}, str(tmp_path), quick=True)


def test_a_tiny_pilot_writes_its_record(tmp_path, monkeypatch):
    from gluon_suite.cv.data import load_mnist5k
    xtr, ytr = load_mnist5k("train")
    xte, yte = load_mnist5k("test")
    monkeypatch.setattr(bench.dsgd, "load_data",
                        lambda: (xtr[::25], ytr[::25].astype(np.float32), xte[:100], yte[:100]))   # 160 images
    params = {**protocols.load(REPO, "dynamic_sgd_regime").params(), "per_worker": 2, "workers": [2, 4, 1],
              "phase_epochs": [1, 1, 1], "window": 2, "ramp_steps": 2, "eval_every": 80, "channels": [2, 2]}
    params.pop("lr_per_256")
    out = tmp_path / "pilot.json"
    rec = bench.pilot(params, str(out), grid=[0.2, 0.1], seeds=[100, 101], log=lambda *a: None)
    saved = json.loads(out.read_text())
    assert saved["grid"] == [0.2, 0.1] and [r["lr_per_256"] for r in saved["rates"]][0] == 0.1
    assert {(r["lr_per_256"], r["seed"]) for r in saved["runs"]} <= {(lr, s) for lr in (0.1, 0.2) for s in (100, 101)}
    assert saved["chosen"]["lr_per_256"] == bench.choose_rate(saved["rates"], params["pilot"]["acc_margin"])
    assert saved["protocol"]["file"] == "bench/protocols/dynamic_sgd_regime.yaml" and rec["params"] == params
    assert all("spike_2_4" in r and "unstable" in r and "lr" not in r for r in saved["runs"])


def test_a_shortened_pilot_never_writes_the_protocol_s_pilot_file():
    with pytest.raises(SystemExit):
        bench.main(["--pilot", "--grid", "0.1"])
    with pytest.raises(SystemExit):
        bench.main(["--pilot", "--quick", "--out",
                    bench.os.path.join(REPO, "bench/pilots/dynamic_sgd_regime/lr_pilot.json")])


def test_the_tables_apply_the_protocol_s_decision_to_its_criteria():
    # five seeds where ramp's spike after 32 -> 128 is lower by 0.1 +- 0.01: that criterion holds
    p = protocols.load(REPO, "dynamic_sgd_regime")
    runs = []
    for s in range(5):
        for arm, extra in (("jump", 0.1 + 0.01 * (s % 2)), ("ramp", 0.0)):
            runs.append({"arm": arm, "seed": s, "metrics": {
                "final_acc": 0.96 + 0.001 * s, "unstable": 0, "spike_8_32": 0.05, "spike_32_128": 0.2 + extra,
                "spike_128_16": 0.1, "acc_after_8_32": 0.95, "acc_after_32_128": 0.96, "acc_after_128_16": 0.96}})
    made, d = bench.tables(runs, p.params(), p.criteria, complete=True)
    assert d["default"] == "ramp" and d["growth_criteria_holding"] == ["ramp_spike_below_jump_32_128"]
    assert made["loss_spike"]["columns"] == ["policy", "8->32", "32->128", "128->16", "unstable runs"]
    assert made["loss_spike"]["rows"][1] == ["ramp", "0.050 ± 0.000", "0.200 ± 0.000", "0.100 ± 0.000", 0]
    assert made["accuracy"]["rows"][0][:2] == ["jump", "96.20 ± 0.16"]
    assert made["decision"]["rows"][-1] == ["default rate policy", "ramp", "-", "-"]
    # the same numbers with equal spikes: no growth criterion holds, and the default becomes jump
    for r in runs:
        r["metrics"]["spike_32_128"] = 0.2
    assert bench.tables(runs, p.params(), p.criteria, complete=True)[1]["default"] == "jump"


def test_the_warm_up_by_hand():
    # eta_8 = 0.4 x 64/256 = 0.1, reached over 4 steps; then jump x4 at a resize to 32 workers
    cfg = {**bench.CONFIG, "lr_per_256": 0.4, "warmup_steps": 4}
    sched = bench.dsgd.make_schedule("jump", cfg)
    assert [sched(t) for t in range(1, 7)] == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1, 0.1])
    sched.set_global_batch(256, 7)
    assert sched(7) == pytest.approx(0.4)
    plain = bench.dsgd.make_schedule("ramp", {**cfg, "warmup_steps": 0})
    assert plain(1) == pytest.approx(0.1)
