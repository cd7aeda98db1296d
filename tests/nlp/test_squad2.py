"""SQuAD 2.0 in the fine-tuning recipe: reading unanswerable questions, the null answer as the
[CLS] target, n-best spans with softmax probabilities, the null-score threshold, the prediction
files and the official SQuAD 2.0 metric. Every expected value below is worked out by hand in the
comments beside it (scores, softmaxes, the threshold search)."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from gluon_suite.nlp.squad import encode_squad, read_squad
from gluon_suite.nlp.squad_eval import squad2_metrics, squad_predictions, write_predictions
from gluon_suite.nlp.text import build_vocab, tokenizer
from gluon_suite.utils import UserError

from ..conftest import REPO, load_script


# ---- the metric ------------------------------------------------------------------------------------
EXAMPLES = [{"id": "a", "answers": ["The Eiffel Tower", "Eiffel tower!"]},
            {"id": "b", "answers": ["in the year 1990"]},
            {"id": "c", "answers": []},
            {"id": "d", "answers": []},
            {"id": "e", "answers": ["an apple, a pear"]}]
PREDS = {"a": "eiffel Tower.", "b": "1990", "c": "", "d": "Paris", "e": ""}


def test_squad2_metric_by_hand():
    m = squad2_metrics(PREDS, EXAMPLES)
    # a: "eiffel tower" on both golds: exact 1, F1 1
    # b: gold "in year 1990" (3 tokens), prediction "1990": 1 common, P 1, R 1/3, F1 2(1/3)/(4/3) = 0.5
    # c: unanswerable, "" against [""]: 1 and 1;  d: unanswerable, "Paris": 0 and 0
    # e: answerable, "" against "apple pear": 0 and 0
    assert m == pytest.approx({"exact": 100 * 2 / 5, "f1": 100 * 2.5 / 5, "total": 5,
                               "HasAns_exact": 100 * 1 / 3, "HasAns_f1": 100 * 1.5 / 3, "HasAns_total": 3,
                               "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2})


def test_squad2_metric_normalises_and_takes_the_best_gold():
    ex = [{"id": "x", "answers": ["cat sat", "the dog"]}, {"id": "y", "answers": ["A  (red) ball."]},
          {"id": "z", "answers": ["the", "."]}]
    m = squad2_metrics({"x": "A dog!", "y": "red ball", "z": ""}, ex)
    # x: "dog" equals the second gold; y: "red ball" after dropping 'a', brackets and the stop;
    # z: both golds normalise to nothing, so the gold is [""] and "" scores 1 (still a HasAns question)
    assert m["exact"] == m["f1"] == 100.0 and m["HasAns_total"] == 3 and "NoAns_total" not in m
    m = squad2_metrics({"x": "cat", "y": "blue ball"}, ex)      # z missing: counts as ""
    # x: "cat" vs "cat sat": P 1, R 1/2, F1 2/3; vs "dog": 0.  y: 1 of 2 tokens each way: F1 1/2
    assert m["exact"] == pytest.approx(100 / 3)
    assert m["f1"] == pytest.approx(100 * (2 / 3 + 1 / 2 + 1) / 3)


def test_best_threshold_search_by_hand():
    odds = {"a": -3.0, "b": -2.0, "c": 2.0, "d": -1.0, "e": 0.5}
    m = squad2_metrics(PREDS, EXAMPLES, odds)
    # all "" first: the two unanswerable questions right, 2 of 5. Then by rising odds, each question gives
    # its prediction: a (-3) +1 -> 3; b (-2) +0 exact / +0.5 F1; d (-1) "Paris" on no answer -1; e (0.5) +0; c +0
    # exact: 2, 3*, 3, 2, 2, 2 -> 60% at -3.   F1: 2, 3, 3.5*, 2.5, 2.5, 2.5 -> 70% at -2
    assert m["best_exact"] == pytest.approx(60.0) and m["best_exact_thresh"] == -3.0
    assert m["best_f1"] == pytest.approx(70.0) and m["best_f1_thresh"] == -2.0
    # nothing beats all "": the threshold stays 0
    m = squad2_metrics({"c": "", "d": "no"}, EXAMPLES[2:4], {"c": 1.0, "d": 2.0})
    assert m["best_exact"] == 100.0 and m["best_exact_thresh"] == 0.0


# ---- prediction ------------------------------------------------------------------------------------
WORDS = ["w0", "w1", "w2", "w3", "w4"]
# one question over two windows of 3 context tokens at positions 3-5: words 0-2 and words 2-4
WINDOWS = [{"example": 0, "offset": 3, "doc_start": 0, "tok_word": [0, 1, 2], "words": WORDS},
           {"example": 0, "offset": 3, "doc_start": 2, "tok_word": [2, 3, 4], "words": WORDS}]
Q = [{"id": "q1", "answers": []}]


def _logits():
    sl, el = np.full((2, 6), -10.0), np.full((2, 6), -10.0)
    sl[0, 0], el[0, 0] = 1.0, 0.5        # window 0's [CLS]: 1.5
    sl[0, 3], el[0, 4] = 2.0, 1.5        # "w0 w1": 3.5 (and "w0" 2 - 10 = -8, "w0 w1 w2" -8)
    sl[1, 0], el[1, 0] = 0.2, 0.3        # window 1's [CLS]: 0.5, the lower: the null score
    sl[1, 4], el[1, 5] = 1.0, 1.0        # "w3 w4": 2.0
    return sl, el


@pytest.mark.parametrize("threshold,expected", [(0.0, "w0 w1"), (-3.0, "w0 w1"), (-3.5, ""), (-10.0, "")])
def test_null_answer_wins_past_the_threshold(threshold, expected):
    sl, el = _logits()
    # null score 0.5 - best span 3.5 = -3.0: "" only where -3.0 > threshold
    preds, _, odds = squad_predictions(sl, el, WINDOWS, Q, version_2=True, null_score_diff_threshold=threshold)
    assert preds == {"q1": expected} and odds == {"q1": pytest.approx(-3.0)}


def test_null_beats_a_weak_span_at_the_default_threshold():
    sl, el = _logits()
    sl[0, 0], el[0, 0] = 4.0, 3.9        # window 0's [CLS]: 7.9
    sl[1, 0], el[1, 0] = 3.0, 2.0        # window 1's [CLS]: 5.0, the lower: null 5.0 - best span 3.5 = 1.5 > 0
    preds, nbest, odds = squad_predictions(sl, el, WINDOWS, Q, version_2=True)
    assert preds == {"q1": ""} and odds["q1"] == pytest.approx(1.5)
    assert nbest["q1"][0]["text"] == "" and (nbest["q1"][0]["start_logit"], nbest["q1"][0]["end_logit"]) == (3.0, 2.0)
    v1, _, odds1 = squad_predictions(sl, el, WINDOWS, Q)         # SQuAD v1.1: no null answer
    assert v1 == {"q1": "w0 w1"} and odds1 == {}


def _softmax(xs):
    e = [math.exp(x) for x in xs]
    return [v / sum(e) for v in e]


def test_nbest_order_and_probabilities():
    sl, el = _logits()
    _, nbest, _ = squad_predictions(sl, el, WINDOWS, Q, n_best_size=3, version_2=True)
    got = nbest["q1"]
    assert [e["text"] for e in got] == ["w0 w1", "w3 w4", ""]
    assert [(e["start_logit"], e["end_logit"]) for e in got] == [(2.0, 1.5), (1.0, 1.0), (0.2, 0.3)]
    assert [e["probability"] for e in got] == pytest.approx(_softmax([3.5, 2.0, 0.5]))
    # one more: the -8 spans of window 0, "w0" (start 0, end 0) before "w0 w1 w2" (start 0, end 2)
    _, nbest, _ = squad_predictions(sl, el, WINDOWS, Q, n_best_size=5, version_2=True)
    assert [e["text"] for e in nbest["q1"]] == ["w0 w1", "w3 w4", "", "w0", "w0 w1 w2"]
    assert [e["probability"] for e in nbest["q1"]] == pytest.approx(_softmax([3.5, 2.0, 0.5, -8.0, -8.0]))
    # SQuAD v1.1: no null entry; a null that did not rank with version 2 is added past n_best_size
    _, v1, _ = squad_predictions(sl, el, WINDOWS, Q, n_best_size=3)
    assert [e["text"] for e in v1["q1"]] == ["w0 w1", "w3 w4", "w0"]
    _, v2, _ = squad_predictions(sl, el, WINDOWS, Q, n_best_size=1, version_2=True)
    assert [e["text"] for e in v2["q1"]] == ["w0 w1", ""]
    assert [e["probability"] for e in v2["q1"]] == pytest.approx(_softmax([3.5, 0.5]))


def test_nbest_lists_a_text_once_and_a_null_after_equal_spans():
    sl, el = np.full((2, 6), -10.0), np.full((2, 6), -10.0)
    sl[0, 4], el[0, 4] = 2.0, 2.0        # window 0: "w1" 4.0
    sl[0, 5], el[0, 5] = 2.0, 2.0        # and "w1 w2" 4.0, "w2" 4.0
    sl[1, 3], el[1, 3] = 3.0, 3.0        # window 1: "w2" 6.0, the "w2" listed; "w2 w3", "w2 w3 w4" 3 - 10 = -7
    sl[0, 0], el[0, 0] = 1.0, 3.0        # window 0's [CLS]: 4.0, the null score, equal to three spans
    sl[1, 0], el[1, 0] = 2.5, 2.5        # window 1's [CLS]: 5.0
    _, nbest, odds = squad_predictions(sl, el, WINDOWS, Q, n_best_size=4, version_2=True)
    got = nbest["q1"]
    # 6.0 "w2"; 4.0 "w1", "w1 w2" (window 0 by start, then end), "w2" dropped as a repeat; the null after them
    assert [e["text"] for e in got] == ["w2", "w1", "w1 w2", ""]
    assert [(e["start_logit"], e["end_logit"]) for e in got] == [(3.0, 3.0), (2.0, 2.0), (2.0, 2.0), (1.0, 3.0)]
    assert odds["q1"] == pytest.approx(4.0 - 6.0)


def test_prediction_files_are_the_official_format(tmp_path):
    sl, el = _logits()
    windows = WINDOWS + [{**WINDOWS[0], "example": 1}]
    sl, el = np.concatenate([sl, sl[:1]]), np.concatenate([el, el[:1]])
    examples = [{"id": "q1", "answers": []}, {"id": "57a1", "answers": ["w0"]}]
    preds, nbest, odds = squad_predictions(sl, el, windows, examples, version_2=True)
    write_predictions(str(tmp_path), preds, nbest, odds)
    assert sorted(os.listdir(tmp_path)) == ["nbest_predictions.json", "null_odds.json", "predictions.json"]
    p = json.loads((tmp_path / "predictions.json").read_text())
    assert list(p) == ["q1", "57a1"] and all(isinstance(v, str) for v in p.values())
    assert p == {"q1": "w0 w1", "57a1": "w0 w1"}
    n = json.loads((tmp_path / "nbest_predictions.json").read_text())
    assert list(n) == ["q1", "57a1"]
    assert all(set(e) == {"text", "probability", "start_logit", "end_logit"} for v in n.values() for e in v)
    assert sum(e["probability"] for e in n["q1"]) == pytest.approx(1.0)
    # the second question has one window, window 0's: null 1.5 - 3.5
    assert json.loads((tmp_path / "null_odds.json").read_text()) == pytest.approx({"q1": -3.0, "57a1": -2.0})
    write_predictions(str(tmp_path / "v1"), preds, nbest)
    assert sorted(os.listdir(tmp_path / "v1")) == ["nbest_predictions.json", "predictions.json"]


# ---- reading and targets ----------------------------------------------------------------------------
def _file(tmp_path, qas, context="Ada was born in Oslo."):
    f = tmp_path / "d.json"
    f.write_text(json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context,
                                                                                         "qas": qas}]}]}))
    return str(f)


ANSWERED = {"id": "1", "question": "Where was Ada born?", "is_impossible": False,
            "answers": [{"text": "Oslo", "answer_start": 16}]}
UNANSWERABLE = {"id": "2", "question": "When did Ada die?", "is_impossible": True, "answers": [],
                "plausible_answers": [{"text": "Oslo", "answer_start": 3}]}   # not checked: ignored


def test_squad2_file_reads_with_unanswerable_questions(tmp_path):
    ex = read_squad(_file(tmp_path, [ANSWERED, UNANSWERABLE]))
    assert [(e["id"], e["answers"], e["answer_start"], e["is_impossible"]) for e in ex] == \
        [("1", ["Oslo"], [16], False), ("2", [], [], True)]
    v11 = [{k: v for k, v in ANSWERED.items() if k != "is_impossible"}]
    assert read_squad(_file(tmp_path, v11), allow_impossible=False)[0]["answers"] == ["Oslo"]


@pytest.mark.parametrize("qas,kw,message", [
    ([ANSWERED, UNANSWERABLE], {"allow_impossible": False},
     r"d.json: data\[0\].paragraphs\[0\].qas\[1\] is unanswerable \(is_impossible: true\), a SQuAD 2.0 question; "
     r"add --version_2"),
    ([{**UNANSWERABLE, "answers": ANSWERED["answers"]}], {},
     r"qas\[0\] is unanswerable \(is_impossible: true\) but has 1 answer\(s\)"),
    ([{**ANSWERED, "is_impossible": "no"}], {}, r"qas\[0\].is_impossible is a string, not true/false"),
    ([{**ANSWERED, "is_impossible": 0}], {}, r"qas\[0\].is_impossible is a whole number, not true/false"),
    ([ANSWERED, {**UNANSWERABLE, "id": "1"}], {}, r"qas\[1\].id '1' is the id of an earlier question"),
])
def test_squad2_reading_errors_name_file_and_record(tmp_path, qas, kw, message):
    with pytest.raises(UserError, match=message) as err:
        read_squad(_file(tmp_path, qas), **kw)
    assert "\n" not in str(err.value)


def test_unanswerable_question_points_at_cls_in_every_window():
    context = " ".join(f"t{i:02d}" for i in range(12))
    vocab = build_vocab([[context, "where is it"]], min_freq=1)
    tok = tokenizer(vocab)
    ex = [{"id": "n", "question": "where is it", "context": context, "answers": [], "answer_start": []},
          {"id": "y", "question": "where is it", "context": context, "answers": ["t09"], "answer_start": [36]}]
    # 12 - 3 question - 3 special = 6 context tokens per window, stride 3: windows 0-5, 3-8, 6-11 each
    f = encode_squad(ex, tok, vocab, 12, max_query=4, doc_stride=3)
    assert [w["example"] for w in f.windows] == [0, 0, 0, 1, 1, 1]
    # t09 is context token 9, in the third window only, at 5 + (9 - 6) = 8
    assert f.starts.tolist() == [0, 0, 0, 0, 0, 8] and f.ends.tolist() == [0, 0, 0, 0, 0, 8]


# ---- the script ------------------------------------------------------------------------------------------
def test_version_2_flags_parse_in_both_spellings():
    p = load_script("scripts/nlp/finetune_squad.py").build_parser()
    base = ["--train", os.path.join(REPO, "README.md"), "--dev", os.path.join(REPO, "README.md")]
    ours = vars(p.parse_args(base + ["--version-2", "--n-best-size", "5", "--max-answer-length", "12",
                                     "--null-score-diff-threshold", "-1.5"]))
    theirs = vars(p.parse_args(base + ["--version_2", "--n_best_size", "5", "--max_answer_length", "12",
                                       "--null_score_diff_threshold", "-1.5"]))
    assert ours == theirs
    assert (ours["version_2"], ours["n_best_size"], ours["max_answer_length"], ours["null_score_diff_threshold"]) \
        == (True, 5, 12, -1.5)


def _env(tmp_path):
    return dict(os.environ, PYTHONPATH=REPO, GLUON_SUITE_OFFLINE="1", GLUON_SUITE_HOME=str(tmp_path / "home"),
                GLUON_SUITE_QUIET="1", OMP_NUM_THREADS="1")


def _script(tmp_path, *args):
    return subprocess.run([sys.executable, os.path.join(REPO, "scripts/nlp/finetune_squad.py"), "--model",
                           "bert_2_128_2_lee", "--pretrained", *args], capture_output=True, text=True, timeout=300,
                          env=_env(tmp_path))


def test_script_trains_on_the_squad2_sample_and_writes_its_predictions(tmp_path):
    from gluon_suite.nlp.samples import write_squad
    write_squad(str(tmp_path / "squad"), train=8, dev=6)          # 8 x 5 training questions: 3 steps of 16
    out = tmp_path / "run"
    p = _script(tmp_path, "--train", str(tmp_path / "squad/train-v2.0.json"), "--dev",
                str(tmp_path / "squad/dev-v2.0.json"), "--version_2", "--max_seq_length", "48", "--batch_size", "16",
                "--epochs", "1", "--n_best_size", "4", "--output_dir", str(out))
    assert p.returncode == 0, p.stderr[-2000:]
    dev = json.loads((tmp_path / "squad/dev-v2.0.json").read_text())
    qas = [qa for para in dev["data"][0]["paragraphs"] for qa in para["qas"]]
    ids = [qa["id"] for qa in qas]
    preds = json.loads((out / "predictions.json").read_text())
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    odds = json.loads((out / "null_odds.json").read_text())
    assert list(preds) == list(nbest) == list(odds) == ids and all(isinstance(v, str) for v in preds.values())
    for q in ids:
        assert 1 <= len(nbest[q]) <= 5 and sum(e["probability"] for e in nbest[q]) == pytest.approx(1.0)
        assert "" in [e["text"] for e in nbest[q]]
        assert (preds[q] == "") == (odds[q] > 0.0)      # the default threshold
    rec = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    # 6 paragraphs x (3 answerable + 2 unanswerable); NoAns exact = the share of those answered ""
    no_ans = [qa["id"] for qa in qas if qa["is_impossible"]]
    assert (rec["dev_total"], rec["dev_HasAns_total"], rec["dev_NoAns_total"]) == (30, 18, 12)
    assert rec["dev_NoAns_exact"] == pytest.approx(100.0 * sum(preds[q] == "" for q in no_ans) / 12)
    for key in ("dev_exact_match", "dev_f1", "dev_HasAns_exact", "dev_best_f1", "dev_best_f1_thresh"):
        assert key in rec


def test_script_refuses_squad2_questions_without_version_2(tmp_path):
    from gluon_suite.nlp.samples import write_squad
    write_squad(str(tmp_path / "squad"), train=2, dev=2)
    v2 = str(tmp_path / "squad/train-v2.0.json")
    p = _script(tmp_path, "--train", v2, "--dev", v2, "--out", str(tmp_path / "run"))
    assert p.returncode != 0
    errors = [line for line in p.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "--train" in errors[0] and "train-v2.0.json" in errors[0]
    assert "data[0].paragraphs[0].qas[3] is unanswerable" in errors[0] and "--version_2" in errors[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.long
def test_fine_tuning_on_the_squad2_sample_learns_both_kinds_of_question(tmp_path, monkeypatch):
    from gluon_suite.nlp.finetune import finetune_squad
    from gluon_suite.nlp.samples import write_squad
    for key, value in _env(tmp_path).items():
        if key.startswith("GLUON_SUITE"):
            monkeypatch.setenv(key, value)
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)
    write_squad(str(tmp_path / "squad"))        # 200 training and 50 dev questions, 2 in 5 unanswerable
    hist = finetune_squad({"train": str(tmp_path / "squad/train-v2.0.json"),
                           "dev": str(tmp_path / "squad/dev-v2.0.json"), "version_2": True, "max_len": 64,
                           "max_query_length": 12, "epochs": 8, "batch_size": 16, "lr": 2e-3,
                           "model": "bert_2_128_2_lee", "pretrained": True, "out": str(tmp_path / "ft")},
                          log=lambda m: None)
    last = hist[-1]
    # answering "" everywhere gives HasAns 0 and NoAns 100 (what epoch 1 does); a span everywhere NoAns 0.
    # Measured after 8 epochs: HasAns exact 40, NoAns exact 85, exact 58
    assert last["dev_HasAns_exact"] >= 20.0 and last["dev_NoAns_exact"] >= 50.0, hist
    assert last["dev_best_exact"] >= last["dev_exact_match"]
