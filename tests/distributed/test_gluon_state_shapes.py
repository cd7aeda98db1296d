"""GluonState on a network whose shapes are not known yet fails with one line saying what to do,
before it touches the trainer."""
import mxnet as mx
import pytest

from gluon_suite.distributed.elastic import GluonState
from gluon_suite.utils.errors import UserError


def test_deferred_shapes_ask_for_one_forward_pass():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(64, activation="relu"), mx.gluon.nn.Dense(10))
    net.initialize()
    with pytest.raises(UserError, match=r"has no shape yet .*run one forward pass") as exc:
        GluonState(net, trainer=None)
    assert "\n" not in str(exc.value)


def test_uninitialised_network_asks_for_initialize():
    with pytest.raises(UserError, match=r"not initialised; call net.initialize\(\)"):
        GluonState(mx.gluon.nn.Dense(4, in_units=3), trainer=None)
