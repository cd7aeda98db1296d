"""GluonCV's published CIFAR-10 commands (tests/data/gluoncv_cifar_commands.txt: the 20 Vanilla and
Mix-Up rows of GluonCV's CIFAR-10 model zoo, train_cifar10.py and train_mixup_cifar10.py) through our
classification script: every flag parses with GluonCV's meaning (written by hand from GluonCV's two
scripts, not from our parser) and names a registered network; with the flags that say what GluonCV's
scripts fix (CIFAR-10 from a folder, NAG, no warm-up, and mixup with alpha 1 off for the last 20
epochs), the configuration is the whole of what GluonCV's script trains; two commands train one short
epoch on small CIFAR-10 binary files in GluonCV's download folder layout."""
import json
import os
import shlex

import numpy as np
import pytest

from ..conftest import REPO, load_script

COMMANDS = os.path.join(REPO, "tests", "data", "gluoncv_cifar_commands.txt")
SCRIPT = "scripts/cv/train_classification.py"
NETS = ("cifar_resnet20_v1 cifar_resnet56_v1 cifar_resnet110_v1 cifar_resnet20_v2 cifar_resnet56_v2 "
        "cifar_resnet110_v2 cifar_wideresnet16_10 cifar_wideresnet28_10 cifar_wideresnet40_8 "
        "cifar_resnext29_16x64d").split()   # the rows of GluonCV's CIFAR10.csv, read off by hand
ROWS = [row for net in NETS for row in (net, f"{net}-mixup")]

# GluonCV's CIFAR scripts: a flag with a value -> (our key, GluonCV's reading of it)
VALUED = {"--num-epochs": ("epochs", int), "--mode": ("mode", str), "-j": ("num_workers", int),
          "--batch-size": ("batch_size", int), "--wd": ("wd", float), "--lr": ("lr", float),
          "--lr-decay": ("lr_decay", float), "--model": ("model", str),
          "--lr-decay-epoch": ("lr_milestones", lambda text: [float(e) for e in text.split(",")])}
# what each script fixes, with the flags that say it here ({CIFAR}: the folder GluonCV downloads to)
FIXED = {"train_cifar10": {"optimizer": "nag", "lr_mode": "step", "warmup_epochs": 0.0, "dataset": "cifar10",
                           "momentum": 0.9, "mixup": 0.0},
         "train_mixup_cifar10": {"optimizer": "nag", "lr_mode": "step", "warmup_epochs": 0.0, "dataset": "cifar10",
                                 "momentum": 0.9, "mixup": 1.0, "mixup_off_epochs": 20}}
HERE = {"train_cifar10": "--dataset cifar10 --data-dir {CIFAR} --optimizer nag --warmup-epochs 0",
        "train_mixup_cifar10": "--dataset cifar10 --data-dir {CIFAR} --optimizer nag --warmup-epochs 0 --mixup 1 "
                               "--mixup-off-epoch 20"}


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


def _write_batch(path, labels, seed):
    """A CIFAR-10 binary batch: per image one label byte, then 1024 R, 1024 G, 1024 B bytes."""
    rng = np.random.RandomState(seed)
    with open(path, "wb") as f:
        for label in labels:
            f.write(bytes([label]) + rng.randint(0, 256, 3072).astype(np.uint8).tobytes())


@pytest.fixture(scope="module")
def cifar(tmp_path_factory):
    """GluonCV's ~/.mxnet/datasets/cifar10 layout: cifar-10-batches-bin/ with 5 training batches (8
    images) and a test batch of 4."""
    root = tmp_path_factory.mktemp("cifar10")
    folder = root / "cifar-10-batches-bin"
    folder.mkdir()
    for i, labels in enumerate(([0, 1], [2, 3], [4, 5], [6], [7]), 1):
        _write_batch(folder / f"data_batch_{i}.bin", labels, i)
    _write_batch(folder / "test_batch.bin", [0, 3, 5, 9], 0)
    return str(root)


def _config(argv):
    from gluon_suite.cv.recipe import ClassificationConfig
    parser = load_script(SCRIPT).build_parser()
    return ClassificationConfig.from_sources(vars(parser.parse_args(argv)), parser)


def gluoncv_meaning(argv):
    """``({key: value}, GPUs)`` GluonCV's CIFAR scripts give ``argv``, flag by flag."""
    want, gpus, i = {}, None, 0
    while i < len(argv):
        if argv[i] == "--num-gpus":
            gpus = int(argv[i + 1])
        else:
            key, read = VALUED[argv[i]]   # a flag without a meaning here fails the test
            want[key] = read(argv[i + 1])
        i += 2
    return want, gpus


def test_every_row_of_the_cifar_zoo_is_in_the_data_file():
    commands = read_commands()
    assert list(commands) == ROWS
    assert [s for s, _ in commands.values()] == ["train_cifar10", "train_mixup_cifar10"] * len(NETS)


@pytest.mark.parametrize("name", ROWS)
def test_a_published_cifar_command_parses_with_gluoncvs_meaning(cifar, name):
    from gluon_suite.cv.recipe_gluoncv import check_gluoncv_flags, device_spec, mixup_alpha, model_kwargs
    from gluon_suite.model_zoo import resolve
    script, argv = read_commands()[name]
    want, gpus = gluoncv_meaning(argv)
    cfg = _config(argv)                                           # as published: every flag taken
    assert {k: cfg[k] for k in want} == want
    assert device_spec(cfg) == ",".join(str(g) for g in range(gpus))
    assert resolve(cfg.model).name == cfg.model
    full = _config(argv + HERE[script].replace("{CIFAR}", cifar).split())
    fixed = FIXED[script]
    assert {k: full[k] for k in want} == want and {k: full[k] for k in fixed} == fixed
    assert mixup_alpha(full) == fixed["mixup"] and full.data_dir == cifar
    check_gluoncv_flags(full.replace(num_gpus=0))
    assert model_kwargs(full, 10, 3) == {"classes": 10}           # drop_rate 0.0: GluonCV's default


@pytest.mark.parametrize("name", ["cifar_resnet20_v1", "cifar_wideresnet16_10-mixup"])
def test_a_published_cifar_command_trains_one_short_epoch(cifar, tmp_path, monkeypatch, name):
    """On the CPU (--num-gpus 0, -j 0), one epoch of 2 steps of 4 images (mixup on: --mixup-off-epoch 0);
    the rest as published, with what the script fixes."""
    monkeypatch.chdir(tmp_path)
    script, argv = read_commands()[name]
    argv = list(argv)
    for flag, value in (("--num-gpus", "0"), ("-j", "0"), ("--num-epochs", "1"), ("--batch-size", "4")):
        argv[argv.index(flag) + 1] = value
    extra = HERE[script].replace("{CIFAR}", cifar).replace("--mixup-off-epoch 20", "--mixup-off-epoch 0").split()
    out = tmp_path / "run"
    assert load_script(SCRIPT).main(argv + extra + ["--out", str(out), "--no-progress"]) == 0
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["step"] == 2 and records[0]["global_batch"] == 4
    assert records[0]["test_acc"] in (0.0, 0.25, 0.5, 0.75, 1.0)     # 4 test images
    saved = json.loads((out / "config.json").read_text())
    assert (saved["model"], saved["dataset"], saved["optimizer"], saved["mixup"]) == \
        (argv[argv.index("--model") + 1], "cifar10", "nag", 1.0 if script == "train_mixup_cifar10" else 0.0)
