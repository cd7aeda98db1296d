"""Detectors and segmenters: GluonCV's SSD detector and FCN-style segmenter on small backbones
that train on two CPU cores in minutes (registered in the zoo), and GluonCV's own detectors and
segmenters by name for a class list of one's own.

The small models take GluonCV's ResNet-18 v1b or ResNeSt-14 (both with the same stem and four
``layer`` stages), so the two backbones can be compared at equal structure (docs/cv.md, "the
downstream comparison"):

- ``ssd_128_resnet18_canvas`` / ``ssd_128_resnest14_canvas``: GluonCV's ``SSD`` head over the
  backbone's stages 2-4 (strides 8, 16, 32) and one extra stride-64 layer, anchors for objects of
  18-140 pixels at a 128-pixel input (the embedded digit canvases' 20-56 pixel digits).
- ``fpn_resnet18_canvas`` / ``fpn_resnest14_canvas``: a light semantic FPN (``SmallFPN``): the
  backbone's four stages merged top-down at stride 4 and a convolutional head, its scores resized
  bilinearly to the input (thin structures such as a digit's strokes survive at stride 4).

:func:`gluoncv_detector` and :func:`gluoncv_segmenter` build GluonCV's models by their names for any
classes (``ssd_512_resnet50_v1_custom``, ``yolo3_mobilenet1.0_custom``, ``center_net_resnet18_v1b_voc``
with its classes reset; FCN, PSPNet and DeepLabV3 over any of GluonCV's segmentation backbones),
without downloading anything.
"""
from mxnet.gluon import nn

from ...model_zoo import register_model
from ...utils import UserError

DETECTION_FAMILIES = ("ssd", "yolo3", "center_net")   # the detector families the detection recipe trains
SEGMENTATION_FAMILIES = {"fcn": "FCN", "psp": "PSPNet", "deeplab": "DeepLabV3"}
SEGMENTATION_BACKBONES = ("resnet50", "resnet101", "resnet152", "resnest50", "resnest101", "resnest200", "resnest269")


def _backbone(name):
    from gluoncv import model_zoo as gz
    return gz.get_model(name, pretrained=False)


