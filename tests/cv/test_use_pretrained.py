"""--use-pretrained: GluonCV's fine-tuning start from a local store in GluonCV's format.

GluonCV's real ImageNet files cannot be downloaded here, so each test writes its own mirror: a
``resnet18_v1b`` with GluonCV's 1000-class head and random weights, saved as
``{root}/resnet18_v1b-{sha1[:8]}.params`` exactly as GluonCV's store names its files. The network
the recipe trains must start from those arrays (compared by name with ``mx.nd.load`` of the file),
with a new 3-class head freshly initialised, and train; a missing, damaged or foreign file, or
weights that do not fit the data, stop the run with one line.
"""
import hashlib
import json
import os
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest

from ..conftest import REPO, load_script

SCRIPT = os.path.join(REPO, "scripts", "cv", "train_classification.py")
MODEL = "resnet18_v1b"


def _script():
    return load_script("scripts/cv/train_classification.py")


def _gluoncv_net(classes=1000):
    from gluoncv.model_zoo import get_model
    net = get_model(MODEL, pretrained=False, classes=classes)
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 3, 32, 32)))
    return net


def write_mirror(root, seed=7, name=None):
    """A GluonCV-format file of ``resnet18_v1b`` with 1000 classes and random values everywhere
    (BatchNorm statistics included, variances positive); returns (path, sha1)."""
    net = _gluoncv_net()
    rng = np.random.RandomState(seed)
    for key, p in net._collect_params_with_prefix().items():
        v = rng.uniform(-0.1, 0.1, p.shape)
        if key.endswith(("running_var", "gamma")):
            v = rng.uniform(0.5, 1.5, p.shape)
        p.set_data(mx.nd.array(v))
    os.makedirs(root, exist_ok=True)
    tmp = os.path.join(root, "saving.params")
    net.save_parameters(tmp)
    with open(tmp, "rb") as f:
        sha = hashlib.sha1(f.read()).hexdigest()
    path = os.path.join(root, name or f"{MODEL}-{sha[:8]}.params")
    os.replace(tmp, path)
    return path, sha


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    from gluon_suite.cv.samples import write_image_folder
    return write_image_folder(str(tmp_path_factory.mktemp("images")), train=8, val=4, scale=4)


def _config(images, out, **kw):
    return {"model": MODEL, "dataset": "folder", "data_dir": images, "image_size": 32, "epochs": 1,
            "batch_size": 8, "warmup_epochs": 0, "lr": 0.01, "out": str(out), "progress": False,
            "use_pretrained": True, **kw}


def _spy_start(monkeypatch):
    """The network's parameters (by structural name, one array per context) when the trainer is
    built: after the pretrained weights and before any step."""
    from gluon_suite.cv import recipe
    seen, real, real_get = {}, recipe.DistributedTrainer, recipe.get_model

    def get_model(*args, **kwargs):
        seen["net"] = net = real_get(*args, **kwargs)
        return net

    def trainer(params, *args, **kwargs):
        seen["start"] = {k: [d.asnumpy().copy() for d in p.list_data()]
                         for k, p in seen["net"]._collect_params_with_prefix().items()}
        return real(params, *args, **kwargs)
    monkeypatch.setattr(recipe, "get_model", get_model)
    monkeypatch.setattr(recipe, "DistributedTrainer", trainer)
    return seen


def _check_start(start, mirror_path, classes=3, copies=1):
    file = {k.split(":", 1)[-1]: v.asnumpy() for k, v in mx.nd.load(mirror_path).items()}
    features = [k for k in file if not k.startswith("fc.")]
    assert len(features) > 60 and set(start) == set(features) | {"fc.weight", "fc.bias"}
    for k in features:
        assert len(start[k]) == copies and all(np.array_equal(a, file[k]) for a in start[k]), k
    w, b = start["fc.weight"][0], start["fc.bias"][0]
    assert w.shape == (classes, 512) and b.shape == (classes,) and file["fc.weight"].shape == (1000, 512)
    assert not b.any()                           # a fresh Dense bias is zero
    # the recipe's Xavier (gaussian, fan-in, magnitude 2): std sqrt(2 / 512) = 0.0625
    assert 0.05 < w.std() < 0.075 and abs(w.mean()) < 0.01


