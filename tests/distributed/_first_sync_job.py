"""Worker of test_elastic_sync.py's elastic start-up test: an elastic job whose training function
does little more than Horovod's first GluonState.sync (the moment of a rare native crash), a few
committed steps and a check that the workers hold the same parameters. Kept small so that
`.ci/stress` can run it a hundred times."""
import faulthandler
import json
import os

faulthandler.enable()   # a native crash prints every thread's Python stack
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402
import horovod.mxnet as hvd  # noqa: E402
from gluon_suite.distributed import DistributedTrainer, HorovodCommunicator  # noqa: E402
from gluon_suite.distributed.elastic import ElasticSampler, GluonState, run  # noqa: E402

hvd.init()
mx.random.seed(hvd.rank())            # different initial weights: the broadcasts must make them equal
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(32, activation="relu", in_units=16), gluon.nn.Dense(4, in_units=32))
net.initialize(mx.init.Xavier())
tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9},
                        communicator=HorovodCommunicator())
sampler = ElasticSampler(64, seed=1)
state = GluonState(net, tr, sampler, batch_size=8, epoch=0)
rs = np.random.RandomState(0)
x, y = rs.rand(64, 16).astype(np.float32), rs.randint(0, 4, 64).astype(np.float32)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


@run
def train(state):
    for _ in range(3):
        idx, cnt = sampler.next_batch(8)
        with autograd.record():
            loss = loss_fn(net(mx.nd.array(x[idx])), mx.nd.array(y[idx]))
        loss.backward()
        tr.step(sampler.step_size(cnt))
        sampler.advance(cnt)
        state.commit()


train(state)
flat = np.concatenate([p.data().asnumpy().ravel() for _, p in sorted(net.collect_params().items())])
ref = mx.nd.array(flat)
HorovodCommunicator().broadcast_(ref, 0, name="final.check")   # not hvd.broadcast_ (see comm.py)
with open(os.path.join(os.environ["OUT"], f"rank{hvd.rank()}.json"), "w") as f:
    json.dump({"size": hvd.size(), "diff": float(np.abs(ref.asnumpy() - flat).max())}, f)
