"""ImageNet classification models from GluonCV, registered in the zoo under GluonCV's names.

The network code is GluonCV's; pretrained weights come through GluonCV's store layout (same file
names, same SHA-1 hashes), fetched by the suite's checkpoint store (mirrors, offline mode, locks).
"""
from ...model_zoo import register_model

# name -> one-line description; the table generates one registered constructor per row
_GLUONCV_MODELS = {
    "resnest14": "ResNeSt-14 (Split-Attention, radix 2), ImageNet",
    "resnest26": "ResNeSt-26 (Split-Attention, radix 2), ImageNet",
    "resnest50": "ResNeSt-50 (Split-Attention, radix 2), ImageNet top-1 81.04 at 224",
    "resnest101": "ResNeSt-101 (Split-Attention, radix 2), ImageNet top-1 82.81 at 256",
    "resnest200": "ResNeSt-200 (Split-Attention, radix 2), ImageNet top-1 83.88 at 320",
    "resnest269": "ResNeSt-269 (Split-Attention, radix 2), ImageNet top-1 84.53 at 416",
    "resnet18_v1b": "ResNet-18 v1b, ImageNet",
    "resnet34_v1b": "ResNet-34 v1b, ImageNet",
    "resnet50_v1b": "ResNet-50 v1b, ImageNet",
    "resnet101_v1b": "ResNet-101 v1b, ImageNet",
}


def _make(name, description):
    def build(**kwargs):
        from gluoncv.model_zoo import get_model as gcv_get_model
        return gcv_get_model(name, pretrained=False, **kwargs)
    build.__name__ = name
    build.__doc__ = description
    return register_model(name, task="classification", weights="gluoncv")(build)


for _name, _desc in _GLUONCV_MODELS.items():
    globals()[_name] = _make(_name, _desc)

__all__ = list(_GLUONCV_MODELS)
