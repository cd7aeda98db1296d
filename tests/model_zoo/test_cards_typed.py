"""Model cards are typed: every field is checked where a card is read (publish, the zoo table, the
evaluation settings of a pretrained checkpoint) and a bad one is refused in one line naming the
card file and the field. Publishing reads the card it is given and writes only into the target
store (and this machine's records); a shipped card changes only through ``--catalogue``."""
import glob
import hashlib
import json
import os
import subprocess
import sys

import mxnet as mx
import pytest

from gluon_suite.model_zoo import ZooError, get_model
from gluon_suite.model_zoo import publish as publish_module
from gluon_suite.model_zoo.card_schema import check_card, load_card
from gluon_suite.model_zoo.cards import read_card_of
from gluon_suite.model_zoo.publish import publish
from gluon_suite.model_zoo.table import zoo_rows

from ..conftest import REPO

NAME = "digits_cnn"
GOOD = {"name": NAME, "architecture": "3-conv CNN", "command": "python scripts/cv/train_classification.py",
        "hyperparameters": {"lr": 0.1, "image_size": 8, "dataset": "digits", "classes": 10},
        "metric": {"name": "top-1 accuracy", "value": 0.97, "dataset": "digits test split"},
        "training_log": "runs/demo/log.jsonl", "tolerance": 0.02, "workers": 1}

# (change to the good card, the field the message must name, words it must hold)
BAD = [
    ({"metric": {"name": "top-1 accuracy", "value": "0.97"}}, "metric.value", "must be a number"),
    ({"metric": {"name": "top-1 accuracy", "value": float("nan")}}, "metric.value", "must be a number"),
    ({"metric": {"name": "", "value": 0.9}}, "metric.name", "non-empty text"),
    ({"metric": {"name": "acc", "value": 0.9, "higher_is_better": "yes"}}, "metric.higher_is_better", "true or false"),
    ({"metric": {"name": "acc", "valeu": 0.9}}, "metric.valeu", "is not a card field; did you mean 'metric.value'"),
    ({"metric": [0.9]}, "metric", "must be an object"),
    ({"tolerance": -0.01}, "tolerance", "must be a number >= 0"),
    ({"tolerance": "0.02"}, "tolerance", "must be a number >= 0"),
    ({"tolerence": 0.02}, "tolerence", "did you mean 'tolerance'"),
    ({"workers": 0}, "workers", "a whole number >= 1"),
    ({"workers": True}, "workers", "a whole number >= 1"),
    ({"name": ""}, "name", "non-empty text"),
    ({"name": 7}, "name", "non-empty text"),
    ({"command": ["python", "x.py"]}, "command", "non-empty text"),
    ({"hyperparameters": "lr=0.1"}, "hyperparameters", "must be an object"),
    ({"hyperparameters": {"image_size": "16"}}, "hyperparameters.image_size", "a whole number >= 1 or null"),
    ({"hyperparameters": {"classes": [1, 2]}}, "hyperparameters.classes", "a list of class names"),
    ({"training_log": None}, "training_log", "text"),
    ({"checkpoint": {"file_name": "x.params", "sha256": "abc", "size": 3}}, "checkpoint.sha256", "64 lower-case hex"),
    ({"checkpoint": {"file_name": "x.params"}}, "checkpoint", "lacks sha256, size"),
    ({"rerun": "train"}, "rerun", '"evaluate"'),
    ({"note": ""}, "note", "non-empty text"),
    ({"test_metric": {"name": "test perplexity", "value": "126", "dataset": "wiki"}}, "test_metric.value",
     "must be a number"),
    ({"test_metric": {"name": "test perplexity", "value": 126.0}}, "test_metric", "lacks dataset"),
]


def _card(tmp_path, change=None, drop=(), name="card.json"):
    card = {k: v for k, v in {**GOOD, **(change or {})}.items() if k not in drop}
    path = tmp_path / name
    path.write_text(json.dumps(card))
    return path


def _checkpoint(tmp_path):
    mx.random.seed(0)
    net = get_model(NAME)
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 1, 8, 8)))
    path = tmp_path / "trained.params"
    net.save_parameters(str(path))
    return path


def _sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    return tmp_path / "home"


def test_a_good_card_loads_as_written(tmp_path):
    assert load_card(str(_card(tmp_path))) == GOOD


@pytest.mark.parametrize("change,field,words", BAD, ids=[b[1] + ":" + b[2][:12] for b in BAD])
def test_a_wrongly_typed_field_is_refused_in_one_line_naming_the_file_and_the_field(tmp_path, change, field, words):
    path = _card(tmp_path, change)
    with pytest.raises(ZooError) as err:
        load_card(str(path))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"model card {path}: {field} ") and words in msg, msg


