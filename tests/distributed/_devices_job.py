"""Several contexts per worker: a small MLP trained for STEPS steps by a worker holding its
parameters on one context (the whole per-worker batch) and by a worker holding them on two CPU
contexts (the batch split with ``split_and_load``), from the same initial weights. Used in process
(1 worker) by test_devices.py and under ``horovodrun -np 2`` (run as a script: writes
``rank{R}.npz`` to $OUT)."""
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, get_communicator

STEPS = 20
B, D, H, O = 8, 12, 16, 4
CTX1 = [mx.cpu(0)]
CTX2 = [mx.cpu(0), mx.cpu(1)]
SGD = ("sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-3})
ADA = ("adaalter", {"learning_rate": 0.05, "epsilon": 1e-2})
CONFIGS = {
    "sync": (SGD, dict(algorithm="sync")),
    "sync_grbs": (SGD, dict(algorithm="sync", compressor="grbs", ratio=4)),
    "sync_randomk": (SGD, dict(algorithm="sync", compressor="randomk", ratio=4)),
    "sync_fp16": (SGD, dict(algorithm="sync", compressor="fp16")),
    "ef": (SGD, dict(algorithm="ef")),
    "ef_topk": (SGD, dict(algorithm="ef", compressor="topk", ratio=4)),
    "ef_sign": (SGD, dict(algorithm="ef", compressor="sign")),
    "local": (SGD, dict(algorithm="local", period=4)),
    "cser_grbs": (SGD, dict(algorithm="cser", compressor="grbs", ratio=4, compressor2="grbs",
                            ratio2=2, period=3)),
    "cser_randomk": (SGD, dict(algorithm="cser", compressor="randomk", ratio=4, period=3)),
    "cser_pl": (SGD, dict(algorithm="cser", compressor="zero", compressor2="grbs", ratio2=2,
                          period=3)),
    "local_adaalter": (ADA, dict(algorithm="local_adaalter", period=3, warmup_steps=2)),
}
# one bucket per tensor as well (the default layout puts all four tensors in one bucket)
CONFIGS.update({f"{k}.pt": (o, dict(c, bucket_mb=0)) for k, (o, c) in list(CONFIGS.items())
                if k in ("sync", "ef_topk", "cser_grbs")})


def batches(rank):
    """Three fixed per-worker batches, cycled."""
    rs = np.random.RandomState(200 + rank)
    return [(rs.normal(size=(B, D)).astype(np.float32), rs.normal(size=(B, O)).astype(np.float32))
            for _ in range(3)]


def initial_weights():
    """The initial weights in network order (weight, bias, weight, bias), drawn with NumPy: the
    same in every run and on every worker."""
    rs = np.random.RandomState(7)
    return [rs.normal(0, 0.3, (H, D)), rs.normal(0, 0.1, (H,)), rs.normal(0, 0.3, (O, H)),
            rs.normal(0, 0.1, (O,))]


def build(ctx):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(H, in_units=D, activation="relu"), gluon.nn.Dense(O, in_units=H))
    net.initialize(mx.init.Zero(), ctx=ctx)
    for p, w in zip(net.collect_params().values(), initial_weights()):
        p.set_data(mx.nd.array(w))   # every context's copy
    return net


def build_deferred(ctx, seed):
    """The same MLP with deferred shapes, initialised from ``mx.random.seed(seed)``."""
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(H, activation="relu"), gluon.nn.Dense(O))
    net.initialize(mx.init.Normal(0.3), ctx=ctx)
    return net


def flat(net, copy=0):
    """Every parameter's ``copy``-th context copy, flattened in network order (not by name: names
    carry a process-wide counter, and 'dense10' sorts before 'dense9')."""
    return np.concatenate([p.list_data()[copy].asnumpy().ravel()
                           for p in net.collect_params().values()])


def train(ctx, cfg, comm=None, steps=STEPS, rank=0, net=None, trainer=None, start=0):
    """Train ``steps`` steps on ``ctx``; returns (net, trainer, [flat weights after each step])."""
    (opt, opt_params), kwargs = CONFIGS[cfg]
    net = net or build(ctx)
    trainer = trainer or DistributedTrainer(net.collect_params(), opt, dict(opt_params),
                                            communicator=comm or get_communicator(), seed=3, **kwargs)
    loss_fn = gluon.loss.L2Loss()
    data, traj = batches(rank), []
    for step in range(start, start + steps):
        x, y = data[step % len(data)]
        xs = gluon.utils.split_and_load(mx.nd.array(x), ctx)
        ys = gluon.utils.split_and_load(mx.nd.array(y), ctx)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        autograd.backward(losses)
        trainer.step(B)
        traj.append(flat(net))
    return net, trainer, traj


def main():
    comm = get_communicator()
    out = {}
    for cfg in CONFIGS:
        _, _, one = train(CTX1, cfg, comm, rank=comm.rank)
        net, tr, two = train(CTX2, cfg, comm, rank=comm.rank)
        out[f"{cfg}.one"], out[f"{cfg}.two"] = np.array(one), np.array(two)
        out[f"{cfg}.copy1"] = flat(net, 1)
        if cfg == "cser_grbs":   # local models differ after step 20: averaged() on both copies
            with tr.averaged():
                out["averaged"] = np.stack([flat(net, 0), flat(net, 1)])
            out["restored"] = np.stack([flat(net, 0), flat(net, 1)])
    # deferred initialisation under Horovod: rank 0's initial weights reach every context's copy
    # (each rank draws other ones); the trainer exists before the first forward
    for name, ctx, seed in (("deferred.one", CTX1, 0), ("deferred.two", CTX2, comm.rank)):
        net = build_deferred(ctx, seed)
        tr = DistributedTrainer(net.collect_params(), "sgd", dict(SGD[1]), communicator=comm)
        _, _, traj = train(ctx, "sync", net=net, trainer=tr, rank=comm.rank)
        out[name] = np.array(traj)
        out[name + ".copy1"] = flat(net, len(ctx) - 1)
    np.savez(os.path.join(os.environ["OUT"], f"rank{comm.rank}.npz"), **out)


if __name__ == "__main__":
    main()
