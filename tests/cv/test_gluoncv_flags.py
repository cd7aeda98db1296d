"""GluonCV's spellings and meanings carry over to the classification script: --num-epochs,
--save-dir and --input-size are aliases, bare --mixup and --label-smoothing take GluonCV's values
(alpha 0.2, epsilon 0.1), --batch-size is per device (a worker's batch is it times its contexts),
weight decay applies to every parameter unless --no-wd takes it off BatchNorm and biases."""
import os

import pytest

from ..conftest import REPO, load_script


@pytest.fixture(scope="module")
def script():
    return load_script("scripts/cv/train_classification.py")


@pytest.fixture(scope="module")
def parser(script):
    return script.build_parser()


def test_aliases_set_the_same_keys(parser):
    a = vars(parser.parse_args(["--num-epochs", "3", "--save-dir", "runs/x", "--input-size", "16"]))
    b = vars(parser.parse_args(["--epochs", "3", "--out", "runs/x", "--image-size", "16"]))
    assert a == b == {"epochs": 3, "out": "runs/x", "image_size": 16}


def test_bare_mixup_and_label_smoothing_take_gluoncv_values(parser):
    assert vars(parser.parse_args(["--mixup", "--label-smoothing"])) == {"mixup": 0.2, "label_smoothing": 0.1}
    assert vars(parser.parse_args(["--mixup", "0.4", "--label-smoothing", "0.05"])) == \
        {"mixup": 0.4, "label_smoothing": 0.05}


def test_no_wd_excludes_bn_and_bias_from_weight_decay(parser):
    assert vars(parser.parse_args(["--no-wd"])) == {"wd_on_bn_bias": False}
    assert vars(parser.parse_args(["--wd-on-bn-bias"])) == {"wd_on_bn_bias": True}


def test_default_decays_everything_and_wd_on_bn_bias_is_the_explicit_on(parser):
    from gluon_suite.cv.recipe import DEFAULTS
    assert DEFAULTS["wd_on_bn_bias"] is True            # GluonCV: weight decay on every parameter
    assert vars(parser.parse_args([])) == {}            # nothing set: the default holds


# ---- per-device batch: counted on the slices each device receives --------------------------------------

DIGITS_TRAIN = 1438   # scikit-learn's digits: 1,797 images, 359 held out for test (docs/cv.md)


def _run_counting_slices(tmp_path, monkeypatch, ctx, **cfg):
    """One epoch of digits_cnn (16x16 inputs) on ``ctx``; returns (banner lines, per step [(images, context)] of the
    batch slices that the devices received, the log's record)."""
    import json
    from mxnet import gluon
    from gluon_suite.cv import recipe
    from gluon_suite.distributed import LocalCommunicator
    steps, real = [], gluon.utils.split_and_load

    def spy(data, ctx_list, *args, **kwargs):
        out = real(data, ctx_list, *args, **kwargs)
        if data.ndim == 4:          # the images (labels and targets are split alike)
            steps.append([(int(s.shape[0]), s.context) for s in out])
        return out
    monkeypatch.setattr(gluon.utils, "split_and_load", spy)
    logs, out = [], tmp_path / "o"
    recipe.train_classification({"model": "digits_cnn", "image_size": 16, "epochs": 1, "warmup_epochs": 0, "progress": False,
                                 "out": str(out), **cfg}, LocalCommunicator(), log=logs.append, ctx=ctx)
    record = json.loads((out / "log.jsonl").read_text().splitlines()[0])
    return [m for m in logs if m.startswith("digits_cnn on digits:")], steps, record


def test_batch_size_is_per_device_on_two_contexts(tmp_path, monkeypatch):
    """--batch-size 8 with two contexts: every device gets 8 images a step, the worker 16: the
    epoch's 1,438 images make 89 steps of 16 and a last one of the 14 left (7 per device)."""
    import mxnet as mx
    banner, steps, record = _run_counting_slices(tmp_path, monkeypatch, [mx.cpu(0), mx.cpu(1)], batch_size=8)
    assert len(steps) == 90 and steps[-1] == [(7, mx.cpu(0)), (7, mx.cpu(1))]
    assert all(s == [(8, mx.cpu(0)), (8, mx.cpu(1))] for s in steps[:-1]), steps[:3]
    assert sum(n for s in steps for n, _ in s) == DIGITS_TRAIN
    assert len(banner) == 1 and "1 worker(s) x batch 16 (2 device(s) x 8) = global batch 16" in banner[0], banner
    assert record["global_batch"] == 16


def test_batch_size_on_one_device_is_the_workers_batch_as_before(tmp_path, monkeypatch):
    import mxnet as mx
    banner, steps, _ = _run_counting_slices(tmp_path, monkeypatch, [mx.cpu(0)], batch_size=16)
    assert len(steps) == 90 and steps[-1] == [(14, mx.cpu(0))]
    assert all(s == [(16, mx.cpu(0))] for s in steps[:-1])
    assert "1 worker(s) x batch 16 (1 device(s) x 16) = global batch 16" in banner[0], banner


