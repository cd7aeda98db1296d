"""GluonCV's published ImageNet command (ResNet-50 v1d with mixup, tests/data/gluoncv_resnet50_v1d_mixup.txt)
parses through our classification script with GluonCV's meaning for every flag, and runs one short
epoch on small RecordIO files; GluonCV's other train_imagenet.py flags (--mixup-alpha, --lr-decay-epoch,
--save-frequency, --resume-params/--resume-states, --mode imperative) do what GluonCV's do, and what
cannot apply (--mode symbolic, --num-gpus on a machine without them) is one line."""
import json
import os

import mxnet as mx
import numpy as np
import pytest

from ..conftest import REPO, load_script

COMMAND = os.path.join(REPO, "tests", "data", "gluoncv_resnet50_v1d_mixup.txt")


def _script():
    return load_script("scripts/cv/train_classification.py")


def _write_rec(folder, split, labels):
    """``split``.rec/.idx in ``folder``: one 40x40 PNG per label, a flat colour of its own."""
    rec, idx = os.path.join(folder, f"{split}.rec"), os.path.join(folder, f"{split}.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, label in enumerate(labels):
        img = np.full((40, 40, 3), (30 * i) % 256, np.uint8)
        img[:, :, label % 3] = 200
        w.write_idx(i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(label), i, 0), img, img_fmt=".png"))
    w.close()


@pytest.fixture(scope="module")
def recs(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("rec"))
    _write_rec(folder, "train", [0, 1, 2, 0, 1, 2, 0, 1])
    _write_rec(folder, "val", [0, 1, 2, 2])
    return folder


