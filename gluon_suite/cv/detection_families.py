"""What differs between GluonCV's detector families in the detection recipe: the training transform
(which also makes each image's training targets), how a batch is stacked, and the loss of one
device's share of a batch. Everything else (data, the shared loop, evaluation on the decoded,
NMS-filtered detections) is the same for every family.

- ``ssd``: ``SSDDefaultTrainTransform`` (targets from the network's anchors) and ``SSDMultiBoxLoss``
  (hard negatives 3:1, smooth L1 on the boxes), normalised by the batch's positive anchors, so a
  step applies it as it is: ``trainer.step(1)``, as GluonCV's ``train_ssd.py``.
- ``yolo3``: ``YOLO3DefaultTrainTransform`` (targets from the network's anchors, offsets and
  feature maps, read once from a float32 copy of the network on the CPU) and the network's own
  training losses (objectness, centre, scale, class), summed over the images: a step divides by
  the batch, as GluonCV's ``train_yolo3.py``.
- ``center``: ``CenterNetDefaultTrainTransform`` (a class heat map at stride 4 with box sizes and
  centre offsets at the objects' centres) with GluonCV's ``HeatmapFocalLoss`` and two
  ``MaskedL1Loss`` terms weighted 0.1 (sizes) and 1 (offsets), each the mean over the device's
  share: a step divides by the number of shares, as GluonCV's ``train_center_net.py``.

``--augment upright`` (no mirror) exists for SSD only; the other families refuse it in one line.
Faster R-CNN (its proposal sampling and per-image batches) is not trained by the recipe yet.
"""
import mxnet as mx
import numpy as np

from ..utils import UserError

FAMILIES = ("ssd", "yolo3", "center")


def family_of(name):
    """The family of the GluonCV detector ``name`` (``ssd_*``, ``yolo3_*``, ``center_net_*``), or
    a one-line error for one the recipe does not train."""
    if name.startswith("ssd_"):
        return "ssd"
    if name.startswith("yolo3_"):
        return "yolo3"
    if name.startswith("center_net_"):
        return "center"
    raise UserError(f"detector {name}: the detection recipe trains GluonCV's SSD (ssd_*), YOLOv3 (yolo3_*) and "
                    "CenterNet (center_net_*) families; Faster R-CNN and others are not supported yet")


def upright_ssd_transform(size, anchors):
    """GluonCV's ``SSDDefaultTrainTransform`` with the same steps in the same order (colour
    distortion, expansion on half of the images, constrained random crop, resize with a random
    interpolation, targets from the anchors) and no horizontal flip (``--augment upright``)."""
    from gluoncv.data.transforms import bbox as tbbox
    from gluoncv.data.transforms import experimental
    from gluoncv.data.transforms import image as timage
    from gluoncv.data.transforms.presets.ssd import SSDDefaultTrainTransform

    class Upright(SSDDefaultTrainTransform):
        def __call__(self, src, label):
            img = experimental.image.random_color_distort(src)
            if np.random.uniform(0, 1) > 0.5:
                img, expand = timage.random_expand(img, fill=[m * 255 for m in self._mean])
                bbox = tbbox.translate(label, x_offset=expand[0], y_offset=expand[1])
            else:
                bbox = label
            h, w, _ = img.shape
            bbox, (x0, y0, cw, ch) = experimental.bbox.random_crop_with_constraints(bbox, (w, h))
            img = mx.image.fixed_crop(img, x0, y0, cw, ch)
            img = timage.imresize(img, self._width, self._height, interp=np.random.randint(0, 5))
            bbox = tbbox.resize(bbox, (cw, ch), (self._width, self._height))
            img = mx.nd.image.normalize(mx.nd.image.to_tensor(img), mean=self._mean, std=self._std)
            cls_t, box_t, _ = self._target_generator(self._anchors, None, mx.nd.array(bbox[np.newaxis, :, :4]),
                                                     mx.nd.array(bbox[np.newaxis, :, 4:5]))
            return img, cls_t[0], box_t[0]
    return Upright(size, size, anchors)


