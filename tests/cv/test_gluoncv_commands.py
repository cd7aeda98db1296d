"""GluonCV's published ImageNet commands, one per row of GluonCV's classification model zoo
(tests/data/gluoncv_classification_commands.txt), through our classification script: every command
parses with GluonCV's meaning of each flag (the meanings below are written by hand from GluonCV's
train_imagenet.py and train_horovod.py, not taken from our parser), names a registered network and
passes the script's GluonCV checks; --batch-norm and --use-gn build the network GluonCV's own
get_model builds with batch_norm=True / norm_layer=GroupNorm; five rows train one short epoch on
small RecordIO files. The ResNeSt rows' --auto_aug (AutoGluon's AutoAugment) is refused in one line;
without it their commands run. The ResNet-50 v1d mixup command in full, with its run outputs:
tests/cv/test_gluoncv_command.py; every flag of GluonCV's scripts: test_gluoncv_command_flags.py."""
import json
import os
import shlex

import mxnet as mx
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
          "--rec-val": ("rec_val", str), "--rec-val-idx": ("rec_val_idx", str),
          "--log-interval": ("log_interval", int), "--eval-frequency": ("eval_frequency", int),   # train_horovod.py
          "--data-nthreads": ("num_workers", int)}
# ... a switch -> (key, value): GluonCV's label smoothing is 0.1 and its mixup alpha 0.2
SWITCHES = {"--use-rec": ("use_rec", True), "--last-gamma": ("last_gamma", True), "--no-wd": ("wd_on_bn_bias", False),
            "--label-smoothing": ("label_smoothing", 0.1), "--mixup": ("mixup", 0.2),
            "--batch-norm": ("batch_norm", True), "--use-gn": ("use_gn", True)}
# the commands refused, and what their one line says
REFUSED = {f"resnest{d}": "error: --auto_aug does not apply here: GluonCV's train_horovod.py takes AutoAugment from "
           "AutoGluon" for d in (14, 26, 50, 101, 200, 269)}


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


def argv_of(name, recs, auto_aug=True):
    """The row's published flags, the RecordIO folder filled in (without ``--auto_aug``: the
    ResNeSt commands as they run here)."""
    return [a.replace("{REC}", recs) for a in read_commands()[name][1] if auto_aug or a != "--auto_aug"]


def gluoncv_meaning(argv, script="train_imagenet"):
    """``({key: value}, GPUs)`` GluonCV's ``script`` gives ``argv``, flag by flag (GPUs None:
    train_horovod.py's one GPU per Horovod worker)."""
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
    want.setdefault("lr_mode", "step" if script == "train_imagenet" else "cosine")   # each script's schedule
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


@pytest.mark.parametrize("name", ROWS)
def test_a_published_command_parses_with_gluoncvs_meaning(recs, name):
    from gluon_suite.cv.recipe_gluoncv import check_gluoncv_flags, device_spec
    from gluon_suite.model_zoo import resolve
    argv = argv_of(name, recs, auto_aug=False)
    want, gpus = gluoncv_meaning(argv, read_commands()[name][0])
    if "--use-gn" in argv or "--batch-norm" in argv:
        want.pop("model")   # GluonCV's network with GroupNorm / BatchNorm: test_norm_switches_build_gluoncvs_network
    if "--use-gn" in argv:
        want["mode"] = "imperative"   # GluonCV's GroupNorm cannot be hybridized: test_gluoncvs_group_norm_...
    cfg = _config(argv)
    assert {k: cfg[k] for k in want} == want
    assert device_spec(cfg) == (None if gpus is None else ",".join(str(g) for g in range(gpus)))
    assert resolve(cfg.model).name == cfg.model                  # GluonCV's name is registered as it is
    check_gluoncv_flags(cfg.replace(num_gpus=0) if gpus else cfg)   # --mode, the RecordIO files, --last-gamma


def _blocks(net):
    """The kinds of ``net``'s blocks, depth first."""
    return [type(net).__name__] + [kind for child in net._children.values() for kind in _blocks(child)]


