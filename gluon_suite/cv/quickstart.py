"""The quick-start job: a small Gluon CNN on the embedded digits data, data-parallel over the
workers of a communicator (one process, or many under ``horovodrun``).

Each worker trains on its own shard of every epoch's shuffled order through a
``DistributedTrainer``: synchronous SGD by default, or any algorithm/compressor of the distributed
layer (``algorithm='cser', compressor='grbs', ratio=32, period=8``). Evaluation runs on the
worker-averaged model.
"""
import os
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.launch import require_elastic_launch
from ..distributed.loop import Interruption, train_loop, world_totals, write_records
from ..distributed.sampler import EpochSampler
from ..optim import ElasticRamp
from ..utils import seed_everything
from ..utils.config import settle_compression
from ..utils.devices import emulate_float16_kernels
from .data import load_digits
from .models import digits_cnn


def evaluate(net, images, labels, batch_size=256, ctx=None, dtype="float32"):
    """Top-1 accuracy of ``net`` on ``images``/``labels`` (NumPy arrays), on ``ctx``."""
    correct = 0
    for i in range(0, len(labels), batch_size):
        out = net(mx.nd.array(images[i:i + batch_size], ctx=ctx, dtype=dtype))
        correct += int((out.argmax(axis=1).asnumpy().astype(np.int32) == labels[i:i + batch_size]).sum())
    return correct / len(labels)