def published(rec_dir):
    """The published flag list with {REC_DIR} filled in."""
    argv = []
    with open(COMMAND, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                argv += line.replace("{REC_DIR}", rec_dir).split()
    return argv


def _swap(argv, **changes):
    """``argv`` with the values of some flags replaced (``num_gpus=0`` for ``--num-gpus``)."""
    out = list(argv)
    for key, value in changes.items():
        flag = "-j" if key == "j" else "--" + key.replace("_", "-")
        out[out.index(flag) + 1] = str(value)
    return out


def _config(argv):
    from gluon_suite.cv.recipe import ClassificationConfig
    parser = _script().build_parser()
    return ClassificationConfig.from_sources(vars(parser.parse_args(argv)), parser)


def test_every_published_flag_has_gluoncvs_meaning(recs):
    cfg = _config(published(recs))
    join = os.path.join
    assert (cfg.rec_train, cfg.rec_train_idx, cfg.rec_val, cfg.rec_val_idx) == \
        (join(recs, "train.rec"), join(recs, "train.idx"), join(recs, "val.rec"), join(recs, "val.idx"))
    assert cfg.use_rec is True and cfg.model == "resnet50_v1d" and cfg.mode == "hybrid"
    assert (cfg.lr, cfg.lr_mode, cfg.epochs, cfg.batch_size) == (0.4, "cosine", 200, 128)
    assert (cfg.num_gpus, cfg.num_workers, cfg.dtype, cfg.warmup_epochs) == (8, 60, "float16", 5.0)
    assert cfg.last_gamma is True and cfg.wd_on_bn_bias is False          # --no-wd
    assert (cfg.label_smoothing, cfg.mixup) == (0.1, 0.2)                 # GluonCV's epsilon and alpha
    assert cfg.out == "params_resnet50_v1d_mixup" and cfg.logging_file == "resnet50_v1d_mixup.log"
    from gluon_suite.cv.recipe_gluoncv import device_spec
    assert device_spec(cfg) == "0,1,2,3,4,5,6,7"


def test_gluoncvs_other_flags_parse_with_their_meaning(recs, tmp_path):
    from gluon_suite.cv.recipe_gluoncv import device_spec, mixup_alpha
    cfg = _config(["--mixup", "--mixup-alpha", "0.4", "--lr-decay-epoch", "40,60", "--lr-mode", "step",
                   "--save-frequency", "10", "--num-data-workers", "3", "--use_se", "--mixup-off-epoch", "2",
                   "--resume-params", COMMAND, "--resume-states", COMMAND, "--num-gpus", "0"])
    assert mixup_alpha(cfg) == 0.4 and cfg.lr_milestones == [40.0, 60.0] and cfg.save_frequency == 10
    assert (cfg.num_workers, cfg.use_se, cfg.mixup_off_epochs) == (3, True, 2)
    assert cfg.resume_params == cfg.resume_states == COMMAND and device_spec(cfg) == "-1"
    assert _config(["--lr-milestones", "5", "7"]).lr_milestones == [5.0, 7.0]
    assert mixup_alpha(_config(["--mixup-alpha", "0.4"])) == 0.0     # GluonCV: alpha without --mixup is off
    assert mixup_alpha(_config(["--mixup", "0.3"])) == 0.3


def _run(argv, capsys):
    from gluon_suite.utils import run_cli
    with pytest.raises(SystemExit) as ei:
        run_cli(_script().main, argv)
    return ei.value.code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _short(recs, model="resnet18_v1"):
    """The published command on a small model for one epoch of 2 steps on the CPU (float16 emulated)."""
    return _swap(published(recs), model=model, num_gpus=0, j=0, num_epochs=1, batch_size=4) + \
        ["--input-size", "32", "--no-progress"]


def test_the_published_command_trains_one_short_epoch(recs, tmp_path, monkeypatch, capsys):
    from gluon_suite.cv import recipe
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GLUON_SUITE_EMULATE_FLOAT16", "1")
    seen, real = {}, recipe.get_model

    def spy(name, **kwargs):
        seen["kwargs"], seen["net"] = kwargs, real(name, **kwargs)
        return seen["net"]
    monkeypatch.setattr(recipe, "get_model", spy)
    code = _script().main(_short(recs))
    assert code == 0
    assert seen["kwargs"] == {"classes": 3, "last_gamma": True}   # 3 labels in val.rec; GluonCV's last_gamma
    assert seen["net"]._active                                     # --mode hybrid
    out = tmp_path / "params_resnet50_v1d_mixup"                   # --save-dir
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["global_batch"] == 4 and records[0]["step"] == 2
    logged = (tmp_path / "resnet50_v1d_mixup.log").read_text().splitlines()   # --logging-file
    assert any(line.startswith("resnet18_v1 on rec: 1 worker(s) x batch 4") for line in logged), logged
    assert any(line.startswith("epoch   1  loss") for line in logged), logged
    assert json.loads((out / "config.json").read_text())["mixup"] == 0.2


def test_save_frequency_then_resume_params_and_states(recs, tmp_path, monkeypatch):
    """--save-frequency 1 keeps MODEL-EPOCH.params/.states; --resume-params/--resume-states start a
    new run from them: the network holds the file's arrays and the trainer its update count."""
    from gluon_suite.cv import recipe
    base = ["--use-rec", "--rec-train", os.path.join(recs, "train.rec"), "--rec-val", os.path.join(recs, "val.rec"),
            "--model", "resnet18_v1", "--input-size", "32", "--batch-size", "4", "--epochs", "2", "--no-progress",
            "--mode", "imperative", "--warmup-epochs", "0"]
    assert _script().main(base + ["--out", str(tmp_path / "a"), "--save-frequency", "1"]) == 0
    saved = sorted(os.listdir(tmp_path / "a"))
    assert {"resnet18_v1-0001.params", "resnet18_v1-0001.states", "resnet18_v1-0002.params",
            "resnet18_v1-0002.states"} <= set(saved), saved
    params, states = (str(tmp_path / "a" / f"resnet18_v1-0002.{ext}") for ext in ("params", "states"))
    seen, real = {}, recipe.load_resume_files

    def spy(cfg, net, trainer, ctx):
        real(cfg, net, trainer, ctx)
        seen["net"] = {k: p.data().asnumpy() for k, p in net._collect_params_with_prefix().items()}
        seen["updates"], seen["hybrid"] = trainer.optimizer.num_update, net._active
    monkeypatch.setattr(recipe, "load_resume_files", spy)
    assert _script().main(base + ["--out", str(tmp_path / "b"), "--epochs", "1", "--resume-params", params,
                                  "--resume-states", states]) == 0
    file = {k: v.asnumpy() for k, v in mx.nd.load(params).items()}
    assert set(file) == set(seen["net"]) and all(np.array_equal(file[k], seen["net"][k]) for k in file)
    assert seen["updates"] == 4           # 2 epochs x 2 steps of the first run
    assert seen["hybrid"] is False        # --mode imperative


@pytest.mark.parametrize("argv, needle", [
    (["--mode", "symbolic"], "--mode symbolic does not apply here"),
    (["--num-gpus", "1"], "--num-gpus 1 asks for 1 GPU(s) but MXNet sees 0"),
    (["--num-gpus", "1", "--gpus", "0"], "--num-gpus 1 and --gpus 0 both name the devices"),
    (["--rec-train", COMMAND], "--rec-train is given but --use-rec is not"),
    (["--use-rec", "--rec-train", COMMAND[:-4] + ".rec"], "argument --rec-train:"),
    (["--resume-states", COMMAND], "--resume-states is given without --resume-params"),
    (["--resume-params", COMMAND], "--resume-params " + COMMAND + " does not fit --model"),
    (["--mod", "hybrid"], "unrecognized arguments: --mod"),          # no abbreviation of --mode or --model
    (["--mode", "hybird"], "argument --mode: unknown value 'hybird'; did you mean 'hybrid'?"),
])
def test_what_cannot_apply_is_one_line(tmp_path, capsys, argv, needle):
    if argv[0] == "--num-gpus" and mx.context.num_gpus() > 0:
        pytest.skip("this machine has GPUs")
    code, lines = _run(["--model", "digits_cnn", "--epochs", "1", "--out", str(tmp_path / "o"), "--no-progress"]
                       + argv, capsys)
    assert code == 2 and len(lines) == 1 and needle in lines[0], lines


def _subparsers(parser, name):
    """``[(command name, parser)]`` of ``parser`` and every subcommand under it."""
    import argparse
    out = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                out += _subparsers(p, f"{name} {sub}")
    return out


def test_abbreviations_are_refused_in_every_script(capsys):
    """--mode hybrid was read as --model hybrid while argparse took abbreviations."""
    import glob
    scripts = sorted(glob.glob(os.path.join(REPO, "scripts", "**", "*.py"), recursive=True))
    assert len(scripts) >= 13
    for script in scripts:
        parser = load_script(os.path.relpath(script, REPO)).build_parser()
        assert parser.allow_abbrev is False, script
    with pytest.raises(SystemExit):
        _script().build_parser().parse_args(["--num-epoch", "3"])   # a prefix of --num-epochs
    from gluon_suite.cli import build_parser
    commands = _subparsers(build_parser(), "gluon-suite")
    assert {"gluon-suite samples", "gluon-suite zoo publish", "gluon-suite launch"} <= {n for n, _ in commands}
    assert [n for n, p in commands if p.allow_abbrev] == []
    with pytest.raises(SystemExit):
        build_parser().parse_args(["samples", "--ou", "data"])   # a prefix of --out
    assert "unrecognized arguments: --ou" in capsys.readouterr().err