def test_gluoncv_table_verified_file_is_where_training_starts(tmp_path, monkeypatch, images):
    """GluonCV's own path: the file named by GluonCV's table hash under $MXNET_HOME/models (as
    GluonCV looks for it), its sha1 checked against that table; here the table's entry is the
    mirror's hash, since GluonCV's real file cannot be fetched. Two CPU contexts: both copies start
    from the file."""
    from gluoncv.model_zoo import model_store
    from gluon_suite.cv import recipe
    from gluon_suite.distributed import LocalCommunicator
    path, sha = write_mirror(str(tmp_path / "mxhome" / "models"))
    monkeypatch.setitem(model_store._model_sha1, MODEL, sha)
    monkeypatch.setenv("MXNET_HOME", str(tmp_path / "mxhome"))
    seen, logs = _spy_start(monkeypatch), []
    res = recipe.train_classification(_config(images, tmp_path / "o"), LocalCommunicator(), log=logs.append,
                                      ctx=[mx.cpu(0), mx.cpu(1)])
    _check_start(seen["start"], path, copies=2)
    assert any(f"from {path} (sha1 matches GluonCV's table)" in m and "new fc layer for 3 classes" in m
               for m in logs), logs
    assert len(res["history"]) == 1 and np.isfinite(res["history"][0]["train_loss"])
    after = {k: p.data().asnumpy() for k, p in seen["net"]._collect_params_with_prefix().items()}
    assert not np.array_equal(after["conv1.weight"], seen["start"]["conv1.weight"][0])   # it trained


