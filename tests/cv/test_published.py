"""The suite's own published checkpoint loads from the catalogue and keeps its card's accuracy."""
import json
import os

from gluon_suite.cv.recipe import evaluate_model
from gluon_suite.model_zoo import list_models

from ..conftest import REPO


def test_resnest14_digits_from_the_catalogue(tmp_path, monkeypatch):
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)
    assert "resnest14_digits" in list_models(pretrained=True)
    card = json.load(open(os.path.join(REPO, "model_zoo", "resnest14_digits.json")))
    acc = evaluate_model("resnest14_digits", "digits", image_size=card["hyperparameters"]["image_size"])
    assert acc >= 0.97
    assert abs(acc - card["metric"]["value"]) < 1e-9   # the card states what the checkpoint does
    assert os.path.exists(os.path.join(REPO, card["training_log"]))
