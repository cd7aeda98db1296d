"""``algorithm="auto"`` on 2 real Horovod workers: with the link forced slow it picks compression,
with it forced fast it picks sync, both workers pick the same, and the updates after the switch
match a float64 reference of the chosen algorithm (synchronous momentum SGD up to the switch, then
CSER with the published GRBS masks, the momentum carried over). Plus the decision arithmetic
against hand-computed cases and the one-worker case."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator, make_algorithm
from gluon_suite.distributed.auto import AutoAlgorithm, candidate_list, choose, link_model, predict_candidates

from ..conftest import HOROVODRUN, REPO, job_output

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _algo_job as job  # noqa: E402
import _auto_job as auto_job  # noqa: E402
from .test_algorithms import SHAPES, grads, reference_mask, split  # noqa: E402

N = 2
SWITCH = auto_job.SKIP + auto_job.MEASURE     # the first step of the chosen algorithm
# the chosen CSER (H = 3) is timed for whole cycles covering MEASURE steps, after one cycle
VERIFY_STEPS = 3 * -(-auto_job.MEASURE // 3)
VERIFY_SKIP = 3


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("auto")
    env = dict(os.environ, OUT=str(out), OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([HOROVODRUN, "-np", str(N), "-H", f"localhost:{N}", "--gloo", sys.executable,
                        os.path.join(HERE, "_auto_job.py")], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, job_output(p)
    ranks = [dict(np.load(out / f"rank{r}.npz")) for r in range(N)]
    meta = [json.load(open(out / f"rank{r}.json")) for r in range(N)]
    return ranks, meta


def reference_auto(x0, r1, period, steps=auto_job.STEPS, switch=SWITCH, seed=auto_job.SEED, back=None):
    """Momentum SGD on the averaged gradient (one momentum, the same on both workers) for ``switch``
    steps, then CSER as in docs/distributed.md with GRBS masks at R1 (seed) for the update and at
    R1/H (seed + 7919; dense when <= 1) for the error every H-th step, each worker's momentum
    starting from the shared one."""
    lr, mu, wd = job.OPT["learning_rate"], job.OPT["momentum"], job.OPT["wd"]
    x = [a.copy() for a in x0]
    m = [np.zeros_like(a) for a in x0]
    hist = []
    for _ in range(switch):
        g = [sum(gs) / N for gs in zip(*(grads(x, i) for i in range(N)))]
        for k in range(len(x)):
            m[k] = mu * m[k] + g[k] + wd * x[k]
            x[k] = x[k] - lr * m[k]
        hist.append([np.concatenate([a.ravel() for a in x])] * N)
    xs = [[a.copy() for a in x] for _ in range(N)]
    ms = [[a.copy() for a in m] for _ in range(N)]
    es = [[np.zeros_like(a) for a in x] for _ in range(N)]
    r2 = r1 / period
    for t in range(switch, steps if back is None else back):
        p = []
        for i in range(N):
            g = grads(xs[i], i)
            for k in range(len(x)):
                ms[i][k] = mu * ms[i][k] + g[k] + wd * xs[i][k]
            p.append([lr * a for a in ms[i]])
        for k, shape in enumerate(SHAPES):
            mask = reference_mask(shape, r1, seed, k, t)
            c = sum(mask * p[i][k] for i in range(N)) / N
            for i in range(N):
                r = p[i][k] - mask * p[i][k]
                xs[i][k] = xs[i][k] - c - r
                es[i][k] = es[i][k] - r
        if (t + 1) % period == 0:
            for k, shape in enumerate(SHAPES):
                mask = reference_mask(shape, r2, seed + 7919, k, t) if r2 > 1 else np.ones(shape)
                ce = sum(mask * es[i][k] for i in range(N)) / N
                for i in range(N):
                    xs[i][k] = xs[i][k] - mask * es[i][k] + ce
                    es[i][k] = es[i][k] - mask * es[i][k]
        hist.append([np.concatenate([a.ravel() for a in xs[i]]) for i in range(N)])
    if back is None:
        return hist
    # back to sync after step back - 1: each model folds its residual (x_i - e_i, the same on both
    # workers), the momenta are averaged; the last history entry is that folded model
    x = [xs[0][k] - es[0][k] for k in range(len(x0))]
    m = [sum(ms[i][k] for i in range(N)) / N for k in range(len(x0))]
    hist[-1] = [np.concatenate([a.ravel() for a in x])] * N
    for _ in range(back, steps):
        g = [sum(gs) / N for gs in zip(*(grads(x, i) for i in range(N)))]
        for k in range(len(x)):
            m[k] = mu * m[k] + g[k] + wd * x[k]
            x[k] = x[k] - lr * m[k]
        hist.append([np.concatenate([a.ravel() for a in x])] * N)
    return hist


@pytest.mark.parametrize("name", ["slow", "slow.pt"])
def test_slow_link_picks_compression_and_matches_the_cser_reference(runs, name):
    ranks, meta = runs
    for r in range(N):
        dec = meta[r][name]["decision"]
        assert dec["choice"] == "cser R1=4 H=3" and dec["step"] == SWITCH and dec["link"]["source"] == "given"
        assert dec["algorithm"] == {"name": "cser", "compressor": "grbs", "ratio": 4.0, "period": 3}
        assert meta[r][name]["current"] == ["sync"] * (SWITCH - 1) + ["cser"] * (auto_job.STEPS - SWITCH + 1)
    assert meta[0][name]["decision"] == meta[1][name]["decision"]
    ref = reference_auto(split(ranks[0][f"{name}.traj"][0]), 4.0, 3)
    for r in range(N):
        got = ranks[r][f"{name}.traj"][1:]
        want = np.array([h[r] for h in ref])
        assert np.abs(got - want).max() <= 1e-5, (r, np.abs(got - want).max(axis=1))
    # CSER keeps local models: they differ after the switch, and averaged() gives their mean
    a, b = ranks[0][f"{name}.after"], ranks[1][f"{name}.after"]
    assert np.abs(a - b).max() > 1e-4
    for r in range(N):
        assert np.abs(ranks[r][f"{name}.avg"] - (a + b) / 2).max() <= 1e-6


def test_a_checkpoint_resumes_the_choice_and_an_elastic_reset_decides_again(runs):
    _, meta = runs
    for r in range(N):
        m = meta[r]["slow.resume"]
        assert m["resumed_current"] == "cser" and m["resumed_decision_equal"] and m["err_equal"]
        # the reset folds the residual into the model (x - e, the same on every worker), then sync
        assert m["folded_equals_common"]
        assert m["after_reset_current"] == "sync" and m["after_reset_decision"] is None
    assert np.abs(np.array(meta[0]["slow.resume"]["common"]) - np.array(meta[1]["slow.resume"]["common"])).max() <= 1e-6


def test_a_reverted_choice_folds_cser_and_matches_the_reference(runs):
    ranks, meta = runs
    back = SWITCH + VERIFY_SKIP + VERIFY_STEPS
    for r in range(N):
        d = meta[r]["slow.revert"]["decision"]
        assert d["choice"] == "sync" and d["reverted_from"] == "cser R1=4 H=3" and d["reverted_at"] == back
        assert not d["verified"]["kept"] and len(meta[r]["slow.revert"]["lines"]) == 2
    ref = reference_auto(split(ranks[0]["slow.revert.traj"][0]), 4.0, 3, back=back)
    for r in range(N):
        got, want = ranks[r]["slow.revert.traj"][1:], np.array([h[r] for h in ref])
        assert np.abs(got - want).max() <= 1e-5, (r, np.abs(got - want).max(axis=1))


def test_fast_link_keeps_sync_and_matches_the_sync_reference(runs):
    ranks, meta = runs
    for r in range(N):
        dec = meta[r]["fast"]["decision"]
        assert dec["choice"] == "sync" and dec["reached"]
        assert set(meta[r]["fast"]["current"]) == {"sync"}
    ref = reference_auto(split(ranks[0]["fast.traj"][0]), 4.0, 3, switch=auto_job.STEPS)
    for r in range(N):
        assert np.abs(ranks[r]["fast.traj"][1:] - np.array([h[r] for h in ref])).max() <= 1e-5


def test_measured_link_same_choice_on_both_workers_and_one_line(runs):
    _, meta = runs
    d0, d1 = meta[0]["measured"]["decision"], meta[1]["measured"]["decision"]
    assert d0 == d1 and d0["link"]["source"] == "measured"
    m = d0["measured"]
    assert m["compute_s"] > 0 and m["allreduce_s"] > 0 and m["steps"] == auto_job.MEASURE
    for r in range(N):   # one line per decision on every worker's log callable (a second if it reverts)
        lines = meta[r]["measured"]["lines"]
        first = d0.get("reverted_from", d0["choice"])
        assert len(lines) == 1 + ("reverted_from" in d0) and lines[0].startswith(f"auto: {first} from step {SWITCH}"), lines


def test_the_choice_is_verified_by_its_measured_step_time_on_both_workers(runs):
    ranks, meta = runs
    d0, d1 = meta[0]["slow.verify"]["decision"], meta[1]["slow.verify"]["decision"]
    assert d0 == d1
    v = d0["verified"]
    assert v["steps"] == VERIFY_STEPS and v["step_s"] > 0 and v["sync_step_s"] > 0
    assert v["kept"] == (v["step_s"] <= v["sync_step_s"])
    end = SWITCH + VERIFY_SKIP + v["steps"]   # the step after which the verdict is taken (1-based count)
    cur = meta[0]["slow.verify"]["current"]
    if v["kept"]:
        assert d0["choice"] == "cser R1=4 H=3" and cur[-1] == "cser"
    else:
        # back to sync, from one model: CSER's residual folded in, so both workers hold the same weights
        assert d0["choice"] == "sync" and d0["reverted_from"] == "cser R1=4 H=3" and d0["reverted_at"] == end
        assert cur[end - 1:] == ["sync"] * (auto_job.STEPS - end + 1)
        a, b = ranks[0]["slow.verify.traj"][end:], ranks[1]["slow.verify.traj"][end:]
        assert np.abs(a - b).max() <= 1e-6


def test_link_model_by_hand():
    # 2 buckets of 1 MB and 3 MB on 4 workers: W = 1.5 * 4 MB = 6 MB; each collective 2 ms, link
    # 10 MB/s: allreduce 2 * 2 ms + 0.6 s = 0.604 s, probe 2 ms (its 1 KB is 0.15 ms more)
    t0, spb = link_model(0.604, 0.002, [1e6, 3e6], 4)
    assert t0 == pytest.approx(0.002) and spb == pytest.approx(1e-7)
    # a probe slower than a bucket's share caps t0 at allreduce / K
    t0, spb = link_model(0.010, 0.050, [1e6, 3e6], 4)
    assert t0 == pytest.approx(0.005) and spb == 0.0


def test_candidate_step_times_by_hand():
    # compute 0.1 s; 1 bucket, W = 1.5 * 1 MB on 4 workers at 1e-7 s/B: 0.15 s dense; t0 = 1 ms
    cands = candidate_list(("sync", "fp16", "cser"), ratios=(8,), period=4)
    rows = predict_candidates(cands, 0.1, [1e6], 4, 0.001, 1e-7)
    by = {r["name"]: r for r in rows}
    assert by["sync"]["step_s"] == pytest.approx(0.1 + 0.001 + 0.15)
    assert by["fp16"]["step_s"] == pytest.approx(0.1 + 0.001 + 0.075)
    # CSER R1=8, H=4: three steps at 1/8, one with the update at 1/8 and the error at 8/4 = 2, two collectives
    cser = (3 * (0.101 + 0.15 / 8) + (0.102 + 0.15 / 8 + 0.15 / 2)) / 4
    assert by["cser R1=8 H=4"]["step_s"] == pytest.approx(cser)
    assert by["cser R1=8 H=4"]["ratio"] == pytest.approx(4 / (3 / 8 + (1 / 8 + 1 / 2)))
    # SF: sync 0.398, fp16 0.568, CSER 0.1/0.13875 = 0.721: none reaches 0.9, CSER is the best;
    # 0.6 is reached by CSER alone; 0.5 by fp16 first (the smaller ratio)
    assert choose(rows, 0.9) == (2, False)
    assert choose(rows, 0.6) == (2, True)
    assert choose(rows, 0.5) == (1, True)
    assert choose(rows, 0.3) == (0, True)


def test_cser_pl_candidates_by_hand():
    """CSER-PL: H - 1 steps send nothing (no collective at all), the H-th averages the model's
    deviation at R2 in one collective per bucket; R2 = 1 is plain local SGD."""
    from gluon_suite.distributed.factory import make_algorithm
    cands = candidate_list(("sync", "cser", "cser_pl"), ratios=(8,), period=4, pl_ratios=(1, 4))
    rows = predict_candidates(cands, 0.1, [1e6], 4, 0.001, 1e-7)
    by = {r["name"]: r for r in rows}
    # same measured link as above: compute 0.1 s, dense 0.15 s, t0 = 1 ms
    assert by["cser-pl R2=4 H=4"]["step_s"] == pytest.approx((3 * 0.1 + (0.1 + 0.001 + 0.15 / 4)) / 4)
    assert by["cser-pl R2=4 H=4"]["ratio"] == pytest.approx(16.0)
    assert by["cser-pl R2=1 H=4"]["step_s"] == pytest.approx((3 * 0.1 + (0.1 + 0.001 + 0.15)) / 4)
    assert by["cser-pl R2=1 H=4"]["ratio"] == pytest.approx(4.0)
    # SF: CSER 0.1/0.13875 = 0.721 (ratio 4), CSER-PL R2=1 0.1/0.13775 = 0.726 (ratio 4), R2=4
    # 0.1/0.109625 = 0.912 (ratio 16): 0.9 only with the R2 = 4 average; 0.723 by plain local SGD
    # (ratio 4 < 16); 0.7 by both of ratio 4, and the tie goes to the earlier candidate, CSER
    names = [r["name"] for r in rows]
    assert choose(rows, 0.9) == (names.index("cser-pl R2=4 H=4"), True)
    assert choose(rows, 0.723) == (names.index("cser-pl R2=1 H=4"), True)
    assert choose(rows, 0.7) == (names.index("cser R1=8 H=4"), True)
    # what the choice builds: CSER with a zero C1 and the named C2
    alg = make_algorithm(**by["cser-pl R2=4 H=4"]["algorithm"])
    assert (alg.c1.name, alg.c2.name, alg.c2.ratio, alg.period) == ("zero", "grbs", 4.0, 4)
    assert make_algorithm(**by["cser-pl R2=1 H=4"]["algorithm"]).c2.name == "none"
    assert by["cser-pl R2=4 H=4"]["flags"] == "--algorithm cser --compressor zero --period 4 --compressor2 grbs --ratio2 4"


def test_one_worker_runs_sync_without_measuring():
    import mxnet as mx
    from mxnet import autograd, gluon
    net = gluon.nn.Dense(4, in_units=8)
    net.initialize()
    lines = []
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, communicator=LocalCommunicator(),
                            algorithm=AutoAlgorithm(log=lines.append))
    x, y = mx.nd.ones((4, 8)), mx.nd.zeros((4, 4))
    for _ in range(3):
        with autograd.record():
            loss = gluon.loss.L2Loss()(net(x), y)
        loss.backward()
        tr.step(4)
    assert tr.algorithm.current.name == "sync" and tr.algorithm.current.compressor.name == "none"
    assert tr.algorithm.decision["workers"] == 1 and len(lines) == 1 and "one worker" in lines[0]
    with tr.averaged() as report:
        assert report["bn"] == "none"


def test_auto_by_name_and_its_bad_arguments():
    assert make_algorithm("auto").name == "auto"
    assert make_algorithm("auto", ratio=16, period=4).cser_ratios == (16.0,)
    with pytest.raises(ValueError, match="chooses the compressor itself"):
        make_algorithm("auto", compressor="grbs")
    with pytest.raises(ValueError, match="target scaling factor"):
        AutoAlgorithm(target_sf=1.5)
    with pytest.raises(ValueError, match="link_mbit"):
        AutoAlgorithm(link_mbit=0)
