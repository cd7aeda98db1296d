"""The big LM (gluon_suite/nlp/big_lm.py, ``--model big_rnn_lm_2048_512``): the sampled-softmax
training loss and the full-softmax evaluation against float64 NumPy computations of their formulas
(docs/nlp.md, "The big LM"), the candidates' expected counts against the log-uniform distribution,
and the recipe training it on a tiny text file with its one-line errors."""
import math

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

from gluon_suite.nlp.big_lm import build
from gluon_suite.nlp.language_model import train_language_model, train_window
from gluon_suite.nlp.lm_windows import LOSS

from .test_language_model import _one_line_error, _script, text_file, tiny  # noqa: F401  (a fixture)

V, K = 60, 12


def _net(seed=0):
    mx.random.seed(seed)
    net = build(V, embed_size=6, hidden_size=10, num_layers=1, projection_size=5, num_sampled=K,
                embed_dropout=0.0, encode_dropout=0.0)
    net.initialize(mx.init.Xavier())
    return net


def _xy(t=4, n=3, seed=1):
    rng = np.random.RandomState(seed)
    return (mx.nd.array(rng.randint(0, V, (t, n))), mx.nd.array(rng.randint(0, V, (t, n))))


def _decoder(net):
    d = net.model.decoder
    return d.weight.data().asnumpy().astype(np.float64), d.bias.data().asnumpy().astype(np.float64)


def test_expected_counts_are_the_log_uniform_probabilities_times_the_candidates():
    net = _net()
    _, y = _xy()
    cand, exp_cand, exp_true = net.draw(y)
    assert cand.shape == (K,) and exp_true.shape == (y.size,)
    p = lambda c: (math.log(c + 2) - math.log(c + 1)) / math.log(V + 1)   # noqa: E731
    np.testing.assert_allclose(exp_cand.asnumpy(), [K * p(c) for c in cand.asnumpy()], rtol=1e-6)
    np.testing.assert_allclose(exp_true.asnumpy(), [K * p(c) for c in y.asnumpy().reshape(-1)], rtol=1e-6)
    assert cand.asnumpy().min() >= 0 and cand.asnumpy().max() < V


def test_sampled_softmax_loss_matches_its_formula_in_float64(monkeypatch):
    net = _net()
    x, y = _xy()
    h = net.begin_state(batch_size=x.shape[1], func=mx.nd.zeros)
    cand = np.array([0, 3, 7, 7, 11, 20, 33, 41, 5, 9, 59, 2], dtype=np.int64)
    cand[1] = int(y.asnumpy()[0, 0])   # an accidental hit: a candidate equal to a true word
    q_c = np.linspace(0.5, 3.0, K)
    q_t = np.linspace(0.2, 1.5, y.size)
    monkeypatch.setattr(net, "draw", lambda yy: (mx.nd.array(cand, dtype="int64"), mx.nd.array(q_c, dtype="float64"),
                                                 mx.nd.array(q_t, dtype="float64")))
    with autograd.record():
        out, _, target = net.sampled_window(x, y, h)
    nll = LOSS(out.reshape((-3, -1)), target.reshape((-1,))).asnumpy()
    enc = net._encode(x, h)[0].asnumpy().reshape(-1, 5).astype(np.float64)
    w, b = _decoder(net)
    ys = y.asnumpy().reshape(-1).astype(int)
    expect = []
    for i, t in enumerate(ys):
        true = enc[i] @ w[t] + b[t] - math.log(q_t[i])
        samp = np.array([enc[i] @ w[c] + b[c] - math.log(q_c[j]) if c != t else -np.inf for j, c in enumerate(cand)])
        z = np.concatenate([[true], samp])
        expect.append(-(true - (z.max() + math.log(np.exp(z - z.max()).sum()))))
    assert (target.asnumpy() == 0).all()
    np.testing.assert_allclose(nll, expect, rtol=1e-4, atol=1e-5)


def test_evaluation_is_the_full_softmax_over_the_vocabulary():
    net = _net()
    x, _ = _xy()
    h = net.begin_state(batch_size=x.shape[1], func=mx.nd.zeros)
    logits, _ = net(x, h)
    enc = net._encode(x, h)[0].asnumpy().reshape(-1, 5).astype(np.float64)
    w, b = _decoder(net)
    assert logits.shape == (4, 3, V)
    np.testing.assert_allclose(logits.asnumpy().reshape(-1, V), enc @ w.T + b, rtol=1e-4, atol=1e-5)


def test_a_training_window_gives_every_true_word_a_decoder_gradient():
    net = _net()
    x, y = _xy()
    h = net.begin_state(batch_size=x.shape[1], func=mx.nd.zeros)
    nll, h2 = train_window(net, h, x, y, x.shape[1])
    assert np.isfinite(nll.asscalar()) and nll.asscalar() > 0
    g = net.model.decoder.weight.grad().asnumpy()
    touched = set(np.nonzero(np.abs(g).sum(1))[0])
    assert touched and touched <= set(range(V))
    assert set(y.asnumpy().reshape(-1).astype(int)) <= touched   # every true word's row gets a gradient
    assert [s.shape for s in h2] == [(3, 5), (3, 10)]   # LSTMP: (projection, cell) per layer


def test_the_recipe_trains_the_big_lm(text_file, tmp_path):  # noqa: F811
    cfg = tiny(text_file, tmp_path / "run", model="big_rnn_lm_2048_512", nproj=8, k=10, epochs=2,
               optimizer="adagrad", lr=0.2)
    res = train_language_model(cfg, log=lambda *a: None)
    h = res["history"]
    assert len(h) == 2 and all(np.isfinite(r["val_ppl"]) for r in h)
    assert h[-1]["test_ppl"] is not None and h[-1]["val_ppl"] < res["vocab_size"]   # below a uniform guess
    assert h[1]["train_loss"] < h[0]["train_loss"]


def test_bad_big_lm_flags_get_one_line(text_file, tmp_path):  # noqa: F811
    p = _script("--corpus", "text", "--data-path", text_file, "--min-freq", "1", "--model", "big_rnn_lm_2048_512",
                "--k", "100000", "--epochs", "1", "--out", str(tmp_path / "a"))
    _one_line_error(p, "--k", "vocabulary")
    p = _script("--corpus", "text", "--data-path", text_file, "--model", "standard_lstm_lm_200", "--nproj", "8",
                "--out", str(tmp_path / "b"))
    _one_line_error(p, "--nproj", "big")


@pytest.mark.parametrize("bad", [0, V])
def test_candidate_count_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match="num_sampled"):
        build(V, embed_size=4, hidden_size=4, num_layers=1, projection_size=4, num_sampled=bad)
