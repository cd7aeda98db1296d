"""Worker of bench/elastic.py: digits MLP trained elastically (per-worker batch fixed) while the
worker count follows a schedule. Environment: OUT (folder with hosts.txt), PLAN (JSON list of
[epoch_progress, hosts-file text]: when training reaches that progress, rank 0 writes the hosts
file and every worker waits, committed, until Horovod reports the change), LR, RAMP (K steps),
EPOCHS, BATCH, SEED."""
import json
import os
import time

import horovod.mxnet as hvd
import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from gluon_suite.cv.data import load_digits
from gluon_suite.distributed import DistributedTrainer, HorovodCommunicator
from gluon_suite.distributed.elastic import ElasticSampler, progress_of
from gluon_suite.distributed.loop import train_elastic
from gluon_suite.optim import ElasticRamp

OUT, PLAN = os.environ["OUT"], json.loads(os.environ.get("PLAN", "[]"))
LR, K, E, B, SEED = (float(os.environ["LR"]), int(os.environ["RAMP"]), int(os.environ["EPOCHS"]),
                     int(os.environ["BATCH"]), int(os.environ["SEED"]))
REF = int(os.environ.get("REF_WORKERS", "4"))
hvd.init()
xtr, ytr = load_digits("train")
xte, yte = load_digits("test")
xtr, xte = xtr.reshape(len(xtr), -1), xte.reshape(len(xte), -1)
mx.random.seed(SEED)
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(128, activation="relu", in_units=64), gluon.nn.Dense(10, in_units=128))
net.initialize(mx.init.Xavier())
sampler = ElasticSampler(len(ytr), seed=SEED)
# a step decay over epochs (at 60% and 85%), for REF workers' global batch, scaled and ramped
base = lambda t: LR * (0.1 ** sum(progress_of(sampler) >= m * E for m in (0.6, 0.85)))  # noqa: E731
sched = ElasticRamp(base, ref_batch=B * REF, ramp_steps=K, global_batch=B * hvd.size())
tr = DistributedTrainer(net.collect_params(), "sgd", {"lr_scheduler": sched, "momentum": 0.9, "wd": 1e-4},
                        communicator=HorovodCommunicator())
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def evaluate():
    return float((net(mx.nd.array(xte)).argmax(axis=1).asnumpy() == yte).mean())


def step(state, idx, step_size):
    for i, (at, hosts) in enumerate(PLAN):
        if i == state.plan_done and progress_of(sampler) >= at:
            state.plan_done = i + 1
            if hvd.rank() == 0:
                with open(os.path.join(OUT, "hosts.txt"), "w") as f:
                    f.write(hosts)
            state.commit()
            while True:  # committed; Horovod's report of the change interrupts this
                state.check_host_updates()
                time.sleep(0.1)
    with autograd.record():
        loss = loss_fn(net(mx.nd.array(xtr[idx])), mx.nd.array(ytr[idx]))
    loss.backward()
    tr.step(step_size)
    state.trace = state.trace + [[round(progress_of(sampler), 4), hvd.size(), tr.learning_rate]]


def end_epoch(state):
    state.accs = state.accs + [[state.epoch + 1, evaluate()]]


state = train_elastic(net, tr, len(ytr), B, E, step, end_epoch, seed=SEED, commit_every=10,
                      counters={"plan_done": 0, "trace": [], "accs": []}, sampler=sampler)
if hvd.rank() == 0:
    with open(os.path.join(OUT, "result.json"), "w") as f:
        json.dump({"final_acc": state.accs[-1][1], "accs": state.accs, "trace": state.trace,
                   "workers_at_end": hvd.size()}, f)
