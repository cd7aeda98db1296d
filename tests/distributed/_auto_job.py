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

STEPS = 14
SKIP, MEASURE = 2, 3          # the choice is made after step SKIP + MEASURE - 1 (0-based)
SEED = 5


def configs():
    # slow: 1 kbit/s, far below what the 272 bytes of gradients need; only sync and CSER R1=4, H=3
    slow = dict(candidates=("sync", "cser"), cser_ratios=(4,), period=3, link_mbit=0.001)
    return {
        "slow": (dict(slow), {}),
        "slow.pt": (dict(slow), {"bucket_mb": 0}),
        # fast: 1 Tbit/s and no per-collective cost: sync reaches any target
        "fast": (dict(link_mbit=1e6, latency_s=0.0), {}),
        "measured": ({}, {}),
    }


def run(comm, opts, trainer_kw, lines):
    mx.random.seed(1234 + comm.rank)
    net = gluon.nn.Dense(job.O, in_units=job.D)
    net.initialize(mx.init.Normal(0.3))
    algo = AutoAlgorithm(skip_steps=SKIP, measure_steps=MEASURE, seed=SEED, log=lines.append, **opts)
    tr = DistributedTrainer(net.collect_params(), "sgd", dict(job.OPT), communicator=comm, algorithm=algo,
                            **trainer_kw)
    x, y = (mx.nd.array(a) for a in job.data(comm.rank))
    loss_fn = gluon.loss.L2Loss()
    params = [p for _, p in sorted(net.collect_params().items())]
    flat = lambda: np.concatenate([p.data().asnumpy().ravel() for p in params])  # noqa: E731
    traj, current = [flat()], []
    for _ in range(STEPS):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        tr.step(job.B)
        traj.append(flat())
        current.append(tr.algorithm.current.name)
    with tr.averaged():
        avg = flat()
    return np.array(traj), avg, flat(), tr.algorithm.decision, current


def main():
    comm = get_communicator()
    out = os.environ["OUT"]
    arrays, meta = {}, {}
    for name, (opts, kw) in configs().items():
        lines = []
        traj, avg, after, decision, current = run(comm, opts, kw, lines)
        arrays[f"{name}.traj"], arrays[f"{name}.avg"], arrays[f"{name}.after"] = traj, avg, after
        meta[name] = {"decision": decision, "current": current, "lines": lines}
    np.savez(os.path.join(out, f"rank{comm.rank}.npz"), **arrays)
    with open(os.path.join(out, f"rank{comm.rank}.json"), "w") as f:
        json.dump(meta, f)


if __name__ == "__main__":
    main()
