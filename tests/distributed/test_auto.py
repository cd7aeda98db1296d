"""``algorithm="auto"`` on 2 real Horovod workers: with the link forced slow it picks compression,
with it forced fast it picks sync, both workers pick the same, and the updates match a float64
reference of the measuring phase and the chosen algorithm: synchronous momentum SGD up to the
switch, then CSER with the published GRBS masks, the momentum carried over (candidates without
CSER-PL); local momentum SGD with the models averaged every H steps, then CSER-PL continuing from
those local models, or sync from their average and the average of the momenta (CSER-PL among the
candidates). Plus the decision arithmetic against hand-computed cases and the one-worker case."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator, make_algorithm
from gluon_suite.distributed.auto import (CANDIDATE_KINDS, AutoAlgorithm, candidate_list, choose, link_model,
                                          predict_candidates)
from gluon_suite.utils import UserError

from ..conftest import HOROVODRUN, REPO, job_output

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _algo_job as job  # noqa: E402
import _auto_job as auto_job  # noqa: E402
from .test_algorithms import (ONES, SHAPES, ZEROS, grads, grbs_masks, reference_cser,  # noqa: E402
                              reference_mask, split)

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


def sync_steps(x, m, count):
    """``count`` steps of momentum SGD on the averaged gradient from model ``x`` and momentum
    ``m`` (both updated in place); each step's model, the same on every worker."""
    lr, mu, wd = job.OPT["learning_rate"], job.OPT["momentum"], job.OPT["wd"]
    hist = []
    for _ in range(count):
        g = [sum(gs) / N for gs in zip(*(grads(x, i) for i in range(N)))]
        for k in range(len(x)):
            m[k] = mu * m[k] + g[k] + wd * x[k]
            x[k] = x[k] - lr * m[k]
        hist.append([np.concatenate([a.ravel() for a in x])] * N)
    return hist


def reference_auto(x0, r1, period, steps=auto_job.STEPS, switch=SWITCH, seed=auto_job.SEED, back=None,
                   race=None):
    """Momentum SGD on the averaged gradient (one momentum, the same on both workers) for ``switch``
    steps, then CSER as in docs/distributed.md with GRBS masks at R1 (seed) for the update and at
    R1/H (seed + 7919; dense when <= 1) for the error every H-th step, each worker's momentum
    starting from the shared one. ``back``: sync again from that step; ``race = (start, at)``: sync
    from ``start``, then CSER again from ``at`` (the choice kept)."""
    legs = [("sync", switch), ("cser", steps if back is None else back)]
    if back is not None:
        legs.append(("sync", steps))
    elif race is not None:
        legs[1:] = [("cser", race[0]), ("sync", race[1]), ("cser", steps)]
    lr, mu, wd = job.OPT["learning_rate"], job.OPT["momentum"], job.OPT["wd"]
    xs = [[a.copy() for a in x0] for _ in range(N)]
    ms = [[np.zeros_like(a) for a in x0] for _ in range(N)]
    hist, t = [], 0
    r2 = r1 / period
    for kind, until in legs:
        if kind == "sync":
            # from local models: the workers average their models and their momenta (after the
            # step before, so that step's history entry is the average)
            x = [sum(xs[i][k] for i in range(N)) / N for k in range(len(x0))]
            m = [sum(ms[i][k] for i in range(N)) / N for k in range(len(x0))]
            if hist:
                hist[-1] = [np.concatenate([a.ravel() for a in x])] * N
            hist += sync_steps(x, m, until - t)
            xs = [[a.copy() for a in x] for _ in range(N)]
            ms = [[a.copy() for a in m] for _ in range(N)]
            t = until
            continue
        es = [[np.zeros_like(a) for a in x0] for _ in range(N)]
        for t in range(t, until):
            p = []
            for i in range(N):
                g = grads(xs[i], i)
                for k in range(len(x0)):
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
        t = until
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
        # the reset folds the residual into the model (x - e, the same on every worker), then the
        # measuring phase's local SGD (CSER with a zero C1) runs again, undecided
        assert m["folded_equals_common"]
        assert m["after_reset_current"] == "cser" and m["after_reset_c1"] == "zero"
        assert m["after_reset_decision"] is None
    assert np.abs(np.array(meta[0]["slow.resume"]["common"]) - np.array(meta[1]["slow.resume"]["common"])).max() <= 1e-6


