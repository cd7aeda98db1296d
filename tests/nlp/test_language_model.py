"""The word language-model recipe (gluon_suite/nlp/language_model.py): the carried hidden state is
detached at every window, perplexity is exp(mean token NLL) as an independent float64 NumPy
computation gives it (on one worker and split over two), a run stopped after an epoch and resumed
ends as the uninterrupted run, bad input gets one line, and a two-worker Local AdaAlter job is the
same fixed-size and elastic. Every run is tiny: a text file of a few hundred training tokens and a
16-unit LSTM."""
import json
import os
import random
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.nlp.language_model import (RECOMMENDED, build_model, perplexity, stream_nll,
                                            train_language_model, train_window)

from ..conftest import HOROVODRUN, REPO, job_output, max_param_diff
from ..distributed.test_elastic_scripts import discovery, elastic  # noqa: F401  (a fixture, a helper)

SCRIPT = os.path.join(REPO, "scripts", "nlp", "train_language_model.py")
ENV = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_QUIET="1")
WORDS = ("the river city bank north south old new house road market bridge school people water light small "
         "great king church war year day night") .split()


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    """24 documents of 24 to 32 words (a blank line between documents): with 15% held out for
    validation and for test, about 500 training tokens."""
    rng = random.Random(7)
    docs = []
    for _ in range(24):
        sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 8))).capitalize() + "."
                     for _ in range(4)]
        docs.append(" ".join(sentences))
    path = tmp_path_factory.mktemp("lm") / "corpus.txt"
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return str(path)


def tiny(text_file, out, **extra):
    cfg = {"corpus": "text", "data_path": text_file, "emsize": 16, "nhid": 16, "nlayers": 1, "batch_size": 4,
           "bptt": 8, "epochs": 3, "min_freq": 1, "log_interval": 3, "seed": 1, "valid_fraction": 0.15,
           "test_fraction": 0.15, "eval_batch_size": 3, "out": str(out)}
    return {**cfg, **extra}


def flags(cfg):
    out = []
    for k, v in cfg.items():
        out += [f"--{k.replace('_', '-')}", str(v)]
    return out


def _net(vocab=30, dropout=0.0):
    net = build_model("standard_lstm_lm_200", vocab, embed_size=8, hidden_size=8, num_layers=1, dropout=dropout)
    mx.random.seed(3)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True)
    return net


def test_the_carried_hidden_state_is_detached():
    """No gradient reaches the state a window starts from (marked as a variable here: without the
    detach in ``train_window`` it gets one), and window 2's gradient is the one from window 1's final
    state taken as a constant. (MXNet frees window 1's graph at its backward, so the second check
    alone would pass without the detach; the first is the one that fails.)"""
    net, rng = _net(), np.random.RandomState(0)
    x1, y1, x2, y2 = (mx.nd.array(rng.randint(0, 30, size=(6, 4))) for _ in range(4))
    h0 = net.begin_state(batch_size=4, func=mx.nd.zeros)
    for h in h0:
        h.attach_grad()
    _, h1 = train_window(net, h0, x1, y1, 4)
    assert all(float(h.grad.abs().sum().asscalar()) == 0.0 for h in h0)   # window 1 did not reach its input state
    _, h2 = train_window(net, h1, x2, y2, 4)
    carried = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()}
    _, _ = train_window(net, [mx.nd.array(h.asnumpy()) for h in h1], x2, y2, 4)
    for k, p in net.collect_params().items():
        np.testing.assert_allclose(carried[k], p.grad().asnumpy(), rtol=1e-6, atol=1e-7, err_msg=k)
    assert all(float(h.grad.abs().sum().asscalar()) == 0.0 for h in h0)


