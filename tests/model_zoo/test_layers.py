"""The zoo's two layers: a checkpoint published on this machine under a shipped name never replaces
the shipped one unless the user asked for it (--replace), `zoo list` shows both layers, `zoo remove`
undoes a local record, and evaluation reads the card's input size."""
import json
import os
import re
import shutil
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.model_zoo import ZooError, get_model
from gluon_suite.model_zoo.publish import publish

from ..conftest import REPO

NAME = "resnest14_digits"
CARD = os.path.join(REPO, "model_zoo", f"{NAME}.json")
CLI = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
EVAL = os.path.join(REPO, "scripts", "cv", "evaluate.py")


def shipped_file():
    rec = next(r for r in json.load(open(os.path.join(REPO, "gluon_suite", "model_zoo", "checkpoints.json")))
               ["checkpoints"] if r["model"] == NAME)
    return os.path.join(REPO, "model_zoo", "store", rec["file_name"])


def shipped_hash():
    """The first 8 hex digits of the shipped checkpoint's SHA-256, as `zoo list` shows them."""
    return os.path.basename(shipped_file()).rsplit("-", 1)[1][:8]


def card_accuracy():
    return json.load(open(CARD))["metric"]["value"]


def damaged_accuracy():
    """The damaged copy predicts class 3 for every image: its accuracy is the share of 3s in the
    digits test split (counted here from the labels, not from any model)."""
    from gluon_suite.cv.data.digits import load_digits
    _, y = load_digits("test", size=16)
    return float(np.mean(y.astype(int) == 3))


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A user home, a damaged copy of the shipped checkpoint (output layer zeroed, bias towards
    class 3) and a copy of its card to publish it with."""
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)
    monkeypatch.delenv("GLUON_SUITE_OFFLINE", raising=False)
    params = mx.nd.load(shipped_file())
    params["fc.weight"] = mx.nd.zeros_like(params["fc.weight"])
    params["fc.bias"] = mx.nd.one_hot(mx.nd.array([3]), 10).reshape((10,))
    damaged = tmp_path / "damaged.params"
    mx.nd.save(str(damaged), params)
    card = tmp_path / f"{NAME}.json"
    shutil.copyfile(CARD, card)
    return {"home": tmp_path / "home", "damaged": damaged, "card": card, "store": tmp_path / "store",
            "env": dict(os.environ)}


def weights(net):
    return {k: v.data().asnumpy() for k, v in net._collect_params_with_prefix().items()}


def same_as_file(net, path):
    saved = {k: v.asnumpy() for k, v in mx.nd.load(str(path)).items()}
    got = weights(net)
    return set(got) == set(saved) and all(np.array_equal(got[k], saved[k]) for k in saved)


def local_models(home):
    path = home["home"] / "records.json"
    return [r["model"] for r in json.load(open(path))["checkpoints"]] if path.exists() else []


def warning_lines(p):
    """The script's warnings (other packages' notices on stderr are not the script's)."""
    return [line for line in p.stderr.splitlines() if line.startswith("warning:") or "Warning" in line]


def cli(*args, env):
    return subprocess.run([CLI, "zoo", *args], capture_output=True, text=True, env=env)


def evaluate(*args, env):
    p = subprocess.run([sys.executable, EVAL, "--model", NAME, *args], capture_output=True, text=True,
                       env=env, cwd=REPO)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    return float(re.search(r"test accuracy ([\d.]+)", p.stdout).group(1)), p


@pytest.mark.long   # make test's time budget; the long tier runs it
def test_local_publish_under_a_shipped_name_is_visible_explicit_and_reversible(home):
    env = home["env"]
    # publishing under the shipped name without a choice: into the store only, and it says so
    p = cli("publish", str(home["damaged"]), "--name", NAME, "--card", str(home["card"]),
            "--store", str(home["store"]), env=env)
    assert p.returncode == 0, p.stderr
    assert "shipped" in p.stdout and "--replace" in p.stdout and "--tag" in p.stdout
    assert NAME not in local_models(home)
    assert same_as_file(get_model(NAME, pretrained=True), shipped_file())
    acc, _ = evaluate("--pretrained", env=env)
    assert acc == pytest.approx(card_accuracy(), abs=1e-4)
    # asked for explicitly: the store's copy
    acc, _ = evaluate("--source", str(home["store"]), env=env)
    assert acc == pytest.approx(damaged_accuracy(), abs=1e-4)
    assert same_as_file(get_model(NAME, pretrained=True, source=str(home["store"])), home["damaged"])

    # --replace: this machine's record wins, says what it shadows, and `zoo list` shows the layering
    p = cli("publish", str(home["damaged"]), "--name", NAME, "--card", str(home["card"]),
            "--store", str(home["store"]), "--replace", env=env)
    assert p.returncode == 0 and "shadows the shipped" in p.stdout and "zoo remove" in p.stdout, p.stdout + p.stderr
    listing, sha = cli("list", env=env).stdout, shipped_hash()
    assert re.search(rf"{NAME}\s+shipped\s+{sha}\s+shadowed", listing), listing
    assert re.search(rf"{NAME}\s+local\s+\w{{8}}\s+in use, replaces shipped {sha}", listing), listing
    assert same_as_file(get_model(NAME, pretrained=True), home["damaged"])
    acc, _ = evaluate("--pretrained", env=env)
    assert acc == pytest.approx(damaged_accuracy(), abs=1e-4)
    assert same_as_file(get_model(NAME, pretrained=True, source="shipped"), shipped_file())

    # the undo restores the shipped checkpoint
    p = cli("remove", NAME, env=env)
    assert p.returncode == 0 and f"shipped checkpoint ({sha}) is used again" in p.stdout, p.stdout + p.stderr
    assert same_as_file(get_model(NAME, pretrained=True), shipped_file())
    acc, _ = evaluate("--pretrained", env=env)
    assert acc == pytest.approx(card_accuracy(), abs=1e-4)
    assert re.search(rf"{NAME}\s+shipped\s+{sha}\s+in use", cli("list", env=env).stdout)
    p = cli("remove", NAME, env=env)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "no local record" in p.stderr


