"""A GluonNLP user's own BERT files (gluon_suite.nlp.gluonnlp_weights): files written in GluonNLP's
format (tests/nlp/gluonnlp_files.py) load with the weights written; a wrong hash, a missing file, an
unknown name and a file of another size are each one line naming the file or the known names."""
import os

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.nlp.gluonnlp_weights import find_files, load_gluonnlp_bert
from gluon_suite.utils import UserError

from .gluonnlp_files import TINY, tiny_hparams, write_gluonnlp_bert

TEST_DATASET = "synthetic_test_uncased"   # a test-only name entered in GluonNLP's tables


def one_line(err, *parts):
    text = str(err.value)
    assert "\n" not in text, text
    for part in parts:
        assert part in text, text


def test_written_files_load_with_the_weights_written(tmp_path, monkeypatch):
    params, vocab_path, vocab = write_gluonnlp_bert(str(tmp_path), monkeypatch, dataset=TEST_DATASET)
    net, loaded_vocab, info = load_gluonnlp_bert("bert_12_768_12", TEST_DATASET, str(tmp_path), max_length=32)
    written = mx.nd.load(params)
    got = {k: v.data() for k, v in net._collect_params_with_prefix().items()}
    # every weight but the pretraining heads (masked-LM decoder, next-sentence classifier) is the file's
    heads = {k for k in written if k.split(".")[0] in ("decoder", "classifier")}
    assert heads and set(got) == set(written) - heads
    for key, value in got.items():
        np.testing.assert_array_equal(value.asnumpy(), written[key].asnumpy(), err_msg=key)
    assert loaded_vocab.idx_to_token == vocab.idx_to_token
    assert info == {"model": f"bert_12_768_12_{TEST_DATASET}", "max_length": TINY["max_length"], "lower": True}
    assert len(net.encoder.transformer_cells) == TINY["num_layers"]
    seq, pooled = net(mx.nd.array([[2, 7, 3]]), mx.nd.zeros((1, 3)), mx.nd.array([3]))
    assert seq.shape == (1, 3, TINY["units"]) and pooled.shape == (1, TINY["units"])


def test_a_cased_dataset_keeps_case_and_squad_has_no_pooler(tmp_path, monkeypatch):
    write_gluonnlp_bert(str(tmp_path), monkeypatch, dataset="synthetic_test_cased")
    net, _, info = load_gluonnlp_bert("bert_12_768_12", "synthetic_test_cased", str(tmp_path), use_pooler=False)
    assert info["lower"] is False
    assert not hasattr(net, "pooler") or net.pooler is None


def test_the_published_names_and_a_wrong_file_is_one_line(tmp_path):
    # GluonNLP 0.10 names BERT-base uncased's files by the first 8 hex digits of their published SHA-1
    params = tmp_path / "bert_12_768_12_book_corpus_wiki_en_uncased-75cc780f.params"
    vocab = tmp_path / "book_corpus_wiki_en_uncased-a6607397.vocab"
    params.write_bytes(b"not GluonNLP's parameters")
    with pytest.raises(UserError) as err:
        find_files("bert_12_768_12", "book_corpus_wiki_en_uncased", str(tmp_path))
    one_line(err, str(vocab), "does not exist", "--pretrained-dir")
    vocab.write_text("{}")
    assert [p for p, _ in find_files("bert_12_768_12", "book_corpus_wiki_en_uncased", str(tmp_path))] == \
        [str(params), str(vocab)]
    with pytest.raises(UserError) as err:
        load_gluonnlp_bert("bert_12_768_12", "book_corpus_wiki_en_uncased", str(tmp_path))
    one_line(err, str(vocab), "GluonNLP publishes a66073971aa0", "damaged or not GluonNLP's release")


def test_a_changed_parameter_file_is_a_hash_mismatch(tmp_path, monkeypatch):
    params, _, _ = write_gluonnlp_bert(str(tmp_path), monkeypatch, dataset=TEST_DATASET)
    with open(params, "ab") as f:
        f.write(b"\0")
    with pytest.raises(UserError) as err:
        load_gluonnlp_bert("bert_12_768_12", TEST_DATASET, str(tmp_path))
    one_line(err, params, "has sha1", "GluonNLP publishes")


def test_a_missing_parameter_file_is_one_line(tmp_path, monkeypatch):
    params, _, _ = write_gluonnlp_bert(str(tmp_path), monkeypatch, dataset=TEST_DATASET)
    os.remove(params)
    with pytest.raises(UserError) as err:
        load_gluonnlp_bert("bert_12_768_12", TEST_DATASET, str(tmp_path))
    one_line(err, params, "does not exist")


@pytest.mark.parametrize("model,dataset,names", [
    ("bert_6_512_8", "book_corpus_wiki_en_uncased", ["bert_12_768_12", "bert_24_1024_16"]),
    ("bert_12_768_12", "wikipedia_en", ["book_corpus_wiki_en_uncased", "book_corpus_wiki_en_cased", "wiki_cn_cased",
                                        "openwebtext_book_corpus_wiki_en_uncased"]),
    # GluonNLP publishes BERT-large for the two book-corpus datasets only
    ("bert_24_1024_16", "wiki_cn_cased", ["book_corpus_wiki_en_cased", "book_corpus_wiki_en_uncased"]),
])
def test_an_unknown_name_lists_the_known_ones(tmp_path, model, dataset, names):
    with pytest.raises(UserError) as err:
        load_gluonnlp_bert(model, dataset, str(tmp_path))
    one_line(err, repr(model if model.startswith("bert_6") else dataset), *names)
    if model == "bert_24_1024_16":
        assert "wiki_cn_cased" not in str(err.value).split("choose one of")[1]


def test_a_file_of_another_size_is_one_line(tmp_path, monkeypatch):
    write_gluonnlp_bert(str(tmp_path), monkeypatch, dataset=TEST_DATASET)
    from gluonnlp.model import bert
    monkeypatch.setitem(bert.bert_hparams, "bert_12_768_12", dict(bert.bert_hparams["bert_12_768_12"], units=8,
                                                                  embed_size=8))
    with pytest.raises(UserError) as err:
        load_gluonnlp_bert("bert_12_768_12", TEST_DATASET, str(tmp_path))
    one_line(err, f"bert_12_768_12_{TEST_DATASET}-", "does not fit GluonNLP's bert_12_768_12")


def test_max_len_beyond_the_positions_is_one_line(tmp_path, monkeypatch):
    write_gluonnlp_bert(str(tmp_path), monkeypatch, dataset=TEST_DATASET)
    tiny_hparams(monkeypatch)
    with pytest.raises(UserError) as err:
        load_gluonnlp_bert("bert_12_768_12", TEST_DATASET, str(tmp_path), max_length=TINY["max_length"] + 1)
    one_line(err, f"--max-len {TINY['max_length'] + 1} exceeds the {TINY['max_length']} positions")