class _Share:
    """One worker of a simulated world: its rank and size, collectives the identity (the test adds
    the workers' sums itself)."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size

    def allreduce(self, tensor, average=False, name=None):
        return tensor


def _numpy_perplexity(net, ids, columns):
    """exp(mean NLL) with float64 NumPy: each column run as one whole sequence, then log-softmax."""
    t = (len(ids) - 1) // columns
    total, count = 0.0, 0
    for c in range(columns):
        x = ids[c * t:(c + 1) * t]
        y = ids[c * t + 1:(c + 1) * t + 1]
        h = net.begin_state(batch_size=1, func=mx.nd.zeros)
        logits = net(mx.nd.array(x.reshape(-1, 1)), h)[0].asnumpy().astype(np.float64).reshape(t, -1)
        logp = logits - logits.max(1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(1, keepdims=True))
        total -= logp[np.arange(t), y].sum()
        count += t
    return float(np.exp(total / count)), total, count


def test_perplexity_is_exp_of_the_mean_token_nll():
    net, ids = _net(), np.random.RandomState(1).randint(0, 30, size=203)
    expected, nll, count = _numpy_perplexity(net, ids, 5)
    got = perplexity(net, ids, 5, LocalCommunicator(), 7, mx.cpu())
    assert got == pytest.approx(expected, rel=1e-5)
    # two workers: contiguous shares of the columns (2 and 3 of 5), which add up to the whole stream
    shares = [stream_nll(net, ids, 5, _Share(r, 2), 7, mx.cpu()) for r in range(2)]
    assert [s[1] for s in shares] == [2 * 40, 3 * 40] and sum(s[1] for s in shares) == count
    assert sum(s[0] for s in shares) == pytest.approx(nll, rel=1e-5)


def test_a_run_stopped_and_resumed_ends_as_the_uninterrupted_one(text_file, tmp_path):
    quiet = lambda msg: None  # noqa: E731
    whole = train_language_model(tiny(text_file, tmp_path / "whole"), LocalCommunicator(), log=quiet)
    first = train_language_model(tiny(text_file, tmp_path / "cut", stop_after_epochs=1), LocalCommunicator(), log=quiet)
    assert [r["epoch"] for r in first["history"]] == [1]
    rest = train_language_model(tiny(text_file, tmp_path / "cut", resume="auto"), LocalCommunicator(), log=quiet)
    a = [json.loads(line) for line in open(tmp_path / "whole" / "log.jsonl")]
    b = [json.loads(line) for line in open(tmp_path / "cut" / "log.jsonl")]
    assert [r["epoch"] for r in a] == [r["epoch"] for r in b] == [1, 2, 3]
    windows = a[0]["step"]
    assert windows > 6 and [r["step"] for r in a] == [r["step"] for r in b] == [windows, 2 * windows, 3 * windows]
    for ra, rb in zip(a, b):
        assert [i["batch"] for i in ra["intervals"]] == [i["batch"] for i in rb["intervals"]]
        assert [i["train_ppl"] for i in rb["intervals"]] == pytest.approx([i["train_ppl"] for i in ra["intervals"]],
                                                                         rel=1e-6)
        for key in ("train_loss", "val_ppl", "best_val_ppl", "lr", "tokens"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-6), key
    assert a[-1]["test_ppl"] == pytest.approx(b[-1]["test_ppl"], rel=1e-6) and a[0]["test_ppl"] is None
    assert rest["best_ppl"] == pytest.approx(whole["best_ppl"], rel=1e-6)
    assert max_param_diff(tmp_path / "whole" / "last.rank0.params", tmp_path / "cut" / "last.rank0.params") == 0.0
    assert a[-1]["train_loss"] < a[0]["train_loss"]
    config = json.load(open(tmp_path / "whole" / "config.json"))
    assert config["corpus"] == "text" and config["corpus_record"]["source"] == "text" and config["vocabulary"]["size"] == whole["vocab_size"]
    assert (tmp_path / "whole" / "summary.csv").read_text().splitlines()[0].startswith("epoch,step,train_loss")


def _script(*args, cwd=None):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300, env=ENV,
                          cwd=cwd)


def _one_line_error(p, *words):
    assert p.returncode != 0, p.stdout[-2000:]
    assert "Traceback" not in p.stderr + p.stdout, p.stderr[-3000:]
    last = p.stderr.strip().splitlines()[-1]
    for word in words:
        assert word in last, p.stderr[-2000:]


def test_bad_input_gets_one_line(text_file, tmp_path):
    cfg = tiny(text_file, tmp_path / "run", epochs=1)
    assert _script(*flags(cfg)).returncode == 0
    # the same folder resumed on another vocabulary (the 10 most frequent words of the ~25)
    _one_line_error(_script(*flags({**cfg, "max_vocab": 10, "epochs": 2, "resume": "auto"})), "vocabulary mismatch")
    _one_line_error(_script(*flags({**cfg, "data_path": str(tmp_path / "missing.txt"), "out": str(tmp_path / "m")})),
                    "does not exist")
    _one_line_error(_script(*flags({**cfg, "model": "standard_lstm_lm_2000", "out": str(tmp_path / "u")})),
                    "unknown language model", "standard_lstm_lm_200")
    _one_line_error(_script(*flags({**cfg, "model": "big_rnn_lm_2048_512", "out": str(tmp_path / "b")})),
                    "--k 8192", "vocabulary")   # the big LM's default candidates exceed the 27 words
    _one_line_error(_script("--corpus", "text", "--out", str(tmp_path / "t")), "--data-path")
    # a validation split too small for its evaluation columns (it once read as perplexity 1.0)
    _one_line_error(_script(*flags({**cfg, "eval_batch_size": 5000, "out": str(tmp_path / "e")})),
                    "too few for --eval-batch-size")
    assert not (tmp_path / "m").exists() and not (tmp_path / "b").exists()


def test_window_sampler_keeps_the_fraction_of_the_epoch_across_a_resize():
    """100 windows on one worker, 50 on two: 60 done on one worker is 30 of 50 on two, whether the
    resize comes before or after the position is loaded; no tokens means no perplexity, not 1.0."""
    from gluon_suite.nlp.lm_windows import WindowSampler, _ppl
    s = WindowSampler(lambda size: 100 // size)
    s.reshard(0, 1)
    s.processed = 60
    saved = s.state_dict()
    s.reshard(0, 2)
    assert (s.per_epoch, s.processed) == (50, 30)
    t = WindowSampler(lambda size: 100 // size)
    t.reshard(0, 2)
    t.load_state_dict(saved)
    assert (t.per_epoch, t.processed) == (50, 30)
    t.reshard(0, 1)
    assert (t.per_epoch, t.processed) == (100, 60)
    assert np.isnan(_ppl(0.0, 0)) and _ppl(2 * np.log(5.0), 2) == pytest.approx(5.0)


def test_the_recommended_config_parses():
    from ..conftest import load_script
    parser = load_script("scripts/nlp/train_language_model.py").build_parser()
    from gluon_suite.nlp.language_model import LanguageModelConfig
    args = parser.parse_args(["--config", os.path.join(REPO, "configs", "nlp", "wiki_lm_local_adaalter.yaml")])
    cfg = LanguageModelConfig.from_sources(vars(args), parser)
    assert (cfg.algorithm, cfg.optimizer, cfg.period) == ("local_adaalter", "adaalter", 4)
    assert RECOMMENDED in " ".join(parser.format_help().split())


@pytest.mark.horovod
def test_local_adaalter_job_is_the_same_fixed_size_and_elastic(text_file, discovery, tmp_path):  # noqa: F811
    common = {k: v for k, v in tiny(text_file, "x", epochs=2, optimizer="adaalter", algorithm="local_adaalter",
                                    period=4, compress_warmup=2, lr=0.5).items() if k != "out"}
    a, b = tmp_path / "fixed", tmp_path / "elastic"
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable, SCRIPT,
                        *flags(common), "--out", str(a)], capture_output=True, text=True, timeout=400, env=ENV)
    assert p.returncode == 0, job_output(p)
    said = elastic(discovery, "nlp/train_language_model.py", *flags(common), "--out", str(b))
    assert "best validation perplexity" in said and "best validation perplexity" in p.stdout
    la = [json.loads(line) for line in open(a / "log.jsonl")]
    lb = [json.loads(line) for line in open(b / "log.jsonl")]
    assert [r["epoch"] for r in la] == [r["epoch"] for r in lb] == [1, 2]
    for ra, rb in zip(la, lb):
        assert set(ra) == set(rb)
        assert (ra["workers"], ra["global_batch"], ra["step"]) == (rb["workers"], rb["global_batch"], rb["step"])
        assert ra["workers"] == 2 and ra["global_batch"] == 8 and ra["wire_bytes"] > 0 and ra["lr"] == 0.5
        for key in ("train_loss", "val_ppl", "lr", "tokens"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-5), key
    assert la[-1]["test_ppl"] == pytest.approx(lb[-1]["test_ppl"], rel=1e-5)
    assert max_param_diff(a / "last.rank0.params", b / "last.rank0.params") <= 1e-5
    assert json.load(open(b / "state.json"))["elastic"] and (b / "best.params").exists()
