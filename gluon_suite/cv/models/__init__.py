"""Vision models registered in the zoo: GluonCV's ImageNet ResNeSt/ResNet, CIFAR-style ResNeSt and
ResNet built from GluonCV's blocks, and small CNNs."""
from . import cifar, imagenet
from .cifar import CifarResNeSt
from .small import digits_cnn

__all__ = ["CifarResNeSt", "cifar", "digits_cnn", "imagenet"]
