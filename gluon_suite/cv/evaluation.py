"""Evaluating an image classifier and publishing a trained one: the top-1 accuracy of a network
on a test set sharded over the workers (what the recipe logs every epoch), a zoo model's published
checkpoint evaluated as its model card says (``scripts/cv/evaluate.py``, whose flags are
``EvaluationOptions``), and a run's best checkpoint published with its card.
"""
import dataclasses
import os

import mxnet as mx
import numpy as np
from mxnet import gluon

from ..model_zoo import get_model, resolve
from ..model_zoo.registry import checkpoint_name
from ..utils.runconfig import option
from ..utils.validate import existing_dir, existing_file, existing_path, positive_int
from .data import build_datasets
from .data.pipeline import DATASETS
from .recipe_config import DEFAULTS


def top1_accuracy(net, test, comm, batch=256, ctx=None, dtype="float32"):
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
    return top1_accuracy(net, test, comm)


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
