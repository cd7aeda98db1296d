"""The image-classification recipe behind ``scripts/cv/train_classification.py``.

One function, ``train_classification(config, comm)``, runs a whole job on one process or on the
workers of a communicator: data set -> sharded loader -> zoo model -> ``DistributedTrainer`` (any
optimizer, algorithm and compressor) -> per-update LR schedule with warm-up -> label smoothing /
mixup -> evaluation of the worker-averaged model -> JSON-lines log, ``summary.csv``, last + best
checkpoints, exact resume, and optional publishing into a zoo store.

The job runs on the shared loop (``distributed.loop.fit``), with a fixed world or, with
``elastic``, under Horovod Elastic: the same steps, logs, checkpoints and publishing. Every epoch's
order is shuffled by (seed, epoch) on all workers alike and dealt out in global steps of the
worker's batch x workers; the rate schedule runs over epochs (warm-up, cosine or steps) and is
scaled by the global batch against ``ref_workers`` x the worker's batch (``ElasticRamp``: at the
starting worker count by default, following a resize). Reproducibility: every step reseeds
Python's, NumPy's and MXNet's generators from (seed, step, rank), so a run resumed from the
checkpoint of epoch k continues exactly as the uninterrupted run.

Devices (GluonCV's ``--gpus``/``--dtype``): ``batch_size`` is per device, as GluonCV's, so a
worker's batch is ``batch_size`` x its contexts (``global_batch_size``, when given, is the total over
all workers and devices); each batch is split over the contexts with ``split_and_load`` (one
parameter copy per context, gradients summed by the trainer); float16 casts the network and keeps
float32 master weights in the optimizer (``multi_precision``).

GluonCV's defaults otherwise too: weight decay on every parameter unless ``wd_on_bn_bias`` is
false (``--no-wd``: none on BatchNorm/LayerNorm and biases), and ``use_pretrained`` starts the
network from GluonCV-format weights with a fresh classifier (``model_zoo.finetune``).

The recipe's configuration (``ClassificationConfig``) is in ``recipe_config``, evaluation and
publishing in ``evaluation``; their names are importable from here too.
"""
import os
import random

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.loop import RunFolder, fit
from ..distributed.sampler import VIRTUAL_STEPS, EpochSampler, over_epochs
from ..distributed.settle import algorithm_from_config
from ..model_zoo import get_model, resolve
from ..optim import ElasticRamp, WarmupCosine, WarmupMultiStep, exclude_from_weight_decay
from ..utils import UserError
from ..utils.devices import emulate_float16_kernels, resolve_devices
from ..utils.fileio import atomic_path
from .data import build_datasets
# the configuration, evaluation and publishing, importable from here as before the split
from .gluoncv_flags import _BatchLog, evaluates
from .evaluation import (EvaluationOptions, evaluate_model, evaluation_settings, publish_run,  # noqa: F401
                         top1_accuracy)
from .recipe_gluoncv import (check_labels, device_spec, load_resume_files, mixup_alpha, model_kwargs,
                             rec_datasets, save_periodic, tee)
from .recipe_config import (DEFAULTS, ClassificationConfig, optimizer_names, sha1_prefix,  # noqa: F401
                            warmup_value)


def _seed(seed, epoch, rank):
    s = (int(seed) * 1_000_003 + epoch * 7919 + rank) % (2 ** 31)
    random.seed(s)
    np.random.seed(s)
    mx.random.seed(s)


def seeded_loader(data, seed, trainer, num_workers, batchify=None):
    """The loop's ``load(plan, state)``: a ``DataLoader`` over ``data`` reading the plan's batches of
    indices, the generators reseeded for each batch's step before it is read (and augmented), so a
    resumed run reads what the uninterrupted one did."""
    def load(plan, state):
        def seeded():
            first = state.step
            for k, idx in enumerate(plan):
                _seed(seed, first + k, trainer.communicator.rank)
                yield idx.tolist()
        return gluon.data.DataLoader(data, batch_sampler=seeded(), batchify_fn=batchify, num_workers=num_workers)
    return load


class _ShardBatches:
    """Batch sampler: one shared permutation per epoch, this worker's shard, full batches only."""

    def __init__(self, n, batch, rank, size, seed, epoch):
        perm = np.random.RandomState((int(seed) * 7 + epoch) % (2 ** 31)).permutation(n)
        shard = perm[rank::size]
        self.steps = len(perm) // (batch * size)
        self.batches = [shard[i * batch:(i + 1) * batch].tolist() for i in range(self.steps)]

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return self.steps


