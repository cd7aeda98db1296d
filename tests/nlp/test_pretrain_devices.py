"""BERT pretraining with two contexts per worker (split_and_load): the same losses as one context
with the same batch (gradient accumulation included), and every parameter's copies identical."""
import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.nlp.pretrain import pretrain_bert
from gluon_suite.utils import UserError

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