def train_digits(comm, epochs=6, batch_size=32, lr=0.1, momentum=0.9, wd=1e-4, seed=0,
                 log_path=None, show_progress=True, max_steps=None, on_epoch=None, algorithm="sync",
                 elastic=False, ramp_steps=50, commit_every=20, ref_workers=None, ctx=None,
                 dtype="float32", **dist_kwargs):
    """Train ``digits_cnn`` on digits over ``comm``'s workers with ``algorithm`` (and the
    compressor options of ``DistributedTrainer`` in ``dist_kwargs``), with a fixed world or, with
    ``elastic``, under Horovod Elastic (the same loop, ``distributed.loop.train_loop``).

    ``batch_size`` is per worker (the global batch is ``batch_size`` x workers); ``lr`` is meant for
    ``ref_workers`` workers (default: the starting count) and follows the worker count through
    ``ElasticRamp`` over ``ramp_steps`` steps when an elastic job is resized; an elastic state is
    committed every ``commit_every`` steps. ``max_steps`` caps the steps per epoch (for quick
    tests). Returns a dict with the per-epoch history, the final test accuracy, the rate of every
    step (``lrs``: [workers, rate]) and the wire counters. Rank 0 writes one JSON line per epoch to
    ``log_path`` when given; ``on_epoch(record)`` is called on every rank after each epoch.
    ``ctx``: the worker's contexts (default: the CPU); each batch is split over them
    (``split_and_load``). ``dtype='float16'`` trains a float16 network with float32 master weights.
    """
    ctx = list(ctx or [mx.cpu()])
    settled, notes = settle_compression({"algorithm": algorithm, **dist_kwargs}, (), comm.size, elastic=elastic)
    dist_kwargs = {k: settled[k] for k in dist_kwargs}
    for note in notes if comm.rank == 0 else ():
        print(f"note: {note}", flush=True)
    if batch_size < 1 or epochs < 1:
        raise ValueError(f"batch_size and epochs must be >= 1 (got {batch_size}, {epochs})")
    require_elastic_launch("scripts/cv/train_digits.py", elastic=elastic)
    seed_everything(seed + comm.rank)
    x_train, y_train = load_digits("train")
    x_test, y_test = load_digits("test")
    if batch_size * comm.size > len(y_train):
        raise ValueError(f"batch_size {batch_size} x {comm.size} workers exceeds the "
                         f"{len(y_train)} training images; use a smaller batch")

    net = digits_cnn()
    net.initialize(mx.init.Xavier(magnitude=2.0), ctx=ctx)
    net(mx.nd.array(x_train[:1], ctx=ctx[0]))   # shapes first (an elastic state copies every parameter)
    sched = ElasticRamp(lambda t: lr, ref_batch=batch_size * (ref_workers or comm.size),
                        ramp_steps=ramp_steps, global_batch=batch_size * comm.size)
    opt_params = {"lr_scheduler": sched, "momentum": momentum, "wd": wd}
    if dtype != "float32":
        net.cast(dtype)
        if all(c.device_type == "cpu" for c in ctx):   # GLUON_SUITE_EMULATE_FLOAT16=1 (resolve_devices)
            emulate_float16_kernels(net)
        opt_params["multi_precision"] = True        # float32 master weights
    trainer = DistributedTrainer(net.collect_params(), "sgd", opt_params,
                                 algorithm=algorithm, communicator=comm, seed=seed, **dist_kwargs)
    net.hybridize(static_alloc=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    # what a dense ring allreduce of every gradient puts on each worker's link per step
    grad_bytes = sum(int(np.prod(p.shape)) * 4 for p in net.collect_params().values() if p.grad_req != "null")
    sampler = EpochSampler(len(y_train), seed=seed,
                           per_epoch=max_steps * batch_size * comm.size if max_steps else None)
    t0 = time.time()
    no_ckpt = Interruption(hint="train_digits.py keeps no checkpoints: run it again, or use "
                                "train_classification.py for resumable runs")

    def step(state, idx, step_size):
        no_ckpt.at(state.epoch + 1, state.step)
        c = trainer.communicator
        data = gluon.utils.split_and_load(mx.nd.array(x_train[idx], dtype=dtype), ctx, even_split=False)
        label = gluon.utils.split_and_load(mx.nd.array(y_train[idx]), ctx, even_split=False)
        with autograd.record():
            outs = [net(d) for d in data]
            losses = [loss_fn(o, lab) for o, lab in zip(outs, label)]
        autograd.backward(losses)
        wire = c.stats.total_wire
        trainer.step(step_size)
        state.lrs = state.lrs + [[c.size, trainer.learning_rate]]
        return {"loss": sum(loss.sum().astype("float32").as_in_context(mx.cpu()) for loss in losses),
                "correct": sum((o.argmax(axis=1) == lab.astype(o.dtype)).sum().astype("float32").as_in_context(mx.cpu())
                               for o, lab in zip(outs, label)),
                "seen": len(idx), "wire": c.stats.total_wire - wire}

    def end_epoch(state):
        c = trainer.communicator
        mine = x_train[c.rank::c.size]   # this worker's images, for the averaged model's BatchNorm statistics
        bn = (mx.nd.array(mine[k:k + batch_size], dtype=dtype) for k in range(0, len(mine) - batch_size + 1, batch_size))
        with trainer.averaged(net, bn):
            acc = evaluate(net, x_test, y_test, ctx=ctx[0], dtype=dtype)
        tot = world_totals(state, ("loss", "correct", "seen"), c)
        state.train_wire += state.sums.get("wire", 0.0)
        rec = {"epoch": state.epoch + 1, "train_loss": tot["loss"] / max(tot["seen"], 1),
               "train_acc": tot["correct"] / max(tot["seen"], 1), "test_acc": acc,
               "time_s": round(time.time() - t0, 3), "workers": c.size, "global_batch": batch_size * c.size,
               "lr": trainer.learning_rate, "wire_bytes": c.stats.total_wire,
               "payload_bytes": c.stats.total_payload, "train_wire_bytes": state.train_wire,
               "dense_wire_bytes": 2.0 * (c.size - 1) / c.size * grad_bytes * state.step}
        state.history = state.history + [rec]
        if c.rank == 0 and log_path:
            write_records(log_path, state.history)
        if on_epoch:
            on_epoch(rec)

    if comm.rank == 0 and log_path and os.path.exists(log_path):
        os.unlink(log_path)
    with no_ckpt:
        state = train_loop(net, trainer, sampler, batch_size, epochs, step, end_epoch, commit_every=commit_every,
                           counters={"history": [], "lrs": [], "train_wire": 0.0}, elastic=elastic,
                           show_progress=show_progress)
    c = trainer.communicator
    return {"history": state.history, "test_acc": state.history[-1]["test_acc"], "lrs": state.lrs,
            "rank": c.rank, "wire": c.wire_summary()}
