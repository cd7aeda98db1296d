"""Fine-tuning from a (short) pretraining run on small GLUE-format and SQuAD-format files."""
import json

import numpy as np
import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.nlp.finetune import finetune_classification, finetune_squad
from gluon_suite.nlp.pretrain import pretrain_bert
from gluon_suite.nlp.text import write_corpus

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()


def _sentence(rs, n=4):
    return " ".join(rs.choice(WORDS, n))


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nlp")
    rs = np.random.RandomState(0)
    docs = []
    for d in range(30):
        docs.append([f"the film was {'good' if (d + i) % 2 else 'bad'} and {_sentence(rs)} ." for i in range(3)]
                    + [f"the code is {rs.choice(WORDS)} . {_sentence(rs)} ." for _ in range(3)]
                    + ["what is the code ?"])
    write_corpus(docs, tmp / "corpus.txt")
    out = tmp / "bert"
    pretrain_bert({"out": str(out), "corpus": str(tmp / "corpus.txt"), "min_freq": 1, "progress": False,
                   "dropout": 0.0, "phases": [{"seq_len": 48, "batch_size": 16, "steps": 20, "lr": 0.01}]},
                  LocalCommunicator(), log=lambda m: None)
    return tmp, out


def film_tsvs(folder, seed=1):
    """train.tsv (160 rows) and dev.tsv (60) in ``folder``: the label says whether 'the film was
    good' appears among random words."""
    rs = np.random.RandomState(seed)
    for name, n in (("train", 160), ("dev", 60)):
        rows = ["sentence\tlabel"]
        for i in range(n):
            lab = int(rs.randint(0, 2))
            rows.append(f"{_sentence(rs, 2)} the film was {'good' if lab else 'bad'} {_sentence(rs, 2)}\t{lab}")
        (folder / f"{name}.tsv").write_text("\n".join(rows) + "\n")


def test_classification_learns_above_chance(pretrained, tmp_path):
    tmp, out = pretrained
    film_tsvs(tmp_path)
    hist = finetune_classification({"train": str(tmp_path / "train.tsv"), "dev": str(tmp_path / "dev.tsv"),
                                    "init": str(out), "max_len": 24, "epochs": 4, "batch_size": 16, "lr": 1e-3,
                                    "out": str(tmp_path / "ft")}, log=lambda m: None)
    assert hist[-1]["dev_accuracy"] >= 0.8        # chance is 0.5
    assert hist[-1]["train_loss"] < hist[0]["train_loss"]
    assert 0.0 <= hist[-1]["dev_f1"] <= 1.0


def _squad(path, n, rs):
    paras = []
    for i in range(n):
        code = rs.choice(WORDS)
        pre = _sentence(rs, int(rs.randint(1, 5)))
        context = f"{pre} . the code is {code} . {_sentence(rs, 3)} ."
        start = context.index(f"the code is {code}") + len("the code is ")
        paras.append({"context": context, "qas": [{"id": f"q{i}", "question": "what is the code ?",
                                                   "answers": [{"text": code, "answer_start": start}]}]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paras}]}))


def test_squad_learns_to_point_at_the_answer(pretrained, tmp_path):
    _, out = pretrained
    rs = np.random.RandomState(2)
    _squad(tmp_path / "train.json", 200, rs)
    _squad(tmp_path / "dev.json", 50, rs)
    hist = finetune_squad({"train": str(tmp_path / "train.json"), "dev": str(tmp_path / "dev.json"), "init": str(out),
                           "max_len": 40, "epochs": 4, "batch_size": 16, "lr": 1e-3, "out": str(tmp_path / "ft")},
                          log=lambda m: None)
    # a context has about 10 words: picking one word at random would give EM of about 10%
    assert hist[-1]["dev_exact_match"] >= 50.0, hist
    assert hist[-1]["dev_f1"] >= hist[-1]["dev_exact_match"]


@pytest.fixture
def offline_zoo(tmp_path, monkeypatch):
    """No network and a fresh cache: the zoo BERT and its vocabulary come from the source tree."""
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)


def test_classification_script_fine_tunes_the_zoo_bert_offline(offline_zoo, tmp_path):
    import os
    import subprocess
    import sys

    from ..conftest import REPO
    rs = np.random.RandomState(1)
    for name, n in (("train", 160), ("dev", 60)):
        rows = ["sentence\tlabel"]
        for i in range(n):
            lab = int(rs.randint(0, 2))
            rows.append(f"{_sentence(rs, 2)} the film was {'good' if lab else 'bad'} {_sentence(rs, 2)}\t{lab}")
        (tmp_path / f"{name}.tsv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, os.path.join(REPO, "scripts/nlp/finetune_classification.py"),
                        "--model", "bert_2_128_2_lee", "--pretrained", "--train", str(tmp_path / "train.tsv"),
                        "--dev", str(tmp_path / "dev.tsv"), "--max-len", "24", "--epochs", "4",
                        "--batch-size", "16", "--lr", "1e-3", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=REPO))
    assert p.returncode == 0, p.stderr[-2000:]
    hist = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert hist[-1]["dev_accuracy"] >= 0.8          # chance is 0.5


def test_squad_fine_tunes_the_zoo_bert(offline_zoo, tmp_path):
    rs = np.random.RandomState(2)
    _squad(tmp_path / "train.json", 200, rs)
    _squad(tmp_path / "dev.json", 50, rs)
    hist = finetune_squad({"train": str(tmp_path / "train.json"), "dev": str(tmp_path / "dev.json"), "max_len": 40,
                           "epochs": 4, "batch_size": 16, "lr": 1e-3, "model": "bert_2_128_2_lee", "pretrained": True,
                           "out": str(tmp_path / "ft")}, log=lambda m: None)
    # picking one context word at random gives an exact match of about 10%; the news-pretrained
    # BERT has seen none of these words (measured: 34% after 4 epochs)
    assert hist[-1]["dev_exact_match"] >= 25.0, hist
    assert hist[-1]["train_loss"] < hist[0]["train_loss"]


def test_pretrained_needs_a_zoo_bert_with_a_vocabulary(offline_zoo, tmp_path):
    from gluon_suite.utils import UserError
    for name in ("t.json", "d.json"):
        _squad(tmp_path / name, 4, np.random.RandomState(0))
    with pytest.raises(UserError, match="has no published vocabulary"):
        finetune_squad({"train": str(tmp_path / "t.json"), "dev": str(tmp_path / "d.json"), "model": "bert_2_128_2",
                        "pretrained": True, "out": str(tmp_path / "ft")})