def first_window(switch, cycle, skip):
    """The first step (in steps done) of the check's timing: ``skip`` steps after the switch,
    rounded up to a whole cycle."""
    first = switch + skip
    return first + (-first) % cycle


@pytest.mark.parametrize("name, r1, race", [("slow.revert", 4.0, True), ("slow.clear", 64.0, False)])
def test_a_reverted_choice_averages_the_models_and_matches_the_reference(runs, name, r1, race):
    """A close call (predicted gain below 2x) times a window of the choice, then one of sync
    from the averaged models, and stays there; a clear one compares the choice's window with sync's
    measured step and goes back at the window's end."""
    ranks, meta = runs
    d = meta[0][name]["decision"]
    v = d["verified"]
    back = v["sync_from"] if race else d["reverted_at"]
    # the window: whole cycles after a cycle; a pause of the loop restarts it (whole windows later)
    assert (back - first_window(SWITCH, 3, VERIFY_SKIP)) % VERIFY_STEPS == 0 and back > SWITCH
    assert v["sync"] == ("measured" if race else "measured, drained")
    if race:
        assert d["reverted_at"] - back >= VERIFY_STEPS + 1    # sync's window, after one step
    for r in range(N):
        d = meta[r][name]["decision"]
        assert d["choice"] == "sync" and d["reverted_from"] == f"cser R1={r1:g} H=3"
        assert d["verified"] == v and not v["kept"] and len(meta[r][name]["lines"]) == 2
        assert meta[r][name]["current"][back:] == ["sync"] * (auto_job.STEPS - back)
    ref = reference_auto(split(ranks[0][f"{name}.traj"][0]), r1, 3, back=back)
    for r in range(N):
        got, want = ranks[r][f"{name}.traj"][1:], np.array([h[r] for h in ref])
        assert np.abs(got - want).max() <= 1e-5, (r, np.abs(got - want).max(axis=1))


def reference_local(x0, averaged_after, steps=auto_job.STEPS):
    """Each worker's own momentum SGD (momenta never averaged), the models averaged after the steps
    (0-based) of ``averaged_after``: each step's models, and the last models and momenta."""
    lr, mu, wd = job.OPT["learning_rate"], job.OPT["momentum"], job.OPT["wd"]
    xs = [[a.copy() for a in x0] for _ in range(N)]
    ms = [[np.zeros_like(a) for a in x0] for _ in range(N)]
    hist = []
    for t in range(steps):
        for i in range(N):
            g = grads(xs[i], i)
            for k in range(len(x0)):
                ms[i][k] = mu * ms[i][k] + g[k] + wd * xs[i][k]
                xs[i][k] = xs[i][k] - lr * ms[i][k]
        if t in averaged_after:
            avg = [sum(xs[i][k] for i in range(N)) / N for k in range(len(x0))]
            xs = [[a.copy() for a in avg] for _ in range(N)]
        hist.append([np.concatenate([a.ravel() for a in xs[i]]) for i in range(N)])
    return hist, xs, ms


def reference_local_then_sync(x0, switch, period, steps=auto_job.STEPS):
    """Each worker's own momentum SGD, the models averaged every ``period`` steps (the measuring
    phase), then from step ``switch`` (right after an average) synchronous SGD from the average of
    the momenta."""
    hist, xs, ms = reference_local(x0, {t for t in range(switch) if (t + 1) % period == 0}, switch)
    x = xs[0]
    m = [sum(ms[i][k] for i in range(N)) / N for k in range(len(x0))]
    return hist + sync_steps(x, m, steps - switch)


def test_fast_link_keeps_sync_after_local_measuring_steps_and_matches_the_reference(runs):
    ranks, meta = runs
    sw = auto_job.LOCAL_SWITCH
    for r in range(N):
        dec = meta[r]["fast"]["decision"]
        assert dec["choice"] == "sync" and dec["reached"] and dec["step"] == sw
        assert dec["measured"]["start"] == "local" and dec["measured"]["steps"] == auto_job.MEASURE
        assert meta[r]["fast"]["current"] == ["cser"] * (sw - 1) + ["sync"] * (auto_job.STEPS - sw + 1)
    ref = reference_local_then_sync(split(ranks[0]["fast.traj"][0]), sw, 8)
    for r in range(N):
        assert np.abs(ranks[r]["fast.traj"][1:] - np.array([h[r] for h in ref])).max() <= 1e-5


