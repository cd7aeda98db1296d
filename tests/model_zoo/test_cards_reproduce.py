"""Every card's command reruns: the full command lands within the card's tolerance of the published
metric (`make test-long`); a shortened run of each (one epoch of the long ones) trains in `make test`.

A card whose full command trains for longer than the long tier allows says so (``"rerun":
"evaluate"``, with its ``"rerun_reason"``): the long tier then loads its shipped checkpoint offline
and evaluates it with the card's settings (``scripts/cv/evaluate.py``), which must reproduce the
card's metric within its tolerance; its shortened command still trains in `make test`."""
import json
import os
import shlex
import subprocess
import sys

import pytest

from ..conftest import HOROVODRUN, REPO

DROP = {"--out", "--publish", "--publish-name", "--publish-url", "--card"}
ENV = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO,
           GLUON_SUITE_QUIET="1")


def cards():
    with open(os.path.join(REPO, "gluon_suite", "model_zoo", "checkpoints.json")) as f:
        records = [r for r in json.load(f)["checkpoints"] if not r.get("companion")]
    out = []
    for rec in records:
        with open(os.path.join(REPO, rec["card"])) as f:
            out.append(json.load(f))
    return out


def rerun_command(card, out, short):
    """The card's command with its run folder in ``out`` and no publishing; ``short``: one epoch
    where the full run is long (several workers), two for a classification card."""
    argv = shlex.split(card["command"].split("  (")[0])    # a trailing "(as run by ...)" note
    workers = 1
    if argv[0] == "horovodrun":
        workers = int(argv[argv.index("-np") + 1])
        argv = argv[argv.index("--gloo") + 1:]
    assert argv[0] == "python", card["command"]
    args, i = [], 2
    while i < len(argv):
        if argv[i] in DROP:
            i += 2
            continue
        args.append(argv[i])
        i += 1
    cmd = [sys.executable, os.path.join(REPO, argv[1]), *args, "--out", str(out)]
    if short and workers > 1:   # one epoch; two of a vision card's (past the first, warm-up, epoch)
        cmd += ["--epochs", "2" if argv[1].endswith("train_classification.py") else "1"]
    if short and argv[1].endswith(("train_detection.py", "train_segmentation.py")):   # one epoch of a few canvases
        cmd += ["--epochs", "1", "--canvases", "32", "--val-canvases", "16", "--batch-size", "8"]
    if short and "train_language_model.py" in argv[1]:   # one epoch (added above) of a few pages
        cmd += ["--max-pages", "6"]
    if short and "train_link_prediction.py" in argv[1]:   # two of its epochs: it trains and evaluates
        cmd += ["--epochs", "2"]
    if short and "pretrain_bert.py" in argv[1]:   # one short phase instead of the config's two
        cmd += ["--phase", "seq_len=64,batch_size=32,steps=20,lr=0.02,warmup=0.1,constant=0.3"]
    if workers > 1:
        return [HOROVODRUN, "-np", str(workers), "-H", f"localhost:{workers}", "--gloo", *cmd]
    return cmd


def metric_of(out, card):
    """The run's metric as its card states it: the best test accuracy (vision), the last
    evaluation's test accuracy (graphs) or the training MLM accuracy over the last 10 steps (BERT)."""
    with open(out / "state.json") as f:
        state = json.load(f)
    if card["metric"]["name"] == "test AUC":   # link prediction: the last evaluation's
        return state["history"][-1]["test_auc"]
    if card["metric"]["name"] == "validation perplexity":   # language models: the best epoch's
        return state["best_ppl"]
    if card["metric"]["name"].startswith("MLM accuracy"):
        last = state["history"][-10:]
        return sum(h["mlm_acc"] for h in last) / len(last)
    if "best_acc" in state:
        return state["best_acc"]
    if "best_metric" in state:   # detection (mAP) and segmentation (mIoU)
        return state["best_metric"]
    return state["history"][-1]["test_acc"]


def run(card, out, short):
    p = subprocess.run(rerun_command(card, out, short), capture_output=True, text=True, env=ENV,
                       timeout=1800, cwd=REPO)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return metric_of(out, card)


@pytest.mark.horovod
def test_shortened_commands_of_every_card_train(tmp_path):
    for card in cards():
        value = run(card, tmp_path / card["name"], short=True)
        if card["metric"]["name"].startswith("MLM accuracy"):
            assert 0.0 < value < 1.0, value          # 20 steps of a 4,156-token masked LM: it runs
        elif card["metric"]["name"] == "validation perplexity":
            # one epoch on 10 pages: below a uniform guess over the run's vocabulary
            vocab = json.loads((tmp_path / card["name"] / "vocab.json").read_text())["size"]
            assert 1.0 < value < vocab, (card["name"], value, vocab)
        elif "canvases" in card["metric"]["dataset"]:
            assert 0.0 <= value <= 1.0, (card["name"], value)   # one epoch of 32 canvases: it trains and evaluates
        elif card["metric"]["dataset"].startswith("digits"):
            # two epochs of the long vision run, seeded (10 classes, chance 0.1; 0.905 for
            # resnest14_digits, its first, warm-up, epoch 0.74): it learns, at least 5x chance. The
            # full run's metric is checked against the card by the long test below.
            assert value > 0.5, (card["name"], value)
        else:
            # the whole graph run: clearly better than chance
            assert value > 0.5, (card["name"], value)


@pytest.mark.long
@pytest.mark.horovod
@pytest.mark.parametrize("card", cards(), ids=lambda c: c["name"])
def test_card_command_reproduces_the_published_metric(tmp_path, card):
    if card.get("rerun") == "evaluate" and "evaluate_language_model.py" in card["evaluate"]:
        # a language model: validation and test perplexity of the shipped checkpoint, offline
        p = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "nlp", "evaluate_language_model.py"),
                            "--model", card["name"], "--pretrained"], capture_output=True, text=True, timeout=1800,
                           cwd=REPO, env=dict(ENV, GLUON_SUITE_OFFLINE="1", GLUON_SUITE_HOME=str(tmp_path / "home")))
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        valid = float(p.stdout.split("validation perplexity ")[1].split(",")[0])
        test = float(p.stdout.split("test perplexity ")[1].split()[0])
        assert abs(test - card["test_metric"]["value"]) <= card["tolerance"], (test, card["test_metric"])
        assert abs(valid - card["metric"]["value"]) <= card["tolerance"], (valid, card["metric"])
        return
    if card.get("rerun") == "evaluate":   # the shipped checkpoint, offline, with the card's settings
        assert card.get("rerun_reason"), card["name"]
        p = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "cv", "evaluate.py"), "--model", card["name"],
                            "--pretrained"], capture_output=True, text=True, timeout=1800, cwd=REPO,
                           env=dict(ENV, GLUON_SUITE_OFFLINE="1", GLUON_SUITE_HOME=str(tmp_path / "home")))
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        word = "mIoU " if " mIoU " in p.stdout else "mAP "
        value = float(p.stdout.split(word)[1].split()[0].rstrip(","))
    else:
        value = run(card, tmp_path / "run", short=False)
    assert abs(value - card["metric"]["value"]) <= card.get("tolerance", 0.02), (value, card["metric"])
