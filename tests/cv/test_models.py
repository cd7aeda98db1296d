"""Every registered vision model builds and runs a forward pass without pretrained weights."""
import mxnet as mx
import pytest

from gluon_suite.model_zoo import get_model, list_models
from gluon_suite.model_zoo.registry import resolve

CV = [n for n in list_models() if resolve(n).fn.__module__.startswith("gluon_suite.cv")]


def test_the_vision_names_are_registered():
    for name in ("resnest14", "resnest26", "resnest50", "resnest101", "resnest200", "resnest269",
                 "resnet18_v1b", "resnet34_v1b", "resnet50_v1b", "resnet101_v1b",
                 "resnest14_cifar", "resnet14_cifar", "resnest14_digits", "cifar_resnet20_v1"):
        assert name in CV


@pytest.mark.parametrize("name", CV)
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


def test_resnest_has_split_attention_where_resnet_of_equal_depth_has_plain_convs():
    from gluoncv.nn.splat import SplitAttentionConv

    def count(block):
        own = int(isinstance(block, SplitAttentionConv))
        return own + sum(count(c) for c in block._children.values())
    assert count(get_model("resnest14_cifar")) == 4 and count(get_model("resnet14_cifar")) == 0
    assert count(get_model("resnest26_cifar")) == 8
