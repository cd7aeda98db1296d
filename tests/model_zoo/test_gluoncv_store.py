"""Models whose weights GluonCV publishes load through GluonCV's store layout (name-hash.zip under
gluon/models/, SHA-1 from GluonCV's own table) from a loopback mirror."""
import hashlib
import zipfile

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.model_zoo import ZooError, get_model


def test_pretrained_resnest50_through_gluoncv_layout(zoo_env, tmp_path, monkeypatch):
    from gluoncv.model_zoo import model_store
    mx.random.seed(0)
    net = get_model("resnest50")
    net.initialize(mx.init.Xavier())
    x = mx.nd.random.uniform(shape=(1, 3, 64, 64))
    ref = net(x).asnumpy()
    params = tmp_path / "w.params"
    net.save_parameters(str(params))
    sha1 = hashlib.sha1(params.read_bytes()).hexdigest()
    # the test's own file stands in for GluonCV's published one: same layout, its hash in the table
    monkeypatch.setitem(model_store._model_sha1, "resnest50", sha1)
    stem = f"resnest50-{sha1[:8]}"
    folder = zoo_env["store"] / "gluon" / "models"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / f"{stem}.zip", "w", zipfile.ZIP_STORED) as zf:
        zf.write(params, f"{stem}.params")
    monkeypatch.setenv("GLUON_SUITE_REPO", zoo_env["server"].url + "/")

    loaded = get_model("resnest50", pretrained=True)
    np.testing.assert_allclose(loaded(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    assert zoo_env["server"].requests == [f"/gluon/models/{stem}.zip"]
    assert (zoo_env["cache"] / f"{stem}.params").exists()
    get_model("resnest50", pretrained=True)
    assert len(zoo_env["server"].requests) == 1


def test_gluoncv_file_with_wrong_hash_is_rejected(zoo_env, tmp_path, monkeypatch):
    from gluoncv.model_zoo import model_store
    sha1 = model_store._model_sha1["resnet18_v1b"]
    stem = f"resnet18_v1b-{sha1[:8]}"
    folder = zoo_env["store"] / "gluon" / "models"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / f"{stem}.zip", "w") as zf:
        zf.writestr(f"{stem}.params", b"not the published weights")
    monkeypatch.setenv("GLUON_SUITE_REPO", zoo_env["server"].url)
    with pytest.raises(ZooError, match="sha1 .* expected 2d9d980c"):
        get_model("resnet18_v1b", pretrained=True)
    assert not list((zoo_env["home"]).glob("models/*.params"))