def test_a_missing_field_is_named(tmp_path):
    with pytest.raises(ZooError, match=r"card.json lacks name; every card needs name, architecture"):
        load_card(str(_card(tmp_path, drop=("name",))))


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(REPO, "model_zoo", "*.json"))))
def test_every_shipped_card_passes(path):
    card = load_card(path)
    assert {"name", "value"} <= set(card["metric"]) and "checkpoint" in card


def test_publish_refuses_a_string_metric_and_writes_nothing(tmp_path, home):
    card = _card(tmp_path, {"metric": {"name": "top-1 accuracy", "value": "0.97"}})
    before = _sha(card)
    with pytest.raises(ZooError, match=r"card.json: metric.value must be a number, not \"0.97\""):
        publish(str(_checkpoint(tmp_path)), NAME, str(card), str(tmp_path / "store"))
    assert _sha(card) == before
    assert not (tmp_path / "store").exists() and not home.exists()


def test_publish_reads_the_card_and_writes_only_into_the_store(tmp_path, home):
    card = _card(tmp_path, name=f"{NAME}.json")
    before = _sha(card)
    store = tmp_path / "store"
    rec = publish(str(_checkpoint(tmp_path)), NAME, str(card), str(store))
    assert _sha(card) == before                                  # the given card: byte for byte
    copy = json.loads((store / f"{NAME}.json").read_text())
    assert copy == {**GOOD, "checkpoint": {"file_name": rec["file_name"], "sha256": rec["sha256"],
                                           "size": rec["size"]}}
    assert sorted(os.listdir(store)) == sorted([rec["file_name"], f"{NAME}.json", "index.json"])
    mine = json.loads((home / "records.json").read_text())["checkpoints"]
    assert [r["card_path"] for r in mine] == [str(store / f"{NAME}.json")]   # the card that names the file
    assert sorted(os.listdir(tmp_path)) == sorted([f"{NAME}.json", "home", "store", "trained.params"])


def test_cli_publish_of_a_shipped_card_into_another_store_leaves_the_repository_card_as_it_was(tmp_path):
    card = os.path.join(REPO, "model_zoo", "resnest14_digits.json")
    shipped = load_card(card)["checkpoint"]["file_name"]
    ckpt = os.path.join(REPO, "model_zoo", "store", shipped)
    assert os.path.isfile(ckpt), f"the shipped checkpoint {shipped} is missing from model_zoo/store"
    before = _sha(card)
    env = dict(os.environ, GLUON_SUITE_HOME=str(tmp_path / "home"), GLUON_SUITE_QUIET="1")
    p = subprocess.run([sys.executable, "-m", "gluon_suite.cli", "zoo", "publish", ckpt, "--name", "resnest14_digits",
                        "--tag", "mine", "--card", card, "--store", str(tmp_path / "store")],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300)
    assert p.returncode == 0, p.stderr
    assert _sha(card) == before
    assert json.loads((tmp_path / "store" / "resnest14_digits.mine.json").read_text())["checkpoint"]["file_name"] \
        == f"resnest14_digits.mine-{shipped.split('-')[1]}"


def test_only_the_catalogue_option_fills_the_given_card(tmp_path, home, monkeypatch):
    catalogue = tmp_path / "checkpoints.json"
    monkeypatch.setattr(publish_module, "CATALOGUE", str(catalogue))
    card = _card(tmp_path, name=f"{NAME}.json")
    rec = publish(str(_checkpoint(tmp_path)), NAME, str(card), str(tmp_path / "store"), catalogue=True)
    assert json.loads(card.read_text())["checkpoint"]["sha256"] == rec["sha256"]
    assert [r["model"] for r in json.loads(catalogue.read_text())["checkpoints"]] == [NAME]


def test_the_table_and_the_evaluation_settings_refuse_a_bad_card(tmp_path):
    card = _card(tmp_path, {"metric": {"name": "top-1 accuracy", "value": "high"}})
    record = {"model": NAME, "file_name": "x.params", "sha256": "0" * 64, "size": 1, "card": str(card)}
    catalogue = tmp_path / "checkpoints.json"
    catalogue.write_text(json.dumps({"checkpoints": [record]}))
    with pytest.raises(ZooError, match="metric.value must be a number"):
        zoo_rows(str(catalogue))
    with pytest.raises(ZooError, match="metric.value must be a number"):
        read_card_of(record)
    assert read_card_of({**record, "card": str(tmp_path / "none.json")}) == {}   # no card: nothing to check


def test_check_card_returns_the_card():
    assert check_card(dict(GOOD), "x.json") == GOOD
