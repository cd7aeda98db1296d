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
"""
import argparse
import dataclasses
import os
import random
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.settle import algorithm_from_config
from ..distributed.averaging import BN_CHOICES
from ..distributed.loop import RunFolder, fit
from ..distributed.options import CompressionOptions, ElasticOptions, SecondCompressorOptions
from ..distributed.sampler import VIRTUAL_STEPS, EpochSampler, over_epochs
from ..optim import ElasticRamp, WarmupCosine, WarmupMultiStep, exclude_from_weight_decay
from ..model_zoo import get_model, resolve
from ..model_zoo.registry import checkpoint_name, model_name
from ..utils import UserError
from ..utils.devices import DeviceOptions, emulate_float16_kernels, resolve_devices
from ..utils.fileio import atomic_path
from ..model_zoo.publish import PublishOptions
from ..utils.runconfig import RecipeConfig, RunOptions, option
from ..utils.validate import (choice_of, existing_dir, existing_file, existing_path, float_range, fraction,
                              nonneg_float, nonneg_int, output_dir, positive_float, positive_int)
from .data import build_datasets
from .data.pipeline import DATASETS

def warmup_value(value):
    """A type: ``auto`` or a number of epochs >= 0."""
    if str(value).lower() == "auto":
        return "auto"
    try:
        return nonneg_float(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a number >= 0, got {value!r}") from None


def sha1_prefix(text):
    """A type: 8 to 40 hex digits, the start of a file's sha1 (GluonCV's hash tags)."""
    from ..model_zoo.finetune import TAG
    key = str(text).strip().lower()
    if not TAG.match(key):
        raise argparse.ArgumentTypeError(f"{text!r} is not a sha1 prefix; give 8 to 40 hex digits, the start "
                                          "of the file's sha1 (sha1sum FILE | cut -c1-8)")
    return key


def optimizer_names():
    """The optimizer names MXNet knows (ours, lans and adaalter, are registered on import)."""
    return mx.optimizer.Optimizer.opt_registry


def _true_or_false(value):
    if not isinstance(value, bool):
        raise argparse.ArgumentTypeError(f"must be true or false, got {value!r}")
    return value


@dataclasses.dataclass
class ClassificationConfig(RecipeConfig, PublishOptions, DeviceOptions, ElasticOptions, SecondCompressorOptions,
                           CompressionOptions, RunOptions):
    """``train_classification``'s configuration: the keys are the script's flags with ``_`` for
    ``-`` (docs/cv.md); a ``--config`` YAML file may also say ``no_wd`` (GluonCV's spelling)."""
    SCRIPT: ClassVar[str] = "scripts/cv/train_classification.py"
    STATE_KEYS: ClassVar[tuple] = ("epoch", "best_acc", "history", "workers")
    CHECKPOINT_FILES: ClassVar[tuple] = ("last.rank0.params", "last.rank0.states")
    YAML_EXTRA: ClassVar[dict] = {"no_wd": _true_or_false}
    FLAG_GROUPS: ClassVar[dict] = {   # the script's --help, by topic
        "model and data": ("model", "dataset", "data_dir", "image_size", "use_pretrained", "pretrained_root",
                           "pretrained_tag"),
        "optimisation": ("epochs", "batch_size", "global_batch_size", "optimizer", "lr", "momentum", "wd", "lr_mode",
                         "warmup_epochs", "lr_milestones", "lr_decay", "label_smoothing", "mixup", "mixup_off_epochs",
                         "wd_on_bn_bias", "last_gamma"),
        "distributed": ("algorithm", "compressor", "ratio", "period", "compressor2", "ratio2", "min_size",
                        "averaged_bn_batches", "averaged_bn", "compress_warmup", "profile_comm", "link_mbit"),
        "devices": ("gpus", "dtype"),
        "run": ("seed", "out", "resume", "num_workers", "progress", "stop_after_epochs"),
    }
    out: str = option("runs/classification", output_dir, aliases=("--save-dir",),
                      help="run folder: log.jsonl, summary.csv, checkpoints, config.json")
    # model and data
    model: str = option("resnest14_digits", model_name, help="registered zoo name")
    dataset: str = option("digits", choices=DATASETS, help="the data set to train and evaluate on")
    data_dir: str = option(None, existing_path, help="local path of the data set (not needed for digits, mnist5k)")
    image_size: int = option(None, positive_int, aliases=("--input-size",),
                             help="input side in pixels (unset: the data set's own)")
    last_gamma: bool = option(False, help="zero-init each block's last BN gamma")
    use_pretrained: bool = option(False, help="start from GluonCV's weights for --model (GluonCV's store format, "
                                  "sha1-checked) with a new output layer for the data's classes")
    pretrained_root: str = option(None, existing_dir, metavar="DIR",
                                  help="folder of GluonCV-format weights ({model}-{sha1[:8]}.params, e.g. "
                                  "~/.mxnet/models); default $MXNET_HOME/models if set, else download into the zoo "
                                  "cache")
    pretrained_tag: str = option(None, sha1_prefix, metavar="HEX",
                                 help="weights of your own: the file {model}-HEX.params, whose sha1 starts with HEX "
                                 "(GluonCV's pretrained='HEX')")
    # optimisation
    epochs: int = option(10, positive_int, aliases=("--num-epochs",), help="training epochs")
    batch_size: int = option(32, positive_int, help="per device, as GluonCV's: a worker's batch is this x its --gpus")
    global_batch_size: int = option(None, positive_int,
                                    help="total over all workers and devices; must divide by the worker count")
    optimizer: str = option("sgd", choice_of(optimizer_names, "optimizer"),
                            help="any MXNet optimizer name, incl. lans, lamb, adaalter")
    lr: float = option(0.1, positive_float, help="peak learning rate")
    momentum: float = option(0.9, fraction, help="momentum of sgd and nag")
    wd: float = option(1e-4, nonneg_float, help="weight decay")
    lr_mode: str = option("cosine", choices=("cosine", "step"), help="the rate's decay after the warm-up")
    warmup_epochs: object = option("auto", warmup_value,
                                   help="linear warm-up in epochs, or auto (default): CSER's grows with its ratio")
    lr_milestones: list = option([], nonneg_float, many=True, nargs="*", help="epochs of the step decay")
    lr_decay: float = option(0.1, float_range(0, 1, low_open=True, what="a decay factor"),
                             help="factor of the step decay at each milestone")
    label_smoothing: float = option(0.0, float_range(0, 1, high_open=True, what="a fraction"), nargs="?", const=0.1,
                                    help="label smoothing epsilon (bare flag: 0.1, as GluonCV's)")
    mixup: float = option(0.0, nonneg_float, nargs="?", const=0.2,
                          help="Beta(alpha, alpha) of mixup; 0 is off (bare flag: 0.2, GluonCV's alpha)")
    mixup_off_epochs: int = option(0, nonneg_int, help="last epochs trained without mixup")
    wd_on_bn_bias: bool = option(True, flag="--wd-on-bn-bias", negative="--no-wd",
                                 help="weight decay on every parameter, BN/LN and biases included (the default, as "
                                 "GluonCV's)",
                                 negative_help="GluonCV's flag: no weight decay on BN/LN gamma and beta and on biases")
    # run and distributed extras
    num_workers: int = option(0, nonneg_int, help="data-loading processes")
    progress: bool = option(True, negative="--no-progress", negative_help="no progress bar")
    profile_comm: bool = option(False, help="measure synchronisation time: logs sync_s and the measured scaling "
                                "factor")
    link_mbit: float = option(None, positive_float, help="link rate, to log link utilisation (with --profile-comm)")
    averaged_bn_batches: int = option(8, positive_int,
                                      help="batches per worker for the averaged model's BatchNorm statistics")
    averaged_bn: str = option("auto", choice_of(BN_CHOICES, "BatchNorm choice"),
                              help="BatchNorm statistics of the evaluated (worker-averaged) model: auto (default: "
                              "recomputed for algorithms with local models, else averaged), recompute, average or "
                              "local")

    @classmethod
    def adapt_yaml(cls, data, source):
        """GluonCV's ``no_wd`` in a config file: the opposite of ``wd_on_bn_bias``."""
        if "no_wd" in data:
            no_wd = data.pop("no_wd")
            if data.get("wd_on_bn_bias") is not None and data["wd_on_bn_bias"] == no_wd:
                raise UserError(f"{source}: no_wd: {str(no_wd).lower()} contradicts wd_on_bn_bias: "
                                f"{str(no_wd).lower()}; keep one of the two keys")
            data["wd_on_bn_bias"] = not no_wd
        return data

    def check(self, comm):
        resolve_devices(self.gpus, self.dtype, cpu_float16=True)  # a GPU this machine lacks, float16 on the CPU
        from .data.pipeline import EMBEDDED
        if self.dataset not in EMBEDDED and not self.data_dir:
            raise UserError(f"dataset {self.dataset} reads from a local path: give --data-dir (or data_dir in "
                            "the config)")
        if self.global_batch_size and self.global_batch_size % comm.size:
            raise UserError(f"global batch size {self.global_batch_size} does not divide across {comm.size} "
                            f"workers; use a multiple of {comm.size} or --batch-size per worker")
        if self.elastic and self.global_batch_size:
            raise UserError("--elastic keeps the per-worker batch fixed (the global batch follows the "
                            "worker count); use --batch-size, not --global-batch-size")
        resolve(self.model)
        if self.use_pretrained:   # a model without GluonCV weights (and no file of one's own): now
            from ..model_zoo.finetune import gluoncv_file_name
            gluoncv_file_name(resolve(self.model).name, self.pretrained_tag)
        else:
            for key in ("pretrained_root", "pretrained_tag"):
                if self[key]:
                    raise UserError(f"--{key.replace('_', '-')} is given but --use-pretrained is not; add "
                                    "--use-pretrained (or drop the flag)")

    def check_resume(self):
        folder = super().check_resume()
        if folder:
            from ..model_zoo.registry import check_weights
            check_weights(os.path.join(folder, "last.rank0.params"), self.model, "--resume checkpoint",
                          fix="resume a run of this --model, or start afresh with --resume none")
        return folder

    def per_worker_batch(self, comm, devices=1):
        """A worker's batch: ``batch_size`` per device times its ``devices`` (GluonCV's
        ``--batch-size``), or its share of ``global_batch_size``."""
        if self.global_batch_size:
            return self.global_batch_size // comm.size
        return self.batch_size * int(devices)


DEFAULTS = ClassificationConfig().to_dict()   # the defaults as a mapping (earlier versions' name)


def _seed(seed, epoch, rank):
    s = (int(seed) * 1_000_003 + epoch * 7919 + rank) % (2 ** 31)
    random.seed(s)
    np.random.seed(s)
    mx.random.seed(s)


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


def _evaluate(net, test, comm, batch=256, ctx=None, dtype="float32"):
    """Top-1 accuracy of ``net`` over the whole test set, each worker taking a shard (on the
    first of ``ctx``)."""
    idx = list(range(comm.rank, len(test), comm.size))
    loader = gluon.data.DataLoader(test, batch_size=batch, sampler=idx)
    correct = total = 0
    for x, y in loader:
        if ctx is not None:
            x = x.as_in_context(ctx[0]).astype(dtype, copy=False)
        pred = net(x).argmax(axis=1).as_in_context(mx.cpu())
        correct += float((pred == y.astype(pred.dtype)).sum().asscalar())
        total += len(y)
    counts = comm.allreduce(mx.nd.array([correct, total], dtype="float64"), average=False,
                            name="eval.counts").asnumpy()
    return float(counts[0] / max(counts[1], 1))


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
    smooth, alpha = float(cfg["label_smoothing"]), float(cfg["mixup"])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=not (smooth or alpha))
    grad_bytes = sum(int(np.prod(p.shape)) * 4 for p in net.collect_params().values() if p.grad_req != "null")
    run = RunFolder(out, cfg["resume"], trainer.communicator, elastic=bool(cfg["elastic"]),
                    required=("epoch", "best_acc", "history"))

    def load(plan, state):
        def seeded():
            # a batch is read (and augmented) before its step runs: reseed for that step first
            first = state.step
            for k, idx in enumerate(plan):
                _seed(cfg["seed"], first + k, trainer.communicator.rank)
                yield idx.tolist()
        return gluon.data.DataLoader(train, batch_sampler=seeded(), num_workers=int(cfg["num_workers"]))

    def step(state, batch, step_size):
        comm = trainer.communicator
        if not state.sizes or state.sizes[-1][1] != comm.size:
            state.sizes = state.sizes + [[state.step, comm.size]]
        _seed(cfg["seed"], state.step, comm.rank)
        x, y = batch
        mix = alpha if state.epoch < int(cfg["epochs"]) - int(cfg["mixup_off_epochs"]) else 0
        loss_sum, correct = _forward_backward(net, loss_fn, x, y, classes, smooth, mix, ctx, dtype)
        wire, sync = comm.stats.total_wire, trainer.sync_seconds
        trainer.step(step_size)
        return {"loss": loss_sum, "correct": correct, "seen": len(y), "wire": comm.stats.total_wire - wire,
                "sync": trainer.sync_seconds - sync}

    def end_epoch(end):
        comm, state = end.comm, end.state
        bn = _bn_inputs(train, per_worker, comm.rank, comm.size, cfg["seed"], end.epoch - 1, dtype)
        with trainer.averaged(net, bn, bn=cfg.get("averaged_bn", "auto"),
                              bn_num_batches=int(cfg.get("averaged_bn_batches", 8))) as averaged:
            acc = _evaluate(net, test, comm, ctx=ctx, dtype=dtype)
            if acc > state.best_acc:
                state.best_acc = acc
                if comm.rank == 0:
                    with atomic_path(os.path.join(out, "best.params")) as tmp:
                        net.save_parameters(tmp)
        tot, mine = end.totals, end.sums
        train_time, wire = mine["time_s"], mine.get("wire", 0.0)
        rec = {"epoch": end.epoch, "train_loss": tot["loss"] / max(tot["seen"], 1),
               "train_acc": tot["correct"] / max(tot["seen"], 1), "test_acc": acc, "best_acc": state.best_acc,
               "test_bn": averaged["bn"],
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
                f"test {acc:.4f}  lr {rec['lr']:.4g}  {rec['samples_per_s']:.0f} img/s  "
                f"wire {wire / 1e6:.2f} MB  {comm.size} worker(s), global batch {rec['global_batch']}")
        return rec

    state = fit(run, net, trainer, sampler, per_worker, int(cfg["epochs"]), step, end_epoch,
                stats=("loss", "correct", "seen"), elastic=bool(cfg["elastic"]), commit_every=int(cfg["commit_every"]),
                stop_after=cfg["stop_after_epochs"], log=log, counters={"best_acc": -1.0, "sizes": []},
                summary=True, show_progress=bool(cfg["progress"]), load=load)
    comm = trainer.communicator   # an elastic job's world may have changed since the start
    result = {"best_acc": state.best_acc, "final_acc": state.history[-1]["test_acc"] if state.history else None,
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
    found, dtype = resolve_devices(cfg["gpus"], cfg["dtype"], cpu_float16=True)
    ctx = list(ctx or found)
    per_worker = cfg.per_worker_batch(comm, len(ctx))
    rank, size = comm.rank, comm.size
    train, test, classes, channels = build_datasets(cfg["dataset"], cfg["data_dir"], cfg["image_size"])
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
    kwargs = {"classes": classes}
    if resolve(cfg["model"]).name.endswith(("_cifar", "_digits")):
        kwargs.update(in_channels=channels, last_gamma=bool(cfg["last_gamma"]))
    net = get_model(cfg["model"], **kwargs)
    net.initialize(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), ctx=ctx)
    net(mx.nd.array(train[0][0], ctx=ctx[0]).expand_dims(0))  # finish deferred initialisation
    if cfg["use_pretrained"]:   # GluonCV's fine-tuning: pretrained features, the fresh head kept
        from ..model_zoo.finetune import start_from_pretrained
        got = start_from_pretrained(net, resolve(cfg["model"]).name, classes, cfg["pretrained_root"],
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
    net.hybridize(static_alloc=True)
    return _train(cfg, net, trainer, sampler, train, test, classes, per_worker, log, ctx, dtype)


@dataclasses.dataclass
class EvaluationOptions:
    """The flags of ``scripts/cv/evaluate.py`` (``evaluate_model``'s arguments): which checkpoint of
    ``model`` to evaluate (its published weights, from ``source`` or a served store, or a ``params``
    file), on which data set and at which input size (None: the model card's)."""
    model: str = option(None, checkpoint_name, required=True, help="zoo name, or NAME.TAG")
    dataset: str = option(None, choices=DATASETS, help="default: the card's data set (digits without a card)")
    data_dir: str = option(None, existing_path, help="local path of the data set (not needed for digits, mnist5k)")
    image_size: int = option(None, positive_int, help="default: the card's input size")
    params: str = option(None, existing_file, help="a .params file instead of the published weights")
    pretrained: bool = option(False, help="use the published weights (default)")
    source: str = option(None, metavar="SOURCE",
                         help="which published checkpoint: shipped, local (published on this machine) or a zoo "
                         "store folder (default: the shipped one for a shipped name)")
    serve: str = option(None, existing_dir, metavar="STORE",
                        help="serve this zoo store folder on loopback and fetch its checkpoint from it")


def evaluation_settings(name, dataset=None, image_size=None, source=None, warn=None):
    """``{"dataset", "image_size"}`` to evaluate the published checkpoint of ``name`` with: the
    card's, unless given (a contradiction goes to ``warn``, default a ``UserWarning``, as one
    line); a setting neither gives stays None (the data set's default)."""
    import warnings
    from ..model_zoo.cards import pretrained_config, settle_with_card
    from ..model_zoo.registry import split_tag
    from ..model_zoo.store import record_for
    entry, key = split_tag(name)
    card = pretrained_config(record_for(key or entry.name, source), source)
    warn = warn or (lambda msg: warnings.warn(msg, UserWarning, stacklevel=3))
    return settle_with_card(key or entry.name, card, {"image_size": image_size, "dataset": dataset}, warn)


def evaluate_model(name, dataset=None, data_dir=None, image_size=None, pretrained=True,
                   params=None, root=None, comm=None, source=None, warn=None):
    """Top-1 accuracy of zoo model ``name`` (its published weights, or the ``params`` file) on the
    test split of ``dataset``; the evaluation is sharded over ``comm``'s workers.

    Published weights are evaluated as their card says: ``image_size`` and ``dataset`` left as None
    take the card's (the data set fixes the normalisation and the classes); an explicit value that
    contradicts the card is used, and ``warn`` (default: a ``UserWarning``) receives one line
    saying what the card recorded. ``source`` picks the checkpoint's layer or store (see
    ``get_model``); ``name`` may carry a checkpoint tag (``NAME.TAG``)."""
    from ..distributed import LocalCommunicator
    comm = comm or LocalCommunicator()
    if not params and pretrained:
        settled = evaluation_settings(name, dataset, image_size, source, warn)
        image_size, dataset = settled["image_size"], settled["dataset"]
    dataset = dataset or "digits"
    _, test, classes, channels = build_datasets(dataset, data_dir, image_size)
    if params:
        kwargs = {"classes": classes}
        if resolve(name).name.endswith(("_cifar", "_digits")):
            kwargs["in_channels"] = channels
        net = get_model(name, **kwargs)
        from ..utils.checkpoints import load_parameters
        load_parameters(net, params, "--params")  # another shape (classes, channels): one line, not MXNet's trace
    else:
        net = get_model(name, pretrained=pretrained, root=root, source=source)
    net.hybridize(static_alloc=True)
    return _evaluate(net, test, comm)


def publish_run(cfg, best_acc, workers, test=None, log=None):
    """Write the run's model card and publish ``best.params`` into the store ``cfg['publish']``.
    The card records the input size the network was trained at (from a ``test`` sample when the
    config left it to the data set's default): evaluation reads it from there."""
    from ..model_zoo.publish import publish_run as publish_with_card
    metric = {"name": "top-1 accuracy", "value": best_acc, "dataset": f"{cfg['dataset']} test split"}
    if not cfg["image_size"] and test is not None and len(test):
        cfg = {**cfg, "image_size": int(np.shape(test[0][0])[-1])}
    return publish_with_card(cfg, DEFAULTS, os.path.join(cfg["out"], "best.params"),
                             "scripts/cv/train_classification.py", metric, workers, log=log)
