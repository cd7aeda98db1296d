"""Worker script for tests/distributed/test_auto.py: runs under horovodrun, trains _algo_job's linear
model on rank-specific data with ``algorithm="auto"`` under a forced slow and a forced fast link and
with the link measured, and saves each rank's trajectory, decision and averaged model."""
import json
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, get_communicator
from gluon_suite.distributed.auto import AutoAlgorithm

import _algo_job as job

STEPS = 20
SKIP, MEASURE = 2, 3          # the choice is made after step SKIP + MEASURE - 1 (0-based)
SEED = 5
PL_PERIOD = 4                 # slow.pl: measured steps 2, 4, 5; the models' average at step 7 is timed
KEEP_MARGIN = -1e6            # slow.keep: kept unless CSER's step is a million times sync's
LOCAL_SWITCH = 8              # with local steps (H = 8 or 4): the choice runs from step 8 (0-based)


def configs():
    # slow: 1 kbit/s, far below what the 272 bytes of gradients need; only sync and CSER R1=4, H=3
    slow = dict(candidates=("sync", "cser"), cser_ratios=(4,), period=3, link_mbit=0.001, verify=False)
    return {
        "slow": (dict(slow), {}),
        "slow.pt": (dict(slow), {"bucket_mb": 0}),
        "slow.resume": (dict(slow), {"resume_check": True}),
        # the chosen CSER's steps are timed against sync's: kept or reverted, the same on both workers
        "slow.verify": (dict(slow, verify=True), {"race_check": True}),
        # the same with a margin that keeps any measured time (below the range a user may give):
        # the way back from the race to the choice runs on every run
        "slow.keep": (dict(slow, verify=True), {"race_check": True, "keep_margin": KEEP_MARGIN}),
        # a margin of 1 keeps nothing, deterministically. CSER R1=4 (overall ratio 1.7) is a close
        # call: a window of CSER, then one of sync, which stays
        "slow.revert": (dict(slow, verify=True, verify_margin=1.0), {}),
        # R1=64 (overall ratio 32) is a clear one: a window of CSER against sync's measured step
        "slow.clear": (dict(slow, cser_ratios=(64,), verify=True, verify_margin=1.0), {}),
        # fast: 1 Tbit/s and no per-collective cost: sync reaches any target. With CSER-PL among
        # the candidates the measuring phase takes local steps (H = PERIOD) and decides after the
        # models' first timed average
        "fast": (dict(link_mbit=1e6, latency_s=0.0), {}),
        # slow, CSER-PL among the candidates: it continues from the measuring phase's local steps
        "slow.pl": (dict(candidates=("sync", "cser_pl"), period=PL_PERIOD, pl_periods=(PL_PERIOD,), link_mbit=0.001,
                         latency_s=0.0, verify=False), {}),
        # the same with local SGD at H = 4 and 8 alone: the longer period has the higher SF, and it
        # continues from the measuring phase's models, averaged on the deciding step
        "slow.pl.period": (dict(candidates=("cser_pl",), period=PL_PERIOD, pl_ratios=(1,),
                                pl_periods=(PL_PERIOD, 2 * PL_PERIOD), link_mbit=0.001, latency_s=0.0,
                                verify=False), {}),
        "measured": ({}, {}),
    }


