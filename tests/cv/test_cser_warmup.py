"""The vision recipe's warm-up: ``warmup_epochs: auto`` (the default) gives CSER the authors'
warm-up growing with the first compression ratio, and every other algorithm 1 epoch; a number is
taken as given; anything else is a one-line config error."""
import pytest

from gluon_suite.cv.recipe import DEFAULTS, warmup_epochs
from gluon_suite.utils import UserError


@pytest.mark.parametrize("over, want", [
    (dict(algorithm="cser", compressor="grbs", ratio=32, lr=0.1, epochs=15), 5.0),
    (dict(algorithm="cser", compressor="grbs", ratio=128, lr=0.05, epochs=200), 10.0),
    (dict(algorithm="cser", compressor="grbs", ratio=None, lr=0.05, epochs=200), 4.0),  # grbs default 32
    (dict(algorithm="cser", compressor="grbs", ratio=256, lr=0.1, epochs=10), 5.0),     # half the run
    (dict(algorithm="sync"), 1.0),
    (dict(algorithm="cser", compressor="grbs", ratio=32, warmup_epochs=2), 2.0),
])
def test_auto_warmup(over, want):
    assert warmup_epochs(dict(DEFAULTS, **over)) == want


def test_bad_warmup_is_a_config_error():
    from gluon_suite.cv.recipe import ClassificationConfig
    from gluon_suite.distributed import LocalCommunicator
    with pytest.raises(UserError, match="warmup_epochs: must be 'auto' or a number >= 0, got 'long'"):
        ClassificationConfig.from_dict(dict(DEFAULTS, warmup_epochs="long")).check(LocalCommunicator())
