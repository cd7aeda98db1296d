"""Worker of tests/dist/test_elastic.py: an elastic digits MLP job; with KILL=1 the worker of
rank 2 kills itself with SIGKILL in the middle of epoch 2 (once)."""
import json, os, signal, sys
import mxnet as mx, numpy as np
from mxnet import autograd, gluon
import horovod.mxnet as hvd
from gluon_suite.cv.data import load_digits
from gluon_suite.dist import DistributedTrainer, HorovodCommunicator
from gluon_suite.dist.elastic import ElasticSampler, GluonState, run
from gluon_suite.dist.schedules import ElasticRamp

OUT = os.environ["OUT"]; E = 3; B = 16
hvd.init()
xtr, ytr = load_digits("train"); xte, yte = load_digits("test")
xtr, xte = xtr.reshape(len(xtr), -1), xte.reshape(len(xte), -1)
mx.random.seed(0)
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(64, activation="relu", in_units=64), gluon.nn.Dense(10, in_units=64))
net.initialize(mx.init.Xavier())
sched = ElasticRamp(lambda t: 0.05, ref_batch=B * 3, ramp_steps=5, global_batch=B * hvd.size())
tr = DistributedTrainer(net.collect_params(), "sgd", {"lr_scheduler": sched, "momentum": 0.9},
                        communicator=HorovodCommunicator())
sampler = ElasticSampler(len(ytr), seed=1)
state = GluonState(net, tr, sampler, batch_size=B, epoch=0, seen=[], cur=[], sizes=[], lrs=[])
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

@run
def train(state):
    while state.epoch < E:
        if sampler.epoch != state.epoch:
            sampler.set_epoch(state.epoch)
        while True:
            idx, cnt = sampler.next_batch(B)
            if idx is None:
                break
            glob = sampler.order()[sampler.processed:sampler.processed + cnt]
            with autograd.record():
                loss = loss_fn(net(mx.nd.array(xtr[idx])), mx.nd.array(ytr[idx]))
            loss.backward()
            tr.step(len(idx))
            mx.nd.waitall()
            sampler.advance(cnt)
            state.cur = state.cur + glob.tolist()
            state.sizes = state.sizes + [hvd.size()]
            state.lrs = state.lrs + [tr.learning_rate]
            if os.environ.get("KILL") == "1" and state.epoch == 1 and hvd.rank() == 2 and hvd.size() == 3 and sampler.processed > 400 \
                    and not os.path.exists(OUT + "/killed"):
                open(OUT + "/killed", "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            state.commit()
        state.seen = state.seen + [state.cur]
        state.cur = []
        state.epoch += 1
        sampler.set_epoch(state.epoch)
        state.commit()

train(state)
acc = float((net(mx.nd.array(xte)).argmax(axis=1).asnumpy() == yte).mean())
flat = np.concatenate([p.data().asnumpy().ravel() for _, p in sorted(net.collect_params().items())])
ref = mx.nd.array(flat); hvd.broadcast_(ref, 0, name="final.check")
json.dump({"rank": hvd.rank(), "size": hvd.size(), "acc": acc, "seen": state.seen, "sizes": state.sizes,
           "lrs": state.lrs,
           "max_param_diff_to_rank0": float(np.abs(ref.asnumpy() - flat).max())},
          open(f"{OUT}/rank{hvd.rank()}.json", "w"))
