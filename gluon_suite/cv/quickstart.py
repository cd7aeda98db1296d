"""The quick-start job: a small Gluon CNN on the embedded digits data, data-parallel over the
workers of a communicator (one process, or many under ``horovodrun``).

Each worker trains on its own shard of every epoch's shuffled order through a
``DistributedTrainer``: synchronous SGD by default, or any algorithm/compressor of the distributed
layer (``algorithm='cser', compressor='grbs', ratio=32, period=8``). Evaluation runs on the
worker-averaged model.
"""
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.loop import Interruption, epochs as interruptible
from ..utils import JsonLinesLogger, progress, seed_everything
from ..utils.config import settle_compression
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
    compressor options of ``DistributedTrainer`` in ``dist_kwargs``).

    ``batch_size`` is per worker (the global batch is ``batch_size * comm.size``); the learning
    rate is used as given. ``max_steps`` caps the steps per epoch (for quick tests). Returns a dict
    with the per-epoch history and the final test accuracy. Rank 0 writes one JSON line per epoch
    to ``log_path`` when given; ``on_epoch(record)`` is called on every rank after each epoch.
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
    if elastic:
        if len(ctx) > 1 or dtype != "float32":
            raise ValueError("--elastic trains on one device per worker in float32; give one --gpus "
                             "id and --dtype float32")
        with ctx[0]:   # the worker's device as the default context
            return _train_digits_elastic(comm, epochs, batch_size, lr, momentum, wd, seed, log_path, on_epoch,
                                     algorithm, ramp_steps, commit_every, ref_workers, dist_kwargs)
    seed_everything(seed + comm.rank)
    x_train, y_train = load_digits("train")
    x_test, y_test = load_digits("test")

    net = digits_cnn()
    net.initialize(mx.init.Xavier(magnitude=2.0), ctx=ctx)
    opt_params = {"learning_rate": lr, "momentum": momentum, "wd": wd}
    if dtype != "float32":
        net(mx.nd.array(x_train[:1], ctx=ctx[0]))   # shapes first, then cast
        net.cast(dtype)
        opt_params["multi_precision"] = True        # float32 master weights
    trainer = DistributedTrainer(net.collect_params(), "sgd", opt_params,
                                 algorithm=algorithm, communicator=comm, seed=seed, **dist_kwargs)
    net.hybridize(static_alloc=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    steps_per_epoch = len(y_train) // (batch_size * comm.size)
    if max_steps:
        steps_per_epoch = min(steps_per_epoch, max_steps)
    if steps_per_epoch < 1:
        raise ValueError(f"batch_size {batch_size} x {comm.size} workers exceeds the "
                         f"{len(y_train)} training images; use a smaller batch")
    order_rng = np.random.RandomState(seed)  # same permutation on every worker
    history = []
    logger = JsonLinesLogger(log_path if comm.rank == 0 else None)
    t0 = time.time()
    train_wire = 0.0
    no_ckpt = Interruption(hint="train_digits.py keeps no checkpoints: run it again, or use "
                                "train_classification.py for resumable runs")
    for epoch in interruptible(no_ckpt, 0, epochs, trainer):
        perm = order_rng.permutation(len(y_train))
        shard = perm[comm.rank::comm.size]
        loss_sum, correct, seen = 0.0, 0, 0
        wire_before = comm.stats.total_wire
        bar = progress(range(steps_per_epoch), desc=f"epoch {epoch + 1}/{epochs}",
                       enabled=show_progress and comm.rank == 0)
        for step in bar:
            idx = shard[step * batch_size:(step + 1) * batch_size]
            data = gluon.utils.split_and_load(mx.nd.array(x_train[idx], dtype=dtype), ctx, even_split=False)
            label = gluon.utils.split_and_load(mx.nd.array(y_train[idx]), ctx, even_split=False)
            with autograd.record():
                outs = [net(d) for d in data]
                losses = [loss_fn(o, lab) for o, lab in zip(outs, label)]
            autograd.backward(losses)
            trainer.step(batch_size)
            loss_sum += sum(float(loss.sum().asscalar()) for loss in losses)
            correct += sum(int((o.argmax(axis=1) == lab.astype(o.dtype)).sum().asscalar())
                           for o, lab in zip(outs, label))
            seen += len(idx)
        train_wire += comm.stats.total_wire - wire_before
        # what a dense ring allreduce of every gradient would put on each worker's link per step
        grad_bytes = sum(int(np.prod(p.shape)) * 4 for p in net.collect_params().values()
                         if p.grad_req != "null")
        # this worker's batches, for the averaged model's BatchNorm statistics
        bn = (mx.nd.array(x_train[shard[k * batch_size:(k + 1) * batch_size]], dtype=dtype)
              for k in range(steps_per_epoch))
        with trainer.averaged(net, bn):
            acc = evaluate(net, x_test, y_test, ctx=ctx[0], dtype=dtype)
        rec = {"epoch": epoch + 1, "train_loss": loss_sum / seen, "train_acc": correct / seen,
               "test_acc": acc, "time_s": round(time.time() - t0, 3), "workers": comm.size,
               "global_batch": batch_size * comm.size,
               "wire_bytes": comm.stats.total_wire, "payload_bytes": comm.stats.total_payload,
               "train_wire_bytes": train_wire,
               "dense_wire_bytes": 2.0 * (comm.size - 1) / comm.size * grad_bytes
               * steps_per_epoch * (epoch + 1)}
        history.append(rec)
        logger.log(**rec)
        if on_epoch:
            on_epoch(rec)
    logger.close()
    return {"history": history, "test_acc": history[-1]["test_acc"], "wire": comm.wire_summary()}


def _train_digits_elastic(comm, epochs, batch_size, lr, momentum, wd, seed, log_path, on_epoch,
                          algorithm, ramp_steps, commit_every, ref_workers, dist_kwargs):
    """``train_digits(elastic=True)``: the same job under Horovod Elastic. ``lr`` is meant for
    ``ref_workers`` workers (default: the starting count) and follows the worker count through
    ``ElasticRamp`` over ``ramp_steps`` steps; the state is committed every ``commit_every`` steps."""
    import os

    from ..distributed.elastic import train_elastic
    from ..distributed.launch import require_elastic_launch
    from ..optim import ElasticRamp
    require_elastic_launch("scripts/cv/train_digits.py")
    seed_everything(seed)
    x_train, y_train = load_digits("train")
    x_test, y_test = load_digits("test")
    net = digits_cnn()
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net(mx.nd.array(x_train[:1]))
    sched = ElasticRamp(lambda t: lr, ref_batch=batch_size * (ref_workers or comm.size),
                        ramp_steps=ramp_steps, global_batch=batch_size * comm.size)
    trainer = DistributedTrainer(net.collect_params(), "sgd",
                                 {"lr_scheduler": sched, "momentum": momentum, "wd": wd},
                                 algorithm=algorithm, communicator=comm, seed=seed, **dist_kwargs)
    net.hybridize(static_alloc=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    t0 = time.time()

    def step(state, idx, step_size):
        data, label = mx.nd.array(x_train[idx]), mx.nd.array(y_train[idx])
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
        loss.backward()
        trainer.step(step_size)
        state.loss_sum += float(loss.sum().asscalar())
        state.correct += int((out.argmax(axis=1) == label).sum().asscalar())
        state.seen += len(idx)
        state.lrs = state.lrs + [[trainer.communicator.size, trainer.learning_rate]]

    def end_epoch(state):
        c = trainer.communicator
        mine = x_train[c.rank::c.size]
        bn = (mx.nd.array(mine[k:k + batch_size]) for k in range(0, len(mine) - batch_size + 1, batch_size))
        with trainer.averaged(net, bn):
            acc = evaluate(net, x_test, y_test)
        tot = c.allreduce(mx.nd.array([state.loss_sum, state.correct, state.seen], dtype="float64"),
                          average=False, name="digits.epoch.stats").asnumpy()
        rec = {"epoch": state.epoch + 1, "train_loss": tot[0] / max(tot[2], 1),
               "train_acc": tot[1] / max(tot[2], 1), "test_acc": acc, "time_s": round(time.time() - t0, 3),
               "workers": c.size, "global_batch": batch_size * c.size, "lr": trainer.learning_rate}
        state.history = state.history + [rec]
        state.loss_sum = state.correct = state.seen = 0
        if c.rank == 0 and log_path:
            logger = JsonLinesLogger(log_path, mode="a")
            logger.log(**rec)
            logger.close()
        if on_epoch:
            on_epoch(rec)

    if comm.rank == 0 and log_path and os.path.exists(log_path):
        os.unlink(log_path)
    state = train_elastic(net, trainer, len(y_train), batch_size, epochs, step, end_epoch, seed=seed,
                          commit_every=commit_every,
                          counters={"loss_sum": 0.0, "correct": 0, "seen": 0, "history": [], "lrs": []})
    return {"history": state.history, "test_acc": state.history[-1]["test_acc"], "lrs": state.lrs,
            "rank": trainer.communicator.rank, "wire": trainer.communicator.wire_summary()}
