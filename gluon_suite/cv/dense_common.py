"""What the detection and segmentation recipes share (``detection.py``, ``segmentation.py``): their
common configuration keys (GluonCV's flag names where GluonCV has them), the data sets in the
formats users hold, a dataset wrapper that applies a transform, and the run on the shared loop.

Both recipes train exactly as classification does (``recipe.py``): one process or the workers of
a communicator, any optimizer, distributed algorithm and compressor, ``--elastic``, several devices
and float16, per-step reseeding so a resumed run continues as the uninterrupted one, the rate
schedule over epochs scaled by the global batch (``ElasticRamp``), evaluation of the worker-averaged
model on every worker's share of the validation set (reduced over the workers), ``log.jsonl``,
``summary.csv``, ``best.params`` and resumable checkpoints.
"""
import argparse
import dataclasses
import os
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import gluon

from ..distributed import DistributedTrainer
from ..distributed.averaging import BN_CHOICES
from ..distributed.loop import RunFolder, fit
from ..distributed.options import CompressionOptions, ElasticOptions, SecondCompressorOptions
from ..distributed.sampler import VIRTUAL_STEPS, EpochSampler, over_epochs
from ..model_zoo.publish import PublishOptions
from ..optim import ElasticRamp, exclude_from_weight_decay
from ..utils import UserError
from ..utils.devices import DeviceOptions, emulate_float16_kernels, resolve_devices
from ..utils.fileio import atomic_path
from ..utils.runconfig import RecipeConfig, RunOptions, option
from ..utils.validate import (choice_of, existing_path, float_range, fraction, nonneg_float, nonneg_int,
                              positive_float, positive_int)
from .recipe import _schedule, _seed, seeded_loader
from .recipe_config import optimizer_names, warmup_value

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)   # GluonCV's input normalisation


def epoch_list(value):
    """A type: epochs as GluonCV writes them (``160,200``) or a list of numbers >= 0."""
    items = value if isinstance(value, (list, tuple)) else [v for v in str(value).split(",") if v.strip()]
    try:
        return [nonneg_float(v) for v in items]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be epochs separated by commas (e.g. 160,200), got {value!r}") from None


epoch_list.takes_lists = True


# the help groups the two scripts share (each adds its own "model and data" group in front)
SHARED_GROUPS = {
    "optimisation": ("epochs", "batch_size", "global_batch_size", "test_batch_size", "optimizer", "lr", "momentum",
                     "wd", "lr_mode", "lr_decay", "lr_decay_epoch", "warmup_epochs", "wd_on_bn_bias", "syncbn"),
    "distributed": ("algorithm", "compressor", "ratio", "period", "compressor2", "ratio2", "min_size",
                    "averaged_bn_batches", "averaged_bn", "compress_warmup", "profile_comm"),
    "devices": ("gpus", "dtype"),
    "run": ("seed", "out", "resume", "num_workers", "progress", "val_interval", "stop_after_epochs"),
}


def script_main(config_cls, recipe, parser, argv=None):
    """The main of ``scripts/cv/train_detection.py`` and ``train_segmentation.py``: ``parser``'s flags
    (generated from ``config_cls``) over a YAML ``--config``, the run in an output folder that a run which saved
    nothing does not leave behind, and one closing line from rank 0."""
    from ..distributed import get_communicator
    from ..utils.fileio import output_folder
    cfg = config_cls.from_sources(vars(parser.parse_args(argv)), parser)
    comm = get_communicator()
    log = (lambda msg: print(msg, flush=True)) if comm.rank == 0 or cfg.elastic else (lambda msg: None)
    with output_folder(cfg.out):
        res = recipe(cfg, comm, log=log)
    if res["rank"] != 0:
        return 0
    if cfg.elastic:
        print("workers over the run: " + " -> ".join(str(n) for _, n in res["sizes"]))
    print(f"best {res['metric']} {res['best_metric']:.4f}")
    return 0


