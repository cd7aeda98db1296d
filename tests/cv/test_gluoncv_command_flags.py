"""Every flag of GluonCV's four classification scripts (our list of their names:
tests/data/gluoncv_classification_flags.txt) through our classification script: each is taken with
GluonCV's meaning, or refused in one line that says it does not apply here; never argparse's generic
"unrecognized arguments". The meanings below are written by hand from GluonCV's scripts (what each
flag sets there), not from our parser; a taken flag must change exactly those keys and leave every
other key at the recipe's default."""
import os

import pytest

from ..conftest import REPO, load_script

FLAGS = os.path.join(REPO, "tests", "data", "gluoncv_classification_flags.txt")
SCRIPT = "scripts/cv/train_classification.py"

# flag -> (what follows it in the test's command, {key: GluonCV's meaning}); "devices" is the device
# list the run gets (--num-gpus 2: GPUs 0 and 1), "alpha" mixup's Beta parameter, "net_kwargs" what
# the network is built with. {FILE} is an existing file, {DIR} an existing folder.
TAKEN = {
    "--data-dir": (["{DIR}"], {"data_dir": "{DIR}", "dataset": "folder"}),   # ImageNet's train/ and val/ folders
    "--rec-train": (["{FILE}"], {"rec_train": "{FILE}"}),
    "--rec-train-idx": (["{FILE}"], {"rec_train_idx": "{FILE}"}),
    "--rec-val": (["{FILE}"], {"rec_val": "{FILE}"}),
    "--rec-val-idx": (["{FILE}"], {"rec_val_idx": "{FILE}"}),
    "--use-rec": ([], {"use_rec": True}),
    "--batch-size": (["8"], {"batch_size": 8}),
    "--dtype": (["float16"], {"dtype": "float16"}),
    "--num-gpus": (["2"], {"num_gpus": 2, "devices": "0,1"}),
    "-j": (["3"], {"num_workers": 3}),
    "--num-data-workers": (["3"], {"num_workers": 3}),
    "--data-nthreads": (["3"], {"num_workers": 3}),
    "--num-epochs": (["7"], {"epochs": 7}),
    "--lr": (["0.3"], {"lr": 0.3}),
    "--momentum": (["0.8"], {"momentum": 0.8}),
    "--wd": (["0.0005"], {"wd": 0.0005}),
    "--lr-mode": (["step"], {"lr_mode": "step"}),
    "--lr-decay": (["0.2"], {"lr_decay": 0.2}),
    # train_imagenet.py: range(3, num_epochs, 3) under its default step schedule
    "--lr-decay-period": (["3", "--num-epochs", "11"], {"lr_decay_period": 3, "epochs": 11,
                                                        "lr_milestones": [3.0, 6.0, 9.0], "lr_mode": "step"}),
    "--lr-decay-epoch": (["30,60"], {"lr_milestones": [30.0, 60.0], "lr_mode": "step"}),
    "--warmup-epochs": (["2"], {"warmup_epochs": 2.0}),
    "--last-gamma": ([], {"last_gamma": True}),
    "--mode": (["imperative"], {"mode": "imperative"}),
    "--model": (["resnet18_v1"], {"model": "resnet18_v1"}),
    "--input-size": (["64"], {"image_size": 64}),
    "--use-pretrained": ([], {"use_pretrained": True}),
    "--use_se": ([], {"use_se": True}),
    "--mixup": ([], {"mixup": 0.2, "alpha": 0.2}),
    "--mixup-alpha": (["0.4", "--mixup"], {"mixup": 0.2, "mixup_alpha": 0.4, "alpha": 0.4}),
    "--mixup-off-epoch": (["2"], {"mixup_off_epochs": 2}),
    "--label-smoothing": ([], {"label_smoothing": 0.1}),
    "--no-wd": ([], {"wd_on_bn_bias": False}),
    "--batch-norm": (["--model", "vgg11"], {"batch_norm": True, "model": "vgg11_bn"}),   # get_vgg(batch_norm=True)
    # norm_layer=GroupNorm, run imperatively (GluonCV's GroupNorm cannot be hybridized: test_gluoncv_commands.py)
    "--use-gn": (["--model", "resnet50_v1b"], {"use_gn": True, "model": "resnet50_v1b_gn", "mode": "imperative"}),
    "--save-frequency": (["5"], {"save_frequency": 5}),
    "--save-period": (["5"], {"save_frequency": 5}),
    "--save-dir": (["{DIR}/params"], {"out": "{DIR}/params"}),
    "--resume-params": (["{FILE}"], {"resume_params": "{FILE}"}),
    "--resume-from": (["{FILE}"], {"resume_params": "{FILE}"}),   # the CIFAR scripts' net.load_parameters
    "--resume-states": (["{FILE}", "--resume-params", "{FILE}"], {"resume_states": "{FILE}",
                                                                  "resume_params": "{FILE}"}),
    "--log-interval": (["20"], {"log_interval": 20}),
    "--logging-file": (["{DIR}/train.log"], {"logging_file": "{DIR}/train.log"}),
    "--no-cuda": ([], {"no_cuda": True, "devices": "-1"}),
    "--eval-frequency": (["5"], {"eval_frequency": 5}),
    "--drop-rate": (["0.3", "--model", "cifar_wideresnet16_10"],
                    {"drop_rate": 0.3, "model": "cifar_wideresnet16_10",
                     "net_kwargs": {"classes": 10, "drop_rate": 0.3}}),
}
# taken at the value the recipe has (GluonCV's default), refused at another
AT_DEFAULT = {"--warmup-lr": ("0", "0.1"), "--crop-ratio": ("0.875", "0.9"), "--resume-epoch": ("0", "3"),
              "--dropblock-prob": ("0", "0.1"), "--data-backend": ("mxnet", "dali-gpu")}
