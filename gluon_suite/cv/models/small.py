"""Small CNNs for the embedded digits data."""
from mxnet import gluon

from ...model_zoo import register_model


@register_model("digits_cnn", task="classification", deprecated_aliases=("small_cnn",))
def digits_cnn(classes=10, width=32):
    """A three-convolution CNN for 8x8 grey digits (about 60k parameters at width 32)."""
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(width, 3, padding=1), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
            gluon.nn.Conv2D(2 * width, 3, padding=1), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
            gluon.nn.MaxPool2D(2),
            gluon.nn.Conv2D(2 * width, 3, padding=1), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
            gluon.nn.GlobalAvgPool2D(), gluon.nn.Dense(classes))
    return net
