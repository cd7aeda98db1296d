"""BERT with two contexts per worker (split_and_load): pretraining gives the same losses as one
context with the same batch (gradient accumulation included); fine-tuning learns; every
parameter's copies stay identical."""
import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.nlp.finetune import finetune_classification
from gluon_suite.nlp.pretrain import pretrain_bert
from gluon_suite.utils import UserError

from .test_finetune import _sentence, film_tsvs

P = {"seq_len": 32, "batch_size": 8, "accumulate": 2, "steps": 4, "lr": 0.01, "warmup": 0.25,
     "constant": 0.25}


def run(tmp_path, name, ctx, **extra):
    cfg = {"out": str(tmp_path / name), "progress": False, "dropout": 0.0, "ckpt_every": 1000,
           "seed": 1, "phases": [P], **extra}
    return pretrain_bert(cfg, LocalCommunicator(), log=lambda m: None, ctx=ctx)


def test_two_contexts_equal_one_context(tmp_path):
    one = run(tmp_path, "one", [mx.cpu(0)])
    two = run(tmp_path, "two", [mx.cpu(0), mx.cpu(1)])
    keys = ("mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc")
    a = np.array([[h[k] for k in keys] for h in one["history"]])
    b = np.array([[h[k] for k in keys] for h in two["history"]])
    assert len(a) == P["steps"] and a[-1, 0] < a[0, 0]
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-5)
    # the same architecture: parameters in the same (insertion) order
    for p, q in zip(two["net"].collect_params().values(), one["net"].collect_params().values()):
        copies = p.list_data()
        assert [c.context for c in copies] == [mx.cpu(0), mx.cpu(1)] and p.shape == q.shape
        if p.grad_req != "null":
            np.testing.assert_array_equal(copies[1].asnumpy(), copies[0].asnumpy())
        if p.name.endswith("key_bias"):
            # softmax ignores a bias shared by all keys: its gradient is rounding noise, which
            # LANS's normalised update turns into +-lr steps whose sign depends on summation order
            continue
        np.testing.assert_allclose(copies[0].asnumpy(), q.data().asnumpy(), rtol=0, atol=1e-5)

def test_a_batch_smaller_than_the_device_count_is_refused(tmp_path):
    with pytest.raises(UserError, match="batch_size 1 is smaller than the 2 devices"):
        run(tmp_path, "small", [mx.cpu(0), mx.cpu(1)], phases=[dict(P, batch_size=1)])


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A short pretraining run on a corpus whose sentences say whether 'the film was good'."""
    from gluon_suite.nlp.text import write_corpus
    tmp = tmp_path_factory.mktemp("nlp_devices")
    rs = np.random.RandomState(0)
    docs = [[f"the film was {'good' if (d + i) % 2 else 'bad'} and {_sentence(rs)} ." for i in range(3)]
            for d in range(30)]
    write_corpus(docs, tmp / "corpus.txt")
    pretrain_bert({"out": str(tmp / "bert"), "corpus": str(tmp / "corpus.txt"), "min_freq": 1,
                   "progress": False, "dropout": 0.0,
                   "phases": [{"seq_len": 48, "batch_size": 16, "steps": 20, "lr": 0.01}]},
                  LocalCommunicator(), log=lambda m: None)
    return tmp, tmp / "bert"


def test_classification_on_two_contexts_learns_and_keeps_copies_identical(bert, tmp_path, monkeypatch):
    """Each batch split over two CPU contexts (split_and_load): it learns as on one, and every
    trainable parameter's two copies are identical after training."""
    from gluon_suite.nlp import finetune
    _, out = bert
    film_tsvs(tmp_path)
    nets, real = [], finetune.BertClassifier

    def spy(*args, **kwargs):
        nets.append(real(*args, **kwargs))
        return nets[-1]
    monkeypatch.setattr(finetune, "BertClassifier", spy)
    ctx = [mx.cpu(0), mx.cpu(1)]
    hist = finetune_classification({"train": str(tmp_path / "train.tsv"), "dev": str(tmp_path / "dev.tsv"),
                                    "init": str(out), "max_len": 24, "epochs": 4, "batch_size": 16, "lr": 1e-3,
                                    "out": str(tmp_path / "ft")}, log=lambda m: None, ctx=ctx)
    assert hist[-1]["dev_accuracy"] >= 0.8        # chance is 0.5
    for p in nets[0].collect_params().values():
        assert [d.context for d in p.list_data()] == ctx
        if p.grad_req != "null":
            a, b = (d.asnumpy() for d in p.list_data())
            assert (a == b).all(), p.name


def test_float16_fine_tuning_learns(bert, tmp_path, monkeypatch):
    """--dtype float16 (emulated on the CPU): the float32 checkpoint is cast, the optimizer keeps
    float32 master weights and a loss scale; it learns the task as float32 does."""
    _, out = bert
    monkeypatch.setenv("GLUON_SUITE_EMULATE_FLOAT16", "1")
    film_tsvs(tmp_path)
    hist = finetune_classification({"train": str(tmp_path / "train.tsv"), "dev": str(tmp_path / "dev.tsv"),
                                    "init": str(out), "max_len": 24, "epochs": 4, "batch_size": 16, "lr": 1e-3,
                                    "dtype": "float16", "out": str(tmp_path / "ft")}, log=lambda m: None)
    assert hist[-1]["dev_accuracy"] >= 0.8        # chance is 0.5
    assert hist[-1]["loss_scale"] >= 1.0 and np.isfinite(hist[-1]["train_loss"])
