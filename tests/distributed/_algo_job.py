"""Worker script for tests/distributed/test_algorithms.py: runs under horovodrun, trains a linear model on
rank-specific data with each algorithm configuration, and saves the trajectories per rank."""
import json
import os
import random

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, get_communicator
from gluon_suite.distributed.compression import make_compressor

STEPS = 20
B, D, O = 8, 16, 4
OPT = {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-3}
CONFIGS = {
    "sync": dict(algorithm="sync"),
    "cser_identity": dict(algorithm="cser", compressor="none", compressor2="none", period=4),
    "ef_identity": dict(algorithm="ef", compressor="none"),
    "cser_zero_identity": dict(algorithm="cser", compressor="zero", compressor2="none", period=4),
    "local": dict(algorithm="local", period=4),
    "cser_grbs": dict(algorithm="cser", compressor="grbs", ratio=4, compressor2="grbs", ratio2=2, period=3),
    "cser_grbs_model": dict(algorithm="cser", compressor="grbs", ratio=4, compressor2="grbs", ratio2=2,
                            period=3, c1_operand="model"),
    "cser_grbs_c2only": dict(algorithm="cser", compressor="grbs", ratio=4, compressor2="grbs", ratio2=2,
                             period=3, reset_step="c2_only"),
    "cser_grbs_authors": dict(algorithm="cser", compressor="grbs", ratio=4, compressor2="grbs", ratio2=2,
                              period=3, c1_operand="model", reset_step="c2_only"),
    "cser_grbs_flat": dict(algorithm="cser", compressor=make_compressor("grbs", ratio=4, structure="flat"),
                           compressor2=make_compressor("grbs", ratio=2, seed=7919, structure="flat"),
                           period=3),
    "ef_topk": dict(algorithm="ef", compressor="topk", ratio=2),
    "ef_sign": dict(algorithm="ef", compressor="sign"),
    "sync_fp16": dict(algorithm="sync", compressor="fp16"),
}
# every configuration once more with one bucket per tensor (bucket_mb=0), suffix '.pt'; the
# default is one bucket holding both parameters (bias, then weight: reverse network order)
CONFIGS.update({f"{k}.pt": dict(v, bucket_mb=0) for k, v in list(CONFIGS.items())})


def data(rank):
    rs = np.random.RandomState(100 + rank)
    return rs.normal(size=(B, D)).astype(np.float32), rs.normal(size=(B, O)).astype(np.float32)


def run(comm, cfg):
    mx.random.seed(1234 + comm.rank)  # different init per rank: the broadcast must fix it
    net = gluon.nn.Dense(O, in_units=D)
    net.initialize(mx.init.Normal(0.3))
    tr = DistributedTrainer(net.collect_params(), "sgd", dict(OPT), communicator=comm, **cfg)
    x, y = (mx.nd.array(a) for a in data(comm.rank))
    loss_fn = gluon.loss.L2Loss()
    params = [p for _, p in sorted(net.collect_params().items())]
    traj, errs = [np.concatenate([p.data().asnumpy().ravel() for p in params])], []
    for step in range(STEPS):
        # the global RNGs differ per rank, as data augmentation would make them
        random.seed(comm.rank * 1000 + step)
        np.random.seed(comm.rank * 1000 + step)
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        tr.step(B)
        traj.append(np.concatenate([p.data().asnumpy().ravel() for p in params]))
        if "err" in tr.algorithm.state_kinds:  # per parameter, trainer (sorted) order
            errs.append(np.concatenate([tr.algorithm.view("err", i).asnumpy().ravel()
                                        for i in range(len(tr._params))]))
    with tr.averaged():
        avg = np.concatenate([p.data().asnumpy().ravel() for p in params])
    after = np.concatenate([p.data().asnumpy().ravel() for p in params])
    return np.array(traj), (np.array(errs) if errs else np.zeros(0)), avg, after


ADA_OPT = {"learning_rate": 0.05, "epsilon": 1e-2}  # well-conditioned first step (B starts at 0)
ADA_CONFIGS = {
    "ladaalter": (dict(algorithm="local_adaalter", period=3, warmup_steps=2), False),
    "ladaalter_per_step": (dict(algorithm="local_adaalter", period=3, warmup_steps=2, pad="per_step"), False),
    "ladaalter_h1_same_data": (dict(algorithm="local_adaalter", period=1), True),
    "adaalter_sync_same_data": (dict(algorithm="sync"), True),
}
ADA_CONFIGS.update({f"{k}.pt": (dict(v[0], bucket_mb=0), v[1]) for k, v in list(ADA_CONFIGS.items())})


def run_adaalter(comm, cfg, same_data):
    mx.random.seed(1234 + comm.rank)
    net = gluon.nn.Dense(O, in_units=D)
    net.initialize(mx.init.Normal(0.3))
    cfg = dict(cfg)
    if "pad" in cfg:   # the padding is an option of the algorithm object
        from gluon_suite.distributed.local_adaalter import LocalAdaAlter
        cfg["algorithm"] = LocalAdaAlter(cfg.pop("period"), cfg.pop("warmup_steps"), pad=cfg.pop("pad"))
    tr = DistributedTrainer(net.collect_params(), "adaalter", dict(ADA_OPT), communicator=comm, **cfg)
    x, y = (mx.nd.array(a) for a in data(0 if same_data else comm.rank))
    loss_fn = gluon.loss.L2Loss()
    params = [p for _, p in sorted(net.collect_params().items())]
    flat = lambda arrs: np.concatenate([a.asnumpy().ravel() for a in arrs])  # noqa: E731
    traj, accs, Bs = [flat(p.data() for p in params)], [], []
    for step in range(12):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        tr.step(B)
        traj.append(flat(p.data() for p in params))
        states = tr._updaters[0].states
        Bs.append(flat(states[i] for i in sorted(states)))
        accs.append(flat(tr.algorithm.view("acc", i) for i in range(len(tr._params)))
                    if "acc" in tr.algorithm.state_kinds else np.zeros(1))
    return np.array(traj), np.array(Bs), np.array(accs)