def run(comm, opts, trainer_kw, lines):
    mx.random.seed(1234 + comm.rank)
    net = gluon.nn.Dense(job.O, in_units=job.D)
    net.initialize(mx.init.Normal(0.3))
    algo = AutoAlgorithm(skip_steps=SKIP, measure_steps=MEASURE, seed=SEED, log=lines.append, **opts)
    if "keep_margin" in trainer_kw:
        algo.verify_margin = trainer_kw["keep_margin"]
    tr = DistributedTrainer(net.collect_params(), "sgd", dict(job.OPT), communicator=comm, algorithm=algo,
                            **{k: v for k, v in trainer_kw.items() if k not in ("resume_check", "race_check", "keep_margin")})
    x, y = (mx.nd.array(a) for a in job.data(comm.rank))
    loss_fn = gluon.loss.L2Loss()
    params = [p for _, p in sorted(net.collect_params().items())]
    flat = lambda: np.concatenate([p.data().asnumpy().ravel() for p in params])  # noqa: E731
    traj, current, extra, midrace = [flat()], [], {}, None
    for _ in range(STEPS):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        tr.step(job.B)
        traj.append(flat())
        current.append(tr.algorithm.current.name)
        dec = tr.algorithm.decision
        if trainer_kw.get("race_check") and midrace is None and dec and "verified" not in dec \
                and tr.algorithm.current.name == "sync" and dec["algorithm"]["name"] != "sync":
            state = tr.state_dict()      # taken during the race, loaded into a new trainer at the end
            midrace = {"meta": json.loads(json.dumps(state["meta"])),
                       "arrays": {k: v.copy() for k, v in state["arrays"].items()}}
    with tr.averaged():
        avg = flat()
    if midrace is not None:
        extra = resume_mid_race(comm, midrace, net)
    if trainer_kw.get("resume_check"):
        extra = resume_and_resize(comm, tr, net, params, flat)
    return np.array(traj), avg, flat(), tr.algorithm.decision, current, extra


def resume_mid_race(comm, state, net):
    """A checkpoint taken while the check runs sync against the choice resumes with sync (the
    state it holds), keeping the decision."""
    tr2 = DistributedTrainer(net.collect_params(), "sgd", dict(job.OPT), communicator=comm,
                             algorithm=AutoAlgorithm(skip_steps=SKIP, measure_steps=MEASURE, seed=SEED,
                                                     log=[].append))
    tr2.load_state_dict(state)
    return {"midrace_current": tr2.algorithm.current.name, "midrace_choice": tr2.algorithm.decision["choice"]}


def resume_and_resize(comm, tr, net, params, flat):
    """A second trainer on the same network loads the first one's state: it continues with the chosen
    algorithm and its residuals. Then an elastic reset folds the residual into the model and goes
    back to sync, undecided."""
    state = tr.state_dict()
    mine = [p.data().copy() for p in params]      # this worker's own model (CSER: x_i)
    # x_i - e_i: the same on every worker (the CSER invariant)
    common = flat() - np.concatenate([tr.algorithm.view("err", i).asnumpy().ravel() for i in range(len(params))])
    lines = []
    tr2 = DistributedTrainer(net.collect_params(), "sgd", dict(job.OPT), communicator=comm,
                             algorithm=AutoAlgorithm(skip_steps=SKIP, measure_steps=MEASURE, seed=SEED,
                                                     log=lines.append))
    for p, w in zip(params, mine):   # the new trainer broadcast rank 0's weights; a resume loads its own
        p.set_data(w)
    tr2.load_state_dict({"meta": state["meta"], "arrays": {k: v.copy() for k, v in state["arrays"].items()}})
    out = {"resumed_current": tr2.algorithm.current.name,
           "resumed_decision_equal": tr2.algorithm.decision == tr.algorithm.decision,
           "err_equal": bool(all(np.array_equal(tr.algorithm.view("err", i).asnumpy(),
                                                tr2.algorithm.view("err", i).asnumpy())
                                 for i in range(len(params))))}
    tr2.algorithm.reset_for_resize()
    out.update(after_reset_current=tr2.algorithm.current.name, after_reset_decision=tr2.algorithm.decision,
               after_reset_c1=tr2.algorithm.current.c1.name,
               folded_equals_common=bool(np.abs(flat() - common).max() <= 1e-6), common=common.tolist())
    return out


def main():
    comm = get_communicator()
    out = os.environ["OUT"]
    arrays, meta = {}, {}
    for name, (opts, kw) in configs().items():
        lines = []
        traj, avg, after, decision, current, extra = run(comm, opts, kw, lines)
        arrays[f"{name}.traj"], arrays[f"{name}.avg"], arrays[f"{name}.after"] = traj, avg, after
        meta[name] = {"decision": decision, "current": current, "lines": lines, **extra}
    np.savez(os.path.join(out, f"rank{comm.rank}.npz"), **arrays)
    with open(os.path.join(out, f"rank{comm.rank}.json"), "w") as f:
        json.dump(meta, f)


if __name__ == "__main__":
    main()
