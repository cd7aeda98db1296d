"""Vision models registered in the zoo: GluonCV's ImageNet ResNeSt/ResNet and small CNNs."""
from . import imagenet
from .small import digits_cnn

__all__ = ["digits_cnn", "imagenet"]