def test_a_record_written_without_replace_is_ignored_with_one_warning(home):
    """A records file that holds a shipped name without "replaces" (as older versions wrote it):
    the shipped weights are still used, `zoo list` says the local record is not used, and the
    evaluation script warns in one line."""
    rec = publish(str(home["damaged"]), NAME, str(home["card"]), str(home["store"]), log=lambda m: None)
    os.makedirs(home["home"], exist_ok=True)
    (home["home"] / "records.json").write_text(json.dumps({"checkpoints": [rec]}))
    with pytest.warns(UserWarning, match="using the shipped checkpoint"):
        net = get_model(NAME, pretrained=True)
    assert same_as_file(net, shipped_file())
    assert same_as_file(get_model(NAME, pretrained=True, source="local"), home["damaged"])
    assert re.search(rf"{NAME}\s+local\s+{rec['sha256'][:8]}\s+not used", cli("list", env=home["env"]).stdout)
    acc, p = evaluate(env=home["env"])
    assert acc == pytest.approx(card_accuracy(), abs=1e-4)
    warnings = warning_lines(p)
    assert len(warnings) == 1 and "zoo remove" in warnings[0], p.stderr


def test_tag_publishes_a_name_of_its_own(home):
    publish(str(home["damaged"]), NAME, str(home["card"]), str(home["store"]), tag="mine", log=lambda m: None)
    assert same_as_file(get_model(f"{NAME}.mine", pretrained=True), home["damaged"])
    assert same_as_file(get_model(NAME, pretrained=True), shipped_file())
    assert json.load(open(home["store"] / "index.json"))["checkpoints"][0]["file_name"].startswith(f"{NAME}.mine-")
    with pytest.raises(ZooError, match="exclude each other"):
        publish(str(home["damaged"]), NAME, str(home["card"]), str(home["store"]), tag="x", replace=True)
    with pytest.raises(ZooError, match="not a shipped checkpoint"):
        _replace_unshipped(home)


def _replace_unshipped(home):
    """--replace of a name the suite does not ship has nothing to replace."""
    net = get_model("digits_cnn")
    net.initialize()
    net(mx.nd.zeros((1, 1, 8, 8)))
    net.save_parameters(str(home["home"].parent / "cnn.params"))
    card = home["home"].parent / "digits_cnn.json"
    card.write_text(json.dumps({"name": "digits_cnn", "architecture": "cnn", "command": "x",
                                "hyperparameters": {}, "metric": {}, "training_log": "log"}))
    publish(str(home["home"].parent / "cnn.params"), "digits_cnn", str(card), str(home["store"]), replace=True)


def test_evaluation_reads_the_cards_input_size(home):
    """Without --image-size the shipped checkpoint is evaluated at its card's 16x16 and reaches the
    card's accuracy; a contradicting --image-size is used, with one warning naming the card's."""
    acc, p = evaluate("--pretrained", env=home["env"])
    assert acc == pytest.approx(card_accuracy(), abs=1e-4) and "16x16" in p.stdout
    assert warning_lines(p) == []
    acc, p = evaluate("--pretrained", "--image-size", "32", env=home["env"])
    lines = warning_lines(p)
    assert len(lines) == 1 and "--image-size 32 contradicts the card" in lines[0] and "16" in lines[0]
    net = get_model(NAME, pretrained=True)
    assert net.pretrained_cfg["image_size"] == json.load(open(CARD))["hyperparameters"]["image_size"]
    assert net.pretrained_cfg["dataset"] == "digits"
