"""GluonCV's published ImageNet commands, one per row of GluonCV's classification model zoo
(tests/data/gluoncv_classification_commands.txt), through our classification script: every
train_imagenet.py command parses with GluonCV's meaning of each flag (the meanings below are written
by hand from GluonCV's train_imagenet.py, not taken from our parser), names a registered network and
passes the script's GluonCV checks; two with small networks train one short epoch on small RecordIO
files. The commands that name what the suite leaves out (--batch-norm, --use-gn, the ResNeSt rows'
train_horovod.py flags) are refused in one line. The ResNet-50 v1d mixup command in full, with its run
outputs: tests/cv/test_gluoncv_command.py."""
import json
import os
import shlex

import pytest

from ..conftest import REPO, load_script
from .test_gluoncv_command import _write_rec

COMMANDS = os.path.join(REPO, "tests", "data", "gluoncv_classification_commands.txt")

# the rows of GluonCV's model-zoo page with a command file, read off the page by hand
ROWS = ("resnet18_v1 resnet34_v1 resnet50_v1 resnet101_v1 resnet152_v1 resnet18_v1b resnet34_v1b resnet50_v1b "
        "resnet50_v1b_gn resnet101_v1b resnet152_v1b resnet50_v1c resnet101_v1c resnet50_v1d-mixup resnet50_v1d "
        "resnet101_v1d-mixup resnet101_v1d resnet152_v1d-mixup resnet152_v1d resnet18_v2 resnet34_v2 resnet50_v2 "
        "resnet101_v2 resnet152_v2 resnext50_32x4d resnext101_32x4d resnext101_64x4d se_resnext50_32x4d "
        "se_resnext101_32x4d se_resnext101_64x4d mobilenet1.0-mixup mobilenet1.0 mobilenet0.75 mobilenet0.5 "
        "mobilenet0.25 mobilenetv2_1.0 mobilenetv2_0.75 mobilenetv2_0.5 mobilenetv2_0.25 mobilenetv3_large "
        "mobilenetv3_small darknet53-mixup darknet53 inceptionv3-mixup googlenet-mixup train_xception inceptionv3 "
        "vgg16 vgg19 vgg16_bn vgg19_bn resnest14 resnest26 resnest50 resnest101 resnest200 resnest269").split()

# GluonCV's train_imagenet.py: a flag with a value -> (our configuration key, GluonCV's reading of it)
VALUED = {"--model": ("model", str), "--mode": ("mode", str), "--lr": ("lr", float), "--lr-mode": ("lr_mode", str),
          "--num-epochs": ("epochs", int), "--batch-size": ("batch_size", int), "-j": ("num_workers", int),
          "--dtype": ("dtype", str), "--warmup-epochs": ("warmup_epochs", float), "--wd": ("wd", float),
          "--lr-decay": ("lr_decay", float),
          "--lr-decay-epoch": ("lr_milestones", lambda text: [float(e) for e in text.split(",")]),
          "--input-size": ("image_size", int), "--save-dir": ("out", str), "--logging-file": ("logging_file", str),
          "--rec-train": ("rec_train", str), "--rec-train-idx": ("rec_train_idx", str),
          "--rec-val": ("rec_val", str), "--rec-val-idx": ("rec_val_idx", str)}
# ... a switch -> (key, value): GluonCV's label smoothing is 0.1 and its mixup alpha 0.2
SWITCHES = {"--use-rec": ("use_rec", True), "--last-gamma": ("last_gamma", True), "--no-wd": ("wd_on_bn_bias", False),
            "--label-smoothing": ("label_smoothing", 0.1), "--mixup": ("mixup", 0.2)}
# the commands refused, and what their one line says
REFUSED = {"resnet50_v1b_gn": "unrecognized arguments: --use-gn",
           "vgg16_bn": "unrecognized arguments: --batch-norm", "vgg19_bn": "unrecognized arguments: --batch-norm"}
REFUSED.update({f"resnest{d}": "unrecognized arguments: --log-interval 100 --eval-frequency 5 --auto_aug"
                for d in (14, 26, 50, 101, 200, 269)})


