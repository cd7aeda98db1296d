"""GluonCV's ``train_imagenet.py`` flags in the classification recipe, with GluonCV's meanings:
``--num-gpus N`` (GPUs 0..N-1), ``--use-rec`` with ``--rec-train``/``--rec-train-idx``/``--rec-val``/
``--rec-val-idx`` (RecordIO image files), ``--mode hybrid|imperative``, ``--logging-file``,
``--mixup-alpha``, ``--last-gamma``, ``--use-se`` and ``--drop-rate`` for GluonCV's networks,
``--resume-params`` / ``--resume-states`` and ``--save-frequency``, train_horovod.py's ``--no-cuda``.
(The GluonCV flags without a key here are ``gluoncv_flags``'.) ``check_gluoncv_flags`` refuses, in one line and
before any work, what cannot apply; the other functions are the recipe's steps for each flag.
"""
import os

from ..utils import UserError

REC_FLAGS = ("rec_train", "rec_train_idx", "rec_val", "rec_val_idx")
GLUONCV_REC = "~/.mxnet/datasets/imagenet/rec"   # where GluonCV's train_imagenet.py looks by default

SYMBOLIC = ("--mode symbolic does not apply here: GluonCV's symbolic mode trains an exported symbol with "
            "mx.mod.Module, the recipe trains Gluon blocks; use --mode hybrid (the same compiled graph, the "
            "default) or --mode imperative")


def _flag(key):
    return "--" + key.replace("_", "-")


def device_spec(cfg):
    """The ``--gpus`` value the run uses: ``--num-gpus N`` as GPUs 0..N-1 (0: the CPU), ``--no-cuda``
    as the CPU, else ``--gpus``."""
    if cfg.no_cuda:
        return "-1"
    if cfg.num_gpus is None:
        return cfg.gpus
    return ",".join(str(i) for i in range(cfg.num_gpus)) or "-1"


def _check_num_gpus(cfg):
    if cfg.no_cuda and (cfg.num_gpus or str(cfg.gpus or "-1").strip() not in ("-1", "")):
        given = f"--num-gpus {cfg.num_gpus}" if cfg.num_gpus else f"--gpus {cfg.gpus}"
        raise UserError(f"--no-cuda trains on the CPU but {given} names GPUs; keep one of the two")
    if cfg.num_gpus is None:
        return
    if cfg.gpus is not None:
        raise UserError(f"--num-gpus {cfg.num_gpus} and --gpus {cfg.gpus} both name the devices; keep one")
    if cfg.num_gpus == 0:
        return
    import mxnet as mx
    try:
        have = int(mx.context.num_gpus())
    except mx.base.MXNetError:
        have = 0
    if have < cfg.num_gpus:
        from ..utils.devices import SETUP_HINT
        fix = f"use --num-gpus {have} or fewer" if have else \
            f"give --num-gpus 0 (or drop it) to train on the CPU, or on a GPU machine install the CUDA build with " \
            f"`{SETUP_HINT}`"
        raise UserError(f"--num-gpus {cfg.num_gpus} asks for {cfg.num_gpus} GPU(s) but MXNet sees {have}; {fix}")


def rec_paths(cfg):
    """``{key: path}`` of the four RecordIO files: each flag given, an index beside its ``.rec``
    when not given, GluonCV's default ImageNet location for a ``.rec`` not given."""
    paths = {}
    for split in ("train", "val"):
        rec = cfg[f"rec_{split}"] or os.path.join(GLUONCV_REC, f"{split}.rec")
        idx = cfg[f"rec_{split}_idx"] or os.path.splitext(rec)[0] + ".idx"
        paths[f"rec_{split}"], paths[f"rec_{split}_idx"] = os.path.expanduser(rec), os.path.expanduser(idx)
    return paths


