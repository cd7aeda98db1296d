"""The object-detection recipe behind ``scripts/cv/train_detection.py``: GluonCV's SSD, YOLOv3 and
CenterNet detectors (the zoo's small ``ssd_128_*_canvas`` models, or GluonCV's ``ssd_*``, ``yolo3_*``
and ``center_net_*`` names for one's own classes) trained on the shared loop (``dense_common``) with
each family's own GluonCV transform and loss (``detection_families``), and evaluated with VOC07/VOC12
mAP or COCO mAP (``metrics.DetectionMetric``) on every worker's share of the validation set.

Data (``--dataset``): ``canvases`` (the embedded digit canvases, ``data.canvases``), ``voc`` (a
Pascal VOC folder: Annotations, JPEGImages, ImageSets/Main) or ``coco`` (a COCO instances JSON file
and its image folder). Training, for SSD as GluonCV's ``train_ssd.py``: ``SSDDefaultTrainTransform``
(colour jitter, random expansion and crop, flip, resize to ``--data-shape``; ``--augment upright``
drops the flip) turns each image and its boxes into the anchors' class and box targets;
``SSDMultiBoxLoss`` (hard negative mining 3:1, smooth L1 on the boxes, normalised by the positives)
is the loss, and each step applies it as it is (``trainer.step(1)``). Evaluation: the resized,
normalised image (GluonCV's validation transform) and the network's decoded detections after NMS
at IoU 0.45 (top 400, 100 kept); boxes are scaled back to the image's own size for COCO.
"""
import dataclasses
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..model_zoo import get_model
from ..model_zoo.registry import list_models
from ..utils import UserError
from ..utils.runconfig import option
from ..utils.validate import output_dir, positive_int
from .dense_common import (SHARED_GROUPS, DenseConfig, Transformed, build_trainer, check_sizes, devices_and_batch,
                           prepare_net, run_dense)

DETECTION_DATASETS = ("canvases", "voc", "coco")


def _detector_name(text):
    return str(text).strip()


@dataclasses.dataclass
class DetectionConfig(DenseConfig):
    """``train_detection``'s configuration: the keys are the script's flags with ``_`` for ``-``."""
    SCRIPT: ClassVar[str] = "scripts/cv/train_detection.py"
    RESUME_MODEL: ClassVar[bool] = False
    FLAG_GROUPS: ClassVar[dict] = {
        "model and data": ("model", "network", "data_shape", "dataset", "data_dir", "train_split", "val_split",
                           "canvases", "val_canvases", "canvas_size", "canvas_seed", "metric", "augment"),
        **SHARED_GROUPS,
    }
    out: str = option("runs/detection", output_dir, aliases=("--save-prefix",), help="run folder: log.jsonl, summary.csv, "
                      "checkpoints, config.json")
    model: str = option("ssd_128_resnet18_canvas", _detector_name,
                        help="a zoo detector (ssd_128_resnet18_canvas, ssd_128_resnest14_canvas) or one of GluonCV's "
                        "ssd_*, yolo3_* and center_net_* names (e.g. ssd_512_resnet50_v1_custom, "
                        "yolo3_mobilenet1.0_custom)")
    network: str = option(None, help="GluonCV's --network (e.g. resnet50_v1): with --data-shape, the model is "
                          "ssd_{data_shape}_{network}_custom")
    data_shape: int = option(None, positive_int, help="input side in pixels (default: the model's, 128 for the zoo's "
                             "canvas models)")
    dataset: str = option("canvases", choices=DETECTION_DATASETS, help="canvases (embedded), voc or coco")
    classes: list = option([], many=True, flag=False,
                           help="the class names, in order (voc/coco: default the training split's; recorded in "
                           "config.json and the card)")
    metric: str = option(None, choices=("voc07", "voc12", "coco"),
                         help="validation metric (default: coco for --dataset coco, voc07 otherwise)")

    augment: str = option("gluoncv", choices=("gluoncv", "upright"), help="training augmentation: gluoncv "
                          "(GluonCV's SSD transform: colour jitter, random expansion and crop, random mirror) or "
                          "upright (the same without the mirror, for classes that a mirror changes, such as digits)")

    def model_name(self):
        """The detector to build: ``--network`` with ``--data-shape`` as GluonCV names it, else ``--model``."""
        if self.network:
            return f"ssd_{self.data_shape or 512}_{self.network}_custom"
        return self.model

    def input_size(self):
        if self.data_shape:
            return int(self.data_shape)
        name = self.model_name()
        try:
            return int(name.split("_")[1])
        except (IndexError, ValueError):
            return 416 if name.startswith("yolo3_") else 512   # GluonCV's training sizes

    def metric_kind(self):
        return self.metric or ("coco" if self.dataset == "coco" else "voc07")

    def check(self, comm):
        super().check(comm)
        from .detection_families import family_of
        family_of(self.model_name())   # a one-line error for a family the recipe does not train
        if self.metric_kind() == "coco" and self.dataset != "coco":
            raise UserError("--metric coco needs COCO annotations: use --dataset coco, or --metric voc07/voc12")