def read_commands():
    """``{row: (script, published flags)}`` of the data file."""
    out, name = {}, None
    with open(COMMANDS, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                name, script = line[1:].split("] ")
                out[name] = (script, [])
            elif line.startswith("published:"):
                out[name][1].extend(shlex.split(line[len("published:"):]))
    return out


@pytest.fixture(scope="module")
def recs(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("rec"))
    _write_rec(folder, "train", [0, 1, 2, 0, 1, 2, 0, 1])
    _write_rec(folder, "val", [0, 1, 2, 2])
    return folder


def argv_of(name, recs):
    return [a.replace("{REC}", recs) for a in read_commands()[name][1]]


def gluoncv_meaning(argv):
    """``({key: value}, GPUs)`` GluonCV's train_imagenet.py gives ``argv``, flag by flag."""
    want, gpus, i = {}, None, 0
    while i < len(argv):
        flag = argv[i]
        if flag in SWITCHES:
            key, value = SWITCHES[flag]
            i += 1
        elif flag == "--num-gpus":
            gpus, i = int(argv[i + 1]), i + 2
            continue
        else:
            key, read = VALUED[flag]   # a flag without a meaning here fails the test
            value, i = read(argv[i + 1]), i + 2
        want[key] = value
    want.setdefault("lr_mode", "step")   # GluonCV's default schedule
    return want, gpus


def _config(argv):
    from gluon_suite.cv.recipe import ClassificationConfig
    parser = load_script("scripts/cv/train_classification.py").build_parser()
    return ClassificationConfig.from_sources(vars(parser.parse_args(argv)), parser)


def test_every_row_with_a_command_is_in_the_data_file():
    commands = read_commands()
    assert list(commands) == ROWS
    assert {s for n, (s, _) in commands.items() if n.startswith("resnest")} == {"train_horovod"}
    assert {s for n, (s, _) in commands.items() if not n.startswith("resnest")} == {"train_imagenet"}


@pytest.mark.parametrize("name", [n for n in ROWS if n not in REFUSED])
def test_a_published_command_parses_with_gluoncvs_meaning(recs, name):
    from gluon_suite.cv.recipe_gluoncv import check_gluoncv_flags, device_spec
    from gluon_suite.model_zoo import resolve
    argv = argv_of(name, recs)
    want, gpus = gluoncv_meaning(argv)
    cfg = _config(argv)
    assert {k: cfg[k] for k in want} == want
    assert device_spec(cfg) == ",".join(str(g) for g in range(gpus))
    assert resolve(cfg.model).name == cfg.model                  # GluonCV's name is registered as it is
    check_gluoncv_flags(cfg.replace(num_gpus=0))                 # --mode, the RecordIO files, --last-gamma


def test_decay_epochs_without_a_schedule_mean_gluoncvs_step_decay(recs):
    """The VGG rows give --lr-decay 0.1 --lr-decay-epoch 50,80 and no --lr-mode: GluonCV's default step
    schedule, not the recipe's cosine (which would ignore the epochs); a schedule named stays."""
    assert _config(argv_of("vgg16", recs)).lr_mode == "step"
    assert _config(["--lr-decay-epoch", "50,80", "--lr-mode", "cosine"]).lr_mode == "cosine"
    assert _config(["--lr-milestones", "5"]).lr_mode == "step"
    assert _config([]).lr_mode == "cosine"


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_command_naming_what_is_left_out_is_one_line(recs, tmp_path, capsys, name):
    from gluon_suite.utils import run_cli
    with pytest.raises(SystemExit) as ei:
        run_cli(load_script("scripts/cv/train_classification.py").main,
                argv_of(name, recs) + ["--out", str(tmp_path / "run")])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert ei.value.code == 2 and len(lines) == 1 and REFUSED[name] in lines[0], lines
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["mobilenet0.25", "resnet18_v1b"])
def test_a_published_command_trains_one_short_epoch(recs, tmp_path, monkeypatch, name):
    """On the CPU (--num-gpus 0, -j 0), one epoch of 2 steps at 32 pixels; the rest as published."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GLUON_SUITE_EMULATE_FLOAT16", "1")
    argv = argv_of(name, recs)
    for flag, value in (("--num-gpus", "0"), ("-j", "0"), ("--num-epochs", "1"), ("--batch-size", "4")):
        argv[argv.index(flag) + 1] = value
    assert load_script("scripts/cv/train_classification.py").main(argv + ["--input-size", "32", "--no-progress"]) == 0
    out = tmp_path / f"params_{name}"                              # --save-dir
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["step"] == 2 and records[0]["global_batch"] == 4
    assert json.loads((out / "config.json").read_text())["model"] == name