def test_slow_link_continues_cser_pl_from_the_measuring_local_steps(runs):
    """The measuring local SGD (H = 4: whole models averaged after steps 3 and 7) hands its local
    models to CSER-PL R2 = 8, which averages a GRBS block of the error every 4 steps, momenta local."""
    ranks, meta = runs
    sw, h = auto_job.LOCAL_SWITCH, auto_job.PL_PERIOD
    for r in range(N):
        dec = meta[r]["slow.pl"]["decision"]
        assert dec["choice"] == f"cser-pl R2=8 H={h}" and dec["step"] == sw and not dec["reached"]
        assert dec["algorithm"] == {"name": "cser", "compressor": "zero", "period": h,
                                    "compressor2": "grbs", "ratio2": 8.0}
        assert set(meta[r]["slow.pl"]["current"]) == {"cser"}
    assert meta[0]["slow.pl"]["decision"] == meta[1]["slow.pl"]["decision"]
    c2 = lambda t: ONES(t) if t < sw else grbs_masks(8.0, auto_job.SEED + 7919, "tensor", t)  # noqa: E731
    ref = reference_cser(split(ranks[0]["slow.pl.traj"][0]), ZEROS, c2, h, steps=auto_job.STEPS)
    for r in range(N):
        got, want = ranks[r]["slow.pl.traj"][1:], np.array([x[r] for x in ref])
        assert np.abs(got - want).max() <= 1e-5, (r, np.abs(got - want).max(axis=1))
    # local models after the last steps: they differ, and averaged() gives their mean
    a, b = ranks[0]["slow.pl.after"], ranks[1]["slow.pl.after"]
    assert np.abs(a - b).max() > 1e-4 and np.abs(ranks[0]["slow.pl.avg"] - (a + b) / 2).max() <= 1e-6


def test_slow_link_continues_local_sgd_at_a_longer_period(runs):
    """Measuring local SGD at H = 4 (averages after steps 3 and 7), then the chosen local SGD at
    H = 8 from the models averaged on the deciding step: the next average after step 15, the
    momenta local throughout."""
    ranks, meta = runs
    h = auto_job.PL_PERIOD
    for r in range(N):
        dec = meta[r]["slow.pl.period"]["decision"]
        assert dec["choice"] == f"cser-pl R2=1 H={2 * h}" and dec["step"] == auto_job.LOCAL_SWITCH
        assert dec["algorithm"] == {"name": "cser", "compressor": "zero", "period": 2 * h, "compressor2": "none"}
        assert [c["name"] for c in dec["candidates"]] == [f"cser-pl R2=1 H={h}", f"cser-pl R2=1 H={2 * h}"]
    ref, _, _ = reference_local(split(ranks[0]["slow.pl.period.traj"][0]), {3, 7, 15})
    for r in range(N):
        got, want = ranks[r]["slow.pl.period.traj"][1:], np.array([x[r] for x in ref])
        assert np.abs(got - want).max() <= 1e-5, (r, np.abs(got - want).max(axis=1))
    a, b = ranks[0]["slow.pl.period.after"], ranks[1]["slow.pl.period.after"]
    assert np.abs(a - b).max() > 1e-4      # 4 local steps since the last average


def test_measured_link_same_choice_on_both_workers_and_one_line(runs):
    _, meta = runs
    d0, d1 = meta[0]["measured"]["decision"], meta[1]["measured"]["decision"]
    assert d0 == d1 and d0["link"]["source"] == "measured"
    m = d0["measured"]
    assert m["compute_s"] > 0 and m["average_s"] > 0 and m["steps"] == auto_job.MEASURE and m["start"] == "local"
    for r in range(N):   # one line for the decision on every worker's log callable, one for its check
        lines = meta[r]["measured"]["lines"]
        first = d0.get("reverted_from", d0["choice"])
        assert len(lines) == 1 + ("verified" in d0), lines
        assert lines[0].startswith(f"auto: {first} from step {auto_job.LOCAL_SWITCH}"), lines