def detection_data(cfg, train=True, classes=None):
    """(train, val, class names) of ``cfg``'s data set; with ``train=False`` only the validation
    split is read (train is None), its classes ``classes`` (default: the data set's own)."""
    import os
    from .data.detection import COCODetectionSet, VOCDetectionSet

    def split_file(split):   # COCO's layout: ROOT/annotations/instances_SPLIT.json, images in ROOT/SPLIT
        return os.path.join(cfg.data_dir, "annotations", f"instances_{split}.json")
    tr = None
    if cfg.dataset == "canvases":
        from .data.canvases import canvas_dataset
        if train:
            tr = canvas_dataset("train", cfg.canvases, cfg.canvas_size, cfg.canvas_seed).detection
        val = canvas_dataset("val", cfg.val_canvases, cfg.canvas_size, cfg.canvas_seed).detection
        return tr, val, tuple(val.classes)
    if cfg.dataset == "voc":
        if train:
            tr = VOCDetectionSet(cfg.data_dir, cfg.train_split, classes=classes)
        val = VOCDetectionSet(cfg.data_dir, cfg.val_split, classes=tr.classes if tr is not None else classes)
    else:
        if train:
            tr = COCODetectionSet(split_file(cfg.train_split), classes=classes)
        val = COCODetectionSet(split_file(cfg.val_split), classes=tr.classes if tr is not None else classes)
    if tr is not None:
        tr = _with_objects(tr)
    return tr, val, tuple((tr if tr is not None else val).classes)


class _Subset(gluon.data.Dataset):
    def __init__(self, data, keep):
        self._data, self._keep = data, list(keep)
        self.classes = data.classes

    def __len__(self):
        return len(self._keep)

    def __getitem__(self, i):
        return self._data[self._keep[i]]


def _with_objects(train):
    """``train`` without the images that have no (non-crowd) object: SSD's target assignment needs
    one, and GluonCV's detection training skips them too."""
    labels = getattr(train, "_labels", None)
    if labels is None:
        return train
    keep = [i for i, lab in enumerate(labels) if len(lab)]
    if not keep:
        raise UserError("no training image has an object to detect; check the annotations of --train-split")
    return train if len(keep) == len(train) else _Subset(train, keep)


def build_detector(name, classes, size=None):
    """The zoo's detector ``name`` (at input side ``size``: its anchors keep their sizes in pixels)
    or GluonCV's, for ``classes``."""
    if name in list_models():
        return get_model(name, classes=list(classes), **({"base_size": int(size)} if size else {}))
    from .models.dense import gluoncv_detector
    return gluoncv_detector(name, classes)


class _ValTransform:
    """GluonCV's ``SSDDefaultValTransform`` plus the image's own size (to scale boxes back)."""

    def __init__(self, size):
        from gluoncv.data.transforms.presets.ssd import SSDDefaultValTransform
        self._t = SSDDefaultValTransform(size, size)

    def __call__(self, image, label):
        h, w = image.shape[:2]
        if len(label) == 0:   # an image without objects: one padding row (the metric skips label -1)
            label = np.full((1, 6), -1, dtype="float32")
        x, y = self._t(image, label)
        return x, y.astype("float32"), np.array([w, h], dtype="float32")


def _val_batchify():
    from gluoncv.data.batchify import Pad, Stack, Tuple
    return Tuple(Stack(), Pad(pad_val=-1), Stack())


