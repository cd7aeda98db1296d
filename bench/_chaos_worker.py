"""Worker of bench/chaos.py: the digits MLP trained elastically (per-worker batch fixed, the rate
scaled with the worker count through ElasticRamp under a step decay at 60% and 85% of the epochs),
each step paced to take at least ``pace_s`` seconds so that the job spans the fault schedule.

``python bench/_chaos_worker.py CONFIG`` (a JSON file: out, lr, ramp, epochs, batch, seed,
commit_every, pace_s, ref_workers). Whoever is rank 0 writes into ``out``:

- ``log.jsonl``: one line per step (``t``, ``step``, ``epoch``, ``workers``) and one per epoch end
  (``test_acc`` besides), each line one ``write(2)`` on a file opened for appending, so a worker
  killed by SIGKILL leaves whole lines only;
- ``ckpt.params`` (MXNet's NDArray format) and ``ckpt.json`` at every epoch end, each through a
  temporary file and a rename;
- ``result.json`` at the end (final test accuracy, per-epoch accuracies, steps, workers).
"""
import json
import os
import sys
import time

import horovod.mxnet as hvd
import mxnet as mx
from mxnet import autograd, gluon

from gluon_suite.cv.data import load_digits
from gluon_suite.distributed import DistributedTrainer, HorovodCommunicator
from gluon_suite.distributed.loop import train_loop
from gluon_suite.distributed.sampler import EpochSampler, progress_of
from gluon_suite.optim import ElasticRamp
from gluon_suite.utils.fileio import atomic_path, write_json


def main(config_path):
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    out, epochs, batch, seed = cfg["out"], int(cfg["epochs"]), int(cfg["batch"]), int(cfg["seed"])
    hvd.init()
    xtr, ytr = load_digits("train")
    xte, yte = load_digits("test")
    xtr, xte = xtr.reshape(len(xtr), -1), xte.reshape(len(xte), -1)
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(128, activation="relu", in_units=64), gluon.nn.Dense(10, in_units=128))
    net.initialize(mx.init.Xavier())
    sampler = EpochSampler(len(ytr), seed=seed)
    lr = float(cfg["lr"])

    def base(_):
        return lr * (0.1 ** sum(progress_of(sampler) >= m * epochs for m in (0.6, 0.85)))
    sched = ElasticRamp(base, ref_batch=batch * int(cfg["ref_workers"]), ramp_steps=int(cfg["ramp"]),
                        global_batch=batch * hvd.size())
    trainer = DistributedTrainer(net.collect_params(), "sgd", {"lr_scheduler": sched, "momentum": 0.9, "wd": 1e-4},
                                 communicator=HorovodCommunicator())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    pace, log = float(cfg["pace_s"]), {"fd": None}

    def append(rec):
        if log["fd"] is None:
            log["fd"] = os.open(os.path.join(out, "log.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(log["fd"], (json.dumps(rec) + "\n").encode("utf-8"))

    def evaluate():
        return float((net(mx.nd.array(xte)).argmax(axis=1).asnumpy() == yte).mean())

    def step(state, idx, step_size):
        t = time.time()
        with autograd.record():
            loss = loss_fn(net(mx.nd.array(xtr[idx])), mx.nd.array(ytr[idx]))
        loss.backward()
        trainer.step(step_size)
        left = pace - (time.time() - t)
        if left > 0:
            time.sleep(left)

    def end_step(state):
        if trainer.communicator.rank == 0:
            append({"t": round(time.time(), 3), "step": state.step, "epoch": state.epoch,
                    "workers": trainer.communicator.size})

    def end_epoch(state):
        comm = trainer.communicator
        acc = evaluate()   # on every worker (the same model everywhere), so any may become rank 0
        state.accs = state.accs + [[state.epoch + 1, acc]]
        if comm.rank != 0:
            return
        with atomic_path(os.path.join(out, "ckpt.params")) as tmp:
            net.save_parameters(tmp)
        write_json(os.path.join(out, "ckpt.json"), {"epoch": state.epoch + 1, "step": state.step, "test_acc": acc})
        append({"t": round(time.time(), 3), "step": state.step, "epoch": state.epoch + 1, "workers": comm.size,
                "test_acc": acc})

    state = train_loop(net, trainer, sampler, batch, epochs, step, end_epoch, commit_every=int(cfg["commit_every"]),
                       counters={"accs": []}, elastic=True, end_step=end_step)
    if trainer.communicator.rank == 0:
        write_json(os.path.join(out, "result.json"),
                   {"final_acc": state.accs[-1][1] if state.accs else evaluate(), "accs": state.accs,
                    "steps": state.step, "workers_at_end": trainer.communicator.size})
    if log["fd"] is not None:
        os.close(log["fd"])


if __name__ == "__main__":
    main(sys.argv[1])
