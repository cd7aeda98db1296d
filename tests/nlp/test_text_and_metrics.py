"""Text pipeline errors (file and line), masking statistics, and metrics against hand-computed values."""
import json

import numpy as np
import pytest

from gluon_suite.nlp.tasks import (accuracy, binary_f1, exact_match, f1_score, read_squad, read_tsv,
                                   squad_metrics, best_span, encode_squad)
from gluon_suite.nlp.pretraining_data import create_instances
from gluon_suite.nlp.text import build_vocab, load_vocab, read_corpus, tokenizer
from gluon_suite.utils import UserError


def test_corpus_errors_name_file_and_line(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(UserError, match="empty.txt is empty"):
        read_corpus(str(empty))
    short = tmp_path / "c.txt"
    short.write_text("First doc one.\nFirst doc two.\n\nA lonely sentence.\n\nThird a.\nThird b.\n")
    with pytest.raises(UserError, match=r"c.txt:4: this document has a single sentence"):
        read_corpus(str(short))


def test_vocab_file_must_hold_the_special_tokens(tmp_path):
    v = tmp_path / "vocab.txt"
    v.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
    with pytest.raises(UserError, match=r"vocab.txt: the vocabulary lacks \[MASK\]"):
        load_vocab(str(v))
    v.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nhello\n")
    with pytest.raises(UserError, match=r"vocab.txt:7: token 'hello' appears twice"):
        load_vocab(str(v))


def test_masking_follows_the_recipe():
    docs = [[f"sentence number {i} of document {d} has words".split() for i in range(12)] for d in range(6)]
    vocab = build_vocab([[" ".join(s) for s in d] for d in docs], min_freq=1)
    x = create_instances(docs, vocab, 48, seed=3)
    n = len(x["nsp_labels"])
    assert n > 10 and 0.2 < x["nsp_labels"].mean() < 0.8
    cls, sep, mask = vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"]
    assert (x["input_ids"][:, 0] == cls).all()
    for i in range(n):
        L = x["valid_length"][i]
        assert x["input_ids"][i, L - 1] == sep and (x["input_ids"][i, L:] == 0).all()
        k = int(x["masked_weights"][i].sum())
        assert k == min(int(round(48 * 0.15)), max(1, int(round(L * 0.15))))
        pos = x["masked_positions"][i, :k]
        assert not np.isin(x["masked_ids"][i, :k], [cls, sep]).any()
        assert (pos > 0).all() and (pos < L).all()
    masked = x["input_ids"][np.arange(n)[:, None], x["masked_positions"]][x["masked_weights"] > 0]
    assert 0.7 < (masked == mask).mean() < 0.9    # about 80% become [MASK]


def test_tsv_errors_and_reading(tmp_path):
    f = tmp_path / "train.tsv"
    f.write_text("sentence\tlabel\ngood film\t1\nbad film\t0\n")
    texts, y, names = read_tsv(str(f))
    assert texts == [("good film",), ("bad film",)] and list(y) == [1, 0] and names == ["0", "1"]
    f.write_text("sentence\tlabel\ngood film\t1\nbad\tfilm\t0\n")
    with pytest.raises(UserError, match=r"train.tsv:3: expected 2 tab-separated columns, got 3"):
        read_tsv(str(f))
    f.write_text("text\tlabel\nx\t1\n")
    with pytest.raises(UserError, match=r"train.tsv:1: header lacks column\(s\) sentence"):
        read_tsv(str(f))


def test_squad_errors(tmp_path):
    f = tmp_path / "dev.json"
    f.write_text('{"data": [\n  {"paragraphs": [}\n]}')
    with pytest.raises(UserError, match=r"dev.json:2: not valid JSON"):
        read_squad(str(f))
    f.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b c", "qas": [
        {"id": "1", "question": "q?", "answers": [{"text": "b", "answer_start": 0}]}]}]}]}))
    with pytest.raises(UserError, match=r"paragraphs\[0\].qas\[0\]: answer 'b' is not at character 0"):
        read_squad(str(f))
    f.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b c", "qas": [{"id": "1", "question": "q"}]}]}]}))
    with pytest.raises(UserError, match=r"qas\[0\] lacks 'answers'"):
        read_squad(str(f))


def test_classification_metrics_by_hand():
    pred, gold = [1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0]
    assert accuracy(pred, gold) == pytest.approx(4 / 6)
    # tp = 2, fp = 1, fn = 1: P = 2/3, R = 2/3, F1 = 2/3
    assert binary_f1(pred, gold) == pytest.approx(2 / 3)
    assert binary_f1([0, 0], [1, 1]) == 0.0


def test_squad_metrics_by_hand():
    assert exact_match("The Cat!", ["cat"]) == 1.0          # articles and punctuation removed
    assert exact_match("a dog", ["cat", "the dog"]) == 1.0
    # "cat sat" vs "cat sat on": common 2, P = 1, R = 2/3 -> F1 = 0.8
    assert f1_score("the cat sat", ["cat sat on"]) == pytest.approx(0.8)
    assert f1_score("dog", ["cat sat on", "a dog"]) == pytest.approx(1.0)
    assert f1_score("x", ["y"]) == 0.0
    m = squad_metrics({"1": "the cat sat", "2": "nothing"},
                      [{"id": "1", "answers": ["cat sat on"]}, {"id": "2", "answers": ["something"]}])
    assert m == {"exact_match": 0.0, "f1": pytest.approx(40.0)}


def test_span_decoding_maps_tokens_back_to_context_words():
    vocab = build_vocab([["where is the red ball", "the red ball is under the table"]], min_freq=1)
    tok = tokenizer(vocab)
    ex = [{"id": "q", "question": "where is the red ball", "context": "the red ball is under the table.",
           "answers": ["under the table."], "answer_start": [16]}]
    ids, types, vlen, s, e, maps = encode_squad(ex, tok, vocab, 32)
    m = maps[0]
    start_logits, end_logits = np.full(32, -5.0), np.full(32, -5.0)
    start_logits[s[0]], end_logits[e[0]] = 5.0, 5.0
    assert best_span(start_logits, end_logits, m) == "under the table."
    assert ids[0, s[0]] == vocab["under"]
