"""SQuAD with GluonNLP's --doc-stride and --max-query-length: a long context is split into
overlapping windows, the answer is a target only in the windows that hold it whole (the others
point at [CLS]), and prediction takes the best span over a question's windows. Every expected
window, id and target below is worked out by hand from the token counts."""
import os
import subprocess
import sys

import numpy as np
import pytest

from gluon_suite.nlp.squad import doc_windows, encode_squad
from gluon_suite.nlp.squad_eval import predict_squad
from gluon_suite.nlp.text import build_vocab, tokenizer

from ..conftest import REPO

WORDS = [f"t{i:02d}" for i in range(20)]        # one WordPiece token each
LONG = " ".join(WORDS)                          # "t00 t01 ... t19": word k starts at character 4k


@pytest.fixture(scope="module")
def vt():
    vocab = build_vocab([[LONG, "where is it now then"]], min_freq=1)
    return vocab, tokenizer(vocab)


def _example(qid, question, context, answer, start):
    assert context[start:start + len(answer)] == answer
    return {"id": qid, "question": question, "context": context, "answers": [answer], "answer_start": [start]}


LONG_EX = _example("long", "where is it", LONG, "t14 t15", 56)


def test_windows_follow_the_stride_and_reach_the_end():
    assert doc_windows(20, 8, 3) == [(0, 8), (3, 8), (6, 8), (9, 8), (12, 8)]
    assert doc_windows(20, 9, 3) == [(0, 9), (3, 9), (6, 9), (9, 9), (12, 8)]
    assert doc_windows(5, 8, 3) == [(0, 5)]                 # fits: one window, as before
    assert doc_windows(10, 4, 6) == [(0, 4), (4, 4), (8, 2)]   # stride past the window: no gap
    assert doc_windows(0, 8, 3) == [(0, 0)]


def test_answer_beyond_the_first_window_is_a_target_where_it_is_whole(vt):
    vocab, tok = vt
    # max_len 14 - 3 question tokens - 3 specials = 8 context tokens per window, stride 3:
    # windows start at tokens 0, 3, 6, 9, 12; the answer is tokens 14-15, whole in the last two
    f = encode_squad([LONG_EX], tok, vocab, 14, max_query=4, doc_stride=3)
    assert [(w["doc_start"], len(w["tok_word"])) for w in f.windows] == [(0, 8), (3, 8), (6, 8), (9, 8), (12, 8)]
    assert [w["example"] for w in f.windows] == [0] * 5
    for w, s in zip(f.ids, (0, 3, 6, 9, 12)):
        toks = ["[CLS]", "where", "is", "it", "[SEP]"] + [f"t{k:02d}" for k in range(s, s + 8)] + ["[SEP]"]
        assert w.tolist() == [vocab[t] for t in toks]
    assert f.types.tolist() == [[0] * 5 + [1] * 9] * 5
    assert f.vlen.tolist() == [14] * 5
    # context tokens start at position 5; window 9 has token 14 at 5 + 5, window 12 at 5 + 2
    assert f.starts.tolist() == [0, 0, 0, 10, 7]
    assert f.ends.tolist() == [0, 0, 0, 11, 8]


def test_question_is_cut_to_max_query_length(vt):
    vocab, tok = vt
    ex = _example("q", "where is it now then", LONG, "t14 t15", 56)
    # 2 question tokens leave 14 - 2 - 3 = 9 context tokens: windows 0-8, 3-11, 6-14, 9-17, 12-19
    f = encode_squad([ex], tok, vocab, 14, max_query=2, doc_stride=3)
    assert [(w["doc_start"], len(w["tok_word"])) for w in f.windows] == [(0, 9), (3, 9), (6, 9), (9, 9), (12, 8)]
    first = ["[CLS]", "where", "is", "[SEP]"] + WORDS[:9] + ["[SEP]"]
    last = ["[CLS]", "where", "is", "[SEP]"] + WORDS[12:] + ["[SEP]"]
    assert f.ids[0].tolist() == [vocab[t] for t in first]
    assert f.ids[4].tolist() == [vocab[t] for t in last] + [0]          # one pad
    assert f.vlen.tolist() == [14, 14, 14, 14, 13]
    assert f.types[4].tolist() == [0] * 4 + [1] * 9 + [0]
    assert f.starts.tolist() == [0, 0, 0, 9, 6] and f.ends.tolist() == [0, 0, 0, 10, 7]


def test_a_word_of_several_pieces_is_a_target_only_where_all_pieces_are(vt):
    vocab, tok = vt
    context = "t00 t01 t02 hers t04 t05"      # 'hers' is not in the vocabulary: h ##e ##r ##s
    assert tok("hers") == ["h", "##e", "##r", "##s"]
    ex = _example("p", "where is it", context, "hers", 12)
    # 9 tokens, 11 - 3 - 3 = 5 per window, stride 2: windows 0-4, 2-6, 4-8; 'hers' is tokens 3-6
    f = encode_squad([ex], tok, vocab, 11, max_query=4, doc_stride=2)
    assert [(w["doc_start"], len(w["tok_word"])) for w in f.windows] == [(0, 5), (2, 5), (4, 5)]
    assert f.starts.tolist() == [0, 6, 0] and f.ends.tolist() == [0, 9, 0]
    sl, el = np.full((3, 11), -20.0), np.full((3, 11), -20.0)
    sl[1, 6], el[1, 9] = 3.0, 3.0
    assert predict_squad(sl, el, f.windows, [ex]) == {"p": "hers"}


