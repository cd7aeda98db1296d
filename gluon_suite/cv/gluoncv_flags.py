"""GluonCV's classification flags that the recipe's configuration does not hold as keys: what each
means when the command line is read, before any work.

GluonCV's four classification scripts (``train_imagenet.py``, ``train_horovod.py``,
``train_cifar10.py``, ``train_mixup_cifar10.py``) define flags with no counterpart here. Each is a
hidden flag of the classification script (``add_gluoncv_flags``) that does one of two things:

- ``FIXED``: taken when its value is what the recipe does anyway (``--warmup-lr 0``: the warm-up
  starts from 0, as GluonCV's default), refused in one line for any other value;
- ``REFUSED``: refused in one line that says the flag does not apply here, and why.

So a published GluonCV command never meets argparse's generic "unrecognized arguments". The flags
the configuration holds with GluonCV's meaning are ``recipe_config.ClassificationConfig``'s keys;
``gluoncv_meanings`` turns the ones that name another network or a schedule (``--batch-norm``,
``--use-gn``, ``--lr-decay-period``, ``--data-dir`` alone) into the keys the recipe reads, and
``gluoncv_notes`` says how the recipe covers ``--log-interval`` and ``--eval-frequency``.
"""
import argparse
import time

from ..utils import UserError

_DROP = "drop the flag"
REFUSED = {   # flag -> (takes a value, why it does not apply here)
    "--auto_aug": (False, "GluonCV's train_horovod.py takes AutoAugment from AutoGluon (autogluon.utils.augment), "
                          "which this suite does not use, and the installed GluonCV has no MXNet AutoAugment "
                          f"transform to reuse; {_DROP} (the recipe keeps its random-resized crop and flip)"),
    "--teacher": (True, f"the recipe has no knowledge distillation; {_DROP} (and --temperature, --hard-weight)"),
    "--temperature": (True, f"it is the temperature of GluonCV's distillation, which the recipe has not; {_DROP}"),
    "--hard-weight": (True, f"it weighs GluonCV's distillation loss, which the recipe has not; {_DROP}"),
    "--use_sk": (False, "it builds GluonCV's ResNeXt with selective-kernel layers, a variant the zoo does not "
                        f"register by name; {_DROP}"),
    "--use_avd": (False, "it builds GluonCV's ResNeSt/ResNeXt with average-pool downsampling (avd=True), a "
                         f"variant the zoo does not register by name; {_DROP}"),
    "--logging-dir": (True, "GluonCV's CIFAR mixup script logs to DIR/train_cifar10_MODEL.log; give that file "
                            "with --logging-file FILE instead"),
    "--save-plot-dir": (True, "the recipe draws no plot: OUT/summary.csv and OUT/log.jsonl hold the accuracy per "
                              f"epoch; {_DROP}"),
    "--rgb-mean": (True, "the recipe normalises with the data set's own mean and std (ImageNet's for RecordIO "
                         f"and folder data, as GluonCV's default); {_DROP}"),
    "--rgb-std": (True, "the recipe normalises with the data set's own mean and std (ImageNet's for RecordIO "
                        f"and folder data, as GluonCV's default); {_DROP}"),
    "--num-training-samples": (True, "the recipe's schedule counts the training records itself; " + _DROP),
}


def _number(text):
    return float(text)


FIXED = {   # flag -> (the value the recipe has, how to read one, what the recipe does)
    "--warmup-lr": (0.0, _number, "the recipe's warm-up starts from 0 (GluonCV's default)"),
    "--crop-ratio": (0.875, _number, "the recipe's evaluation resizes to size/0.875 and takes the centre crop "
                                     "(GluonCV's default ratio)"),
    "--resume-epoch": (0.0, _number, "a run started from --resume-params/--resume-states counts its epochs from 0; "
                                     "continue a run at its epoch with --resume FOLDER"),
    "--dropblock-prob": (0.0, _number, "the zoo builds GluonCV's networks without DropBlock"),
    "--data-backend": ("mxnet", str, "the recipe reads its data with MXNet (GluonCV's default backend); DALI is "
                                     "not used"),
}


