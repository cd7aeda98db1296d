"""The quick-start job: a small Gluon CNN on the embedded digits data, data-parallel over the
workers of a communicator (one process, or many under ``horovodrun``).

Each worker trains on its own shard of every epoch's shuffled order through a
``DistributedTrainer``: synchronous SGD by default, or any algorithm/compressor of the distributed
layer (``algorithm='cser', compressor='grbs', ratio=32, period=8``). Evaluation runs on the
worker-averaged model.
"""
import dataclasses
import os
import time
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.loop import Interruption, train_loop, world_totals, write_records
from ..distributed.options import CompressionOptions, ElasticOptions, SecondCompressorOptions
from ..distributed.sampler import EpochSampler
from ..optim import ElasticRamp
from ..utils import UserError, seed_everything, tensorboard
from ..utils.devices import DeviceOptions, emulate_float16_kernels, resolve_devices
from ..utils.runconfig import RecipeConfig, option
from ..utils.validate import fraction, nonneg_float, nonneg_int, output_dir, positive_float, positive_int
from .data import load_digits
from .models import digits_cnn


def evaluate(net, images, labels, batch_size=256, ctx=None, dtype="float32"):
    """Top-1 accuracy of ``net`` on ``images``/``labels`` (NumPy arrays), on ``ctx``."""
    correct = 0
    for i in range(0, len(labels), batch_size):
        out = net(mx.nd.array(images[i:i + batch_size], ctx=ctx, dtype=dtype))
        correct += int((out.argmax(axis=1).asnumpy().astype(np.int32) == labels[i:i + batch_size]).sum())
    return correct / len(labels)


@dataclasses.dataclass
class DigitsConfig(RecipeConfig, DeviceOptions, ElasticOptions, SecondCompressorOptions, CompressionOptions):
    """``train_digits``' configuration (the flags of ``scripts/cv/train_digits.py``)."""
    SCRIPT: ClassVar[str] = "scripts/cv/train_digits.py"
    NO_FLAG: ClassVar[tuple] = ("min_size", "compress_warmup")   # Python only, as momentum, wd, max_steps
    epochs: int = option(8, positive_int, help="training epochs")
    batch_size: int = option(32, positive_int, help="per worker")
    lr: float = option(0.1, positive_float, help="learning rate")
    momentum: float = option(0.9, fraction, flag=False)
    wd: float = option(1e-4, nonneg_float, flag=False)
    seed: int = option(0, nonneg_int)
    out: str = option("runs/digits", output_dir, help="folder for the log, config.json and the result")
    progress: bool = option(True, negative="--no-progress", negative_help="no progress bar")
    max_steps: int = option(None, positive_int, flag=False, help="cap on the steps of an epoch (quick checks)")


def train_digits(config=None, comm=None, log=print, ctx=None):
    """Train ``digits_cnn`` on digits over ``comm``'s workers (default: the job's) with the
    configuration ``config`` (a ``DigitsConfig`` or a mapping of its keys): any algorithm and
    compressor of the distributed layer, with a fixed world or, with ``elastic``, under Horovod
    Elastic (the same loop, ``distributed.loop.train_loop``).

    ``batch_size`` is per worker (the global batch is ``batch_size`` x workers); ``lr`` is meant for
    ``ref_workers`` workers (default: the starting count) and follows the worker count through
    ``ElasticRamp`` over ``ramp_steps`` steps when an elastic job is resized; an elastic state is
    committed every ``commit_every`` steps. ``max_steps`` caps the steps per epoch (for quick
    tests). Returns a dict with the per-epoch history, the final test accuracy, the rate of every
    step (``lrs``: [workers, rate]) and the wire counters. Rank 0 writes ``config.json`` and one
    JSON line per epoch (``log.jsonl``) into ``out`` and logs each epoch's line.
    ``ctx``: the worker's contexts (default: ``gpus``, else the CPU); each batch is split over them
    (``split_and_load``). ``dtype='float16'`` trains a float16 network with float32 master weights.
    """
    if comm is None:
        from ..distributed import get_communicator
        comm = get_communicator()
    cfg = DigitsConfig.from_dict(config).checked(comm, log)
    if ctx is None:
        ctx, _ = resolve_devices(cfg.gpus, cfg.dtype, cpu_float16=True)
    ctx, dtype = list(ctx), cfg.dtype
    batch_size, epochs, seed, lr = cfg.batch_size, cfg.epochs, cfg.seed, cfg.lr
    seed_everything(seed + comm.rank)
    x_train, y_train = load_digits("train")
    x_test, y_test = load_digits("test")
    if batch_size * comm.size > len(y_train):
        raise UserError(f"--batch-size {batch_size} x {comm.size} workers exceeds the "
                        f"{len(y_train)} training images; use a smaller batch")
    cfg.save(comm)
    log_path = os.path.join(cfg.out, "log.jsonl")
    if comm.rank == 0:
        log(f"workers {comm.size}, batch {batch_size} per worker, {batch_size * comm.size} global")

    net = digits_cnn()
    net.initialize(mx.init.Xavier(magnitude=2.0), ctx=ctx)
    net(mx.nd.array(x_train[:1], ctx=ctx[0]))   # shapes first (an elastic state copies every parameter)
    sched = ElasticRamp(lambda t: lr, ref_batch=batch_size * (cfg.ref_workers or comm.size),
                        ramp_steps=cfg.ramp_steps, global_batch=batch_size * comm.size)
    opt_params = {"lr_scheduler": sched, "momentum": cfg.momentum, "wd": cfg.wd}
    if dtype != "float32":
        net.cast(dtype)
        if all(c.device_type == "cpu" for c in ctx):   # GLUON_SUITE_EMULATE_FLOAT16=1 (resolve_devices)
            emulate_float16_kernels(net)
        opt_params["multi_precision"] = True        # float32 master weights
    trainer = DistributedTrainer(net.collect_params(), "sgd", opt_params, algorithm=cfg.algorithm_object(),
                                 communicator=comm)
    net.hybridize(static_alloc=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    # what a dense ring allreduce of every gradient puts on each worker's link per step
    grad_bytes = sum(int(np.prod(p.shape)) * 4 for p in net.collect_params().values() if p.grad_req != "null")
    sampler = EpochSampler(len(y_train), seed=seed,
                           per_epoch=cfg.max_steps * batch_size * comm.size if cfg.max_steps else None)
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
        if c.rank == 0:   # the rank now (an elastic job's may have changed)
            write_records(log_path, state.history)
            board.add(rec, state.step, c)
            log(f"epoch {rec['epoch']:3d}  loss {rec['train_loss']:.4f}  train acc {rec['train_acc']:.4f}"
                f"  test acc {rec['test_acc']:.4f}  ({rec['time_s']:.1f} s)")

    if comm.rank == 0 and os.path.exists(log_path):
        os.unlink(log_path)
    with no_ckpt, tensorboard.EventLog(tensorboard.current()) as board:
        state = train_loop(net, trainer, sampler, batch_size, epochs, step, end_epoch, commit_every=cfg.commit_every,
                           counters={"history": [], "lrs": [], "train_wire": 0.0}, elastic=cfg.elastic,
                           show_progress=cfg.progress)
    c = trainer.communicator
    return {"history": state.history, "test_acc": state.history[-1]["test_acc"], "lrs": state.lrs,
            "rank": c.rank, "wire": c.wire_summary()}