@pytest.mark.parametrize("name", ["slow.verify", "slow.keep"])
def test_the_choice_is_verified_by_its_measured_step_time_on_both_workers(runs, name):
    """slow.verify: the default margin, kept or reverted as the measured times say; slow.keep: a
    margin that keeps any measured time, so the way back to the choice runs on every run."""
    ranks, meta = runs
    d0, d1 = meta[0][name]["decision"], meta[1][name]["decision"]
    assert d0 == d1
    v = d0["verified"]
    assert v["steps"] == VERIFY_STEPS and v["step_s"] > 0 and v["sync_step_s"] > 0
    # kept only when it beats sync by more than the target allows communication: 1 - 0.9
    margin = 0.1 if name == "slow.verify" else auto_job.KEEP_MARGIN
    assert v["margin"] == pytest.approx(margin) and v["kept"] == (v["step_s"] <= (1 - margin) * v["sync_step_s"])
    if name == "slow.keep":
        assert v["kept"]
    # a close call: CSER's window, then sync's (from the averaged models) as long, after one step.
    # current[i] is the algorithm after step i (0-based), the one that runs step i + 1; steps
    # start .. at - 1 run sync
    start, at = v["sync_from"], v["at"]
    assert v["sync"] == "measured" and (start - first_window(SWITCH, 3, VERIFY_SKIP)) % VERIFY_STEPS == 0
    assert (at - start - 1) % VERIFY_STEPS == 0 and at > start
    for r in range(N):
        cur = meta[r][name]["current"]
        assert cur[:start - 1] == ["sync"] * (SWITCH - 1) + ["cser"] * (start - SWITCH)
        if v["kept"]:
            assert d0["choice"] == "cser R1=4 H=3" and "reverted_from" not in d0
            assert cur[start - 1:] == ["sync"] * (at - start) + ["cser"] * (auto_job.STEPS - at + 1)
        else:
            assert d0["choice"] == "sync" and d0["reverted_from"] == "cser R1=4 H=3" and d0["reverted_at"] == at
            assert cur[start - 1:] == ["sync"] * (auto_job.STEPS - start + 1)
        # a checkpoint taken during sync's window resumes with sync, the choice on record
        assert meta[r][name]["midrace_current"] == "sync"
        assert meta[r][name]["midrace_choice"] == "cser R1=4 H=3"
    a, b = ranks[0][f"{name}.traj"][start:at + 1], ranks[1][f"{name}.traj"][start:at + 1]
    assert np.abs(a - b).max() <= 1e-6      # one model while sync runs
    ref = reference_auto(split(ranks[0][f"{name}.traj"][0]), 4.0, 3, race=(start, at) if v["kept"] else None,
                         back=None if v["kept"] else start)
    for r in range(N):
        got, want = ranks[r][f"{name}.traj"][1:], np.array([h[r] for h in ref])
        assert np.abs(got - want).max() <= 1e-5, (r, np.abs(got - want).max(axis=1))


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
    from gluon_suite.distributed import make_algorithm
    cands = candidate_list(("sync", "cser", "cser_pl"), ratios=(8,), period=4, pl_ratios=(1, 4), pl_periods=(4,))
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