def evaluate_detector(net, val, comm, kind, classes, size, batch, ctx, dtype):
    """The metric of ``net`` on ``val``, each worker taking a shard (rank::size), reduced over the
    workers (``metrics.DetectionMetric.result``)."""
    from .metrics import DetectionMetric
    metric = DetectionMetric(classes, kind=kind, coco=val if kind == "coco" else None)
    idx = list(range(comm.rank, len(val), comm.size))
    loader = gluon.data.DataLoader(Transformed(val, _ValTransform(size)), batch_size=batch, sampler=idx,
                                   batchify_fn=_val_batchify())
    net.set_nms(nms_thresh=0.45, nms_topk=400, post_nms=100)   # also drops the cached training graph
    start = 0
    for x, y, wh in loader:
        ids, scores, boxes = net(x.as_in_context(ctx[0]).astype(dtype, copy=False))
        ids, scores, boxes = (a.astype("float32").as_in_context(mx.cpu()) for a in (ids, scores, boxes))
        boxes = boxes.clip(0, size)   # inside the input, as GluonCV's validation does
        which = idx[start:start + len(x)]
        start += len(x)
        scale = mx.nd.concat(wh, wh, dim=1).expand_dims(1) / float(size)   # back to the image's pixels
        if kind == "coco":
            boxes = boxes * scale
            gt = y[:, :, :4] * scale
        else:
            gt = y[:, :, :4]
        metric.update(boxes, ids, scores, gt, y[:, :, 4:5], y[:, :, 5:6] if y.shape[2] > 5 else None,
                      indices=which)
    net.set_nms(nms_thresh=0.45, nms_topk=400, post_nms=100)
    return metric.result(comm)


def train_detection(config, comm=None, log=print, ctx=None):
    """Run the detection recipe with ``config`` (a ``DetectionConfig`` or a mapping of its keys) on
    ``comm`` (default: the job's communicator). Returns ``{"best_metric", "final_metric",
    "metric", "history", "out", ...}``."""
    if comm is None:
        from ..distributed import get_communicator
        comm = get_communicator()
    cfg = DetectionConfig.from_dict(config).checked(comm, log)
    ctx, dtype, per_worker = devices_and_batch(cfg, comm, ctx)
    train, val, classes = detection_data(cfg, classes=list(cfg.classes) or None)
    check_sizes(train, per_worker, comm.size)
    cfg = cfg.replace(classes=list(classes))
    size, kind, name = cfg.input_size(), cfg.metric_kind(), cfg.model_name()
    cfg.save(comm, model_built=name)
    if comm.rank == 0:
        log(f"{name} on {cfg.dataset} ({len(train)} training, {len(val)} validation images, {len(classes)} classes): "
            f"{comm.size} worker(s) x batch {per_worker}; {cfg.algorithm} / {cfg.compressor}; metric {kind}")
    from .recipe import _seed
    _seed(cfg.seed, -1, 0)
    net = build_detector(name, classes, size)
    prepare_net(net, ctx, dtype, mx.nd.zeros((1, 3, size, size)))
    from .detection_families import family_parts
    parts = family_parts(name, net, size, cfg.augment, ctx, dtype, lambda: build_detector(name, classes, size))
    train_t = Transformed(train, parts.transform)
    sampler, trainer = build_trainer(cfg, net, comm, per_worker, len(train), dtype)
    net.hybridize(static_alloc=True)

    def step(state, batch, step_size):
        pieces = [gluon.utils.split_and_load(b, ctx, even_split=False) for b in batch]
        with autograd.record():
            losses, logged, own_step = parts.losses(net, list(zip(*pieces)), dtype)
        autograd.backward(losses)
        trainer.step(step_size if own_step is None else own_step)
        return {"loss": logged, "seen": len(batch[0])}

    def bn_batches(rank, size_):
        def batches():
            order = list(range(rank, len(train), size_))
            val_t = _ValTransform(size)
            for k in range(0, len(order), per_worker):
                yield mx.nd.stack(*[val_t(*train[i])[0] for i in order[k:k + per_worker]]).astype(dtype, copy=False)
        return batches

    def evaluate(c):
        return evaluate_detector(net, val, c, kind, classes, size, int(cfg.test_batch_size), ctx, dtype)

    return run_dense(cfg, comm, net, trainer, sampler, train_t, per_worker, step, evaluate, "map", log,
                     parts.batchify(), bn_batches,
                     metric_label={"voc07": "VOC07 mAP@0.5", "voc12": "VOC12 mAP@0.5", "coco": "COCO mAP@[.5:.95]"}[kind])
