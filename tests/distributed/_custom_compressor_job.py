"""Worker program for test_custom_compressor.py: a compressor defined here, outside the package, on
the public ``Compressor`` interface, trained under ``sync`` and ``cser`` on real Horovod workers.

``Strided(r)`` sends every r-th coordinate of a tensor or bucket, starting at ``step mod r``: every
worker picks the same coordinates, so the payloads are summable (one allreduce). Writes each
configuration's trajectory of parameters (bias then weight) to $OUT/rank{R}.json.
"""
import json
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, get_communicator
from gluon_suite.distributed.compression import Compressor, Payload

O, D, B, STEPS, LR = 4, 6, 5, 7, 0.1   # O and O*D multiples of every ratio below


class Strided(Compressor):
    """Every ``ratio``-th coordinate, from offset ``step % ratio`` (the same on all workers)."""
    name = "strided"
    summable = True

    def _compress(self, v, key, step):
        r, offset = int(self.ratio), step % int(self.ratio)
        kept = v.reshape((-1,))[offset::r].copy()

        def add_to(target, tensors, alpha):
            flat = target.reshape((-1,))   # a view: the slice assignment writes into target
            flat[offset::r] += alpha * tensors[0].astype(target.dtype)
        return Payload([kept], add_to)


CONFIGS = {
    "sync": lambda: dict(algorithm="sync", compressor=Strided(ratio=2)),
    "cser": lambda: dict(algorithm="cser", compressor=Strided(ratio=2), compressor2=Strided(ratio=4), period=3),
}


def data(rank):
    rs = np.random.RandomState(100 + rank)
    return rs.normal(size=(B, D)).astype(np.float32), rs.normal(size=(B, O)).astype(np.float32)


def run(comm, cfg):
    mx.random.seed(7)   # the same start on every worker
    net = gluon.nn.Dense(O, in_units=D)
    net.initialize(mx.init.Normal(0.3))
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": LR}, communicator=comm, **cfg)
    x, y = (mx.nd.array(a) for a in data(comm.rank))
    loss_fn = gluon.loss.L2Loss()
    params = [p for _, p in sorted(net.collect_params().items())]   # bias, weight
    traj = [np.concatenate([p.data().asnumpy().ravel() for p in params])]
    for _ in range(STEPS):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        tr.step(B)
        traj.append(np.concatenate([p.data().asnumpy().ravel() for p in params]))
    return np.array(traj)


def main():
    comm = get_communicator()
    out = {}
    for name, cfg in CONFIGS.items():
        out[name] = run(comm, cfg()).tolist()
        out[name + ".pt"] = run(comm, dict(cfg(), bucket_mb=0)).tolist()   # one bucket per tensor
    with open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