class GluonCVFlag(argparse.Action):
    """A GluonCV flag without a configuration key: accepted at the value ``FIXED`` names, else one
    ``parser.error`` line saying it does not apply here. Stores nothing."""

    def __init__(self, option_strings, dest, takes_value=True, **kwargs):
        kwargs.update(nargs="?" if takes_value else 0, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        flag = self.option_strings[0]
        if flag in FIXED:
            have, read, what = FIXED[flag]
            try:
                same = values is not None and read(values) == have
            except ValueError:
                same = False
            if same:
                return
            shown = flag if values is None else f"{flag} {values}"
            fix = f"{have:g}" if isinstance(have, float) else have
            parser.error(f"{shown} does not apply here: {what}; drop the flag (or give {flag} {fix})")
        parser.error(f"{flag} does not apply here: {REFUSED[flag][1]}")


def add_gluoncv_flags(parser):
    """Add the hidden ``FIXED`` and ``REFUSED`` flags to ``parser`` (the classification script's).
    Returns ``parser``."""
    for flag in FIXED:
        parser.add_argument(flag, action=GluonCVFlag)
    for flag, (takes_value, _) in REFUSED.items():
        parser.add_argument(flag, action=GluonCVFlag, takes_value=takes_value)
    return parser


def _gn_names():
    from .models.imagenet import CLASSIFIERS
    return [name for name in CLASSIFIERS if name.endswith("_gn")]


def _network(model, batch_norm, use_gn):
    """``--model`` as GluonCV builds it with ``--batch-norm`` (VGG's ``batch_norm=True``: the
    ``_bn`` network) and ``--use-gn`` (``norm_layer=GroupNorm``: the ``_gn`` network)."""
    if batch_norm:
        if not str(model).startswith("vgg"):
            raise UserError(f"--batch-norm applies to GluonCV's VGG networks (vgg11 ... vgg19 become vgg11_bn ... "
                            f"vgg19_bn), not to {model}; drop --batch-norm")
        if not str(model).endswith("_bn"):
            model = f"{model}_bn"
    if use_gn:
        names = _gn_names()
        if f"{model}_gn" in names:
            model = f"{model}_gn"
        elif model not in names:
            stems = ", ".join(n[:-3] for n in names)
            raise UserError(f"--use-gn: GluonCV's GroupNorm networks here are {', '.join(names)} (--model "
                            f"{stems} with --use-gn); {model} has none: drop --use-gn or pick one of them")
    return model


def decay_epochs(period, epochs):
    """GluonCV's ``--lr-decay-period P``: the rate decays every P epochs (P, 2P, ... before the last)."""
    return [float(e) for e in range(int(period), int(epochs), int(period))]


def gluoncv_meanings(data, defaults):
    """The configuration mapping ``data`` with GluonCV's flags turned into the keys the recipe
    reads (``defaults``: the configuration's defaults, for keys ``data`` leaves unset):
    ``--batch-norm``/``--use-gn`` name the ``_bn``/``_gn`` network (a ``_gn`` one runs imperatively,
    ``GROUP_NORM_NOTE``); ``--lr-decay-period P`` is
    the step decay every P epochs (refused beside other decay epochs); ``--data-dir`` without
    ``--dataset`` (or ``--use-rec``) is GluonCV's ImageNet folder layout, ``--dataset folder``."""
    data = dict(data)
    if data.get("batch_norm") or data.get("use_gn"):
        data["model"] = _network(data.get("model") or defaults["model"], data.get("batch_norm"), data.get("use_gn"))
    if str(data.get("model")).endswith("_gn") and (data.get("mode") or defaults["mode"]) == "hybrid":
        data["mode"] = "imperative"   # GluonCV's GroupNorm cannot be hybridized (GROUP_NORM_NOTE)
    try:   # a value that is not a number is left to the key's own check
        period = int(data.get("lr_decay_period") or 0)
        want = decay_epochs(period, data.get("epochs") or defaults["epochs"]) if period > 0 else None
        given = [float(e) for e in data.get("lr_milestones") or []]
    except (TypeError, ValueError):
        want = None
    if want is not None:
        if given and given != want:
            raise UserError(f"--lr-decay-period {period} and --lr-decay-epoch {','.join(f'{e:g}' for e in given)} "
                            "both set the decay epochs; give one of the two")
        data["lr_milestones"] = want
        if data.get("lr_mode") is None:   # GluonCV's default schedule, even with no decay before the end
            data["lr_mode"] = "step"
    if data.get("data_dir") and data.get("dataset") is None and not data.get("use_rec"):
        data["dataset"] = "folder"
    return data


GROUP_NORM_NOTE = ("{model} runs imperatively (--mode imperative): GluonCV's GroupNorm layer reads the batch's "
                   "shape and device in Python and cannot be hybridized (GluonCV's own --mode hybrid fails on it "
                   "too); the network computes the same")


def evaluates(epoch, epochs, frequency):
    """Whether epoch ``epoch`` (1-based) of ``epochs`` ends with an evaluation under GluonCV's
    ``--eval-frequency``: every ``frequency`` epochs and always after the last (None or 1: every
    epoch; 0: only after the last)."""
    if frequency is None or epoch >= epochs:
        return True
    return bool(frequency) and epoch % int(frequency) == 0


class _BatchLog:
    """GluonCV's ``--log-interval``: every ``n`` batches of an epoch, one line with the speed over
    those batches and their mean training loss (GluonCV's ``Epoch[E] Batch [B]`` line; the loss is
    read from the device only then). ``n`` 0: off."""

    def __init__(self, n, log):
        self.n, self.log = int(n), log
        self.epoch_ended()

    def epoch_ended(self):
        self.batch, self.loss, self.seen, self.started = 0, None, 0, time.time()

    def add(self, epoch, loss, seen, lr):
        """Count one batch of ``epoch`` (0-based, as GluonCV prints it): its summed ``loss`` over ``seen`` images."""
        self.batch += 1
        self.loss = loss if self.loss is None else self.loss + loss
        self.seen += seen
        if self.batch % self.n == 0:
            mean = float(self.loss.asscalar()) / max(self.seen, 1)
            speed = self.seen / max(time.time() - self.started, 1e-9)
            self.log(f"Epoch[{epoch}] Batch [{self.batch - 1}]\tSpeed: {speed:.1f} samples/sec\t"
                     f"loss={mean:.4f}\tlr={lr:.6g}")
            self.loss, self.seen, self.started = None, 0, time.time()


def gluoncv_notes(cfg):
    """Notes for the GluonCV flags the recipe takes but covers in its own way (one line each)."""
    notes = []
    if str(cfg.model).endswith("_gn"):
        notes.append(GROUP_NORM_NOTE.format(model=cfg.model))
    return notes
