"""The configuration of the image-classification recipe (``recipe.train_classification``):
``ClassificationConfig``, its keys with their checks, defaults and flags (the flags of
``scripts/cv/train_classification.py`` are generated from it, ``utils.flags``), and its cross-checks
made once at the start of a run (data folder, batch against workers, pretrained weights, resume).
"""
import argparse
import dataclasses
import os
from typing import ClassVar

import mxnet as mx

from ..distributed.averaging import BN_CHOICES
from ..distributed.options import CompressionOptions, ElasticOptions, SecondCompressorOptions
from ..model_zoo import resolve
from ..model_zoo.publish import PublishOptions
from ..model_zoo.registry import model_name
from ..utils import UserError
from ..utils.devices import DeviceOptions, resolve_devices
from ..utils.runconfig import RecipeConfig, RunOptions, option
from ..utils.validate import (choice_of, existing_dir, existing_path, float_range, fraction, nonneg_float,
                              nonneg_int, output_dir, positive_float, positive_int)
from .data.pipeline import DATASETS
from .gluoncv_flags import add_gluoncv_flags, gluoncv_meanings
from .recipe_gluoncv import GLUONCV_REC, REC_FLAGS, check_gluoncv_flags, device_spec


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


class CommaList(argparse.Action):
    """A list flag that also reads GluonCV's comma-separated spelling: ``--lr-decay-epoch 40,60`` is
    ``--lr-milestones 40 60`` (the configuration checks each value)."""

    def __init__(self, option_strings, dest, nargs=None, **kwargs):
        super().__init__(option_strings, dest, nargs="*", **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [part.strip() for v in values for part in str(v).split(",") if part.strip()])