def test_prediction_takes_the_best_span_over_a_questions_windows(vt):
    vocab, tok = vt
    short = _example("short", "where is it", "t01 t02 t03", "t02", 4)
    f = encode_squad([LONG_EX, short], tok, vocab, 14, max_query=4, doc_stride=3)
    assert [w["example"] for w in f.windows] == [0, 0, 0, 0, 0, 1]
    sl, el = np.full((6, 14), -20.0), np.full((6, 14), -20.0)
    # window 0 (tokens 0-7 at positions 5-12): t02..t03 scores 4 + 3 = 7
    sl[0, 7], el[0, 8] = 4.0, 3.0
    # window 1: [CLS] and question positions score high but are no answer
    sl[1, :4], el[1, :4] = 100.0, 100.0
    # window 2 (tokens 6-13): a start at t13 with an end before it is no span
    sl[2, 12], el[2, 5] = 20.0, 20.0
    # window 3 (tokens 9-16): t14..t15 scores 5 + 5 = 10, the best span of at most 5 tokens
    sl[3, 10], el[3, 11] = 5.0, 5.0
    # window 4 (tokens 12-19): t12..t19 scores 18 but is 8 tokens long
    sl[4, 5], el[4, 12] = 9.0, 9.0
    # the short question's one window (tokens 0-2 at positions 5-7): t03
    sl[5, 7], el[5, 7] = 1.0, 1.0
    assert predict_squad(sl, el, f.windows, [LONG_EX, short], max_answer_len=5) == \
        {"long": "t14 t15", "short": "t03"}
    assert predict_squad(sl, el, f.windows, [LONG_EX, short], max_answer_len=30)["long"] == " ".join(WORDS[12:])


def test_short_contexts_keep_one_window_per_question(vt):
    vocab, tok = vt
    ex = _example("s", "where is it", "t01 t02 t03", "t02", 4)
    f = encode_squad([ex], tok, vocab, 32)          # defaults: 24 question tokens, stride 32
    assert len(f.ids) == 1 and f.starts.tolist() == [6] and f.ends.tolist() == [6]


@pytest.mark.parametrize("flags,message", [
    (["--max-len", "20", "--max-query-length", "24"],
     "error: --max-len 20 leaves no room for the context after a question of up to --max-query-length 24"),
    (["--max_seq_length", "27", "--max_query_length", "24"], "raise --max-len above 27"),
    (["--doc-stride", "0"], "error: argument --doc-stride/--doc_stride: must be a whole number >= 1"),
])
def test_window_sizes_that_cannot_work_are_one_line(tmp_path, flags, message):
    p = subprocess.run([sys.executable, os.path.join(REPO, "scripts/nlp/finetune_squad.py"), "--model",
                        "bert_2_128_2_lee", "--pretrained", "--train", os.path.join(REPO, "README.md"),
                        "--dev", os.path.join(REPO, "README.md"), "--out", str(tmp_path / "run"), *flags],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "run").exists()


FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()
CODES = "oscar papa quebec romeo sierra tango uniform victor whiskey yankee zulu".split()   # never filler


def _late_answer_squad(path, n, rs):
    """``n`` questions whose context is 24-29 filler words, then '. the code is X .' and 3 more words:
    the answer is word 28 or later, so at least token 28. With --max-len 36 and the question's 5
    tokens, a window holds 36 - 5 - 3 = 28 context tokens (0-27): the answer always lies past the
    first window, where a model that saw only the first window could never point at it."""
    import json
    paras = []
    for i in range(n):
        code = rs.choice(CODES)
        head = " ".join(rs.choice(FILLER, 24 + int(rs.randint(0, 6))))
        context = f"{head} . the code is {code} . {' '.join(rs.choice(FILLER, 3))} ."
        start = len(f"{head} . the code is ")
        paras.append({"context": context, "qas": [{"id": f"q{i}", "question": "what is the code ?",
                                                   "answers": [{"text": code, "answer_start": start}]}]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paras}]}))


@pytest.mark.long
def test_fine_tuning_finds_answers_past_the_first_window(tmp_path, monkeypatch):
    from gluon_suite.nlp.finetune import finetune_squad
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)
    rs = np.random.RandomState(3)
    _late_answer_squad(tmp_path / "train.json", 200, rs)
    _late_answer_squad(tmp_path / "dev.json", 50, rs)
    logs = []
    hist = finetune_squad({"train": str(tmp_path / "train.json"), "dev": str(tmp_path / "dev.json"), "max_len": 36,
                           "epochs": 4, "batch_size": 16, "lr": 1e-3, "model": "bert_2_128_2_lee", "pretrained": True,
                           "max_query_length": 8, "doc_stride": 8, "out": str(tmp_path / "ft")}, log=logs.append)
    assert any("200 training questions ->" in m for m in logs), logs
    # the code word occurs once, past the first window: without windows no dev answer is in view and the
    # exact match is 0; one of a context's about 35 words picked at random matches about 3% of the time
    assert hist[-1]["dev_exact_match"] >= 35.0, hist          # measured: 56% after 4 epochs
