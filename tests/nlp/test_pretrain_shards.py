"""Pretraining from pre-built shards (GluonNLP's habit: instances made once, read by every run), with
held-out masked-LM evaluation: shards holding the instances the corpus gives train exactly as the
corpus does; the held-out metrics at the phase's end equal a NumPy evaluation of the final model; a
shard of the wrong length or a folder without shards is one line."""
import numpy as np
import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.nlp.pretrain import pretrain_bert, read_shards, write_shards
from gluon_suite.nlp.pretraining_data import create_instances
from gluon_suite.nlp.text import build_vocab, load_vocab, tokenizer, write_corpus
from gluon_suite.utils import UserError

P = {"seq_len": 32, "batch_size": 8, "steps": 4, "lr": 0.01}
SEED = 2


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    rs = np.random.RandomState(0)
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet".split()
    docs = [[f"the film was {'good' if (d + i) % 2 else 'bad'} and {' '.join(rs.choice(words, 5))} ."
             for i in range(5)] for d in range(16)]
    write_corpus(docs, tmp / "corpus.txt")
    return tmp


def instances(tmp, seed):
    """The instances of the corpus as pretraining builds them (its vocabulary, lower-cased words)."""
    from gluon_suite.nlp.corpora import load_corpus
    docs = load_corpus(str(tmp / "corpus.txt"))
    vocab = build_vocab(docs, min_freq=1, lower=True)
    tok = tokenizer(vocab, lower=True)
    return create_instances([[tok(s) for s in d] for d in docs], vocab, P["seq_len"], seed=seed), vocab


def run(tmp, name, **phase):
    cfg = {"out": str(tmp / name), "corpus": str(tmp / "corpus.txt"), "min_freq": 1, "progress": False,
           "dropout": 0.0, "ckpt_every": 1000, "seed": SEED, "phases": [{**P, **phase}]}
    return pretrain_bert(cfg, LocalCommunicator(), log=lambda m: None)


def test_shards_of_the_corpus_instances_train_exactly_as_the_corpus(corpus):
    data, _ = instances(corpus, SEED)          # phase 1's instances: seed + 1000 x 0
    paths = write_shards(data, corpus / "train", per_shard=7)
    assert len(paths) == -(-len(data["nsp_labels"]) // 7) > 2
    a = run(corpus, "from_corpus")["history"]
    b = run(corpus, "from_shards", shards=str(corpus / "train"))["history"]
    keys = ("mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc", "global_batch", "lr")
    assert [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b]
    # and different instances would have trained differently
    other, _ = instances(corpus, SEED + 1)
    write_shards(other, corpus / "other")
    c = run(corpus, "other_shards", shards=str(corpus / "other"))["history"]
    assert c[0]["mlm_loss"] != a[0]["mlm_loss"]


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def test_held_out_metrics_at_the_phase_end_equal_a_numpy_evaluation(corpus):
    held, _ = instances(corpus, 99)
    held = {k: v[:13] for k, v in held.items()}     # 13 instances: a last batch of 5
    write_shards(held, corpus / "held", per_shard=6)
    res = run(corpus, "eval", eval_shards=str(corpus / "held") + "/part-*.npz")
    h = res["history"]
    assert all("eval_mlm_loss" not in r for r in h[:-1]) and h[-1]["eval_instances"] == 13
    # the final model on the held-out instances, in float64 NumPy from its scores
    vocab = load_vocab(str(corpus / "eval" / "vocab.txt"))
    import mxnet as mx
    _, _, nsp_score, mlm_score = res["net"](mx.nd.array(held["input_ids"]), mx.nd.array(held["token_types"]),
                                            mx.nd.array(held["valid_length"]), mx.nd.array(held["masked_positions"]))
    mlm = _log_softmax(mlm_score.asnumpy().astype(np.float64).reshape(13, -1, len(vocab)))
    nsp = _log_softmax(nsp_score.asnumpy().astype(np.float64))
    w, ids = held["masked_weights"].astype(np.float64), held["masked_ids"]
    tok = -np.take_along_axis(mlm, ids[..., None], axis=-1)[..., 0] * w
    mlm_loss = np.mean(tok.sum(1) / np.maximum(w.sum(1), 1))
    mlm_acc = ((mlm.argmax(-1) == ids) * w).sum() / w.sum()
    nsp_loss = np.mean(-nsp[np.arange(13), held["nsp_labels"]])
    nsp_acc = np.mean(nsp.argmax(-1) == held["nsp_labels"])
    last = h[-1]
    assert last["eval_mlm_loss"] == pytest.approx(mlm_loss, rel=1e-5)
    assert last["eval_nsp_loss"] == pytest.approx(nsp_loss, rel=1e-5)
    assert last["eval_mlm_acc"] == pytest.approx(mlm_acc, abs=1e-9)
    assert last["eval_nsp_acc"] == pytest.approx(nsp_acc, abs=1e-9)


def test_wrong_shards_are_one_line(corpus, tmp_path):
    data, vocab = instances(corpus, SEED)
    write_shards(data, tmp_path / "s32")
    with pytest.raises(UserError, match="seq_len is 64"):
        read_shards(str(tmp_path / "s32"), 64, len(vocab))
    with pytest.raises(UserError, match="beyond this vocabulary's 10"):
        read_shards(str(tmp_path / "s32"), 32, 10)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no .npz shards"):
        read_shards(str(tmp_path / "empty"), 32, len(vocab))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.npz").write_bytes(b"not a zip")
    with pytest.raises(UserError, match="is not a pretraining shard"):
        read_shards(str(tmp_path / "bad"), 32, len(vocab))
