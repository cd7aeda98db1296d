"""GLUE by task name: each task's reader on the sample folders `gluon-suite samples` writes (row
counts, a row checked by hand), bad rows as one line naming file and line, the metrics against
values worked out by hand, and each task fine-tuning through the script with its own metric logged
(GluonNLP's published GLUE commands: tests/nlp/test_gluonnlp_commands.py)."""
import json
import math
import os

import numpy as np
import pytest

from gluon_suite.nlp.glue import TASKS, glue_data, mcc, pearson, read_glue, spearman, task_of
from gluon_suite.nlp.glue_samples import write_glue_tasks
from gluon_suite.nlp.tasks import binary_f1
from gluon_suite.utils import UserError

from ..conftest import REPO, load_script



@pytest.fixture(scope="module")
def glue(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("glue"))
    write_glue_tasks(folder)
    return folder


# the first training row of each sample file, read off the layout by hand: (texts, label)
FIRST = {
    "CoLA": (("Ada old gardens repairs in Oslo the .",), 0),
    "SST-2": (("the film about Ada and the gardens was dull ",), 0),
    "MRPC": (("Ada lives in Oslo .", "The home of Ada is Lisbon ."), 0),
    "STS-B": (("Ada builds repairs sells paints keeps draws gardens .", "Ada ignores gardens ."), 0.0),
    "QQP": (("Where does Ada live in Oslo ?", "Does Ada live in Lisbon ?"), 0),
    "MNLI": (("Ada visited Oslo last year .", "Ada has never been to Oslo ."), 0),   # contradiction
    "QNLI": (("Where was Ada born ?", "Ada collected gardens ."), 0),              # not_entailment
    "RTE": (("Ada moved to Oslo and sold gardens there .", "Ada lived in Lisbon ."), 0),
    "WNLI": (("Ada thanked Boris because she had repaired the gardens .", "Ada had repaired the gardens ."), 0),
}


@pytest.mark.parametrize("name", list(TASKS))
def test_reader_on_the_sample_layout(glue, name):
    task = TASKS[name]
    (texts, y), devs = glue_data(task, os.path.join(glue, name))
    assert len(texts) == len(y) == 32
    assert sorted(devs) == (["dev_matched", "dev_mismatched"] if name == "MNLI" else ["dev"])
    assert all(len(d[1]) == 16 for d in devs.values())
    assert (texts[0], y[0]) == FIRST[name]
    assert y.dtype == (np.float32 if name == "STS-B" else np.int32)
    if name == "MNLI":   # second and third rows: entailment, neutral in the order contradiction/entailment/neutral
        assert list(y[:3]) == [0, 1, 2]
    if name == "STS-B":  # row 1's score column reads 1.000, row 2's 1.600
        assert y[1] == pytest.approx(1.0) and y[2] == pytest.approx(1.6)


def test_the_first_lines_are_the_published_layouts(glue):
    with open(os.path.join(glue, "CoLA", "train.tsv")) as f:
        assert f.readline() == "syn00\t0\t*\tAda old gardens repairs in Oslo the .\n"   # no header
    with open(os.path.join(glue, "MRPC", "dev.tsv")) as f:
        assert f.readline() == "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    with open(os.path.join(glue, "MNLI", "dev_mismatched.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
    assert len(head) == 16 and head[8:10] == ["sentence1", "sentence2"] and head[-1] == "gold_label"
    assert "synthetic" in open(os.path.join(glue, "QQP", "README.txt")).read().lower()


def test_a_glue_root_folder_finds_the_task_and_names_are_loose(glue):
    (texts, _), _ = glue_data(task_of("sts-b"), glue)
    assert texts[0] == FIRST["STS-B"][0]
    assert task_of("sst2").name == "SST-2" and task_of("mnli").name == "MNLI"
    with pytest.raises(UserError, match="not a GLUE task; choose one of CoLA"):
        task_of("SQuAD")


@pytest.mark.parametrize("name,line,message", [
    ("CoLA", "syn\t1\tonly three columns", "expected 4 tab-separated columns (CoLA), got 3"),
    ("RTE", "9\ta\tb\tmaybe", "RTE label 'maybe' is not one of not_entailment, entailment"),
    ("STS-B", "9\tg\tf\t2026\t0\tn\tn\ta\tb\thigh", "STS-B score 'high' is not a number"),
    ("MNLI", "\t".join(["x"] * 12), "MNLI label 'x' is not one of contradiction, entailment, neutral"),
])
def test_a_bad_row_is_one_line_naming_file_and_line(glue, tmp_path, name, line, message):
    src = os.path.join(glue, name, "train.tsv")
    lines = open(src).read().splitlines()
    lines.insert(3, line)   # line 4 of the file
    bad = tmp_path / "train.tsv"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError) as err:
        read_glue(str(bad), TASKS[name])
    text = str(err.value)
    assert text.startswith(f"{bad}:4: ") and message in text and "\n" not in text


def test_a_wrong_header_is_one_line(glue, tmp_path):
    bad = tmp_path / "dev.tsv"
    bad.write_text("sentence\tlabel\nfine\t1\n")
    with pytest.raises(UserError, match=r"dev.tsv:1: not QQP's header"):
        read_glue(str(bad), TASKS["QQP"])