def _bn_inputs(train, per_worker, rank, size, seed, epoch, dtype):
    """This worker's training inputs of ``epoch`` (its shard, in order), loaded lazily: what the
    averaged model's BatchNorm statistics are recomputed on (``DistributedTrainer.averaged``)."""
    from mxnet.gluon.data.dataloader import default_batchify_fn

    def batches():
        for idx in _ShardBatches(len(train), per_worker, rank, size, seed, epoch):
            x, _ = default_batchify_fn([train[int(i)] for i in idx])
            yield x.astype(dtype, copy=False)
    return batches


def warmup_epochs(cfg):
    """The config's warm-up in epochs: a number as given, or ``auto``: what the algorithm suggests
    (``Algorithm.suggested_warmup_epochs``: for CSER the authors' warm-up growing with the first
    compression ratio, ``cser_warmup_epochs``; 1 epoch for the others)."""
    value = cfg["warmup_epochs"]
    if str(value).lower() != "auto":
        return float(value)
    return algorithm_from_config(cfg).suggested_warmup_epochs(float(cfg["lr"]), int(cfg["epochs"]))


def _schedule(cfg, steps_per_epoch):
    total = steps_per_epoch * int(cfg["epochs"])
    warm = int(round(warmup_epochs(cfg) * steps_per_epoch))
    if cfg["lr_mode"] == "cosine":
        return WarmupCosine(float(cfg["lr"]), total, min(warm, total))
    milestones = [int(e * steps_per_epoch) for e in cfg["lr_milestones"]]
    return WarmupMultiStep(float(cfg["lr"]), milestones, float(cfg["lr_decay"]), warm)


def _forward_backward(net, loss_fn, x, y, classes, smooth, alpha, ctx=None, dtype="float32"):
    """Forward (with label smoothing and mixup when asked) and backward, the batch split over the
    contexts ``ctx`` (default: where ``x`` is); returns (summed loss, correct predictions) as
    one-element NDArrays on the CPU."""
    target = y
    if smooth or alpha:
        target = mx.nd.one_hot(y, classes, on_value=1 - smooth + smooth / classes, off_value=smooth / classes)
    if alpha:
        lam = float(np.random.beta(alpha, alpha))
        x = lam * x + (1 - lam) * x[::-1]
        target = lam * target + (1 - lam) * target[::-1]
    ctx = ctx or [x.context]
    xs = gluon.utils.split_and_load(x, ctx, even_split=False)
    ts = gluon.utils.split_and_load(target, ctx, even_split=False)
    ys = gluon.utils.split_and_load(y, ctx, even_split=False)
    with autograd.record():
        # the loss in float32 (a float16 softmax over the classes loses precision; MXNet warns)
        outs = [net(a.astype(dtype, copy=False)).astype("float32", copy=False) for a in xs]
        losses = [loss_fn(o, t.astype(o.dtype, copy=False) if smooth or alpha else t) for o, t in zip(outs, ts)]
    autograd.backward(losses)
    cpu = mx.cpu()   # one-element sums, read at the next commit (nothing leaves the device here)
    loss_sum = sum(loss.sum().as_in_context(cpu) for loss in losses)
    correct = sum((o.argmax(axis=1) == b.astype(o.dtype)).sum().as_in_context(cpu) for o, b in zip(outs, ys))
    return loss_sum, correct


