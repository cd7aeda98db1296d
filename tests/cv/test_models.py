"""Every registered vision model builds and runs a forward pass without pretrained weights."""
import mxnet as mx
import pytest

from gluon_suite.model_zoo import get_model, list_models
from gluon_suite.model_zoo.registry import resolve

CV = [n for n in list_models() if resolve(n).fn.__module__.startswith("gluon_suite.cv")]
DENSE = [n for n in CV if resolve(n).task in ("detection", "segmentation")]
# GluonCV's other classifiers (each at its own smallest input): tests/cv/test_gluoncv_zoo.py
EARLIER = ("resnest14", "resnest26", "resnest50", "resnest101", "resnest200", "resnest269", "resnet18_v1b",
           "resnet34_v1b", "resnet50_v1b", "resnet101_v1b", "cifar_resnet20_v1", "cifar_resnet56_v1")
GLUONCV_TABLE = [n for n in CV if resolve(n).fn.__module__.endswith(".imagenet") and n not in EARLIER]


def test_the_vision_names_are_registered():
    for name in ("resnest14", "resnest26", "resnest50", "resnest101", "resnest200", "resnest269",
                 "resnet18_v1b", "resnet34_v1b", "resnet50_v1b", "resnet101_v1b",
                 "resnest14_cifar", "resnet14_cifar", "resnest14_digits", "cifar_resnet20_v1"):
        assert name in CV


@pytest.mark.parametrize("name", [n for n in CV if n not in DENSE and n not in GLUONCV_TABLE])
def test_builds_and_runs_forward(name):
    kwargs = {"classes": 7}
    channels, size = 3, 64
    if name.endswith("_digits") or name == "digits_cnn":
        channels, size = 1, 16
    elif name.endswith("_cifar") or name.startswith("cifar_"):
        size = 32
    net = get_model(name, **kwargs)
    net.initialize()
    out = net(mx.nd.random.uniform(shape=(2, channels, size, size)))
    assert out.shape == (2, 7)
    assert bool(mx.nd.contrib.isfinite(out).min().asscalar())


@pytest.mark.parametrize("name", DENSE)
def test_detectors_and_segmenters_build_and_run_forward(name):
    """A detector for 3 classes: per-anchor scores of 3 classes + background and 4 box offsets in
    training, at most 100 detections of a known class in inference; a segmenter for 5 classes: a
    score map of the input's size."""
    x = mx.nd.random.uniform(shape=(2, 3, 128, 128))
    if resolve(name).task == "detection":
        net = get_model(name, classes=["a", "b", "c"])
        net.initialize()
        with mx.autograd.train_mode():
            cls, box, anchors = net(x)
        assert cls.shape[0] == box.shape[0] == 2 and cls.shape[2] == 4 and box.shape[2] == 4
        assert anchors.shape == (1, cls.shape[1], 4)
        ids, scores, boxes = net(x)
        assert ids.shape == (2, 100, 1) and boxes.shape == (2, 100, 4)
        assert ids.max().asscalar() <= 2
    else:
        net = get_model(name, classes=5)
        net.initialize()
        out = net(x)
        assert out.shape == (2, 5, 128, 128) and bool(mx.nd.contrib.isfinite(out).min().asscalar())


def test_resnest_has_split_attention_where_resnet_of_equal_depth_has_plain_convs():
    from gluoncv.nn.splat import SplitAttentionConv

    def count(block):
        own = int(isinstance(block, SplitAttentionConv))
        return own + sum(count(c) for c in block._children.values())
    assert count(get_model("resnest14_cifar")) == 4 and count(get_model("resnet14_cifar")) == 0
    assert count(get_model("resnest26_cifar")) == 8