def test_script_fine_tunes_from_a_tagged_file_in_a_pretrained_root(tmp_path, images):
    """GluonCV's ``pretrained='HEX'``: a file of one's own named by the start of its sha1, in the
    folder given by --pretrained-root, through the script as a user runs it."""
    path, sha = write_mirror(str(tmp_path / "store"))
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_HOME=str(tmp_path / "h"))
    env.pop("MXNET_HOME", None)
    p = subprocess.run([sys.executable, SCRIPT, "--model", MODEL, "--dataset", "folder", "--data-dir", images,
                        "--input-size", "32", "--num-epochs", "1", "--batch-size", "8", "--lr", "0.01",
                        "--use-pretrained", "--pretrained-root", str(tmp_path / "store"),
                        "--pretrained-tag", sha[:8], "--save-dir", str(out), "--no-progress"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"from {path} (sha1 starts with the tag {sha[:8]})" in p.stdout, p.stdout[-2000:]
    rec = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert len(rec) == 1 and np.isfinite(rec[0]["train_loss"])
    assert json.loads((out / "config.json").read_text())["pretrained_tag"] == sha[:8]


def _run_main(argv, capsys):
    from gluon_suite.utils import run_cli
    with pytest.raises(SystemExit) as ei:
        run_cli(_script().main, argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    return ei.value.code, lines


def _argv(images, tmp_path, *extra):
    return ["--model", MODEL, "--dataset", "folder", "--data-dir", images, "--image-size", "32", "--epochs", "1",
            "--batch-size", "8", "--out", str(tmp_path / "o"), "--no-progress", *extra]


@pytest.mark.parametrize("case", ["missing", "missing_under_mxnet_home", "damaged", "stale_tag", "no_root_for_tag"])
def test_a_file_that_is_not_the_one_named_is_one_line(tmp_path, monkeypatch, capsys, images, case):
    from gluoncv.model_zoo import model_store
    monkeypatch.delenv("MXNET_HOME", raising=False)
    root = tmp_path / "store"
    path, sha = write_mirror(str(root))
    real_short = model_store._model_sha1[MODEL][:8]    # GluonCV's own hash for resnet18_v1b
    if case == "missing":
        extra, needle = ["--pretrained-root", str(tmp_path)], \
            f"{tmp_path}/{MODEL}-{real_short}.params does not exist; copy {MODEL}-{real_short}.params there"
    elif case == "missing_under_mxnet_home":   # GluonCV's own rule for its folder, with nothing there
        monkeypatch.setenv("MXNET_HOME", str(tmp_path / "mxhome"))
        extra, needle = [], f"{tmp_path}/mxhome/models/{MODEL}-{real_short}.params does not exist; copy " \
            f"{MODEL}-{real_short}.params there from a GluonCV cache (~/.mxnet/models) or GluonCV's repository " \
            "(the folder is $MXNET_HOME/models; unset MXNET_HOME to have the zoo download it)"
    elif case == "damaged":   # GluonCV's file name, other content: never loaded
        os.replace(path, root / f"{MODEL}-{real_short}.params")
        extra, needle = ["--pretrained-root", str(root)], \
            f"has sha1 {sha[:12]}..., GluonCV's table says {model_store._model_sha1[MODEL][:12]}..."
    elif case == "stale_tag":  # named by a hash it no longer has
        os.replace(path, root / f"{MODEL}-0123abcd.params")
        extra, needle = ["--pretrained-root", str(root), "--pretrained-tag", "0123abcd"], \
            f"does not start with --pretrained-tag 0123abcd; the file changed since it was named: rename it " \
            f"{MODEL}-{sha[:8]}.params"
    else:
        extra, needle = ["--pretrained-tag", sha[:8]], "give the folder that holds"
    code, lines = _run_main(_argv(images, tmp_path, "--use-pretrained", *extra), capsys)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, needle", [
    (["--pretrained-tag", "xyz"], "argument --pretrained-tag: 'xyz' is not a sha1 prefix"),
    (["--pretrained-tag", "abc"], "'abc' is not a sha1 prefix"),
    (["--pretrained-root", "ROOT"], "--pretrained-root is given but --use-pretrained is not"),
    (["--use-pretrained", "--pretrained-root", "ROOT/absent"],
     "argument --pretrained-root: ROOT/absent does not exist"),
    (["--use-pretrained", "--model", "resnet14_digits"],
     "GluonCV publishes no weights for 'resnet14_digits'; pick a model with GluonCV weights (cifar_resnet20_v1, "),
])
def test_bad_pretrained_flags_are_one_line(tmp_path, capsys, images, argv, needle):
    (tmp_path / "root").mkdir()
    argv = [a.replace("ROOT", str(tmp_path / "root")) for a in argv]
    needle = needle.replace("ROOT", str(tmp_path / "root"))
    code, lines = _run_main(_argv(images, tmp_path) + argv, capsys)
    assert code == 2 and len(lines) == 1 and needle in lines[0], lines
    assert not (tmp_path / "o").exists()     # refused before any work


def test_weights_that_do_not_fit_the_data_are_one_line(tmp_path, monkeypatch, capsys):
    """ImageNet weights take 3-channel images; the grey digits have 1 channel."""
    path, sha = write_mirror(str(tmp_path / "store"))
    monkeypatch.delenv("MXNET_HOME", raising=False)
    code, lines = _run_main(["--model", MODEL, "--dataset", "digits", "--epochs", "1", "--out", str(tmp_path / "o"),
                             "--use-pretrained", "--pretrained-root", str(tmp_path / "store"),
                             "--pretrained-tag", sha[:8], "--no-progress"], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert "'conv1.weight' is (64, 3, 7, 7) in" in lines[0] and "but (64, 1, 7, 7)" in lines[0], lines
    assert "ImageNet weights take 3-channel images" in lines[0]


def test_a_file_of_another_architecture_is_one_line(tmp_path, monkeypatch, capsys, images):
    """A resnet34_v1b file named as resnet18_v1b weights: names that the network lacks."""
    from gluoncv.model_zoo import get_model
    monkeypatch.delenv("MXNET_HOME", raising=False)
    net = get_model("resnet34_v1b", pretrained=False)
    net.initialize()
    net(mx.nd.zeros((1, 3, 32, 32)))
    tmp = tmp_path / "x.params"
    net.save_parameters(str(tmp))
    sha = hashlib.sha1(tmp.read_bytes()).hexdigest()
    (tmp_path / "store").mkdir()
    os.replace(tmp, tmp_path / "store" / f"{MODEL}-{sha[:8]}.params")
    code, lines = _run_main(_argv(images, tmp_path, "--use-pretrained", "--pretrained-root", str(tmp_path / "store"),
                                  "--pretrained-tag", sha[:8]), capsys)
    assert code == 2 and len(lines) == 1, lines
    assert "does not hold the parameters of 'resnet18_v1b' (0 missing, " in lines[0] and "foreign" in lines[0]
