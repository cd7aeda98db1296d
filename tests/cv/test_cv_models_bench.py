"""The ResNeSt-vs-ResNet bench (bench/cv_models.py) through its protocol's quick schedule: every
(model, seed) run recorded, the summary table's figures against the runs, and the criteria's
intervals against a float64 recomputation."""
import json
import math
import os

import pytest

from gluon_suite.evidence import runner

from ..conftest import REPO


def test_quick_protocol_run_records_every_run_and_its_summary(tmp_path):
    path, res = runner.run("cv_models", quick=True, root=REPO, results_dir=str(tmp_path), show_progress=False,
                           log=lambda m: None)
    saved = json.loads(open(path).read())
    assert saved["quick"] and saved["params"] == {"dataset": "digits", "epochs": 1, "image_size": 8}
    assert sorted((r["arm"], r["seed"]) for r in saved["runs"]) == [("resnest14_digits", 0), ("resnet14_digits", 0)]
    rows = {r[0]: r for r in saved["tables"]["summary"]["rows"]}
    for r in saved["runs"]:
        m = r["metrics"]
        assert 0.0 <= m["final_acc"] <= 1.0 and len(m["curve"]) == 1 and m["samples_per_s"] > 0
        assert rows[r["arm"]][1] == f"{m['final_acc']:.4f}"       # one seed: the value itself, no spread
    by = {r["arm"]: r["metrics"] for r in saved["runs"]}
    crit = {c["id"]: c for c in saved["criteria"]}
    diff = by["resnest14_digits"]["final_acc"] - by["resnet14_digits"]["final_acc"]
    assert crit["accuracy_equal"]["interval"]["mean"] == pytest.approx(diff)
    ratio = by["resnest14_digits"]["samples_per_s"] / by["resnet14_digits"]["samples_per_s"]
    assert crit["resnest_slower"]["interval"]["mean"] == pytest.approx(math.log(ratio))
    assert saved["verdict"] == "inconclusive"          # one seed: no interval, no decision
    assert path.endswith(".json") and any(f.endswith(".png") for f in os.listdir(tmp_path / "cv_models"))
