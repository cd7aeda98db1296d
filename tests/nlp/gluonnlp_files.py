"""Files in GluonNLP 0.10's format for the tests: a tiny BERT built by GluonNLP's own constructor
(its hyperparameter table made small for the test) with its pretraining heads and random weights,
saved with MXNet's ``save_parameters``, and its vocabulary with ``BERTVocab.to_json``; each named as
GluonNLP names it, ``{model}_{dataset}-{sha1[:8]}.params`` and ``{dataset}-{sha1[:8]}.vocab``, with
its SHA-1 computed here (hashlib) and entered in GluonNLP's tables for that name."""
import hashlib
import os

import mxnet as mx

TINY = {"num_layers": 1, "units": 16, "hidden_size": 32, "num_heads": 2, "max_length": 64, "embed_size": 16}
WORDS = ("the a of and in to is was who where what does did how lives home film good bad question answer "
         "ada boris oslo lisbon paris gardens repairs sentence not entailment")


def sha1(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def tiny_hparams(monkeypatch, model="bert_12_768_12"):
    """GluonNLP's ``model`` constructor builds a 1-layer, 16-unit BERT while the test runs."""
    from gluonnlp.model import bert
    monkeypatch.setitem(bert.bert_hparams, model, dict(bert.bert_hparams[model], **TINY))


def write_gluonnlp_bert(folder, monkeypatch, model="bert_12_768_12", dataset="book_corpus_wiki_en_uncased",
                        seed=0):
    """Write the two files into ``folder`` and enter their hashes in GluonNLP's tables for
    ``(model, dataset)``; returns ``(params path, vocab path, vocab)``."""
    import gluonnlp as nlp
    from gluonnlp.data.utils import _vocab_sha1
    from gluonnlp.model import bert
    from mxnet.gluon.model_zoo import model_store

    from gluon_suite.nlp.text import build_vocab
    tiny_hparams(monkeypatch, model)
    vocab = build_vocab([[WORDS, WORDS.upper()]], min_freq=1)
    net, _ = getattr(bert, model)(dataset_name=None, vocab=vocab, pretrained=False)
    mx.random.seed(seed)
    net.initialize(mx.init.Normal(0.5))
    net(mx.nd.array([[2, 5, 6]]), mx.nd.zeros((1, 3)), mx.nd.array([3]), mx.nd.array([[1]]))  # shapes
    os.makedirs(folder, exist_ok=True)
    tmp_params, tmp_vocab = os.path.join(folder, "params.tmp"), os.path.join(folder, "vocab.tmp")
    net.save_parameters(tmp_params)
    with open(tmp_vocab, "w", encoding="utf-8") as f:
        f.write(vocab.to_json())
    p_sha, v_sha = sha1(tmp_params), sha1(tmp_vocab)
    monkeypatch.setitem(model_store._model_sha1, f"{model}_{dataset}", p_sha)
    monkeypatch.setitem(_vocab_sha1, dataset, [v_sha, ".vocab", {}])
    params = os.path.join(folder, f"{model}_{dataset}-{p_sha[:8]}.params")
    vocab_path = os.path.join(folder, f"{dataset}-{v_sha[:8]}.vocab")
    os.replace(tmp_params, params)
    os.replace(tmp_vocab, vocab_path)
    assert isinstance(vocab, nlp.vocab.BERTVocab)
    return params, vocab_path, vocab
