"""Checkpoint store against a loopback HTTP server: download, verify, cache, load; every failure
mode gives a one-line error and leaves no file in the cache; many processes download once."""
import io
import json
import os
import socket
import subprocess
import sys
import zipfile

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.model_zoo import ZooError, get_model
from gluon_suite.model_zoo.publish import publish
from gluon_suite.model_zoo.store import add_record, file_hash

from .conftest import cache_files

NAME = "digits_cnn"


def make_checkpoint(tmp_path, seed=0):
    mx.random.seed(seed)
    net = get_model(NAME)
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 1, 8, 8)))
    path = tmp_path / "trained.params"
    net.save_parameters(str(path))
    return path, {k: v.asnumpy() for k, v in mx.nd.load(str(path)).items()}


def write_card(tmp_path):
    card = tmp_path / f"{NAME}.json"
    card.write_text(json.dumps({"name": NAME, "architecture": "3-conv CNN", "command": "make demo",
                                "hyperparameters": {"lr": 0.1}, "metric": {"name": "test accuracy", "value": 0.99},
                                "training_log": "runs/demo/log.jsonl"}))
    return card


@pytest.fixture
def published(zoo_env, tmp_path):
    ckpt, weights = make_checkpoint(tmp_path)
    rec = publish(str(ckpt), NAME, str(write_card(tmp_path)), str(zoo_env["store"]),
                  url=zoo_env["server"].url)
    return rec, weights


def loaded_weights(net):
    return {k: v.data().asnumpy() for k, v in net._collect_params_with_prefix().items()}


def test_download_verify_cache_load_then_cache_hit(zoo_env, published):
    rec, weights = published
    server = zoo_env["server"]
    net = get_model(NAME, pretrained=True)
    got = loaded_weights(net)
    assert set(got) == set(weights)
    for k in weights:
        np.testing.assert_array_equal(got[k], weights[k])
    assert server.requests == ["/" + rec["file_name"]]
    assert cache_files(zoo_env["cache"]) == [rec["file_name"], rec["file_name"] + ".verified"]
    assert file_hash(zoo_env["cache"] / rec["file_name"]) == rec["sha256"]
    get_model(NAME, pretrained=True)
    assert len(server.requests) == 1  # cache hit: no request


def test_corrupt_cached_file_is_fetched_again(zoo_env, published):
    rec, _ = published
    get_model(NAME, pretrained=True)
    cached = zoo_env["cache"] / rec["file_name"]
    data = bytearray(cached.read_bytes())
    data[-10] ^= 0xFF
    cached.write_bytes(bytes(data))   # same size, new mtime: the stamp no longer matches
    get_model(NAME, pretrained=True)
    assert len(zoo_env["server"].requests) == 2
    assert file_hash(cached) == rec["sha256"]
    cached.write_bytes(bytes(data[:100]))  # truncated
    get_model(NAME, pretrained=True)
    assert len(zoo_env["server"].requests) == 3


def _expect_failure(zoo_env, rec, *needles):
    with pytest.raises(ZooError) as ei:
        get_model(NAME, pretrained=True)
    msg = str(ei.value)
    assert "\n" not in msg
    assert f"model '{NAME}'" in msg
    for n in needles:
        assert n in msg, msg
    assert cache_files(zoo_env["cache"]) == []
    return msg


def test_truncated_file(zoo_env, published):
    rec, _ = published
    f = zoo_env["store"] / rec["file_name"]
    f.write_bytes(f.read_bytes()[:1000])
    _expect_failure(zoo_env, rec, zoo_env["server"].url + "/" + rec["file_name"], "truncated",
                    "republish")


def test_wrong_hash(zoo_env, published):
    rec, _ = published
    f = zoo_env["store"] / rec["file_name"]
    data = bytearray(f.read_bytes())
    data[500] ^= 0xFF
    f.write_bytes(bytes(data))
    _expect_failure(zoo_env, rec, "sha256", "does not match its record")


def test_http_404(zoo_env, published):
    rec, _ = published
    os.unlink(zoo_env["store"] / rec["file_name"])
    _expect_failure(zoo_env, rec, "HTTP 404", "GLUON_SUITE_REPO")
    assert len(zoo_env["server"].requests) == 1  # a 404 is not retried


def test_http_500_is_retried_then_reported(zoo_env, published):
    rec, _ = published
    zoo_env["server"].set(status=500)
    _expect_failure(zoo_env, rec, "HTTP 500", "after 2 attempts")
    assert len(zoo_env["server"].requests) == 2


def test_connection_refused(zoo_env, published, monkeypatch):
    rec, _ = published
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    monkeypatch.setenv("GLUON_SUITE_REPO", f"http://127.0.0.1:{port}")
    _expect_failure(zoo_env, rec, f"http://127.0.0.1:{port}/{rec['file_name']}", "connection failed")


def test_stalling_server_times_out(zoo_env, published):
    rec, _ = published
    zoo_env["server"].set(stall=3)
    _expect_failure(zoo_env, rec, "timed out")