def _check_rec(cfg):
    given = [k for k in REC_FLAGS if cfg[k]]
    if not cfg.use_rec:
        if given:
            raise UserError(f"{_flag(given[0])} is given but --use-rec is not; add --use-rec to read the RecordIO "
                            "files (or drop the flag)")
        return
    if cfg.dataset not in ("digits", "rec") or cfg.data_dir:
        raise UserError(f"--use-rec reads --rec-train/--rec-val, not --dataset {cfg.dataset}"
                        f"{' --data-dir' if cfg.data_dir else ''}; drop one of the two")
    for key, path in rec_paths(cfg).items():
        if not os.path.isfile(path):
            raise UserError(f"--use-rec: {key.replace('_', '-')} file {path} does not exist; give {_flag(key)} "
                            f"(GluonCV's default is under {GLUONCV_REC})")
    cfg.dataset = "rec"   # what the run's banner, config.json and card name


def mixup_alpha(cfg):
    """The run's mixup alpha: ``--mixup [ALPHA]``, or GluonCV's ``--mixup --mixup-alpha ALPHA``;
    0 is no mixup (``--mixup-alpha`` alone turns nothing on, as in GluonCV)."""
    if cfg.mixup and cfg.mixup_alpha is not None:
        return float(cfg.mixup_alpha)
    return float(cfg.mixup)


def model_kwargs(cfg, classes, channels, log=None):
    """The keywords the recipe builds ``--model`` with: the classes, and for the suite's own
    CIFAR/digits networks the channels and ``last_gamma``; for GluonCV's classifiers what
    ``--last-gamma`` and ``--use-se`` mean there (``models.imagenet.classifier_kwargs``)."""
    from ..model_zoo import resolve
    from .models.imagenet import classifier_kwargs, gluoncv_row
    name = resolve(cfg.model).name
    kwargs = {"classes": classes}
    if cfg.drop_rate:
        if not name.startswith("cifar_wideresnet"):
            raise UserError(f"--drop-rate applies to GluonCV's CIFAR wide ResNets (cifar_wideresnet16_10 ...), as in "
                            f"train_cifar10.py, not to {name}; drop --drop-rate")
        kwargs["drop_rate"] = float(cfg.drop_rate)
    if name.endswith(("_cifar", "_digits")):
        if cfg.use_se:
            raise UserError(f"--use-se: {name} takes no SE switch; drop --use-se, or train one of GluonCV's se_ "
                            "networks (e.g. se_resnet18_v1)")
        kwargs.update(in_channels=channels, last_gamma=bool(cfg.last_gamma))
    elif gluoncv_row(name) is not None:
        kwargs.update(classifier_kwargs(name, bool(cfg.last_gamma), bool(cfg.use_se), log))
    elif cfg.last_gamma or cfg.use_se:
        flag = "--last-gamma" if cfg.last_gamma else "--use-se"
        raise UserError(f"{flag} does not apply to {name} (not a residual network of GluonCV's or ours); drop "
                        f"{flag}")
    return kwargs


def check_gluoncv_flags(cfg):
    """One-line refusals of GluonCV flags that cannot apply to this run, before any work."""
    if cfg.mode == "symbolic":
        raise UserError(SYMBOLIC)
    _check_num_gpus(cfg)
    _check_rec(cfg)
    model_kwargs(cfg, 2, 3)   # --last-gamma / --use-se against the model, nothing built
    if (cfg.resume_params or cfg.resume_states) and str(cfg.resume) != "none":
        raise UserError(f"--resume {cfg.resume} continues a run folder; --resume-params/--resume-states start "
                        "from files: give one of the two")
    if cfg.resume_states and not cfg.resume_params:
        raise UserError("--resume-states is given without --resume-params; give the parameters saved with the "
                        "states (MODEL-EPOCH.params beside MODEL-EPOCH.states)")