# refused whatever their value (None: a switch)
REFUSED = {"--teacher": "resnet50_v1", "--temperature": "20", "--hard-weight": "0.5", "--auto_aug": None,
           "--use_sk": None, "--use_avd": None, "--save-plot-dir": ".", "--logging-dir": "logs",
           "--rgb-mean": "123.68,116.779,103.939", "--rgb-std": "58.393,57.12,57.375",
           "--num-training-samples": "1281167"}


def read_flags():
    """``{script: {flag: kind}}`` of the data file."""
    out = {}
    with open(FLAGS, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                script, names = line.split(":", 1)
                out[script] = dict(word.split(":") for word in names.split())
    return out


def _fill(items, tmp_path):
    def one(v):
        if isinstance(v, str):
            return v.replace("{FILE}", FLAGS).replace("{DIR}", str(tmp_path))
        return v
    return [one(v) for v in items] if isinstance(items, list) else {k: one(v) for k, v in items.items()}


def _config(argv):
    from gluon_suite.cv.recipe import ClassificationConfig
    parser = load_script(SCRIPT).build_parser()
    return ClassificationConfig.from_sources(vars(parser.parse_args(argv)), parser)


def _refusal(argv, capsys):
    """The one line our script's parser prints for ``argv``, and its exit code."""
    with pytest.raises(SystemExit) as ei:
        _config(argv)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return ei.value.code, lines[0]


def test_every_flag_of_the_four_scripts_is_taken_or_refused():
    flags = read_flags()
    assert list(flags) == ["train_imagenet", "newer", "train_horovod", "train_cifar10", "train_mixup_cifar10"]
    assert len(flags["train_imagenet"]) == 45 and len(flags["train_horovod"]) == 37
    names = {flag: kind for per_script in flags.values() for flag, kind in per_script.items()}
    assert set(TAKEN) | set(AT_DEFAULT) | set(REFUSED) == set(names)
    assert not set(TAKEN) & set(AT_DEFAULT) and not set(TAKEN) & set(REFUSED) and not set(AT_DEFAULT) & set(REFUSED)
    for flag, kind in names.items():   # a switch is given bare, any other flag with a value
        given = TAKEN[flag][0][:1] if flag in TAKEN else [REFUSED.get(flag, "value")]
        bare = not given or given[0] is None or given[0].startswith("--")
        assert bare == (kind == "switch"), flag


@pytest.mark.parametrize("flag", sorted(TAKEN))
def test_a_flag_is_taken_with_gluoncvs_meaning(tmp_path, flag):
    from gluon_suite.cv.recipe import ClassificationConfig
    from gluon_suite.cv.recipe_gluoncv import device_spec, mixup_alpha, model_kwargs
    argv, want = _fill(TAKEN[flag][0], tmp_path), _fill(TAKEN[flag][1], tmp_path)
    cfg = _config([flag] + argv)
    got = {"devices": device_spec(cfg), "alpha": mixup_alpha(cfg)}
    if "net_kwargs" in want:
        got["net_kwargs"] = model_kwargs(cfg, 10, 3)
    assert {k: got[k] if k in got else cfg[k] for k in want} == want
    defaults = ClassificationConfig().to_dict()
    assert {k: v for k, v in cfg.to_dict().items() if v != defaults[k]} == {k: v for k, v in want.items()
                                                                           if k in defaults}


@pytest.mark.parametrize("flag", sorted(AT_DEFAULT))
def test_a_flag_is_taken_at_the_recipes_value_and_refused_at_another(capsys, flag):
    from gluon_suite.cv.recipe import ClassificationConfig
    same, other = AT_DEFAULT[flag]
    assert _config([flag, same]).to_dict() == ClassificationConfig().to_dict()
    code, line = _refusal([flag, other], capsys)
    assert code == 2 and line.startswith(f"error: {flag} {other} does not apply here: "), line
    assert f"(or give {flag} {same})" in line


@pytest.mark.parametrize("flag", sorted(REFUSED))
def test_a_flag_without_a_meaning_here_is_one_line(capsys, flag):
    value = REFUSED[flag]
    code, line = _refusal(["--model", "resnet18_v1", flag] + ([value] if value else []) + ["--lr", "0.1"], capsys)
    assert code == 2 and line.startswith(f"error: {flag} does not apply here: "), line
    assert "unrecognized" not in line


@pytest.mark.parametrize("argv, needle", [
    (["--model", "resnet18_v1", "--batch-norm"], "--batch-norm applies to GluonCV's VGG networks"),
    (["--model", "resnet18_v1", "--use-gn"], "--use-gn: GluonCV's GroupNorm networks here are resnet50_v1b_gn, "
                                             "resnet101_v1b_gn"),
    (["--model", "resnet18_v1", "--drop-rate", "0.3"], "--drop-rate applies to GluonCV's CIFAR wide ResNets"),
    (["--no-cuda", "--num-gpus", "1"], "--no-cuda trains on the CPU but --num-gpus 1 names GPUs"),
    (["--lr-decay-period", "3", "--lr-decay-epoch", "40"], "--lr-decay-period 3 and --lr-decay-epoch 40 both set"),
    (["--dataset", "digits", "--data-dir", "."], "--data-dir . is given but --dataset digits is built in"),
])
def test_a_flag_that_cannot_apply_to_this_run_is_one_line(tmp_path, capsys, argv, needle):
    from gluon_suite.utils import run_cli
    with pytest.raises(SystemExit) as ei:
        run_cli(load_script(SCRIPT).main, argv + ["--epochs", "1", "--out", str(tmp_path / "o"), "--no-progress"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert ei.value.code == 2 and len(lines) == 1 and needle in lines[0], lines
    assert not (tmp_path / "o").exists()


def test_eval_frequency_follows_gluoncvs_cadence():
    """Evaluated epochs (1-based) written out by hand: every N epochs and always the last one."""
    from gluon_suite.cv.gluoncv_flags import evaluates
    def cadence(epochs, freq):
        return [e for e in range(1, epochs + 1) if evaluates(e, epochs, freq)]
    assert cadence(5, None) == [1, 2, 3, 4, 5]
    assert cadence(5, 1) == [1, 2, 3, 4, 5]
    assert cadence(7, 3) == [3, 6, 7]
    assert cadence(6, 3) == [3, 6]
    assert cadence(4, 0) == [4]


def test_log_interval_prints_every_n_batches_with_the_mean_loss():
    """Six batches, a line every two: the mean of each pair's summed losses over its images, computed
    by hand; the batch number is the last of the pair, counted from 0 in the epoch as GluonCV does."""
    import mxnet as mx
    from gluon_suite.cv.gluoncv_flags import _BatchLog
    lines = []
    every = _BatchLog(2, lines.append)
    for loss, seen in ((4.0, 2), (2.0, 2), (9.0, 3), (1.0, 1), (3.0, 4), (5.0, 4)):
        every.add(0, mx.nd.array([loss]), seen, 0.1)
    assert [line.split("\t")[0] for line in lines] == ["Epoch[0] Batch [1]", "Epoch[0] Batch [3]", "Epoch[0] Batch [5]"]
    assert [line.split("\t")[2] for line in lines] == ["loss=1.5000", "loss=2.5000", "loss=1.0000"]
    every.epoch_ended()
    every.add(1, mx.nd.array([1.0]), 1, 0.1)
    assert len(lines) == 3          # the count starts again with the epoch


@pytest.mark.long   # a real two-epoch run (about 20 s); the flags' parsing and meanings stay in make test
def test_eval_frequency_and_log_interval_in_a_run(tmp_path, capsys):
    """Three epochs with --eval-frequency 2: epoch 2 and the last are evaluated, epoch 1 is not (its
    test_acc is null); --log-interval 2 prints the batch lines."""
    import json
    out = tmp_path / "o"
    argv = ["--model", "resnet14_digits", "--dataset", "digits", "--epochs", "3", "--batch-size", "64",
            "--eval-frequency", "2", "--log-interval", "2", "--out", str(out), "--no-progress"]
    assert load_script(SCRIPT).main(argv) == 0
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records] == [1, 2, 3]
    assert [r["test_acc"] is not None for r in records] == [False, True, True]
    header, *rows = (out / "summary.csv").read_text().splitlines()
    assert "test_acc" in header.split(",") and len(rows) == 3
    printed = capsys.readouterr().out
    assert "Epoch[0] Batch [1]" in printed and "Epoch[2] Batch [1]" in printed
    assert "note: --log-interval" not in printed and "note: --eval-frequency" not in printed