def test_archive_member_escaping_the_folder_is_refused(zoo_env, tmp_path):
    ckpt, _ = make_checkpoint(tmp_path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.write(ckpt, "model.params")
        zf.writestr("../../evil.txt", "gotcha")
    (zoo_env["store"] / "bundle.zip").write_bytes(buf.getvalue())
    add_record({"model": NAME, "file_name": "digits_cnn-arch.params", "sha256": file_hash(ckpt),
                "size": os.path.getsize(ckpt), "url": zoo_env["server"].url, "remote_path": "bundle.zip",
                "archive": "zip", "member": "model.params"})
    _expect_failure(zoo_env, None, "../../evil.txt", "escapes")
    assert not (tmp_path / "evil.txt").exists() and not (zoo_env["home"] / "evil.txt").exists()


def test_safe_archive_is_extracted_and_verified(zoo_env, tmp_path):
    ckpt, weights = make_checkpoint(tmp_path, seed=3)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.write(ckpt, "model.params")
    (zoo_env["store"] / "bundle.zip").write_bytes(buf.getvalue())
    add_record({"model": NAME, "file_name": "digits_cnn-arch.params", "sha256": file_hash(ckpt),
                "size": os.path.getsize(ckpt), "url": zoo_env["server"].url, "remote_path": "bundle.zip",
                "archive": "zip", "member": "model.params"})
    got = loaded_weights(get_model(NAME, pretrained=True))
    for k in weights:
        np.testing.assert_array_equal(got[k], weights[k])


def test_offline_warm_cache_works_and_cold_cache_names_the_path(zoo_env, published, monkeypatch):
    rec, weights = published
    get_model(NAME, pretrained=True)
    zoo_env["server"].close()  # the network is gone
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    got = loaded_weights(get_model(NAME, pretrained=True))
    np.testing.assert_array_equal(got["0.weight"], weights["0.weight"])
    for f in cache_files(zoo_env["cache"]):
        os.unlink(zoo_env["cache"] / f)
    with pytest.raises(ZooError) as ei:
        get_model(NAME, pretrained=True)
    assert str(zoo_env["cache"] / rec["file_name"]) in str(ei.value)
    assert "GLUON_SUITE_OFFLINE=1" in str(ei.value)


def test_offline_means_no_network_not_no_local_files(zoo_env, published, monkeypatch):
    """With a cold cache and GLUON_SUITE_OFFLINE=1, a store on this machine (file://) still
    serves the checkpoint; an http store is refused without any request."""
    rec, weights = published
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    with pytest.raises(ZooError, match="GLUON_SUITE_OFFLINE=1"):
        get_model(NAME, pretrained=True)            # the record points at the http server
    assert zoo_env["server"].requests == []
    monkeypatch.setenv("GLUON_SUITE_REPO", "file://" + str(zoo_env["store"]))
    got = loaded_weights(get_model(NAME, pretrained=True))
    np.testing.assert_array_equal(got["0.weight"], weights["0.weight"])
    assert zoo_env["server"].requests == []


def test_shipped_checkpoint_loads_offline_with_a_fresh_cache(tmp_path, monkeypatch):
    """The checkpoint inside the source tree (model_zoo/store) needs no network and no cache."""
    from gluon_suite.model_zoo.store import checkpoint_path, load_records
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)
    shipped = [m for m, r in load_records().items() if r["url"].startswith("repo:")]
    assert shipped
    for model in shipped:
        path = checkpoint_path(model, root=str(tmp_path / "cache"))
        assert path.startswith(str(tmp_path / "cache")) and os.path.getsize(path) == load_records()[model]["size"]


def test_mirror_by_file_url(zoo_env, published, monkeypatch):
    rec, _ = published
    monkeypatch.setenv("GLUON_SUITE_REPO", "file://" + str(zoo_env["store"]))
    get_model(NAME, pretrained=True)
    assert zoo_env["server"].requests == []


JOB = """
import hashlib, sys
import numpy as np
from gluon_suite.model_zoo import get_model
net = get_model("digits_cnn", pretrained=True)
h = hashlib.sha256()
for k, p in sorted(net._collect_params_with_prefix().items()):
    h.update(k.encode()); h.update(p.data().asnumpy().tobytes())
print(h.hexdigest())
"""


def test_eight_processes_download_once_and_load_identical_weights(zoo_env, published):
    rec, _ = published
    zoo_env["server"].set(stall=0.5)  # keep the first download in flight while the others arrive
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", JOB], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    digests = {o[0].strip() for o in outs}
    assert len(digests) == 1
    assert zoo_env["server"].requests == ["/" + rec["file_name"]]


def test_cli_download_error_is_one_line(zoo_env, published):
    rec, _ = published
    os.unlink(zoo_env["store"] / rec["file_name"])
    cli = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
    p = subprocess.run([cli, "zoo", "download", NAME], capture_output=True, text=True)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "HTTP 404" in p.stderr
