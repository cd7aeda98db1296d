"""Evaluating a detector or segmenter from the zoo (``scripts/cv/evaluate.py`` for the zoo's
``detection`` and ``segmentation`` models): its published weights (or a ``.params`` file) on the
validation split its card records, with the card's settings (data set, canvases, input size,
metric), reduced over ``comm``'s workers as in training.

A setting given explicitly (``overrides``: e.g. another ``data_dir`` or ``metric``) replaces the
card's; a ``.params`` file is evaluated with the ``config.json`` of its run folder (the recipe's
defaults where there is none).
"""
import mxnet as mx

from ..model_zoo import get_model, resolve
from ..utils import UserError
from ..utils.checkpoints import load_parameters

DENSE_TASKS = ("detection", "segmentation")


def card_settings(name, source=None):
    """The hyperparameters and metric of the card of ``name``'s published checkpoint (``{}``, None
    when it has none)."""
    from ..model_zoo.cards import read_card_of
    from ..model_zoo.registry import split_tag
    from ..model_zoo.store import record_for
    entry, key = split_tag(name)
    card = read_card_of(record_for(key or entry.name, source), source)
    return dict(card.get("hyperparameters") or {}), card.get("metric")


def _run_config(params):
    """The ``config.json`` of the run folder holding the ``params`` file ({} when there is none):
    its data set, classes and sizes are how the checkpoint is evaluated."""
    import json
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(params)), "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _config(task, name, hp, overrides):
    from .detection import DetectionConfig
    from .segmentation import SegmentationConfig
    cls = DetectionConfig if task == "detection" else SegmentationConfig
    keep = {k: v for k, v in hp.items() if k in cls.options() and k not in ("elastic", "gpus", "dtype", "out",
                                                                             "resume", "publish", "card")}
    keep.update({k: v for k, v in (overrides or {}).items() if v is not None})
    keep["model"] = resolve(name.split(".")[0]).name
    return cls.from_dict(keep, source=f"the card of {name}")


def evaluate_dense(name, params=None, source=None, root=None, comm=None, overrides=None):
    """``(metrics, config)``: the metrics dict of zoo model ``name`` on its validation split (the
    card's, unless ``overrides`` say otherwise) and the configuration it was evaluated with."""
    from ..distributed import LocalCommunicator
    task = resolve(name.split(".")[0]).task
    if task not in DENSE_TASKS:
        raise UserError(f"{name} is a {task or 'classification'} model, not a detector or segmenter")
    comm = comm or LocalCommunicator()
    hp, _ = (_run_config(params), None) if params else card_settings(name, source)
    cfg = _config(task, name, hp, overrides)
    if cfg.dataset != "canvases" and not cfg.data_dir:
        raise UserError(f"{name} was trained on {cfg.dataset}, which reads from a local folder: give --data-dir")
    ctx = [mx.cpu()]
    if task == "detection":
        from .detection import detection_data, evaluate_detector
        _, val, classes = detection_data(cfg, train=False, classes=list(cfg.classes) or None)
        net = _load(name, params, source, root, classes=list(classes))
        size = cfg.input_size()
        metrics = evaluate_detector(net, val, comm, cfg.metric_kind(), classes, size, int(cfg.test_batch_size),
                                    ctx, "float32")
    else:
        from .segmentation import evaluate_segmenter, segmentation_data
        _, val, nclass = segmentation_data(cfg, train=False)
        net = _load(name, params, source, root, classes=nclass)
        metrics = evaluate_segmenter(net, val, comm, nclass, cfg.crop(), int(cfg.test_batch_size), ctx, "float32")
    return metrics, cfg


def _load(name, params, source, root, classes):
    if params:
        net = get_model(name.split(".")[0], classes=classes)
        net.initialize()
        load_parameters(net, params, "--params", cast_dtype=True, dtype_source="current")
    else:
        net = get_model(name, pretrained=True, root=root, source=source, classes=classes)
    net.hybridize(static_alloc=True)
    return net