def test_global_batch_size_stays_the_total_over_devices(tmp_path, monkeypatch):
    import mxnet as mx
    banner, steps, _ = _run_counting_slices(tmp_path, monkeypatch, [mx.cpu(0), mx.cpu(1)], global_batch_size=16)
    assert len(steps) == 90 and all(s == [(8, mx.cpu(0)), (8, mx.cpu(1))] for s in steps[:-1])
    assert "1 worker(s) x batch 16 (2 device(s) x 8) = global batch 16" in banner[0], banner


# ---- weight decay: which parameters the optimizer decays ----------------------------------------------

class _Built(Exception):
    """Raised once the trainer exists: the tests need its optimizer, not a run."""


def _effective_wd(monkeypatch, tmp_path, cfg=None, run=None):
    """``{parameter name: (shape, weight decay the optimizer applies)}`` of the trainable
    parameters, read from the optimizer of the trainer the recipe builds for ``cfg`` (or that
    ``run()`` makes it build)."""
    from gluon_suite.cv import recipe
    from gluon_suite.distributed import LocalCommunicator
    real = recipe.DistributedTrainer

    def build(*args, **kwargs):
        trainer = real(*args, **kwargs)
        opt = trainer._optimizer
        found.update({p.name: (tuple(p.shape), opt._get_wd(i)) for i, p in enumerate(trainer._params)
                      if p.grad_req != "null"})
        raise _Built
    found = {}
    monkeypatch.setattr(recipe, "DistributedTrainer", build)
    run = run or (lambda: recipe.train_classification({**cfg, "out": str(tmp_path / "o"), "progress": False},
                                                      LocalCommunicator(), log=lambda m: None))
    with pytest.raises(_Built):
        run()
    return found


@pytest.mark.parametrize("model", ["resnet14_digits", "resnest14_digits", "digits_cnn"])
@pytest.mark.parametrize("flags, off_for_vectors", [([], False), (["--wd-on-bn-bias"], False), (["--no-wd"], True)])
def test_weight_decay_per_parameter_against_a_shape_rule(parser, tmp_path, monkeypatch, model, flags,
                                                         off_for_vectors):
    """Reference: in these convolutional networks every 1-D trainable parameter is a bias or a
    BatchNorm gamma/beta and every other one a weight. Default and --wd-on-bn-bias: every parameter
    decays at --wd; --no-wd: the 1-D ones get none, the weights keep --wd."""
    cfg = {"model": model, "wd": 0.01, **vars(parser.parse_args(flags))}
    got = _effective_wd(monkeypatch, tmp_path, cfg)
    vectors = [n for n, (shape, _) in got.items() if len(shape) == 1]
    assert vectors and len(vectors) < len(got)
    for name, (shape, wd) in got.items():
        want = 0.0 if off_for_vectors and len(shape) == 1 else 0.01
        assert wd == pytest.approx(want), (name, shape, wd)


def test_the_published_cser_config_keeps_its_no_wd(parser, tmp_path, monkeypatch):
    """configs/cv/digits_resnest14_cser.yaml (make demo, the published resnest14_digits) was trained
    without decay on BN and biases: it says so itself, so the new default leaves it as published."""
    from gluon_suite.utils.config import load_yaml_config
    cfg = load_yaml_config(os.path.join(REPO, "configs", "cv", "digits_resnest14_cser.yaml"), parser)
    assert cfg["wd_on_bn_bias"] is False
    got = _effective_wd(monkeypatch, tmp_path, {**cfg, "epochs": 1})
    for name, (shape, wd) in got.items():
        assert wd == pytest.approx(0.0 if len(shape) == 1 else 0.0005), (name, shape, wd)


def test_no_wd_in_a_config_is_gluoncvs_spelling_of_wd_on_bn_bias_false(script, tmp_path, monkeypatch):
    config = tmp_path / "c.yaml"
    config.write_text("model: resnet14_digits\nwd: 0.01\nno_wd: true\n")
    got = _effective_wd(monkeypatch, tmp_path, run=lambda: script.main(
        ["--config", str(config), "--epochs", "1", "--out", str(tmp_path / "o"), "--no-progress"]))
    assert any(len(shape) == 1 for shape, _ in got.values())
    for name, (shape, wd) in got.items():
        assert wd == pytest.approx(0.0 if len(shape) == 1 else 0.01), (name, shape, wd)


@pytest.mark.parametrize("text, needle", [
    ("no_wd: true\nwd_on_bn_bias: true\n", "no_wd: true contradicts wd_on_bn_bias: true; keep one of the two keys"),
    ("no_wd: 1\n", "no_wd: must be true or false, got 1"),
])
def test_bad_no_wd_in_a_config_is_one_line(script, tmp_path, capsys, text, needle):
    from gluon_suite.utils import run_cli
    config = tmp_path / "c.yaml"
    config.write_text(text)
    with pytest.raises(SystemExit) as ei:
        run_cli(script.main, ["--config", str(config), "--out", str(tmp_path / "o")])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert ei.value.code == 2 and len(lines) == 1 and needle in lines[0], lines