def rec_datasets(cfg):
    """``(train, test, classes, channels)`` from the four RecordIO files, with the ImageNet-style
    transforms at ``--image-size`` (default 224). ``classes`` is one more than the largest label in
    the validation records (read from their headers, no image decoded); a training label beyond it
    stops the step that meets it (``check_labels``)."""
    from .data.folders import record_dataset, record_labels
    from .data.pipeline import eval_transform, train_transform
    paths = rec_paths(cfg)
    train = record_dataset(paths["rec_train"], paths["rec_train_idx"])
    val = record_dataset(paths["rec_val"], paths["rec_val_idx"])
    labels = record_labels(val)
    if not labels:
        raise UserError(f"--rec-val {paths['rec_val']} holds no records; give the validation RecordIO file")
    size = cfg.image_size or 224
    return (train.transform_first(train_transform("rec", size)), val.transform_first(eval_transform("rec", size)),
            int(max(labels)) + 1, 3)


def check_labels(y, classes, cfg):
    """A training batch's labels must be classes the validation records hold."""
    top = int(y.max().asscalar())
    if top >= classes:
        raise UserError(f"--rec-train holds label {top} but the validation records (--rec-val) only labels 0.."
                        f"{classes - 1}; give RecordIO files with the same classes")


def tee(log, path):
    """``log`` that also appends each line to the plain-text file ``path`` (GluonCV's --logging-file)."""
    def both(msg):
        log(msg)
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{msg}\n")
    return both


def load_resume_files(cfg, net, trainer, ctx):
    """GluonCV's ``--resume-params`` (into ``net``) and ``--resume-states`` (into ``trainer``)."""
    import mxnet as mx
    if cfg.resume_params:
        try:
            net.load_parameters(cfg.resume_params, ctx=ctx, cast_dtype=True, dtype_source="current")
        except (AssertionError, ValueError, mx.base.MXNetError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(f"--resume-params {cfg.resume_params} does not fit --model {cfg.model} with these "
                            f"classes ({reason[:160]}); give parameters saved from this model") from None
    if cfg.resume_states:
        try:
            trainer.load_states(cfg.resume_states)
        except UserError:
            raise
        except Exception as exc:   # noqa: BLE001 - a foreign file fails in MXNet's or pickle's own ways
            raise UserError(f"--resume-states {cfg.resume_states} is not a trainer-state file of this suite "
                            f"({type(exc).__name__}); give the .states written by --save-frequency") from None


def save_periodic(cfg, net, trainer, epoch, rank):
    """Every ``--save-frequency`` epochs rank 0 keeps ``OUT/MODEL-EPOCH.params`` and ``.states``
    (``EPOCH``: the epochs done, 4 digits); returns the parameter file's path or None."""
    every = int(cfg.save_frequency or 0)
    if not every or epoch % every or rank != 0:
        return None
    from ..utils.fileio import atomic_path
    stem = os.path.join(cfg.out, f"{cfg.model}-{epoch:04d}")
    with atomic_path(stem + ".params") as tmp:
        net.save_parameters(tmp)
    trainer.save_states(stem + ".states")
    return stem + ".params"


def start_from_gluoncv(net, name, classes, root=None, tag=None):
    """``model_zoo.finetune.start_from_pretrained`` for any of GluonCV's classifiers: the output
    layer is the table's ``head`` attribute, whatever its kind (a Dense layer, or SqueezeNet's and
    MobileNet v3's convolutional heads), and keeps its fresh initialisation; every other parameter
    comes from the verified GluonCV-format file (``finetune.find_weights``). Other models go
    through ``start_from_pretrained`` itself."""
    from ..model_zoo.finetune import find_weights, load_features, start_from_pretrained
    from .models.imagenet import gluoncv_row
    row = gluoncv_row(name)
    if row is None or not row.get("head"):
        return start_from_pretrained(net, name, classes, root, tag)
    head = row["head"]
    params = list(getattr(net, head).collect_params().values())
    if params[-1].shape[0] != classes:
        raise UserError(f"--use-pretrained: the network's {head} layer has {params[-1].shape[0]} outputs, not the "
                        f"data's {classes} classes; build it with classes={classes}")
    path, how = find_weights(name, root, tag)
    loaded = load_features(net, path, head, f"'{name}'")
    return {"path": path, "how": how, "head": head, "loaded": loaded}
