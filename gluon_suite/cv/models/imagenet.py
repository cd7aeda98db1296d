"""GluonCV's image classifiers, registered in the zoo under GluonCV's names: every name of
``gluoncv_table.CLASSIFIERS`` (found by building each of GluonCV's models, ``gluoncv_probe``): the
ResNets v1/v2/v1b-v1s, ResNeSt, ResNeXt, SE-ResNet/ResNeXt, SENet, MobileNet v1-v3, VGG, AlexNet,
DenseNet, SqueezeNet, GoogLeNet, Inception v3, Xception, ShuffleNet, DarkNet, DLA, HRNet, NASNet,
residual attention networks, the pruned ResNets and GluonCV's CIFAR networks.

The network code is GluonCV's, built without weights for any class count; pretrained weights come
through GluonCV's store layout (same file names, same SHA-1 hashes), fetched by the suite's
checkpoint store (mirrors, offline mode, locks) or read from a folder the user holds
(``model_zoo.finetune``). Registration reads the table only: no network is built on import.
"""
from ...model_zoo import register_model
from ...utils import UserError
from .gluoncv_table import CLASSIFIERS

# descriptions of the rows registered before the whole table was (kept as they were)
_DESCRIPTIONS = {
    "resnest14": "ResNeSt-14 (Split-Attention, radix 2), ImageNet",
    "resnest26": "ResNeSt-26 (Split-Attention, radix 2), ImageNet",
    "resnest50": "ResNeSt-50 (Split-Attention, radix 2), ImageNet top-1 81.04 at 224",
    "resnest101": "ResNeSt-101 (Split-Attention, radix 2), ImageNet top-1 82.81 at 256",
    "resnest200": "ResNeSt-200 (Split-Attention, radix 2), ImageNet top-1 83.88 at 320",
    "resnest269": "ResNeSt-269 (Split-Attention, radix 2), ImageNet top-1 84.53 at 416",
    "resnet18_v1b": "ResNet-18 v1b, ImageNet",
    "resnet34_v1b": "ResNet-34 v1b, ImageNet",
    "resnet50_v1b": "ResNet-50 v1b, ImageNet",
    "resnet101_v1b": "ResNet-101 v1b, ImageNet",
    "cifar_resnet20_v1": "GluonCV's cifar_resnet20_v1 (CIFAR-10)",
    "cifar_resnet56_v1": "GluonCV's cifar_resnet56_v1 (CIFAR-10)",
}


def describe(name):
    """The one-line description of GluonCV's classifier ``name``."""
    if name in _DESCRIPTIONS:
        return _DESCRIPTIONS[name]
    data = "CIFAR-10" if name.startswith("cifar_") else "ImageNet"
    return f"GluonCV's {name} ({data}; inputs from {CLASSIFIERS[name]['input']} pixels)"


def _make(name):
    extra = CLASSIFIERS[name].get("kwargs", {})   # NASNet: use_aux=False; pruned ResNets: new_head

    def build(**kwargs):
        from .gluoncv_probe import build as build_gluoncv
        args = {**extra, **kwargs}
        if "classes" in args or extra:
            return build_gluoncv(name, args.pop("classes", 1000), **args)
        from gluoncv.model_zoo import get_model as gcv_get_model
        return gcv_get_model(name, pretrained=False, **args)
    build.__name__ = name
    build.__doc__ = describe(name)
    return register_model(name, task="classification", weights="gluoncv")(build)


for _name in CLASSIFIERS:
    globals()[_name.replace(".", "_")] = _make(_name)


def gluoncv_row(name):
    """The table's row of GluonCV's classifier ``name`` (input, head, last_gamma, use_se), or None."""
    return CLASSIFIERS.get(name)


def _twin(name):
    """GluonCV's squeeze-and-excitation name of the same network (``se_`` + name), if it has one."""
    return f"se_{name}" if f"se_{name}" in CLASSIFIERS else None


def classifier_kwargs(name, last_gamma=False, use_se=False, log=None):
    """The keywords GluonCV's classifier ``name`` is built with for GluonCV's ``--last-gamma`` and
    ``--use-se`` (``{}`` when neither applies); a UserError where the network cannot take one.

    ``--last-gamma`` zero-initialises the last BatchNorm gamma of every residual block: passed on
    where the constructor does it on request, nothing to do where it always does (ResNeXt), a note
    where the constructor takes the keyword without an effect (basic blocks), refused where the
    network has no residual blocks. ``--use-se`` is refused for every name the installed GluonCV
    fixes it in (the message names the ``se_`` network to use instead)."""
    row = CLASSIFIERS[name]
    kwargs = {}
    if last_gamma:
        how = row["last_gamma"]
        if how == "option":
            kwargs["last_gamma"] = True
        elif how == "ignored" and log is not None:
            log(f"note: --last-gamma changes nothing in {name}: its blocks end without a BatchNorm to "
                "zero-initialise (GluonCV accepts the flag there too)")
        elif how == "no":
            raise UserError(f"--last-gamma: {name} has no residual blocks whose last BatchNorm could start at "
                            "zero; drop --last-gamma, or pick a ResNet/ResNeSt (e.g. resnet50_v1d)")
    if use_se:
        if row["use_se"]:
            kwargs["use_se"] = True
        else:
            twin = _twin(name)
            fix = f"use --model {twin} instead" if twin else \
                "pick an SE network by name (se_resnet*, se_resnext*, senet_154)"
            raise UserError(f"--use-se: GluonCV's {name} takes no SE switch (its constructor fixes it); "
                            f"drop --use-se and {fix}")
    return kwargs


__all__ = ["CLASSIFIERS", "classifier_kwargs", "describe", "gluoncv_row"]
