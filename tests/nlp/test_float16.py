"""float16 BERT (GLUON_SUITE_EMULATE_FLOAT16=1 on the CPU): pretraining with float32 master weights
and a dynamic loss scale follows the float32 run; an overflowing loss scale is backed off without
harming training; a float16 run's checkpoint fine-tunes in float32. (Fine-tuning in float16:
test_nlp_devices.py.)"""
import numpy as np
import pytest

from gluon_suite.distributed import LocalCommunicator
from gluon_suite.nlp import pretrain as pretrain_mod
from gluon_suite.nlp.finetune import load_backbone
from gluon_suite.nlp.pretrain import pretrain_bert

P = {"seq_len": 32, "batch_size": 16, "steps": 40, "lr": 0.02, "warmup": 0.1, "constant": 0.3}


def run(tmp_path, name, **extra):
    cfg = {"out": str(tmp_path / name), "progress": False, "dropout": 0.0, "ckpt_every": 1000,
           "seed": 3, "phases": [P], **extra}
    return pretrain_bert(cfg, LocalCommunicator(), log=lambda m: None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import os
    tmp = tmp_path_factory.mktemp("bert16")
    os.environ["GLUON_SUITE_EMULATE_FLOAT16"] = "1"
    trainers, real = [], pretrain_mod.DistributedTrainer
    pretrain_mod.DistributedTrainer = lambda *a, **k: trainers.append(real(*a, **k)) or trainers[-1]
    try:
        half = run(tmp, "half", dtype="float16")
    finally:
        del os.environ["GLUON_SUITE_EMULATE_FLOAT16"]
        pretrain_mod.DistributedTrainer = real
    half["trainer"] = trainers[0]
    return tmp, half, run(tmp, "full")


def test_float16_pretraining_follows_float32(runs):
    _, half, full = runs
    h16, h32 = half["history"], full["history"]
    end16 = np.mean([r["mlm_loss"] for r in h16[-5:]])
    end32 = np.mean([r["mlm_loss"] for r in h32[-5:]])
    assert end16 < 0.85 * h16[0]["mlm_loss"]                 # it learns
    assert abs(end16 - end32) < 0.05 * end32, (end16, end32)  # as float32 does
    # float16 weights, float32 master copies in the optimizer, the loss scale in the log
    params = [p for p in half["net"].collect_params().values() if p.grad_req != "null"]
    assert all(p.data().dtype == np.float16 for p in params)
    updater = half["trainer"]._updaters[0]
    assert updater.optimizer.multi_precision
    assert len(updater.states) == len(params)

    def flat(st):
        return [x for s in st for x in flat(s)] if isinstance(st, (list, tuple)) else [st]
    for i, st in updater.states.items():   # a float32 master copy that rounds to the weight
        w = half["trainer"]._params[i].data().asnumpy()
        assert any(m is not None and m.dtype == np.float32 and m.shape == w.shape
                   and (m.asnumpy().astype(np.float16) == w).all() for m in flat(st))
    assert all(r["loss_scale"] == 1024.0 and r["loss_scale_skipped"] == 0 for r in h16)
    assert "loss_scale" not in h32[-1]


def test_a_float16_checkpoint_fine_tunes_in_float32(runs):
    tmp, half, _ = runs
    net, vocab, cfg = load_backbone(str(tmp / "half"))
    assert cfg["dtype"] == "float16"
    ours = net._collect_params_with_prefix()            # structural names, as in the file
    theirs = half["net"]._collect_params_with_prefix()
    shared = [k for k in ours if k in theirs]
    assert len(shared) > 10
    for k in shared:
        a, b = ours[k].data(), theirs[k].data()
        assert a.dtype == np.float32 and b.dtype == np.float16
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy().astype(np.float32))


def test_an_overflowing_loss_scale_backs_off_and_training_goes_on(tmp_path, monkeypatch):
    """Start at 2^24: float16 gradients overflow (max 65504), the step is skipped and the scale
    halves until the gradients fit; the run still learns."""
    monkeypatch.setenv("GLUON_SUITE_EMULATE_FLOAT16", "1")
    from gluon_suite.distributed import loss_scale
    real = loss_scale.DynamicLossScaler
    monkeypatch.setattr(loss_scale, "DynamicLossScaler", lambda: real(init_scale=2.0 ** 24))
    h = run(tmp_path, "big", dtype="float16", phases=[dict(P, steps=25)])["history"]
    skipped = h[-1]["loss_scale_skipped"]
    assert skipped >= 1 and h[-1]["loss_scale"] == 2.0 ** 24 / 2 ** skipped
    assert h[-1]["loss_scale"] < 2.0 ** 24
    assert all(np.isfinite(r["mlm_loss"]) for r in h)
    assert np.mean([r["mlm_loss"] for r in h[-3:]]) < h[0]["mlm_loss"] - 0.3


def test_an_unknown_dtype_is_one_line(tmp_path):
    from gluon_suite.utils import UserError
    with pytest.raises(UserError, match="unknown dtype 'bfloat16'"):
        run(tmp_path, "bf16", dtype="bfloat16")