class SSDParts:
    """The SSD family (see the module docstring)."""
    outputs = 3   # image, class targets, box targets

    def __init__(self, net, size, augment, ctx, dtype, build_copy):
        from gluoncv.data.transforms.presets.ssd import SSDDefaultTrainTransform
        from gluoncv.loss import SSDMultiBoxLoss
        from mxnet import autograd
        with autograd.train_mode():
            _, _, anchors = net(mx.nd.zeros((1, 3, size, size), ctx=ctx[0]).astype(dtype, copy=False))
        anchors = anchors.astype("float32").as_in_context(mx.cpu())
        if augment == "upright":
            self.transform = upright_ssd_transform(size, anchors)
        else:
            self.transform = SSDDefaultTrainTransform(size, size, anchors)
        self._loss = SSDMultiBoxLoss()

    def batchify(self):
        from gluoncv.data.batchify import Stack, Tuple
        return Tuple(Stack(), Stack(), Stack())

    def losses(self, net, shares, dtype):
        """(per-share losses to back-propagate, the loss to log summed over the images, step size)."""
        cls_preds, box_preds = [], []
        for x, _, _ in shares:
            c, b, _ = net(x.astype(dtype, copy=False))
            cls_preds.append(c.astype("float32", copy=False))
            box_preds.append(b.astype("float32", copy=False))
        sum_loss, _, _ = self._loss(cls_preds, box_preds, [s[1] for s in shares], [s[2] for s in shares])
        images = sum(len(s[0]) for s in shares)
        return sum_loss, sum(l.sum().as_in_context(mx.cpu()) for l in sum_loss) * images, 1


class YOLO3Parts:
    """The YOLOv3 family (see the module docstring)."""
    outputs = 7   # image, objectness, centre, scale, weights, class targets, ground-truth boxes

    def __init__(self, net, size, augment, ctx, dtype, build_copy):
        from gluoncv.data.transforms.presets.yolo import YOLO3DefaultTrainTransform
        if augment == "upright":
            raise UserError("--augment upright is available for SSD detectors only; use --augment gluoncv with "
                            "yolo3_* models")
        copy = build_copy()   # a float32 CPU copy: the transform reads the anchors from one forward pass
        copy.initialize(ctx=mx.cpu())
        self.transform = YOLO3DefaultTrainTransform(size, size, copy)

    def batchify(self):
        from gluoncv.data.batchify import Pad, Stack, Tuple
        return Tuple(*([Stack() for _ in range(6)] + [Pad(axis=0, pad_val=-1)]))

    def losses(self, net, shares, dtype):
        out = []
        for x, *targets, gt in shares:
            obj, center, scale, cls = net(x.astype(dtype, copy=False), gt.astype(dtype, copy=False),
                                          *[t.astype(dtype, copy=False) for t in targets])
            out.append((obj + center + scale + cls).astype("float32", copy=False))
        return out, sum(l.sum().as_in_context(mx.cpu()) for l in out), None


class CenterNetParts:
    """The CenterNet family (see the module docstring)."""
    outputs = 6   # image, heat map, sizes, size mask, offsets, offset mask

    def __init__(self, net, size, augment, ctx, dtype, build_copy):
        from gluoncv.data.transforms.presets.center_net import CenterNetDefaultTrainTransform
        from gluoncv.loss import HeatmapFocalLoss, MaskedL1Loss
        if augment == "upright":
            raise UserError("--augment upright is available for SSD detectors only; use --augment gluoncv with "
                            "center_net_* models")
        self.transform = CenterNetDefaultTrainTransform(size, size, num_class=len(net.classes), scale_factor=4)
        self._heat = HeatmapFocalLoss(from_logits=True)
        self._wh, self._reg = MaskedL1Loss(weight=0.1), MaskedL1Loss(weight=1.0)

    def batchify(self):
        from gluoncv.data.batchify import Stack, Tuple
        return Tuple(*[Stack() for _ in range(6)])

    def losses(self, net, shares, dtype):
        out = []
        for x, heat, wh, wh_mask, reg, reg_mask in shares:
            heat_p, wh_p, reg_p = (o.astype("float32", copy=False) for o in net(x.astype(dtype, copy=False)))
            out.append(self._heat(heat_p, heat) + self._wh(wh_p, wh, wh_mask) + self._reg(reg_p, reg, reg_mask))
        images = sum(len(s[0]) for s in shares)
        return out, sum(l.sum().as_in_context(mx.cpu()) for l in out) / len(out) * images, len(out)


PARTS = {"ssd": SSDParts, "yolo3": YOLO3Parts, "center": CenterNetParts}


def family_parts(name, net, size, augment, ctx, dtype, build_copy):
    """The training parts of detector ``name``'s family for ``net`` at input side ``size``;
    ``build_copy()`` builds an uninitialised copy of the network (YOLOv3 reads its anchors from
    one)."""
    return PARTS[family_of(name)](net, size, augment, ctx, dtype, build_copy)


__all__ = ["FAMILIES", "family_of", "family_parts", "SSDParts", "YOLO3Parts", "CenterNetParts",
           "upright_ssd_transform"]