def _train(cfg, net, trainer, sampler, train, test, classes, per_worker, log, ctx, dtype):
    """The recipe's training on the shared loop (fixed-size or elastic alike), from the model and
    trainer to the result: every global step a batch of this worker's indices (read by a
    ``DataLoader`` with ``num_workers``), every epoch an evaluation of the averaged model, the
    record (log.jsonl, summary.csv), ``best.params`` on a new best, the checkpoint (every rank its
    own, or one copy by whoever is rank 0 in an elastic run) and, at the end, ``publish``."""
    out = cfg["out"]
    smooth, alpha = float(cfg["label_smoothing"]), mixup_alpha(cfg)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=not (smooth or alpha))
    grad_bytes = sum(int(np.prod(p.shape)) * 4 for p in net.collect_params().values() if p.grad_req != "null")
    run = RunFolder(out, cfg["resume"], trainer.communicator, elastic=bool(cfg["elastic"]),
                    required=("epoch", "best_acc", "history"))

    load = seeded_loader(train, cfg["seed"], trainer, int(cfg["num_workers"]))
    every = _BatchLog(int(cfg.get("log_interval") or 0), log)

    def step(state, batch, step_size):
        comm = trainer.communicator
        if not state.sizes or state.sizes[-1][1] != comm.size:
            state.sizes = state.sizes + [[state.step, comm.size]]
        _seed(cfg["seed"], state.step, comm.rank)
        x, y = batch
        if cfg.use_rec:
            check_labels(y, classes, cfg)
        mix = alpha if state.epoch < int(cfg["epochs"]) - int(cfg["mixup_off_epochs"]) else 0
        loss_sum, correct = _forward_backward(net, loss_fn, x, y, classes, smooth, mix, ctx, dtype)
        wire, sync = comm.stats.total_wire, trainer.sync_seconds
        trainer.step(step_size)
        if every.n and comm.rank == 0:
            every.add(state.epoch, loss_sum, len(y), trainer.learning_rate)
        return {"loss": loss_sum, "correct": correct, "seen": len(y), "wire": comm.stats.total_wire - wire,
                "sync": trainer.sync_seconds - sync}

    def end_epoch(end):
        comm, state = end.comm, end.state
        every.epoch_ended()
        acc, averaged = None, {"bn": None}
        if evaluates(end.epoch, int(cfg["epochs"]), cfg.get("eval_frequency")):
            bn = _bn_inputs(train, per_worker, comm.rank, comm.size, cfg["seed"], end.epoch - 1, dtype)
            with trainer.averaged(net, bn, bn=cfg.get("averaged_bn", "auto"),
                                  bn_num_batches=int(cfg.get("averaged_bn_batches", 8))) as averaged:
                acc = top1_accuracy(net, test, comm, ctx=ctx, dtype=dtype)
                if acc > state.best_acc:
                    state.best_acc = acc
                    if comm.rank == 0:
                        with atomic_path(os.path.join(out, "best.params")) as tmp:
                            net.save_parameters(tmp)
        save_periodic(cfg, net, trainer, end.epoch, comm.rank)   # --save-frequency
        tot, mine = end.totals, end.sums
        train_time, wire = mine["time_s"], mine.get("wire", 0.0)
        rec = {"epoch": end.epoch, "train_loss": tot["loss"] / max(tot["seen"], 1),
               "train_acc": tot["correct"] / max(tot["seen"], 1), "test_acc": acc, "best_acc": state.best_acc,
               "test_bn": averaged["bn"],   # both None in an epoch --eval-frequency skips
               "lr": trainer.learning_rate, "epoch_time_s": round(train_time, 3),
               "samples_per_s": round(tot["seen"] / max(train_time, 1e-9), 1), "wire_bytes": wire,
               "dense_wire_bytes": 2.0 * (comm.size - 1) / comm.size * grad_bytes * mine["steps"],
               "workers": comm.size, "global_batch": per_worker * comm.size, "step": end.step,
               "elapsed_s": end.elapsed_s}
        if cfg["profile_comm"]:
            sync = mine.get("sync", 0.0)
            rec["sync_s"] = round(sync, 4)
            rec["measured_scaling_factor"] = round((train_time - sync) / max(train_time, 1e-9), 4)
            if cfg["link_mbit"]:  # bytes this worker's link carried while synchronising, vs its rate
                rec["link_utilisation"] = round(wire / max(sync, 1e-9) / (float(cfg["link_mbit"]) * 1e6 / 8), 4)
        if comm.rank == 0:
            log(f"epoch {end.epoch:3d}  loss {rec['train_loss']:.4f}  train {rec['train_acc']:.4f}  "
                f"{'(no evaluation)' if acc is None else f'test {acc:.4f}'}  lr {rec['lr']:.4g}  {rec['samples_per_s']:.0f} img/s  "
                f"wire {wire / 1e6:.2f} MB  {comm.size} worker(s), global batch {rec['global_batch']}")
        return rec

    state = fit(run, net, trainer, sampler, per_worker, int(cfg["epochs"]), step, end_epoch,
                stats=("loss", "correct", "seen"), elastic=bool(cfg["elastic"]), commit_every=int(cfg["commit_every"]),
                stop_after=cfg["stop_after_epochs"], log=log, counters={"best_acc": -1.0, "sizes": []},
                summary=True, show_progress=bool(cfg["progress"]), load=load)
    comm = trainer.communicator   # an elastic job's world may have changed since the start
    result = {"best_acc": state.best_acc, "final_acc": state.history[-1].get("test_acc") if state.history else None,
              "history": state.history, "out": out, "published": None, "sizes": state.sizes,
              "rank": comm.rank, "workers": comm.size}
    if comm.rank == 0 and cfg["publish"]:
        result["published"] = publish_run(cfg, state.best_acc, comm.size, test, log)
        log(f"published {result['published']['file_name']} into {cfg['publish']}")
    comm.barrier(name="done")
    return result