@pytest.mark.parametrize("name", ["vgg16_bn", "vgg19_bn", "resnet50_v1b_gn"])
def test_norm_switches_build_gluoncvs_network(recs, name):
    """--batch-norm / --use-gn: the network GluonCV's train_imagenet.py builds, get_model(--model,
    batch_norm=True) / get_model(--model, norm_layer=gluoncv.nn.GroupNorm) (and last_gamma=True for
    --last-gamma): the same blocks, parameter shapes and zero-initialised gammas as ours."""
    import gluoncv
    from gluon_suite.cv.recipe_gluoncv import model_kwargs
    from gluon_suite.model_zoo import get_model
    argv = argv_of(name, recs)
    model, cfg = argv[argv.index("--model") + 1], _config(argv)
    theirs = {"classes": 3, "pretrained": False}
    if "--use-gn" in argv:
        theirs["norm_layer"] = gluoncv.nn.GroupNorm
    if model.startswith("vgg"):
        theirs["batch_norm"] = "--batch-norm" in argv
    if "--last-gamma" in argv:
        theirs["last_gamma"] = True
    nets = [gluoncv.model_zoo.get_model(model, **theirs), get_model(cfg.model, **model_kwargs(cfg, 3, 3))]
    seen = []
    for net in nets:
        net.initialize()
        net(mx.nd.zeros((1, 3, 32, 32)))
        params = list(net.collect_params().values())
        seen.append((_blocks(net), [p.shape for p in params],
                     [float(p.data().abs().sum().asscalar()) == 0 for p in params if p.name.endswith("gamma")]))
    assert seen[0] == seen[1]
    kinds = seen[0][0]
    assert ("GroupNorm" in kinds) == ("--use-gn" in argv) != ("BatchNorm" in kinds)
    assert any(seen[0][2]) == ("--last-gamma" in argv)


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


@pytest.mark.parametrize("name", ["mobilenet0.25", "resnet18_v1b", "resnet50_v1b_gn", "vgg16_bn", "resnest14"])
def test_a_published_command_trains_one_short_epoch(recs, tmp_path, monkeypatch, capsys, name):
    """On the CPU (--num-gpus 0, -j/--data-nthreads 0), one epoch of 2 steps at 32 pixels; the rest as
    published (ResNeSt's without --auto_aug)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GLUON_SUITE_EMULATE_FLOAT16", "1")
    argv = argv_of(name, recs, auto_aug=False)
    for flag, value in (("--num-gpus", "0"), ("-j", "0"), ("--data-nthreads", "0"), ("--num-epochs", "1"),
                        ("--batch-size", "4"), ("--input-size", "32")):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
    assert load_script("scripts/cv/train_classification.py").main(argv + ["--input-size", "32", "--no-progress"]) == 0
    out = tmp_path / argv[argv.index("--save-dir") + 1]
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["step"] == 2 and records[0]["global_batch"] == 4
    assert json.loads((out / "config.json").read_text())["model"] == name
    notes = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert [n for n in notes if n != "--last-gamma"] == {"resnet50_v1b_gn": ["resnet50_v1b_gn"]}.get(name, [])


def test_gluoncvs_group_norm_cannot_be_hybridized():
    """Why a --use-gn network runs imperatively: GluonCV's own GroupNorm fails once hybridized (it
    reads the batch's shape in Python), as GluonCV's --mode hybrid would; imperatively it normalises
    each sample's channel groups (checked against NumPy)."""
    import gluoncv
    import numpy as np
    x = np.random.RandomState(0).uniform(size=(2, 4, 3, 3)).astype(np.float32)
    layer = gluoncv.nn.GroupNorm(ngroups=2, in_channels=4)
    layer.initialize()
    groups = x.reshape(2, 2, -1)
    want = ((groups - groups.mean(-1, keepdims=True)) / np.sqrt(groups.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    assert np.allclose(layer(mx.nd.array(x)).asnumpy(), want, atol=1e-4)
    layer.hybridize()
    with pytest.raises(mx.base.MXNetError):
        layer(mx.nd.array(x)).wait_to_read()
