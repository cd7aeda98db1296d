"""The semantic-segmentation recipe behind ``scripts/cv/train_segmentation.py``: the zoo's small semantic FPNs
(``fpn_resnet18_canvas``, ``fpn_resnest14_canvas``) or GluonCV's FCN, PSPNet and DeepLabV3 over any of
its segmentation backbones (GluonCV's ``--model fcn --backbone resnet50``), trained on the shared
loop (``dense_common``) and evaluated with mIoU and pixel accuracy (``metrics.SegmentationMetric``:
one confusion matrix per worker, summed over the workers).

Data (``--dataset``): ``canvases`` (the embedded digit canvases: background and ten digit classes),
``voc`` (a Pascal VOC folder: JPEGImages, SegmentationClass, ImageSets/Segmentation) or ``folders``
(``DATA_DIR/images`` and ``DATA_DIR/masks``, one PNG mask per image with the same stem). Training, as
GluonCV's segmentation ``train.py``: GluonCV's joint image/mask augmentation (random flip, random
rescale of the long side to 0.5-2x ``--base-size``, padding and a random ``--crop-size`` crop, random
blur), and a softmax cross-entropy that ignores the label 255, averaged over each image's valid
pixels (``pixel_loss``; GluonCV's auxiliary head adds its own, weighted by ``--aux-weight``); each
step applies the loss summed over the batch, divided by the global step's batch share.
Evaluation: the image resized (short side to ``--crop-size``) and centre-cropped, GluonCV's
validation transform.
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
from ..utils.validate import float_range, output_dir, positive_int
from .dense_common import (SHARED_GROUPS, DenseConfig, Transformed, build_trainer, check_sizes, devices_and_batch,
                           prepare_net, run_dense, to_tensor)

SEGMENTATION_DATASETS = ("canvases", "voc", "folders")


@dataclasses.dataclass
class SegmentationConfig(DenseConfig):
    """``train_segmentation``'s configuration: the keys are the script's flags with ``_`` for ``-``."""
    SCRIPT: ClassVar[str] = "scripts/cv/train_segmentation.py"
    RESUME_MODEL: ClassVar[bool] = False
    FLAG_GROUPS: ClassVar[dict] = {
        "model and data": ("model", "backbone", "aux", "aux_weight", "dataset", "data_dir", "num_classes",
                           "train_split", "val_split", "canvases", "val_canvases", "canvas_size", "canvas_seed", "base_size",
                           "crop_size", "augment", "class_weight", "prior_correction"),
        **SHARED_GROUPS,
    }
    out: str = option("runs/segmentation", output_dir, aliases=("--checkname",), help="run folder: log.jsonl, summary.csv, "
                      "checkpoints, config.json")
    model: str = option("fpn_resnet18_canvas", help="a zoo segmenter (fpn_resnet18_canvas, fpn_resnest14_canvas) or "
                        "GluonCV's fcn, psp or deeplab with --backbone")
    backbone: str = option("resnet50", help="GluonCV's segmentation backbone for --model fcn/psp/deeplab (resnet50, "
                           "resnet101, resnet152, resnest50, resnest101, ...)")
    aux: bool = option(False, help="GluonCV's auxiliary FCN head on stage 3 (fcn/psp/deeplab)")
    aux_weight: float = option(0.5, float_range(0, 10, what="a weight"), help="weight of the auxiliary loss")
    dataset: str = option("canvases", choices=SEGMENTATION_DATASETS, help="canvases (embedded), voc or folders")
    num_classes: int = option(None, positive_int, help="classes, background included (voc: 21; canvases: 11)")
    base_size: int = option(None, positive_int, help="GluonCV's --base-size for the random rescale (default: "
                            "--crop-size)")
    crop_size: int = option(None, positive_int, help="training crop and validation side (default: the canvas size "
                            "for canvases, 480 otherwise)")
    augment: str = option("gluoncv", choices=("gluoncv", "upright"), help="training augmentation: gluoncv "
                          "(GluonCV's: random mirror, rescale to 0.5-2x --base-size, crop, blur) or upright (the same "
                          "without the mirror, for classes that a mirror changes, such as digits)")
    class_weight: str = option("none", choices=("none", "median-frequency"), help="per-class loss weights: none "
                               "(GluonCV's plain pixel average) or median-frequency (each class weighted by the median "
                               "class frequency over its own, counted on the training masks; the loss is the weighted "
                               "mean, so rare classes such as thin foreground are not drowned by the background)")
    prior_correction: bool = option(True, negative="--no-prior-correction", help="with --class-weight: add "
                                    "-log(w) to each class's score (kept in the zoo models' score_offset), so the "
                                    "model predicts as if trained without the weights (logit adjustment)",
                                    negative_help="keep the weighted training's scores")
    lr_mode: str = option("cosine", choices=("step", "cosine"), help="the rate's decay after the warm-up (GluonCV's "
                          "segmentation uses poly; cosine is the nearest schedule here)")

    def check(self, comm):
        super().check(comm)
        if self.model not in list_models():
            from .models.dense import SEGMENTATION_FAMILIES
            if self.model not in SEGMENTATION_FAMILIES:
                raise UserError(f"segmentation model {self.model}: give a zoo segmenter (fpn_resnet18_canvas, "
                                f"fpn_resnest14_canvas) or one of GluonCV's {', '.join(SEGMENTATION_FAMILIES)} with "
                                "--backbone")
        self.check_sizes()

    def check_sizes(self):
        crop = self.crop()   # the input side of training and evaluation
        step = 32 if self.model in list_models() else 8
        if crop % step:
            raise UserError(f"crop size {crop} (--crop-size, or --canvas-size for the canvases): {self.model} needs a "
                            f"multiple of {step} (e.g. {max(step, crop // step * step)})")
        if self.dataset == "canvases" and self.num_classes not in (None, 11):
            raise UserError(f"--num-classes {self.num_classes}: the canvases have 11 classes (background and the ten "
                            "digits); drop --num-classes")

    def classes(self):
        if self.num_classes:
            return int(self.num_classes)
        return 11 if self.dataset == "canvases" else 21 if self.dataset == "voc" else None

    def crop(self):
        return int(self.crop_size or (self.canvas_size if self.dataset == "canvases" else 480))


def segmentation_data(cfg, train=True):
    """(train, val, number of classes) of ``cfg``'s data set; with ``train=False`` only the
    validation split is read (train is None)."""
    import os
    n = cfg.classes()
    if cfg.dataset == "canvases":
        from .data.canvases import canvas_dataset

        def read(split, count):
            return canvas_dataset(split, count, cfg.canvas_size, cfg.canvas_seed).segmentation
        n = n or 11
    elif cfg.dataset == "voc":
        from .data.segmentation import VOCSegmentationSet

        def read(split, _):
            return VOCSegmentationSet(cfg.data_dir, split, num_classes=n)
    else:
        from .data.segmentation import FolderSegmentationSet
        if n is None:
            raise UserError("--dataset folders: give --num-classes (background included)")

        def read(split, _):
            return FolderSegmentationSet(os.path.join(cfg.data_dir, split, "images"),
                                         os.path.join(cfg.data_dir, split, "masks"), n)
    tr = read(cfg.train_split if cfg.dataset != "canvases" else "train", cfg.canvases) if train else None
    val = read(cfg.val_split if cfg.dataset != "canvases" else "val", cfg.val_canvases)
    return tr, val, int(n)


def build_segmenter(cfg, nclass):
    """The zoo's segmenter ``cfg.model`` or GluonCV's ``--model``/``--backbone``."""
    if cfg.model in list_models():
        return get_model(cfg.model, classes=nclass)
    from .models.dense import gluoncv_segmenter
    return gluoncv_segmenter(cfg.model, cfg.backbone, nclass, crop_size=cfg.crop(), aux=bool(cfg.aux))


class _Augment:
    """GluonCV's joint image/mask transforms of its segmentation data sets (``SegmentationDataset``'s
    ``_sync_transform`` for training, ``_val_sync_transform`` for evaluation) on our items, then
    GluonCV's input normalisation. ``mirror=False`` (``--augment upright``) trains with the same steps
    in the same order without the random mirror (``_upright``)."""

    def __init__(self, base_size, crop_size, train, mirror=True):
        import os
        from gluoncv.data.segbase import SegmentationDataset
        self._g = SegmentationDataset(os.curdir, "train" if train else "val", None, None, base_size=base_size,
                                      crop_size=crop_size)
        self._train, self._mirror = train, mirror

    def __call__(self, image, mask):
        from PIL import Image
        img = Image.fromarray(image.asnumpy() if isinstance(image, mx.nd.NDArray) else np.asarray(image))
        m = mask.asnumpy() if isinstance(mask, mx.nd.NDArray) else np.asarray(mask)
        msk = Image.fromarray(m.astype(np.uint8))
        if not self._train:
            img, msk = self._g._val_sync_transform(img, msk)
        elif self._mirror:
            img, msk = self._g._sync_transform(img, msk)
        else:
            img, msk = self._upright(img, msk)
        return to_tensor(img), msk.astype("float32")

    def _upright(self, img, msk):
        """GluonCV's training transform without its mirror: the long side rescaled to a random
        0.5-2x of the base size, zero padding up to the crop, a random crop, a Gaussian blur of a
        random radius below 1 on half of the images."""
        import random
        from PIL import Image, ImageFilter, ImageOps
        crop, base = self._g.crop_size, self._g.base_size
        long_side = random.randint(int(base * 0.5), int(base * 2.0))
        w, h = img.size
        ow, oh = (int(w * long_side / h + 0.5), long_side) if h > w else (long_side, int(h * long_side / w + 0.5))
        img, msk = img.resize((ow, oh), Image.BILINEAR), msk.resize((ow, oh), Image.NEAREST)
        if min(ow, oh) < crop:
            pad = (0, 0, max(crop - ow, 0), max(crop - oh, 0))
            img, msk = ImageOps.expand(img, border=pad, fill=0), ImageOps.expand(msk, border=pad, fill=0)
        w, h = img.size
        x1, y1 = random.randint(0, w - crop), random.randint(0, h - crop)
        img, msk = img.crop((x1, y1, x1 + crop, y1 + crop)), msk.crop((x1, y1, x1 + crop, y1 + crop))
        if random.random() < 0.5:
            img = img.filter(ImageFilter.GaussianBlur(radius=random.random()))
        return self._g._img_transform(img), self._g._mask_transform(msk)


def pixel_loss(scores, target, ignore=255, weights=None):
    """Per image: the softmax cross-entropy of ``scores`` (B, C, H, W) against ``target`` (B, H,
    W) over the pixels whose label is not ``ignore``: their plain mean, or with ``weights`` (C,)
    their mean weighted by the weight of each pixel's label (sum of w * nll over sum of w); 0 for
    an image without a valid pixel."""
    F = mx.nd
    valid = (target != ignore).astype(scores.dtype)
    label = F.where(valid > 0, target, F.zeros_like(target))
    nll = -F.pick(F.log_softmax(scores, axis=1), label, axis=1)
    w = valid if weights is None else valid * F.take(weights.astype(scores.dtype, copy=False), label)
    return (nll * w).sum(axis=(1, 2)) / F.maximum(w.sum(axis=(1, 2)), 1e-12 if weights is not None else 1)


def median_frequency_weights(masks, nclass, ignore=255):
    """Median-frequency balancing (Eigen and Fergus, 2015; SegNet's class weights) over ``masks``
    (an iterable of HxW label arrays): a class's frequency is its pixel count over the pixel count
    of the masks it appears in, its weight the median of the frequencies (of the classes present)
    over its own; a class absent from every mask weighs 1. Read once before training."""
    counts = np.zeros(nclass, dtype=np.float64)
    seen = np.zeros(nclass, dtype=np.float64)
    for m in masks:
        m = np.asarray(m.asnumpy() if isinstance(m, mx.nd.NDArray) else m).astype(np.int64).ravel()
        m = m[m != ignore]
        c = np.bincount(m, minlength=nclass)[:nclass]
        counts += c
        seen[c > 0] += m.size
    present = counts > 0
    if not present.any():
        return np.ones(nclass)
    freq = np.where(present, counts / np.maximum(seen, 1), 0.0)
    return np.where(present, np.median(freq[present]) / np.where(present, freq, 1.0), 1.0)


def class_weighting(cfg, net, train, nclass, ctx, comm, log):
    """``(weights, offset, inside)`` of ``--class-weight`` (None, None, False without weights): the
    class weights (NDArray), the prior correction's offset -log(w) (``--prior-correction``; None
    without it) and whether the network adds it itself (the zoo's ``SmallFPN`` has a constant
    ``score_offset``, set here, so its checkpoints give corrected scores; for GluonCV's models the
    evaluation adds it)."""
    if cfg.class_weight != "median-frequency":
        return None, None, False
    w = median_frequency_weights((train[i][1] for i in range(len(train))), nclass)
    if comm.rank == 0:
        log("class weights (median frequency): " + " ".join(f"{v:.3g}" for v in w))
    if not cfg.prior_correction:
        return mx.nd.array(w, ctx=ctx[0]), None, False
    offset = mx.nd.array(-np.log(w), ctx=ctx[0])
    param = getattr(net, "score_offset", None)
    if param is not None:
        param.set_data(offset)
    return mx.nd.array(w, ctx=ctx[0]), offset, param is not None


def evaluate_segmenter(net, val, comm, nclass, crop, batch, ctx, dtype, offset=None):
    """mIoU and pixel accuracy of ``net`` on ``val``, each worker taking a shard (rank::size), the
    confusion matrices summed over the workers (``metrics.SegmentationMetric``)."""
    from .metrics import SegmentationMetric
    from .models.dense import scores_of
    metric = SegmentationMetric(nclass, ignore_label=255)
    idx = list(range(comm.rank, len(val), comm.size))
    loader = gluon.data.DataLoader(Transformed(val, _Augment(crop, crop, train=False)), batch_size=batch, sampler=idx)
    for x, y in loader:
        scores = scores_of(net(x.as_in_context(ctx[0]).astype(dtype, copy=False)))
        if offset is not None:   # the prior correction of a network without its own offset
            scores = mx.nd.broadcast_add(scores.astype("float32", copy=False),
                                         offset.as_in_context(scores.context).reshape((1, -1, 1, 1)))
        metric.update(y.as_in_context(scores.context), scores.astype("float32", copy=False))
    return metric.result(comm)


def train_segmentation(config, comm=None, log=print, ctx=None):
    """Run the segmentation recipe with ``config`` (a ``SegmentationConfig`` or a mapping of its keys)
    on ``comm``. Returns ``{"best_metric", "final_metric", "metric": "miou", "history", ...}``."""
    if comm is None:
        from ..distributed import get_communicator
        comm = get_communicator()
    cfg = SegmentationConfig.from_dict(config).checked(comm, log)
    ctx, dtype, per_worker = devices_and_batch(cfg, comm, ctx)
    train, val, nclass = segmentation_data(cfg)
    check_sizes(train, per_worker, comm.size)
    crop = cfg.crop()
    base = int(cfg.base_size or crop)
    cfg.save(comm, classes_count=nclass)
    if comm.rank == 0:
        name = cfg.model if cfg.model in list_models() else f"{cfg.model} on {cfg.backbone}"
        log(f"{name} on {cfg.dataset} ({len(train)} training, {len(val)} validation images, {nclass} classes): "
            f"{comm.size} worker(s) x batch {per_worker}; {cfg.algorithm} / {cfg.compressor}")
    from .recipe import _seed
    _seed(cfg.seed, -1, 0)
    net = build_segmenter(cfg, nclass)
    prepare_net(net, ctx, dtype, mx.nd.zeros((1, 3, crop, crop)))
    class_w, offset, inside = class_weighting(cfg, net, train, nclass, ctx, comm, log)
    sampler, trainer = build_trainer(cfg, net, comm, per_worker, len(train), dtype)
    net.hybridize(static_alloc=True)
    aux = bool(cfg.aux) and cfg.model not in list_models()
    weights = (1.0, float(cfg.aux_weight)) if aux else (1.0,)

    def criterion(*outs_and_target):
        *outs, target = outs_and_target
        cw = None if class_w is None else class_w.as_in_context(target.context)
        if inside:   # the network adds the offset: the loss is the weighted one on the scores without it
            off = offset.as_in_context(target.context).reshape((1, -1, 1, 1))
            outs = [mx.nd.broadcast_sub(o, off) for o in outs]
        return sum(w * pixel_loss(o, target, weights=cw) for w, o in zip(weights, outs))

    train_t = Transformed(train, _Augment(base, crop, train=True, mirror=cfg.augment == "gluoncv"))

    def step(state, batch, step_size):
        x, y = batch
        xs = gluon.utils.split_and_load(x, ctx, even_split=False)
        ys = gluon.utils.split_and_load(y, ctx, even_split=False)
        with autograd.record():
            losses = []
            for a, t in zip(xs, ys):
                out = net(a.astype(dtype, copy=False))
                outs = [o.astype("float32", copy=False) for o in (out if isinstance(out, (tuple, list)) else [out])]
                losses.append(criterion(*(outs[:2] if aux else outs[:1]), t))
        autograd.backward(losses)
        trainer.step(step_size)
        cpu = mx.cpu()
        return {"loss": sum(l.sum().as_in_context(cpu) for l in losses), "seen": len(x)}

    def bn_batches(rank, size_):
        def batches():
            order = list(range(rank, len(train), size_))
            val_t = _Augment(crop, crop, train=False)
            for k in range(0, len(order), per_worker):
                yield mx.nd.stack(*[val_t(*train[i])[0] for i in order[k:k + per_worker]]).astype(dtype, copy=False)
        return batches

    def evaluate(c):
        return evaluate_segmenter(net, val, c, nclass, crop, int(cfg.test_batch_size), ctx, dtype,
                                  offset=None if inside else offset)

    return run_dense(cfg, comm, net, trainer, sampler, train_t, per_worker, step, evaluate, "miou", log, None,
                     bn_batches, metric_label="mIoU")