@dataclasses.dataclass
class DenseConfig(RecipeConfig, PublishOptions, DeviceOptions, ElasticOptions, SecondCompressorOptions,
                  CompressionOptions, RunOptions):
    """The keys the detection and segmentation configurations share."""
    STATE_KEYS: ClassVar[tuple] = ("epoch", "best_metric", "history")
    CHECKPOINT_FILES: ClassVar[tuple] = ("last.rank0.params", "last.rank0.states")
    DATASETS: ClassVar[tuple] = ()
    data_dir: str = option(None, existing_path, aliases=("--dataset-root",),
                           help="the data set's folder (voc: the VOC root with Annotations, JPEGImages, ImageSets; coco: "
                           "the root with annotations/instances_SPLIT.json and SPLIT/; folders: the root with "
                           "SPLIT/images and SPLIT/masks)")
    train_split: str = option("train", help="the split to train on (VOC ImageSets list name, COCO instances_SPLIT.json)")
    val_split: str = option("val", help="the split to evaluate on")
    canvases: int = option(1600, positive_int, help="training canvases of --dataset canvases")
    val_canvases: int = option(400, positive_int, help="validation canvases of --dataset canvases (held-out digits)")
    canvas_size: int = option(128, positive_int, help="side of the canvases in pixels")
    canvas_seed: int = option(0, nonneg_int, help="which canvases --dataset canvases makes (the data; --seed is the "
                              "training's)")
    epochs: int = option(20, positive_int, aliases=("--num-epochs",), help="training epochs")
    batch_size: int = option(16, positive_int, help="per device, as GluonCV's: a worker's batch is this x its --gpus")
    global_batch_size: int = option(None, positive_int,
                                    help="total over all workers and devices; must divide by the worker count")
    test_batch_size: int = option(32, positive_int, help="evaluation batch per worker")
    optimizer: str = option("sgd", choice_of(optimizer_names, "optimizer"), help="any MXNet optimizer name")
    lr: float = option(0.01, positive_float, help="peak learning rate")
    momentum: float = option(0.9, fraction, help="momentum of sgd and nag")
    wd: float = option(5e-4, nonneg_float, aliases=("--weight-decay",), help="weight decay")
    lr_mode: str = option("step", choices=("step", "cosine"), help="the rate's decay after the warm-up (GluonCV's "
                          "detection scripts: step)")
    lr_decay: float = option(0.1, float_range(0, 1, low_open=True, what="a decay factor"),
                             help="factor of the step decay at each of --lr-decay-epoch")
    lr_decay_epoch: list = option([], epoch_list, metavar="E1,E2",
                                  help="epochs of the step decay, as GluonCV writes them (e.g. 14,18)")
    warmup_epochs: object = option(1, warmup_value, help="linear warm-up in epochs, or auto (what the algorithm "
                                   "suggests)")
    val_interval: int = option(1, positive_int, help="evaluate every this many epochs (and after the last)")
    wd_on_bn_bias: bool = option(True, flag="--wd-on-bn-bias", negative="--no-wd",
                                 help="weight decay on every parameter (the default)",
                                 negative_help="GluonCV's flag: no weight decay on BN gamma/beta and biases")
    syncbn: bool = option(False, help="GluonCV's synchronised BatchNorm across devices (accepted for GluonCV's "
                          "command lines; the suite's models use plain BatchNorm per device)")
    num_workers: int = option(0, nonneg_int, aliases=("-j",), help="data-loading processes")
    progress: bool = option(True, negative="--no-progress", negative_help="no progress bar")
    averaged_bn_batches: int = option(4, positive_int,
                                      help="batches per worker for the averaged model's BatchNorm statistics")
    averaged_bn: str = option("auto", choice_of(BN_CHOICES, "BatchNorm choice"),
                              help="BatchNorm statistics of the evaluated (worker-averaged) model")
    profile_comm: bool = option(False, help="measure synchronisation time (logs sync_s)")

    def check(self, comm):
        resolve_devices(self.gpus, self.dtype, cpu_float16=True)
        if self.dataset != "canvases" and not self.data_dir:
            raise UserError(f"--dataset {self.dataset} reads from a local folder: give --data-dir (or data_dir in the "
                            "config)")
        if self.global_batch_size and self.global_batch_size % comm.size:
            raise UserError(f"global batch size {self.global_batch_size} does not divide across {comm.size} workers; "
                            f"use a multiple of {comm.size} or --batch-size per worker")
        if self.elastic and self.global_batch_size:
            raise UserError("--elastic keeps the per-worker batch fixed (the global batch follows the worker count); "
                            "use --batch-size, not --global-batch-size")
        if self.publish and not self.publish_name:
            from ..model_zoo.registry import list_models
            built = self.model_name() if hasattr(self, "model_name") else self.model
            if built != self.model or built not in list_models():
                raise UserError(f"--publish needs a registered zoo name: {built} is not one; give --publish-name")

    def per_worker_batch(self, comm, devices=1):
        """A worker's batch: ``batch_size`` per device times its ``devices``, or its share of
        ``global_batch_size``."""
        if self.global_batch_size:
            return self.global_batch_size // comm.size
        return self.batch_size * int(devices)

    def schedule_view(self):
        """The keys ``recipe._schedule`` reads, under its names."""
        return {"lr": self.lr, "epochs": self.epochs, "lr_mode": self.lr_mode, "lr_milestones": self.lr_decay_epoch,
                "lr_decay": self.lr_decay, "warmup_epochs": self.warmup_epochs}


