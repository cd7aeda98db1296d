"""The registry: every name builds, unknown names suggest close ones, aliases warn, publish writes
records and the store's copy of the card."""
import json
import os
import subprocess
import sys

import mxnet as mx
import pytest

from gluon_suite.model_zoo import ModelNotFound, get_model, list_models, register_model
from gluon_suite.model_zoo.publish import publish
from gluon_suite.model_zoo.store import ZooError


@pytest.mark.parametrize("name", list_models())
def test_every_registered_name_builds_without_weights(name):
    net = get_model(name)
    assert isinstance(net, mx.gluon.Block)


def test_unknown_name_lists_close_matches():
    with pytest.raises(ModelNotFound, match="did you mean: digits_cnn"):
        get_model("digit_cnn")
    with pytest.raises(ValueError, match="unknown model 'zzz'"):
        get_model("zzz")


def test_deprecated_alias_warns_and_works():
    with pytest.warns(FutureWarning, match="'small_cnn' is deprecated; use 'digits_cnn'"):
        net = get_model("small_cnn")
    assert isinstance(net, mx.gluon.HybridBlock)


def test_list_models_filters():
    assert "digits_cnn" in list_models("digits*")
    assert list_models("nothing-matches*") == []


def test_registering_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        register_model("digits_cnn")(lambda: None)


def test_pretrained_without_published_weights_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path))
    with pytest.raises(ZooError, match="has no published checkpoint"):
        get_model("digits_cnn", pretrained=True)
    assert "digits_cnn" in list_models(pretrained=False)


def test_publish_refuses_pickles_and_incomplete_cards(tmp_path, monkeypatch):
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path / "home"))
    pkl = tmp_path / "model.pkl"
    pkl.write_bytes(b"\x80\x04\x95\x00")
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"name": "digits_cnn"}))
    with pytest.raises(ZooError, match="not an MXNet parameter file"):
        publish(str(pkl), "digits_cnn", str(card), str(tmp_path / "store"))
    net = get_model("digits_cnn")
    net.initialize()
    net(mx.nd.zeros((1, 1, 8, 8)))
    net.save_parameters(str(tmp_path / "m.params"))
    with pytest.raises(ZooError, match="lacks architecture, command"):
        publish(str(tmp_path / "m.params"), "digits_cnn", str(card), str(tmp_path / "store"))


def test_cli_publish_list_verify_purge(tmp_path):
    env = dict(os.environ, GLUON_SUITE_HOME=str(tmp_path / "home"), GLUON_SUITE_QUIET="1")
    cli = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
    net = get_model("digits_cnn")
    net.initialize()
    net(mx.nd.zeros((1, 1, 8, 8)))
    net.save_parameters(str(tmp_path / "m.params"))
    card = tmp_path / "digits_cnn.json"
    card.write_text(json.dumps({"name": "digits_cnn", "architecture": "cnn", "command": "x",
                                "hyperparameters": {}, "metric": {}, "training_log": "log"}))
    run = lambda *a: subprocess.run([cli, "zoo", *a], capture_output=True, text=True, env=env)  # noqa
    p = run("publish", str(tmp_path / "m.params"), "--name", "digits_cnn", "--card", str(card),
            "--store", str(tmp_path / "store"))
    assert p.returncode == 0, p.stderr
    rec = json.loads((tmp_path / "store" / "index.json").read_text())["checkpoints"][0]
    assert "checkpoint" not in json.loads(card.read_text())     # the given card is only read
    assert json.loads((tmp_path / "store" / "digits_cnn.json").read_text())["checkpoint"]["sha256"] == rec["sha256"]
    assert rec["file_name"] == f"digits_cnn-{rec['sha256'][:8]}.params"
    assert "digits_cnn" in run("list", "--pretrained").stdout
    p = run("download", "digits_cnn")
    assert p.returncode == 0 and p.stdout.strip().endswith(rec["file_name"])
    assert run("verify").returncode == 0
    cached = tmp_path / "home" / "models" / rec["file_name"]
    cached.write_bytes(b"x" * rec["size"])
    p = run("verify")
    assert p.returncode == 1 and "CORRUPT" in p.stdout
    assert "removed" in run("purge").stdout and not cached.exists()