def train_classification(config, comm=None, log=print, ctx=None):
    """Run the recipe with ``config`` (a ``ClassificationConfig``, or a mapping of its keys) on
    ``comm`` (default: the job's communicator).

    Returns ``{"best_acc", "final_acc", "history", "out", "published"}``. Only rank 0 writes logs,
    the best checkpoint and the card; every rank writes its own resumable ``last`` checkpoint.
    ``ctx`` (a list of contexts) overrides the config's ``gpus``. The keys the command line set
    (``ClassificationConfig.from_sources``) tell an algorithm/compressor pair nobody named from
    one the user chose (``settle_compression``); on one worker no compression is applied.
    """
    if comm is None:
        from ..distributed import get_communicator
        comm = get_communicator()
    cfg = ClassificationConfig.from_dict(config).checked(comm, log)
    if cfg.logging_file and comm.rank == 0:
        log = tee(log, cfg.logging_file)
    found, dtype = resolve_devices(device_spec(cfg), cfg["dtype"], cpu_float16=True)
    ctx = list(ctx or found)
    per_worker = cfg.per_worker_batch(comm, len(ctx))
    rank, size = comm.rank, comm.size
    train, test, classes, channels = rec_datasets(cfg) if cfg.use_rec else \
        build_datasets(cfg["dataset"], cfg["data_dir"], cfg["image_size"])
    if len(train) < per_worker * size:
        raise UserError(f"batch {per_worker} x {size} workers exceeds the {len(train)} training "
                        "images; use a smaller batch")
    cfg.save(comm)
    if rank == 0:
        split = f"{len(ctx)} device(s) x {per_worker // len(ctx)}" if per_worker % len(ctx) == 0 \
            else f"{per_worker} split over {len(ctx)} device(s)"
        log(f"{cfg['model']} on {cfg['dataset']}: {size} worker(s) x batch {per_worker} ({split}) = "
            f"global batch {per_worker * size}; {cfg['algorithm']} / {cfg['compressor']}")

    _seed(cfg["seed"], -1, 0)  # identical initial weights everywhere (rank 0's are broadcast anyway)
    net = get_model(cfg["model"], **model_kwargs(cfg, classes, channels, log if rank == 0 else None))
    net.initialize(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), ctx=ctx)
    net(mx.nd.array(train[0][0], ctx=ctx[0]).expand_dims(0))  # finish deferred initialisation
    if cfg["use_pretrained"]:   # GluonCV's fine-tuning: pretrained features, the fresh head kept
        from .recipe_gluoncv import start_from_gluoncv
        got = start_from_gluoncv(net, resolve(cfg["model"]).name, classes, cfg["pretrained_root"],
                                    cfg["pretrained_tag"])
        if rank == 0:
            log(f"pretrained: {len(got['loaded'])} parameters from {got['path']} ({got['how']}); new "
                f"{got['head']} layer for {classes} classes, freshly initialised")
    if dtype != "float32":
        net.cast(dtype)
        if all(c.device_type == "cpu" for c in ctx):   # GLUON_SUITE_EMULATE_FLOAT16=1 (resolve_devices)
            emulate_float16_kernels(net)
    if not cfg["wd_on_bn_bias"]:
        exclude_from_weight_decay(net.collect_params())
    # the schedule runs over epochs (the same on every worker whatever their number) and is scaled by
    # global batch / reference batch, ramping over K steps when an elastic job grows (Dynamic SGD)
    sampler = EpochSampler(len(train), seed=int(cfg["seed"]))
    sched = ElasticRamp(over_epochs(_schedule(cfg, VIRTUAL_STEPS), sampler),
                        ref_batch=per_worker * int(cfg["ref_workers"] or size),
                        ramp_steps=int(cfg["ramp_steps"]), global_batch=per_worker * size)
    opt_params = {"lr_scheduler": sched, "wd": float(cfg["wd"])}
    if dtype != "float32":
        opt_params["multi_precision"] = True   # float32 master weights
    if cfg["optimizer"] in ("sgd", "nag"):
        opt_params["momentum"] = float(cfg["momentum"])
    trainer = DistributedTrainer(
        net.collect_params(), cfg["optimizer"], opt_params, algorithm=cfg.algorithm_object(), communicator=comm,
        profile_comm=bool(cfg["profile_comm"]))
    load_resume_files(cfg, net, trainer, ctx)   # GluonCV's --resume-params / --resume-states
    if cfg.mode == "hybrid":   # GluonCV's --mode: hybrid (the default) or imperative
        net.hybridize(static_alloc=True)
    return _train(cfg, net, trainer, sampler, train, test, classes, per_worker, log, ctx, dtype)
