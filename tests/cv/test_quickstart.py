"""The quick-start digits job: fixed split, and real learning on a tiny budget."""
import json

import numpy as np
import pytest

from gluon_suite.cv.data import load_digits
from gluon_suite.cv.quickstart import train_digits
from gluon_suite.distributed import LocalCommunicator
from gluon_suite.utils import UserError


def test_digits_split_is_fixed_and_disjoint():
    xtr, ytr = load_digits("train")
    xte, yte = load_digits("test")
    assert xtr.shape == (1438, 1, 8, 8) and xte.shape == (359, 1, 8, 8)
    assert 0.0 <= xtr.min() and xtr.max() <= 1.0
    # every class in both splits, no image shared between them
    assert set(ytr) == set(yte) == set(range(10))
    tr = {x.tobytes() for x in xtr}
    shared = sum(x.tobytes() in tr for x in xte)
    assert shared <= 2  # sklearn's digits holds a couple of exact duplicate images
    np.random.seed(123)
    assert np.array_equal(load_digits("test")[1], yte)
    x32, _ = load_digits("test", size=32)
    assert x32.shape == (359, 1, 32, 32)


def test_quickstart_learns_well_above_chance(tmp_path):
    lines = []
    res = train_digits({"epochs": 2, "batch_size": 32, "max_steps": 30, "progress": False, "out": str(tmp_path)},
                       LocalCommunicator(), log=lines.append)
    assert res["test_acc"] > 0.6  # chance is 0.1
    assert res["history"][-1]["train_loss"] < res["history"][0]["train_loss"]
    # the run folder: the configuration at the start, one log line per epoch, each epoch logged
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["epochs"] == 2 and saved["max_steps"] == 30 and saved["lr"] == 0.1 and saved["workers"] == 1
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 2
    assert sum(m.startswith("epoch ") for m in lines) == 2


def test_quickstart_rejects_bad_budget(tmp_path):
    with pytest.raises(UserError, match="--batch-size 5000 x 1 workers exceeds"):
        train_digits({"epochs": 1, "batch_size": 5000, "out": str(tmp_path)}, LocalCommunicator())
    with pytest.raises(UserError, match="epochs: must be a whole number >= 1, got 0"):
        train_digits({"epochs": 0, "out": str(tmp_path)}, LocalCommunicator())


def test_auto_flags_reach_the_trainer(tmp_path, monkeypatch):
    """--target-sf, --auto-candidates, --auto-ratios and --auto-periods (config keys target_sf,
    auto_candidates, auto_ratios, auto_periods) build auto with them, and the run folder keeps them."""
    from gluon_suite.distributed import ALGORITHMS, auto
    seen = []

    class Recording(auto.AutoAlgorithm):
        def __init__(self, **kw):
            seen.append(kw)
            super().__init__(**kw)
    monkeypatch.setitem(ALGORITHMS._items, "auto", Recording)   # registered under auto for this test
    train_digits({"epochs": 1, "batch_size": 32, "max_steps": 3, "progress": False, "out": str(tmp_path),
                  "algorithm": "auto", "target_sf": 0.8, "auto_candidates": ["sync", "cser"],
                  "auto_ratios": [8, 32], "auto_periods": [4, 16]},
                 LocalCommunicator(), log=lambda m: None)
    assert len(seen) == 1 and seen[0]["target_sf"] == 0.8 and seen[0]["candidates"] == ("sync", "cser")
    assert seen[0]["cser_ratios"] == (8.0, 32.0) and seen[0]["pl_periods"] == (4, 16)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["target_sf"] == 0.8 and saved["auto_candidates"] == ["sync", "cser"] and saved["auto_ratios"] == [8, 32]
    assert saved["auto_periods"] == [4, 16]
