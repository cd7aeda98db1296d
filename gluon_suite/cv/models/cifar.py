"""CIFAR-style networks for small inputs (32x32 and below), built from GluonCV's blocks.

``CifarResNeSt`` stacks GluonCV's ResNeSt ``Bottleneck`` (Split-Attention conv, radix 2, avd
pooling, avg-down shortcuts) behind a 3x3 stride-1 stem with no max-pool, over four stages of
base width ``width`` (planes width, 2w, 4w, 8w; x4 expansion). With ``use_splat=False`` the same
layout is a ResNet-D bottleneck network of equal depth, the fair baseline for ResNeSt.
"""
from gluoncv.model_zoo.resnest import Bottleneck
from mxnet.gluon import nn
from mxnet.gluon.block import HybridBlock

from ...model_zoo import register_model


class CifarResNeSt(HybridBlock):
    """ResNeSt/ResNet for small images: ``layers`` bottlenecks per stage (4 stages, strides
    1, 2, 2, 2), ``width`` base planes, ``classes`` outputs, ``in_channels`` image channels (0:
    inferred). ``last_gamma`` zero-initialises the last BatchNorm of every block."""

    def __init__(self, layers, classes=10, width=16, in_channels=0, radix=2, use_splat=True,
                 last_gamma=False, final_drop=0.0, **kwargs):
        super().__init__(**kwargs)
        stem = width * 2
        with self.name_scope():
            self.stem = nn.HybridSequential(prefix="stem_")
            self.stem.add(nn.Conv2D(stem, 3, 1, 1, use_bias=False, in_channels=in_channels),
                          nn.BatchNorm(in_channels=stem), nn.Activation("relu"))
            self.stages = nn.HybridSequential(prefix="")
            inplanes = stem
            for i, (blocks, strides) in enumerate(zip(layers, (1, 2, 2, 2))):
                planes = width * 2 ** i
                stage = nn.HybridSequential(prefix=f"stage{i + 1}_")
                with stage.name_scope():
                    for b in range(blocks):
                        s = strides if b == 0 else 1
                        down = None
                        if b == 0 and (s != 1 or inplanes != planes * 4):
                            down = nn.HybridSequential(prefix="down_")
                            if s != 1:
                                down.add(nn.AvgPool2D(s, s, ceil_mode=True, count_include_pad=False))
                            down.add(nn.Conv2D(planes * 4, 1, use_bias=False, in_channels=inplanes),
                                     nn.BatchNorm(in_channels=planes * 4))
                        stage.add(Bottleneck(planes, strides=s, downsample=down, norm_layer=nn.BatchNorm,
                                             last_gamma=last_gamma, use_splat=use_splat, radix=radix,
                                             avd=use_splat, in_channels=inplanes))
                        inplanes = planes * 4
                self.stages.add(stage)
            self.pool = nn.GlobalAvgPool2D()
            self.drop = nn.Dropout(final_drop) if final_drop > 0 else None
            self.fc = nn.Dense(classes, in_units=inplanes)

    def hybrid_forward(self, F, x):
        x = self.pool(self.stages(self.stem(x)))
        if self.drop is not None:
            x = self.drop(x)
        return self.fc(x)


# name -> (layers, use_splat, defaults): one registered constructor per row
_VARIANTS = {
    "resnest14_cifar": ([1, 1, 1, 1], True, {}),
    "resnest26_cifar": ([2, 2, 2, 2], True, {}),
    "resnet14_cifar": ([1, 1, 1, 1], False, {}),
    "resnet26_cifar": ([2, 2, 2, 2], False, {}),
    # the digits models of the zoo: 1 grey channel, 10 classes
    "resnest14_digits": ([1, 1, 1, 1], True, {"in_channels": 1, "classes": 10}),
    "resnet14_digits": ([1, 1, 1, 1], False, {"in_channels": 1, "classes": 10}),
}


def _make(name, layers, use_splat, defaults):
    kind = "ResNeSt (Split-Attention, radix 2)" if use_splat else "ResNet-D bottleneck"
    depth = 3 * sum(layers) + 2

    def build(**kwargs):
        return CifarResNeSt(layers, use_splat=use_splat, **{**defaults, **kwargs})
    build.__name__ = name
    build.__doc__ = f"{kind}, {depth} layers, 3x3 stride-1 stem for small images"
    return register_model(name, task="classification")(build)


for _name, _row in _VARIANTS.items():
    globals()[_name] = _make(_name, *_row)

# GluonCV's own CIFAR networks (cifar_resnet20_v1 ...) are registered with GluonCV's other
# classifiers (imagenet.py)
__all__ = list(_VARIANTS) + ["CifarResNeSt"]
