"""Vision models registered in the zoo: GluonCV's ImageNet ResNeSt/ResNet, CIFAR-style ResNeSt and
ResNet built from GluonCV's blocks, small CNNs, and detectors and segmenters (``dense``)."""
from . import cifar, dense, imagenet
from .cifar import CifarResNeSt
from .small import digits_cnn

__all__ = ["CifarResNeSt", "cifar", "dense", "digits_cnn", "imagenet"]