def log_file(text):
    """A type: a plain-text log file to append to, in a folder that exists."""
    path = os.path.expanduser(str(text))
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text} is not a file in an existing folder; give a file name such as "
                                         "train.log (its folder must exist)")
    return path




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
                           "pretrained_tag", "use_se", "batch_norm", "use_gn", "drop_rate", "use_rec") + REC_FLAGS,
        "optimisation": ("epochs", "batch_size", "global_batch_size", "optimizer", "lr", "momentum", "wd", "lr_mode",
                         "warmup_epochs", "lr_milestones", "lr_decay", "lr_decay_period", "label_smoothing", "mixup", "mixup_alpha",
                         "mixup_off_epochs",
                         "wd_on_bn_bias", "last_gamma"),
        "distributed": ("algorithm", "compressor", "ratio", "period", "compressor2", "ratio2", "min_size",
                        "averaged_bn_batches", "averaged_bn", "compress_warmup", "profile_comm", "link_mbit"),
        "devices": ("gpus", "num_gpus", "no_cuda", "dtype"),
        "run": ("seed", "out", "resume", "resume_params", "resume_states", "save_frequency", "num_workers", "mode",
                "logging_file", "log_interval", "eval_frequency", "progress", "stop_after_epochs"),
    }
    out: str = option("runs/classification", output_dir, aliases=("--save-dir",),
                      help="run folder: log.jsonl, summary.csv, checkpoints, config.json")
    # model and data
    model: str = option("resnest14_digits", model_name, help="registered zoo name")
    dataset: str = option("digits", choices=DATASETS, help="the data set to train and evaluate on")
    data_dir: str = option(None, existing_path, help="local path of the data set (not needed for digits, mnist5k)")
    image_size: int = option(None, positive_int, aliases=("--input-size",),
                             help="input side in pixels (unset: the data set's own)")
    last_gamma: bool = option(False, help="zero-init each residual block's last BN gamma (GluonCV's last_gamma)")
    use_se: bool = option(False, aliases=("--use_se",),
                          help="GluonCV's SE switch, where the model takes it (the installed GluonCV's names fix it: "
                          "pick the se_ name)")
    batch_norm: bool = option(False, help="GluonCV's VGG switch: --model vgg16 --batch-norm trains vgg16_bn")
    use_gn: bool = option(False, help="GluonCV's GroupNorm switch: --model resnet50_v1b --use-gn trains resnet50_v1b_gn")
    drop_rate: float = option(0.0, float_range(0, 1, high_open=True, what="a dropout rate"),
                              help="dropout in GluonCV's CIFAR wide ResNets (cifar_wideresnet*), as train_cifar10.py")
    use_rec: bool = option(False, help="read RecordIO image files (--rec-train/--rec-val, GluonCV's defaults under "
                           f"{GLUONCV_REC}) instead of --dataset")
    rec_train: str = option(None, existing_path, metavar="REC", help="training images (.rec) for --use-rec")
    rec_train_idx: str = option(None, existing_path, metavar="IDX", help="its index (default: beside the .rec)")
    rec_val: str = option(None, existing_path, metavar="REC", help="validation images (.rec) for --use-rec")
    rec_val_idx: str = option(None, existing_path, metavar="IDX", help="its index (default: beside the .rec)")
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
    lr_mode: str = option("cosine", choices=("cosine", "step"),
                          help="the rate's decay after the warm-up (step when only --lr-decay-epoch is given, as "
                               "GluonCV's)")
    warmup_epochs: object = option("auto", warmup_value,
                                   help="linear warm-up in epochs, or auto (default): CSER's grows with its ratio")
    lr_milestones: list = option([], nonneg_float, many=True, aliases=("--lr-decay-epoch",), action=CommaList,
                                 flag_type=str, help="epochs of the step decay (GluonCV's spelling: 40,60)")
    lr_decay: float = option(0.1, float_range(0, 1, low_open=True, what="a decay factor"),
                             help="factor of the step decay at each milestone")
    lr_decay_period: int = option(0, nonneg_int, metavar="P",
                                  help="GluonCV's: the step decay every P epochs (0: off; not with --lr-decay-epoch)")
    label_smoothing: float = option(0.0, float_range(0, 1, high_open=True, what="a fraction"), nargs="?", const=0.1,
                                    help="label smoothing epsilon (bare flag: 0.1, as GluonCV's)")
    mixup: float = option(0.0, nonneg_float, nargs="?", const=0.2,
                          help="Beta(alpha, alpha) of mixup; 0 is off (bare flag: 0.2, GluonCV's alpha)")
    mixup_alpha: float = option(None, positive_float, help="GluonCV's: the alpha of --mixup when mixup is on "
                                "(--mixup --mixup-alpha 0.4 is --mixup 0.4)")
    mixup_off_epochs: int = option(0, nonneg_int, aliases=("--mixup-off-epoch",),
                                   help="last epochs trained without mixup")
    wd_on_bn_bias: bool = option(True, flag="--wd-on-bn-bias", negative="--no-wd",
                                 help="weight decay on every parameter, BN/LN and biases included (the default, as "
                                 "GluonCV's)",
                                 negative_help="GluonCV's flag: no weight decay on BN/LN gamma and beta and on biases")
    # run and distributed extras
    num_workers: int = option(0, nonneg_int, aliases=("-j", "--num-data-workers", "--data-nthreads"), help="data-loading processes")
    num_gpus: int = option(None, nonneg_int, metavar="N",
                           help="GluonCV's: train on GPUs 0..N-1 (0: the CPU), as --gpus 0,...,N-1")
    no_cuda: bool = option(False, help="GluonCV's train_horovod.py: train on the CPU (as --gpus -1)")
    mode: str = option("hybrid", choices=("hybrid", "imperative", "symbolic"),
                       help="hybrid: hybridize the network (GluonCV's fast mode); imperative: run it as Python")
    logging_file: str = option(None, log_file, metavar="FILE", help="also append every logged line to FILE")
    resume_params: str = option(None, existing_path, metavar="FILE", aliases=("--resume-from",),
                                help="start from these parameters (net.save_parameters; --save-frequency writes them)")
    resume_states: str = option(None, existing_path, metavar="FILE",
                                help="and from these trainer states (written beside them by --save-frequency)")
    save_frequency: int = option(0, nonneg_int, metavar="N", aliases=("--save-period",),
                                 help="every N epochs also keep OUT/MODEL-EPOCH.params and .states (0: off)")
    log_interval: int = option(0, nonneg_int, metavar="N",
                               help="GluonCV's: a line every N batches of an epoch with the speed and the mean "
                               "training loss over them (0: off)")
    eval_frequency: int = option(None, nonneg_int, metavar="N",
                                 help="GluonCV's: evaluate every N epochs and after the last (0: only after the "
                                 "last; default: every epoch)")
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

    @classmethod
    def from_dict(cls, data=None, source="the config", flags=(), origin="the config"):
        """As ``RecipeConfig.from_dict``; decay epochs (``--lr-decay-epoch``/``lr_milestones``) given
        without ``lr_mode`` mean the step schedule, as in GluonCV's ``train_imagenet.py`` (whose
        default is step), instead of being ignored by the cosine default."""
        if not isinstance(data, cls) and data:
            fields = cls.options()
            data = gluoncv_meanings(data, {k: fields[k].default for k in ("model", "epochs", "mode")})
            if data.get("lr_milestones") and data.get("lr_mode") is None:
                data = {**data, "lr_mode": "step"}
        return super().from_dict(data, source, flags, origin)

    @classmethod
    def build_parser(cls, description=None, config=None):
        """The generated parser, and GluonCV's flags without a key here: hidden, each taken at the
        value the recipe has or refused in one line that says it does not apply (``gluoncv_flags``)."""
        return add_gluoncv_flags(super().build_parser(description, config))

    def check(self, comm):
        check_gluoncv_flags(self)   # --mode, --num-gpus, --use-rec, --last-gamma, --use-se, --resume-params
        resolve_devices(device_spec(self), self.dtype, cpu_float16=True)  # a GPU this machine lacks, float16 on the CPU
        from .data.pipeline import EMBEDDED
        if self.dataset not in EMBEDDED and not self.data_dir and not self.use_rec:
            raise UserError(f"dataset {self.dataset} reads from a local path: give --data-dir (or data_dir in "
                            "the config)")
        if self.dataset in EMBEDDED and self.data_dir:
            raise UserError(f"--data-dir {self.data_dir} is given but --dataset {self.dataset} is built in and reads "
                            "no files; give --dataset folder (GluonCV's ImageNet layout: DIR/train/CLASS/, "
                            "DIR/val/CLASS/), rec, cifar10 or cifar100, or drop --data-dir")
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