GRBS_BUCKET_SHAPES = [(8, 3, 3, 3), (8,), (10, 8), (10,), (16, 10), (33,)]
GRBS_BUCKET_STEPS = 12


def grbs_bucket_values(rank, step):
    """Rank- and step-specific values of the multi-tensor GRBS bucket (regenerated by the test)."""
    rs = np.random.RandomState(100 * rank + step)
    return [rs.normal(size=s).astype(np.float32) for s in GRBS_BUCKET_SHAPES]


def bucket_grbs(comm, out):
    """Per-tensor GRBS inside one multi-tensor bucket: mean(C(v)) over workers on the bucket's
    flat vector, and the collectives per step."""
    from gluon_suite.distributed.algorithms import sync_payload
    from gluon_suite.distributed.buckets import layout_buckets
    params = []
    for i, shape in enumerate(GRBS_BUCKET_SHAPES):
        p = gluon.Parameter(f"t{i}", shape=shape)
        p.initialize(mx.init.Zero())
        params.append((i + 3, p))           # trainer indices 3..8: the per-tensor keys
    (bucket,) = layout_buckets(params, bucket_mb=25)
    comp = make_compressor("grbs", ratio=16, seed=21)
    results, calls, sizes = [], [], []
    for step in range(GRBS_BUCKET_STEPS):
        values = grbs_bucket_values(comm.rank, step)
        flat = bucket.gather([mx.nd.array(values[i - 3]) for i in bucket.indices])
        comm.stats.reset()
        pl = comp.compress(flat, bucket.key, step, layout=bucket)
        ex = sync_payload(comm, pl, f"grbs.bucket.{step}")
        avg = bucket.zeros()
        ex.add_to(avg)
        results.append(avg.asnumpy())
        calls.append(sum(comm.stats.calls.values()))
        sizes.append(sum(t.size for t in pl.tensors))
    out["grbs_bucket.avg"] = np.array(results)
    out["grbs_bucket.calls"] = np.array(calls)
    out["grbs_bucket.payload"] = np.array(sizes)
    out["grbs_bucket.indices"] = np.array(bucket.indices)


def main():
    comm = get_communicator()
    out = {}
    for name, (cfg, same) in ADA_CONFIGS.items():
        out[f"{name}.traj"], out[f"{name}.B"], out[f"{name}.acc"] = run_adaalter(comm, cfg, same)
    for name, cfg in CONFIGS.items():
        traj, errs, avg, after = run(comm, cfg)
        out[f"{name}.traj"], out[f"{name}.err"] = traj, errs
        out[f"{name}.avg"], out[f"{name}.after"] = avg, after
    # deferred initialisation: parameters are broadcast as they are initialised, before first use
    mx.random.seed(77 + comm.rank)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.Dense(3))
    net.initialize(mx.init.Normal(0.5))
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, communicator=comm)
    x = mx.nd.ones((2, 5)) * (comm.rank + 1)
    with autograd.record():
        first = net(mx.nd.ones((2, 5)))  # same input on every rank: same output if weights equal
    out["deferred.first_output"] = first.asnumpy()
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    tr.allreduce_grads()  # the split form of step()
    tr.update(2)
    out["deferred.after"] = np.concatenate([p.data().asnumpy().ravel()
                                            for _, p in sorted(net.collect_params().items())])
    # GRBS regions with per-rank global RNG states
    np.random.seed(comm.rank)
    random.seed(comm.rank)
    c = make_compressor("grbs", ratio=16, seed=5)
    regions = []
    for step in range(50):
        for key, shape in enumerate([(64, 32, 3, 3), (100,), (7, 5), (1000, 40)]):
            np.random.rand(comm.rank + 1)  # consume the global RNG differently per rank
            r = c.region(shape, key, step)
            regions.append(-1 if r is None else hash((r[0], r[1])) % 1_000_000_007)
    out["grbs_regions"] = np.array(regions)
    bucket_grbs(comm, out)
    # wire bytes per step for each compressor at its nominal ratio, on a 2.4M-parameter tensor set
    shapes = [(512, 1024), (1024,), (256, 256, 3, 3), (256,), (10, 512)]
    tensors = [mx.nd.random.normal(shape=s) for s in shapes]
    dense = sum(t.size * 4 for t in tensors)
    wire = {}
    from gluon_suite.distributed.algorithms import sync_payload
    bucket = [mx.nd.concat(*[t.reshape((-1,)) for t in tensors], dim=0)]  # the same set as one bucket
    for cname, ratio in [("none", 1), ("fp16", 2), ("grbs", 32), ("randomk", 32), ("topk", 32), ("sign", 32)]:
        for suffix, arrays in (("", tensors), (".bucket", bucket)):
            comp = make_compressor(cname, ratio=ratio)
            comm.stats.reset()
            steps = 30
            for step in range(steps):
                for key, t in enumerate(arrays):
                    ex = sync_payload(comm, comp.compress(t, key, step), f"wire.{cname}{suffix}.{key}")
                    for a in ex.arrays:
                        a.wait_to_read()
            wire[cname + suffix] = {"payload_per_step": comm.stats.total_payload / steps,
                                    "wire_per_step": comm.stats.total_wire / steps, "dense": dense}
    with open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w") as f:
        json.dump({"rank": comm.rank, "wire": wire}, f)
    np.savez(os.path.join(os.environ["OUT"], f"rank{comm.rank}.npz"), **out)


if __name__ == "__main__":
    main()
