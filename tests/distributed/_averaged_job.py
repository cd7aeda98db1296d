"""Worker script for tests/distributed/test_averaged.py: local models on a small BatchNorm network
made to diverge (local SGD, no averaging, rank-specific data, two contexts per worker), then the
averaged model with each BatchNorm choice; saves what was seen before, inside and after."""
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, get_communicator

CTX = [mx.cpu(0), mx.cpu(1)]
N_BN_BATCHES = 3          # the knob; BN_BATCHES offers one more, which must not be used
B, C, S = 6, 3, 2         # batch, input channels, spatial size


def build():
    """Conv 1x1 -> BN -> relu -> flatten -> Dense -> BN(momentum 0.8) -> Dense."""
    net = gluon.nn.HybridSequential(prefix="bnnet_")   # the same names in every process
    with net.name_scope():
        net.add(gluon.nn.Conv2D(4, 1, in_channels=C), gluon.nn.BatchNorm(in_channels=4),
                gluon.nn.Activation("relu"), gluon.nn.Flatten(),
                gluon.nn.Dense(6, in_units=4 * S * S), gluon.nn.BatchNorm(in_channels=6, momentum=0.8),
                gluon.nn.Dense(3, in_units=6))
    return net


def train_batch(rank, step):
    rs = np.random.RandomState(1000 * rank + step)
    return (rs.normal(1.0 + rank, 1.0 + rank, size=(2 * B, C, S, S)).astype(np.float32),
            rs.randint(0, 3, size=2 * B).astype(np.float32))


def bn_batches(rank):
    """This worker's batches for the recompute (N_BN_BATCHES + 1 of them, as (data, label))."""
    rs = np.random.RandomState(7 + rank)
    return [(rs.normal(0.5 * rank, 1.0 + 0.5 * rank, size=(B, C, S, S)).astype(np.float32),
             np.zeros(B, np.float32)) for _ in range(N_BN_BATCHES + 1)]


def snapshot(net, trainer):
    params = sorted(net.collect_params().items())
    out = {f"param.{n}.{j}": d.asnumpy() for n, p in params for j, d in enumerate(p.list_data())}
    out.update({f"grad.{n}.{j}": g.asnumpy() for n, p in params if p.grad_req != "null"
                for j, g in enumerate(p.list_grad())})
    out.update({f"fresh.{n}.{j}": np.array(d._fresh_grad) for n, p in params if p.grad_req != "null"
                for j, d in enumerate(p._data)})
    return out


def run(comm, steps=6):
    mx.random.seed(11 + comm.rank)
    net = build()
    net.initialize(mx.init.Xavier(), ctx=CTX)
    net.hybridize()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.2, "momentum": 0.9},
                            algorithm="local", period=10_000, communicator=comm)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for step in range(steps):
        x, y = train_batch(comm.rank, step)
        xs = gluon.utils.split_and_load(mx.nd.array(x), CTX)
        ys = gluon.utils.split_and_load(mx.nd.array(y), CTX)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        autograd.backward(losses)
        if step < steps - 1:
            tr.step(2 * B)
    # the last backward's gradients are pending (no step yet): averaged() must leave them alone
    out = {f"before.{k}": v for k, v in snapshot(net, tr).items()}
    batches = [(mx.nd.array(x), mx.nd.array(y)) for x, y in bn_batches(comm.rank)]
    for choice in ("recompute", "average", "local"):
        with tr.averaged(net=net, bn_batches=lambda: iter(batches), bn=choice,
                         bn_num_batches=N_BN_BATCHES) as report:
            out.update({f"{choice}.inside.{k}": v for k, v in snapshot(net, tr).items()})
        out[f"{choice}.batches"] = np.array(report["batches"])
        out.update({f"{choice}.after.{k}": v for k, v in snapshot(net, tr).items()})
    try:
        with tr.averaged():
            pass
        out["auto_without_batches"] = np.array("no error")
    except ValueError as exc:
        out["auto_without_batches"] = np.array(str(exc))
    return out


def main():
    comm = get_communicator()
    np.savez(os.path.join(os.environ["OUT"], f"rank{comm.rank}.npz"), **run(comm))


if __name__ == "__main__":
    main()