class Transformed(gluon.data.Dataset):
    """``dataset``'s items passed through ``fn(*item)``."""

    def __init__(self, dataset, fn):
        self._data, self._fn = dataset, fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, i):
        return self._fn(*self._data[i])


def warmup_of(cfg):
    """``cfg``'s warm-up in epochs (``auto``: what the algorithm suggests)."""
    value = cfg["warmup_epochs"]
    if str(value).lower() != "auto":
        return float(value)
    from ..distributed.settle import algorithm_from_config
    return algorithm_from_config(cfg).suggested_warmup_epochs(float(cfg["lr"]), int(cfg["epochs"]))


def build_trainer(cfg, net, comm, per_worker, n_train, dtype):
    """The sampler and the ``DistributedTrainer`` of a run: the schedule over epochs, scaled by
    the global batch against ``ref_workers`` x the worker's batch (``ElasticRamp``)."""
    if not cfg["wd_on_bn_bias"]:
        exclude_from_weight_decay(net.collect_params())
    sampler = EpochSampler(n_train, seed=int(cfg["seed"]))
    view = dict(cfg.schedule_view(), warmup_epochs=warmup_of(cfg))
    sched = ElasticRamp(over_epochs(_schedule(view, VIRTUAL_STEPS), sampler),
                        ref_batch=per_worker * int(cfg["ref_workers"] or comm.size),
                        ramp_steps=int(cfg["ramp_steps"]), global_batch=per_worker * comm.size)
    opt_params = {"lr_scheduler": sched, "wd": float(cfg["wd"])}
    if dtype != "float32":
        opt_params["multi_precision"] = True
    if cfg["optimizer"] in ("sgd", "nag"):
        opt_params["momentum"] = float(cfg["momentum"])
    trainer = DistributedTrainer(net.collect_params(), cfg["optimizer"], opt_params,
                                 algorithm=cfg.algorithm_object(), communicator=comm,
                                 profile_comm=bool(cfg["profile_comm"]))
    return sampler, trainer


def prepare_net(net, ctx, dtype, sample):
    """Initialise ``net`` on ``ctx`` (Xavier, as GluonCV's scripts), finish its deferred shapes on
    ``sample`` and cast it to ``dtype``. Parameters that GluonCV's constructor has already
    initialised (CenterNet's) keep their values and move to ``ctx``."""
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Parameter .* is already initialized")
        net.initialize(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), ctx=ctx)
    net.collect_params().reset_ctx(ctx)
    with mx.autograd.train_mode():
        net(sample.as_in_context(ctx[0]))
    if dtype != "float32":
        net.cast(dtype)
        if all(c.device_type == "cpu" for c in ctx):
            emulate_float16_kernels(net)
    return net


