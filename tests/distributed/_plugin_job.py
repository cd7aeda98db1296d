"""Worker program for test_registry.py: the registered ``every_other`` algorithm and ``strided``
compressor of plugin_algorithms.py trained through ``DistributedTrainer`` on real Horovod workers,
given by name (``module:name`` and, once the module is imported, the bare name), by options and
by object. Writes each configuration's trajectory of parameters (bias then weight) to
$OUT/rank{R}.json."""
import json
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, get_communicator, make_algorithm, make_compressor

O, D, B, STEPS, LR = 4, 6, 5, 7, 0.1
MODULE = "tests.distributed.plugin_algorithms"

CONFIGS = {   # each is a function: the module is imported by the first name that needs it
    "every_other": lambda: dict(algorithm=f"{MODULE}:every_other"),
    "every_other_offset1": lambda: dict(algorithm=make_algorithm("every_other", offset=1)),
    "strided": lambda: dict(algorithm="sync", compressor=make_compressor("strided", ratio=2)),
    "strided_by_name": lambda: dict(algorithm={"name": "sync", "compressor": "strided"}),
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
    return np.array(traj), tr.algorithm.config()


def main():
    comm = get_communicator()
    out = {}
    for name, cfg in CONFIGS.items():
        traj, config = run(comm, cfg())
        out[name] = traj.tolist()
        out[name + ".config"] = config
    with open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