class StageFeatures(nn.HybridBlock):
    """The outputs of a ResNet-style backbone's stages 2, 3 and 4 (strides 8, 16 and 32) and of
    ``len(extra)`` more stride-2 layers (1x1 conv to half the width, 3x3 stride-2 conv, BatchNorm,
    ReLU), in that order: the multi-scale features an SSD head predicts from."""

    def __init__(self, backbone, extra=(128,), **kwargs):
        super().__init__(**kwargs)
        net = _backbone(backbone)
        self.conv1, self.bn1, self.relu, self.maxpool = net.conv1, net.bn1, net.relu, net.maxpool
        self.layer1, self.layer2, self.layer3, self.layer4 = net.layer1, net.layer2, net.layer3, net.layer4
        with self.name_scope():
            self.extra = nn.HybridSequential()
            for width in extra:
                block = nn.HybridSequential()
                block.add(nn.Conv2D(width // 2, 1, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                          nn.Conv2D(width, 3, strides=2, padding=1, use_bias=False), nn.BatchNorm(),
                          nn.Activation("relu"))
                self.extra.add(block)

    def hybrid_forward(self, F, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        c2 = self.layer2(self.layer1(x))
        c3 = self.layer3(c2)
        c4 = self.layer4(c3)
        outs, y = [c2, c3, c4], c4
        for block in self.extra:
            y = block(y)
            outs.append(y)
        return outs


def small_ssd(backbone, classes, base_size=128, **kwargs):
    """GluonCV's SSD over :class:`StageFeatures` of ``backbone`` for ``classes`` (names)."""
    from gluoncv.model_zoo.ssd.ssd import SSD
    return SSD(None, base_size, features=lambda **_: StageFeatures(backbone), num_filters=None,
               sizes=[18, 32, 56, 96, 140], ratios=[[1, 2, 0.5, 1 / 3.0]] * 4, steps=[8, 16, 32, 64],
               classes=list(classes), pretrained=False, anchor_alloc_size=max(32, base_size // 4), **kwargs)


def _canvas_classes(classes):
    return [str(c) for c in classes] if not isinstance(classes, int) else [str(i) for i in range(classes)]


@register_model("ssd_128_resnet18_canvas", task="detection")
def ssd_128_resnet18_canvas(classes=tuple(str(d) for d in range(10)), **kwargs):
    """SSD at a 128-pixel input on GluonCV's ResNet-18 v1b."""
    return small_ssd("resnet18_v1b", _canvas_classes(classes), **kwargs)


@register_model("ssd_128_resnest14_canvas", task="detection")
def ssd_128_resnest14_canvas(classes=tuple(str(d) for d in range(10)), **kwargs):
    """SSD at a 128-pixel input on GluonCV's ResNeSt-14 (split attention, radix 2)."""
    return small_ssd("resnest14", _canvas_classes(classes), **kwargs)


class SmallFPN(nn.HybridBlock):
    """A light semantic FPN: the backbone's stages 1-4 (strides 4 to 32), each projected to
    ``width`` channels by a 1x1 convolution and added top-down (the coarser map upsampled by 2), a
    3x3 convolution with BatchNorm and ReLU on the stride-4 sum, dropout and a 1x1 convolution to
    the classes, plus a constant per-class offset (``score_offset``, zero unless set); the scores
    are resized bilinearly to the input's height and width. The stride-4
    path keeps thin structures (a digit's strokes) that a stride-8 FCN head blurs, at a fraction of a
    dilated backbone's cost."""

    def __init__(self, backbone, nclass, width=64, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        net = _backbone(backbone)
        self.nclass = nclass
        self.conv1, self.bn1, self.relu, self.maxpool = net.conv1, net.bn1, net.relu, net.maxpool
        self.layer1, self.layer2, self.layer3, self.layer4 = net.layer1, net.layer2, net.layer3, net.layer4
        with self.name_scope():
            self.lateral = nn.HybridSequential()
            for _ in range(4):
                self.lateral.add(nn.Conv2D(width, 1))
            self.head = nn.HybridSequential()
            self.head.add(nn.Conv2D(width, 3, padding=1, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                          nn.Dropout(dropout), nn.Conv2D(nclass, 1))
            # a constant added to each class's score (not trained): 0, or -log(w_c) after training with
            # class weights w (the segmentation recipe's --prior-correction), so the scores are those of
            # the unweighted objective
            self.score_offset = self.params.get("score_offset", shape=(nclass,), init="zeros", grad_req="null",
                                                differentiable=False)

    def hybrid_forward(self, F, x, score_offset):
        c1 = self.layer1(self.maxpool(self.relu(self.bn1(self.conv1(x)))))
        c2 = self.layer2(c1)
        c3 = self.layer3(c2)
        c4 = self.layer4(c3)
        y = self.lateral[3](c4)
        for lateral, c in ((self.lateral[2], c3), (self.lateral[1], c2), (self.lateral[0], c1)):
            y = F.UpSampling(y, scale=2, sample_type="nearest") + lateral(c)
        scores = F.broadcast_add(self.head(y), F.reshape(score_offset, (1, -1, 1, 1)))
        return F.contrib.BilinearResize2D(scores, like=x, mode="like")


@register_model("fpn_resnet18_canvas", task="segmentation")
def fpn_resnet18_canvas(classes=11, **kwargs):
    """Semantic FPN on GluonCV's ResNet-18 v1b (classes: background included)."""
    return SmallFPN("resnet18_v1b", int(classes), **kwargs)


@register_model("fpn_resnest14_canvas", task="segmentation")
def fpn_resnest14_canvas(classes=11, **kwargs):
    """Semantic FPN on GluonCV's ResNeSt-14 (classes: background included)."""
    return SmallFPN("resnest14", int(classes), **kwargs)


def gluoncv_detector(name, classes):
    """GluonCV's detector ``name`` for ``classes`` (names), without pretrained weights: a
    ``*_custom`` name is built for the classes, a data set's name (``*_voc``, ``*_coco``) has its
    classes reset. Only the families in ``DETECTION_FAMILIES`` train in the recipe."""
    from gluoncv import model_zoo as gz
    if not name.startswith(tuple(f + "_" for f in DETECTION_FAMILIES)):
        raise UserError(f"detector {name}: the detection recipe trains GluonCV's SSD (ssd_*), YOLOv3 (yolo3_*) and "
                        "CenterNet (center_net_*) families; Faster R-CNN and others are not supported yet")
    if name not in gz.get_model_list():
        raise UserError(f"{name} is not one of GluonCV's models; see gluoncv.model_zoo.get_model_list() for the "
                        "ssd_*, yolo3_* and center_net_* names, or use ssd_128_resnet18_canvas")
    if name.endswith("_custom"):
        return gz.get_model(name, classes=list(classes), pretrained_base=False, transfer=None)
    net = gz.get_model(name, pretrained=False, pretrained_base=False)
    net.reset_class(list(classes))
    return net


def gluoncv_segmenter(model, backbone, nclass, crop_size=480, aux=False):
    """GluonCV's segmentation model ``model`` (fcn, psp or deeplab) over ``backbone`` (one of
    GluonCV's segmentation backbones with a 2048-channel last stage: resnet50/101/152,
    resnest50/101/200/269) for ``nclass`` classes, without pretrained weights."""
    import gluoncv.model_zoo as gz
    if model not in SEGMENTATION_FAMILIES:
        raise UserError(f"segmentation model {model}: choose one of {', '.join(SEGMENTATION_FAMILIES)} (GluonCV's "
                        "--model) with --backbone, or a zoo name such as fpn_resnet18_canvas")
    cls = getattr(gz, SEGMENTATION_FAMILIES[model])
    if backbone not in SEGMENTATION_BACKBONES:
        raise UserError(f"backbone {backbone} is not one of GluonCV's segmentation backbones for {model} "
                        f"({', '.join(SEGMENTATION_BACKBONES)}); for a small model use fpn_resnet18_canvas")
    return cls(nclass, backbone=backbone, aux=aux, pretrained_base=False, crop_size=crop_size, base_size=crop_size)


def scores_of(out):
    """A segmenter's class scores: GluonCV's models return a tuple (main output first)."""
    return out[0] if isinstance(out, (tuple, list)) else out


__all__ = ["StageFeatures", "small_ssd", "SmallFPN", "gluoncv_detector", "gluoncv_segmenter", "scores_of",
           "DETECTION_FAMILIES", "SEGMENTATION_FAMILIES"]