def test_metrics_against_hand_computed_values():
    # 2x2 table: TP 3, TN 2, FP 1, FN 1 -> (3*2 - 1*1) / sqrt(4 * 4 * 3 * 3) = 5/12
    gold = [1, 1, 1, 1, 0, 0, 0]
    pred = [1, 1, 1, 0, 0, 0, 1]
    assert mcc(pred, gold) == pytest.approx(5 / 12)
    assert mcc([1, 1], [1, 0]) == 0.0                 # an empty margin
    # precision 3/4, recall 3/4 -> F1 3/4
    assert binary_f1(pred, gold) == pytest.approx(0.75)
    # x 1..4, y 2,4,5,9: sum dx dy = 11, sum dx^2 = 5, sum dy^2 = 26
    assert pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / math.sqrt(130))
    # ties: ranks of x are 1, 2.5, 2.5, 4; of y 1, 3, 2, 4 -> 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert spearman([1, 5, 9], [10, 20, 1000]) == pytest.approx(1.0)   # monotone, not linear
    assert pearson([1, 1, 1], [1, 2, 3]) == 0.0


@pytest.fixture
def offline_zoo(tmp_path, monkeypatch):
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)


TINY = ["--model", "bert_2_128_2_lee", "--pretrained", "--max_len", "32", "--batch_size", "8", "--lr", "1e-3"]
KEYS = {"CoLA": ["dev_mcc"], "SST-2": ["dev_accuracy"], "MRPC": ["dev_accuracy", "dev_f1"],
        "STS-B": ["dev_pearson", "dev_spearman"], "QQP": ["dev_accuracy", "dev_f1"],
        "MNLI": ["dev_matched_accuracy", "dev_mismatched_accuracy"], "QNLI": ["dev_accuracy"],
        "RTE": ["dev_accuracy"], "WNLI": ["dev_accuracy"]}
MAIN = {"CoLA": "dev_mcc", "STS-B": "dev_pearson", "MNLI": "dev_matched_accuracy"}
LONG = [pytest.param(n, marks=pytest.mark.long) for n in TASKS if n not in ("CoLA", "STS-B")]


@pytest.mark.parametrize("name", ["CoLA", "STS-B"] + LONG)
def test_each_task_trains_and_logs_its_metric(glue, offline_zoo, tmp_path, name):
    out = tmp_path / "run"
    script = load_script("scripts/nlp/finetune_classification.py")
    assert script.main(TINY + ["--task_name", name, "--data-dir", glue, "--epochs", "2", "--out", str(out)]) == 0
    hist = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert len(hist) == 2
    metrics = sorted(k for k in hist[0] if k.startswith("dev_"))
    assert metrics == sorted(KEYS[name])
    main = MAIN.get(name, KEYS[name][0])
    best = max(hist, key=lambda r: r[main])
    assert hist[-1]["best_metric"] == main and hist[-1]["best_epoch"] == best["epoch"]
    assert hist[-1][f"best_{main}"] == best[main]
    low = -1.0 if name in ("CoLA", "STS-B") else 0.0
    assert all(low <= r[k] <= 1.0 for r in hist for k in metrics)
    assert hist[-1]["train_loss"] < hist[0]["train_loss"] or name != "STS-B"   # the regression learns fastest


@pytest.mark.parametrize("flags,message", [
    (["--task_name", "RTE"], "--task_name RTE reads its files from --data-dir"),
    (["--task_name", "QQP", "--data-dir", "{EMPTY}"], "lacks train.tsv, which QQP needs"),
    (["--task_name", "SST-2", "--data-dir", "{GLUE}", "--train", "{README}"], "drop --train/--dev"),
    (["--data-dir", "{GLUE}", "--train", "{README}", "--dev", "{README}"], "--data-dir goes with --task_name"),
])
def test_task_flags_misused_are_one_line(glue, tmp_path, flags, message):
    script = load_script("scripts/nlp/finetune_classification.py")
    subs = {"{EMPTY}": str(tmp_path), "{GLUE}": glue, "{README}": os.path.join(REPO, "README.md")}
    argv = [subs.get(f, f) for f in flags] + ["--model", "bert_2_128_2_lee", "--pretrained",
                                              "--out", str(tmp_path / "run")]
    with pytest.raises(UserError) as err:
        script.main(argv)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "run").exists()


def test_a_bad_row_stops_the_script_before_any_model(glue, tmp_path):
    import shutil
    shutil.copytree(os.path.join(glue, "RTE"), tmp_path / "RTE")
    with open(tmp_path / "RTE" / "dev.tsv", "a") as f:
        f.write("99\ta\tb\tmaybe\n")
    script = load_script("scripts/nlp/finetune_classification.py")
    with pytest.raises(UserError) as err:
        script.main(["--task_name", "rte", "--data-dir", str(tmp_path), "--model", "bert_2_128_2_lee",
                     "--pretrained", "--out", str(tmp_path / "run")])
    assert str(err.value) == (f"{tmp_path / 'RTE' / 'dev.tsv'}:18: RTE label 'maybe' is not one of not_entailment, "
                              "entailment; fix or remove the line")