def test_cser_pl_periods_by_hand():
    """CSER-PL at the periods given (default H alone): every R2 at every period, by overall ratio
    H R2, and at one ratio the longer period first (a coordinate waits H (R2 - 1/2) steps on
    average)."""
    assert [c["name"] for c in candidate_list(("cser_pl",), period=4, pl_ratios=(1, 2))] == \
        ["cser-pl R2=1 H=4", "cser-pl R2=2 H=4"]
    cands = candidate_list(("cser_pl",), period=4, pl_ratios=(1, 2, 4), pl_periods=(16, 8, 4))
    got = [(c["algorithm"]["period"], c["algorithm"].get("ratio2", 1.0)) for c in cands]
    # ratios 4; 8: (8, 1) waits 4 steps, (4, 2) 6; 16: (16, 1) 8, (8, 2) 12, (4, 4) 14; 32: (16, 2)
    # 24, (8, 4) 28; 64: (16, 4) 56
    assert got == [(4, 1), (8, 1), (4, 2), (16, 1), (8, 2), (4, 4), (16, 2), (8, 4), (16, 4)]
    assert [c["name"] for c in cands][:2] == ["cser-pl R2=1 H=4", "cser-pl R2=1 H=8"]
    # H = 16, R2 = 1: 15 steps of compute alone, then the whole model (0.15 s) and t0 in one collective
    rows = predict_candidates(cands, 0.1, [1e6], 4, 0.001, 1e-7)
    by = {r["name"]: r for r in rows}
    assert by["cser-pl R2=1 H=16"]["step_s"] == pytest.approx((16 * 0.1 + 0.001 + 0.15) / 16)
    assert by["cser-pl R2=1 H=16"]["ratio"] == pytest.approx(16.0)
    # SF: R2=1 at H=4 0.726, H=8 0.841, H=16 0.914, R2=2 at H=4 0.840, R2=4 at H=4 0.912: 0.9 is
    # first reached at ratio 16, where H=16 R2=1 comes before H=4 R2=4 (both reach it)
    names = [r["name"] for r in rows]
    assert by["cser-pl R2=4 H=4"]["scaling_factor"] >= 0.9
    assert choose(rows, 0.9) == (names.index("cser-pl R2=1 H=16"), True)
    assert choose(rows, 0.8) == (names.index("cser-pl R2=1 H=8"), True)
    # given periods replace the default ones; a bad one is a one-line error
    assert [c["name"] for c in candidate_list(("cser_pl",), period=4, pl_ratios=(1,), pl_periods=(6, 2))] == \
        ["cser-pl R2=1 H=2", "cser-pl R2=1 H=6"]
    with pytest.raises(UserError, match="period must be an integer >= 1"):
        candidate_list(("cser_pl",), pl_periods=(0,))
    a = AutoAlgorithm(period=4, pl_ratios=(1, 8), pl_periods=(4, 12))
    assert a.config()["pl_periods"] == [4, 12] and a.config()["pl_ratios"] == [1, 8]
    assert AutoAlgorithm().config()["pl_periods"] == [8]


def test_window_pauses_by_hand():
    """The check's window: a gap over 5 x the median gap + 50 ms is a pause (an evaluation); the
    last window allowed takes the pause's excess over the median out of its time."""
    from gluon_suite.distributed.auto import window_step_time
    gaps = [0.002, 0.003, 0.002, 0.9, 0.002, 0.002, 0.003]   # median 0.002; limit 0.06
    assert window_step_time(1.7, gaps, 8) == (pytest.approx(1.7 / 8), True)
    assert window_step_time(1.7, gaps, 8, subtract=True) == (pytest.approx((1.7 - 0.898) / 8), True)
    assert window_step_time(0.8, [0.002, 0.05, 0.002], 4, subtract=True) == (pytest.approx(0.2), False)
    assert window_step_time(0.8, [], 4) == (pytest.approx(0.2), False)


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
    # the target and the candidates (the scripts' --target-sf, --auto-candidates), for auto alone
    a = make_algorithm("auto", target_sf=0.75, candidates=["sync", "cser_pl"])
    assert a.target_sf == 0.75 and a.kinds == ("sync", "cser_pl") and a.verify_margin == pytest.approx(0.25)
    assert make_algorithm("auto").target_sf == 0.9 and make_algorithm("auto").kinds == CANDIDATE_KINDS
    assert make_algorithm("auto", cser_ratios=[16, 4, 16]).cser_ratios == (4.0, 16.0)
    assert make_algorithm("auto", period=4, pl_periods=[16, 4]).config()["pl_periods"] == [4, 16]
    with pytest.raises(ValueError, match="algorithm 'local' takes no option pl_periods"):
        make_algorithm("local", pl_periods=[16])
    with pytest.raises(ValueError, match="either a ratio"):
        make_algorithm("auto", ratio=8, cser_ratios=[4])
    for name, kw in (("sync", {"target_sf": 0.8}), ("cser", {"candidates": ["sync"]}), ("ef", {"cser_ratios": [4]})):
        with pytest.raises(ValueError, match=f"algorithm '{name}' takes no option {next(iter(kw))}"):
            make_algorithm(name, **kw)
    with pytest.raises(ValueError, match="option candidates: unknown auto candidate 'dense'"):
        make_algorithm("auto", candidates=["sync", "dense"])
    with pytest.raises(ValueError, match="target scaling factor"):
        AutoAlgorithm(target_sf=1.5)
    with pytest.raises(ValueError, match="link_mbit"):
        AutoAlgorithm(link_mbit=0)