def run_dense(cfg, comm, net, trainer, sampler, train, per_worker, step, evaluate, metric_name, log, batchify,
              bn_batches, metric_label=None):
    """The run on the shared loop: every global step ``step(state, batch, step_size)`` (returning
    sums with ``loss`` and ``seen``; ``step_size`` is what ``trainer.step`` takes for a loss summed
    over the batch: the same on every worker, also for an uneven last step), every ``val_interval`` epochs ``evaluate()`` (the averaged model's
    metrics dict with ``metric_name``), ``best.params`` on a new best, the records, checkpoints and
    the result."""
    out = cfg["out"]
    grad_bytes = sum(int(np.prod(p.shape)) * 4 for p in net.collect_params().values() if p.grad_req != "null")
    run = RunFolder(out, cfg["resume"], comm, elastic=bool(cfg["elastic"]),
                    required=("epoch", "best_metric", "history"))

    load = seeded_loader(train, cfg["seed"], trainer, int(cfg["num_workers"]), batchify)

    def train_step(state, batch, step_size):
        comm_now = trainer.communicator
        if not state.sizes or state.sizes[-1][1] != comm_now.size:
            state.sizes = state.sizes + [[state.step, comm_now.size]]
        _seed(cfg["seed"], state.step, comm_now.rank)
        wire, sync = comm_now.stats.total_wire, trainer.sync_seconds
        sums = step(state, batch, step_size)
        return {**sums, "wire": comm_now.stats.total_wire - wire, "sync": trainer.sync_seconds - sync}

    def end_epoch(end):
        c, state = end.comm, end.state
        tot, mine = end.totals, end.sums
        train_time = mine["time_s"]
        rec = {"epoch": end.epoch, "train_loss": tot["loss"] / max(tot["seen"], 1),
               "lr": trainer.learning_rate, "epoch_time_s": round(train_time, 3),
               "samples_per_s": round(tot["seen"] / max(train_time, 1e-9), 1), "wire_bytes": mine.get("wire", 0.0),
               "dense_wire_bytes": 2.0 * (c.size - 1) / c.size * grad_bytes * mine["steps"],
               "workers": c.size, "global_batch": per_worker * c.size, "step": end.step, "elapsed_s": end.elapsed_s}
        if cfg["profile_comm"]:
            rec["sync_s"] = round(mine.get("sync", 0.0), 4)
        if end.epoch % int(cfg["val_interval"]) == 0 or end.epoch == int(cfg["epochs"]):
            bn = bn_batches(c.rank, c.size)
            with trainer.averaged(net, bn, bn=cfg["averaged_bn"],
                                  bn_num_batches=int(cfg["averaged_bn_batches"])) as averaged:
                metrics = evaluate(c)
                value = float(metrics[metric_name])
                if value > state.best_metric:
                    state.best_metric = value
                    if c.rank == 0:
                        with atomic_path(os.path.join(out, "best.params")) as tmp:
                            net.save_parameters(tmp)
            rec.update({k: v for k, v in metrics.items() if isinstance(v, (int, float))})
            rec["best_metric"], rec["eval_bn"] = state.best_metric, averaged["bn"]
        if c.rank == 0:
            shown = f"{metric_name} {rec[metric_name]:.4f}" if metric_name in rec else "(no evaluation)"
            log(f"epoch {end.epoch:3d}  loss {rec['train_loss']:.4f}  {shown}  lr {rec['lr']:.4g}  "
                f"{rec['samples_per_s']:.1f} img/s  {c.size} worker(s), global batch {rec['global_batch']}")
        return rec

    state = fit(run, net, trainer, sampler, per_worker, int(cfg["epochs"]), train_step, end_epoch,
                stats=("loss", "seen"), elastic=bool(cfg["elastic"]), commit_every=int(cfg["commit_every"]),
                stop_after=cfg["stop_after_epochs"], log=log, counters={"best_metric": -1.0, "sizes": []},
                summary=True, show_progress=bool(cfg["progress"]), load=load)
    c = trainer.communicator
    final = next((h[metric_name] for h in reversed(state.history) if metric_name in h), None)
    result = {"best_metric": state.best_metric, "final_metric": final, "metric": metric_name,
              "history": state.history, "out": out, "sizes": state.sizes, "rank": c.rank, "workers": c.size}
    result["published"] = None
    if c.rank == 0 and cfg["publish"]:
        from ..model_zoo.publish import publish_run
        metric = {"name": metric_label or metric_name, "value": state.best_metric,
                  "dataset": f"{cfg['dataset']} {cfg['val_split']} split"}
        result["published"] = publish_run(cfg, type(cfg)().to_dict(), os.path.join(out, "best.params"), cfg.SCRIPT,
                                          metric, c.size, log=log)
        log(f"published {result['published']['file_name']} into {cfg['publish']}")
    c.barrier(name="done")
    return result


def devices_and_batch(cfg, comm, ctx=None):
    """(contexts, dtype, the worker's batch) of a run."""
    found, dtype = resolve_devices(cfg["gpus"], cfg["dtype"], cpu_float16=True)
    ctx = list(ctx or found)
    return ctx, dtype, cfg.per_worker_batch(comm, len(ctx))


def check_sizes(train, per_worker, size):
    if len(train) < per_worker * size:
        raise UserError(f"batch {per_worker} x {size} workers exceeds the {len(train)} training images; use a "
                        "smaller --batch-size")


def to_tensor(image):
    """An HxWx3 uint8 image (NDArray) as GluonCV's normalised 3xHxW float32 input."""
    x = mx.nd.image.to_tensor(image)
    return mx.nd.image.normalize(x, mean=MEAN, std=STD)


__all__ = ["DenseConfig", "Transformed", "build_trainer", "prepare_net", "run_dense", "devices_and_batch",
           "check_sizes", "to_tensor", "epoch_list", "SHARED_GROUPS", "script_main"]
