"""gensim's English test corpora from the installed package, checked against a naive reading of
the files here: document counts, words preserved, hand-read first sentences; and BERT pretraining
on one of them through --corpus gensim:NAME."""
import importlib.util
import os

import pytest

from gluon_suite.nlp.corpora import gensim_corpus, load_corpus
from gluon_suite.nlp.text import read_corpus, write_corpus
from gluon_suite.utils import UserError

DATA = os.path.join(importlib.util.find_spec("gensim").submodule_search_locations[0], "test", "test_data")


def naive_lines(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return [l.decode("utf-8").strip() for l in f.read().split(b"\n") if l.strip()]


def test_lee_background_documents_are_the_lines_split_into_sentences():
    lines = naive_lines("lee_background.cor")
    docs = gensim_corpus("lee_background")
    assert len(lines) == 300 and len(docs) == 300   # every article has >= 2 sentences
    for line, doc in zip(lines, docs):
        assert " ".join(doc).split() == line.split()  # nothing lost, nothing moved
    assert docs[0][:2] == [
        "Hundreds of people have been forced to vacate their homes in the Southern Highlands of New "
        "South Wales as strong winds today pushed a huge bushfire towards the town of Hill Top.",
        "A new blaze near Goulburn, south-west of Sydney, has forced the closure of the Hume Highway."]
    # the documented rule counted word by word: a word ending in . ! or ? followed by one starting
    # with a capital, a parenthesis or a quote ends a sentence
    naive = sum(1 + sum(1 for a, b in zip(l.split(), l.split()[1:]) if a[-1] in ".!?"
                        and (b[0].isupper() or b[0] in "(\"'")) for l in lines)
    assert sum(len(d) for d in docs) == naive == 2613


def test_head500_documents_are_fixed_length_word_chunks():
    lines = naive_lines("head500.noblanks.cor")
    docs = gensim_corpus("head500", chunk_words=32)
    assert len(lines) == 250 and len(docs) == 250
    words = [l.split() for l in lines]
    assert sum(len(d) for d in docs) == sum(-(-len(w) // 32) for w in words)
    for w, doc in zip(words, docs):
        assert [len(s.split()) for s in doc[:-1]] == [32] * (len(doc) - 1)
        assert " ".join(doc).split() == w
    assert docs[0][0].startswith("anarch greek rule stem archon ruler merriam-webst")


def test_round_trip_through_the_pretraining_format(tmp_path):
    docs = gensim_corpus("head500")
    write_corpus(docs, tmp_path / "c.txt")
    back = [d for _, d in read_corpus(str(tmp_path / "c.txt"))]
    assert back == docs
    assert load_corpus(str(tmp_path / "c.txt")) == docs


def test_unknown_name_and_missing_package(monkeypatch):
    with pytest.raises(UserError, match="gensim:lee_background, gensim:head500"):
        load_corpus("gensim:lee")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gensim" else real(name, *a))
    with pytest.raises(UserError, match=r"pip install gensim==4\.4\.0"):
        load_corpus("gensim:head500")


def test_bert_pretraining_runs_on_a_gensim_corpus(tmp_path):
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    phase = {"seq_len": 64, "batch_size": 8, "steps": 3, "lr": 0.01, "warmup": 0.0, "constant": 1.0}
    res = pretrain_bert({"out": str(tmp_path / "b"), "corpus": "gensim:lee_background",
                         "progress": False, "phases": [phase]}, LocalCommunicator(), log=lambda m: None)
    assert len(res["history"]) == 3
    vocab = (tmp_path / "b" / "vocab.txt").read_text().split("\n")
    assert "bushfire" in vocab and "goulburn" in vocab   # built from the Lee corpus
