"""GluonNLP's spellings carry over to the BERT scripts (--num_steps, --total_batch_size,
--batch_size, --lr/--learning_rate, --max_seq_length, --doc_stride, ...): each alias parses to the
same value as our spelling. A phase's batch is per worker (batch_size) or global (total_batch_size,
as GluonNLP's): global = per-worker x workers x accumulate, with the arithmetic worked out by hand.
GluonNLP's fine-tuning flags in the training loop: --accumulate sums micro-batches like one larger
batch, --early_stop counts GluonNLP's patience, --warmup_ratio, --epsilon and --log_interval reach the
run (rates and losses worked out by hand)."""
import json
import os
import subprocess
import sys

import pytest

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
from gluon_suite.nlp.pretrain import phase_batches, pretrain_bert
from gluon_suite.utils import UserError

from ..conftest import HOROVODRUN, REPO, load_script

README = os.path.join(REPO, "README.md")     # an existing UTF-8 file for --train/--dev
ENV = dict(os.environ, PYTHONPATH=REPO, GLUON_SUITE_QUIET="1")


def _script(name):
    return load_script(f"scripts/nlp/{name}.py")


@pytest.fixture(scope="module")
def pretrain_script():
    return _script("pretrain_bert")


def test_pretraining_aliases_parse_to_the_same_phase_values(pretrain_script):
    p = pretrain_script.build_parser()
    ours = vars(p.parse_args(["--steps", "5", "--seq-len", "128", "--batch-size", "8", "--total-batch-size", "64",
                              "--lr", "0.01", "--warmup", "0.2", "--max-predictions", "20", "--accumulate", "2"]))
    theirs = vars(p.parse_args(["--num_steps", "5", "--max_seq_length", "128", "--batch_size", "8",
                                "--total_batch_size", "64", "--learning_rate", "0.01", "--warmup_ratio", "0.2",
                                "--max_predictions_per_seq", "20", "--accumulate", "2"]))
    assert ours == theirs
    assert {k: ours[k] for k in ours if k not in ("gpus", "dtype")} == {
        "steps": 5, "seq_len": 128, "batch_size": 8, "total_batch_size": 64, "lr": 0.01, "warmup": 0.2,
        "max_predictions": 20, "accumulate": 2}
    assert "--num_steps" in p.format_help() and "--total_batch_size" in p.format_help()


@pytest.mark.parametrize("script,extra,ours,theirs,expected", [
    ("finetune_squad", [],
     ["--max-len", "64", "--doc-stride", "16", "--max-query-length", "8", "--batch-size", "4", "--lr", "1e-4",
      "--out", "runs/q"],
     ["--max_seq_length", "64", "--doc_stride", "16", "--max_query_length", "8", "--batch_size", "4",
      "--learning_rate", "1e-4", "--output_dir", "runs/q"],
     {"max_len": 64, "doc_stride": 16, "max_query_length": 8, "batch_size": 4, "lr": 1e-4, "out": "runs/q"}),
    ("finetune_classification", [],
     ["--max-len", "32", "--batch-size", "4", "--lr", "2e-4", "--out", "runs/c"],
     ["--max_len", "32", "--batch_size", "4", "--learning_rate", "2e-4", "--output_dir", "runs/c"],
     {"max_len": 32, "batch_size": 4, "lr": 2e-4, "out": "runs/c"}),
    ("finetune_classification", [], ["--max-len", "48"], ["--max_seq_length", "48"], {"max_len": 48}),
])
def test_fine_tuning_aliases_parse_to_the_same_values(script, extra, ours, theirs, expected):
    p = _script(script).build_parser()
    base = ["--train", README, "--dev", README]
    a, b = vars(p.parse_args(base + ours)), vars(p.parse_args(base + theirs))
    assert a == b
    assert {k: a[k] for k in expected} == expected


def test_total_batch_is_divided_by_workers_and_accumulation():
    phases = [{"seq_len": 64, "total_batch_size": 96, "accumulate": 3, "steps": 1, "lr": 0.1},
              {"seq_len": 128, "batch_size": 5, "steps": 1, "lr": 0.1},
              {"seq_len": 128, "total_batch_size": 64, "steps": 1, "lr": 0.1}]
    # 96 / (4 workers x 3) = 8; a per-worker batch stays; 64 / (4 x 1) = 16
    assert [ph["batch_size"] for ph in phase_batches(phases, 4)] == [8, 5, 16]
    assert all("total_batch_size" not in ph for ph in phase_batches(phases, 4))
    # one worker: 96 / 3 = 32 and 64 / 1 = 64
    assert [ph["batch_size"] for ph in phase_batches(phases, 1)] == [32, 5, 64]


@pytest.mark.parametrize("phase,workers,message", [
    ({"total_batch_size": 100, "accumulate": 3}, 4, "total_batch_size 100 is not a multiple of 4 worker(s) x 3 "
                                                    "accumulation = 12; use 96 or 108"),
    ({"total_batch_size": 5}, 8, "total_batch_size 5 is not a multiple of 8 worker(s) x 1 accumulation = 8; use 8"),
    ({"total_batch_size": 8, "batch_size": 4}, 1, "gives both batch_size (per worker) and total_batch_size"),
])
def test_a_total_batch_that_does_not_divide_is_one_line(phase, workers, message):
    with pytest.raises(UserError) as err:
        phase_batches([{"seq_len": 32, "steps": 1, "lr": 0.1, **phase}], workers)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_phase_flags_override_the_default_phase(pretrain_script):
    cfg = pretrain_script.fold_phase_flags({"steps": 5, "total_batch_size": 64, "lr": 0.01}, False)
    # the default phase (seq 64, 16 per worker, 100 steps, lr 0.005, warm-up 0.1, constant 0.2) with the
    # flags' steps, lr and a total batch in place of its per-worker batch
    assert cfg == {"phases": [{"seq_len": 64, "total_batch_size": 64, "accumulate": 1, "steps": 5, "lr": 0.01,
                               "warmup": 0.1, "constant": 0.2}]}
    cfg = pretrain_script.fold_phase_flags(
        {"phases": [{"seq_len": 32, "total_batch_size": 64, "steps": 9, "lr": 0.1}], "batch_size": 4}, False)
    assert cfg == {"phases": [{"seq_len": 32, "batch_size": 4, "steps": 9, "lr": 0.1}]}


def test_phase_flags_beside_phases_are_one_line(tmp_path):
    cases = [(["--num_steps", "2", "--phase", "seq_len=32,batch_size=4,steps=3,lr=0.1"],
              "--steps/--num_steps set one phase and --phase sets the phases"),
             (["--config", os.path.join(REPO, "configs/nlp/bert_tiny_two_phase.yaml"), "--learning_rate", "0.1"],
              "--lr/--learning_rate set one phase but the config has 2 phases"),
             (["--total_batch_size", "7", "--accumulate", "2"],
              "total_batch_size 7 is not a multiple of 1 worker(s) x 2 accumulation = 2; use 6 or 8")]
    for flags, message in cases:
        p = subprocess.run([sys.executable, os.path.join(REPO, "scripts/nlp/pretrain_bert.py"), "--out",
                            str(tmp_path / "run"), *flags], capture_output=True, text=True, timeout=300, env=ENV)
        lines = p.stderr.strip().splitlines()
        assert p.returncode != 0 and len(lines) == 1 and message in lines[0], p.stderr
        assert not (tmp_path / "run").exists()


def test_banner_and_log_show_the_global_batch_of_a_total_batch_phase(tmp_path):
    logs = []
    res = pretrain_bert({"out": str(tmp_path / "b"), "progress": False, "ckpt_every": 1000,
                         "phases": [{"seq_len": 32, "total_batch_size": 8, "accumulate": 2, "steps": 2, "lr": 0.01}]},
                        LocalCommunicator(), log=logs.append)
    assert any("global batch 8 = 4 per worker x 1 workers x 2 accumulation" in m for m in logs), logs
    assert [h["global_batch"] for h in res["history"]] == [8, 8]


@pytest.mark.horovod
def test_total_batch_size_over_two_horovod_workers(tmp_path):
    out = tmp_path / "b"
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(REPO, "scripts/nlp/pretrain_bert.py"), "--out", str(out), "--no-progress",
                        "--num_steps", "2", "--total_batch_size", "8", "--accumulate", "2", "--max_seq_length", "32",
                        "--learning_rate", "0.01"], capture_output=True, text=True, timeout=600,
                       env=dict(ENV, OMP_NUM_THREADS="1"))
    assert p.returncode == 0, p.stderr[-3000:]
    # 8 / (2 workers x 2 accumulation) = 2 per worker
    assert "global batch 8 = 2 per worker x 2 workers x 2 accumulation" in p.stdout, p.stdout[-2000:]
    lines = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["global_batch"] for r in lines] == [8, 8]


# ---- GluonNLP's fine-tuning flags in the training loop (gluon_suite.nlp.gluonnlp_flags) ----------------
def test_patience_counts_as_gluonnlps_early_stop():
    from gluon_suite.nlp.gluonnlp_flags import patience_left
    recs = [{"m": v} for v in (0.5, 0.6, 0.4, 0.3, 0.7)]
    # by hand, patience 2: 0.5 best (2), 0.6 best (2), 0.4 worse (1), 0.3 worse (0: stop), 0.7 best (2)
    assert [patience_left(recs[:k], "m", 2) for k in range(1, 6)] == [2, 2, 1, 0, 2]
    assert patience_left([{"m": 0.5}, {"m": 0.4}, {"m": 0.5}], "m", 2) == 2   # as good as the best resets it


def test_interval_log_prints_the_mean_loss_per_example():
    import mxnet as mx

    from gluon_suite.nlp.gluonnlp_flags import IntervalLog, micro_batches
    lines = []
    every = IntervalLog(2, lines.append)
    every.add(1, 1, mx.nd.array([3.0]), 2)
    every.add(1, 2, mx.nd.array([5.0]), 2)      # (3 + 5) / (2 + 2) = 2
    every.add(1, 3, mx.nd.array([1.0]), 4)
    assert lines == ["epoch 1 step 2: train loss 2.0000 (mean of the last 2 steps)"]
    assert [list(c) for c in micro_batches([0, 1, 2, 3, 4, 5, 6], 3)] == [[0, 1, 2], [3, 4], [5, 6]]


TRAINER = DistributedTrainer   # the real class (a test wraps it)


def _loop(monkeypatch, metrics=None, **over):
    """``_train_loop`` on a linear model (16 examples, squared loss): the final weights, the history,
    the log and the trainer the loop built."""
    import mxnet as mx
    import numpy as np
    from mxnet import gluon

    import gluon_suite.distributed as dist
    from gluon_suite.nlp.finetune import ClassifierConfig, _train_loop
    made, real = [], TRAINER

    def trainer(*args, **kwargs):   # the real trainer, its learning rate noted at each update
        made.append(real(*args, **kwargs))
        step, made[-1].rates = made[-1].step, []

        def noted(size):
            step(size)
            made[-1].rates.append(made[-1].optimizer._get_lrs([0])[0])
        made[-1].step = noted
        return made[-1]
    monkeypatch.setattr(dist, "DistributedTrainer", trainer)
    cfg = ClassifierConfig.from_dict({"train": README, "dev": README, "init": REPO, "epochs": 2, "batch_size": 8,
                                      "optimizer": "sgd", "lr": 0.1, "warmup_ratio": 0.0, **over})
    rs = np.random.RandomState(0)
    x = rs.randn(16, 3).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5]) + 0.3).astype(np.float32)
    net = gluon.nn.Dense(1, in_units=3)
    net.initialize(mx.init.Constant(0.1))
    l2 = gluon.loss.L2Loss()
    scripted = iter(metrics or [])
    logs = []
    hist = _train_loop(cfg, net, (x, y), lambda b: l2(net(b[0])[:, 0], b[1]), LocalCommunicator(), logs.append,
                       lambda: {"dev_accuracy": next(scripted, 0.0)})
    return net.weight.data().asnumpy(), hist, logs, made[0]


def test_accumulate_sums_micro_batches_like_one_larger_batch(monkeypatch):
    import numpy as np
    one, _, _, t1 = _loop(monkeypatch, batch_size=8)
    two, _, _, t2 = _loop(monkeypatch, batch_size=4, accumulate=2)   # 2 micro-batches of 4 per step
    assert t1.optimizer.num_update == t2.optimizer.num_update == 4   # 16 examples / 8 per step x 2 epochs
    np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-6)
    last, _, _, _ = _loop(monkeypatch, batch_size=4)                  # steps of 4: not the same weights
    assert np.abs(last - one).max() > 1e-3


def test_early_stop_ends_after_patience_epochs_without_the_best(monkeypatch):
    # dev accuracy 0.5, 0.6, 0.4, 0.3, 0.7 with patience 2: by hand the run stops after epoch 4
    _, hist, logs, _ = _loop(monkeypatch, [0.5, 0.6, 0.4, 0.3, 0.7], epochs=5, early_stop=2)
    assert [r["dev_accuracy"] for r in hist] == [0.5, 0.6, 0.4, 0.3]
    assert any("stopped after epoch 4 of 5" in m for m in logs)
    _, hist, _, _ = _loop(monkeypatch, [0.5, 0.6, 0.4, 0.3, 0.7], epochs=5)
    assert len(hist) == 5


def test_epsilon_warmup_ratio_and_log_interval_reach_the_run(monkeypatch):
    import numpy as np
    _, _, logs, trainer = _loop(monkeypatch, optimizer="adam", epsilon=1e-6, warmup_ratio=0.5, log_interval=2)
    assert trainer.optimizer.epsilon == 1e-6
    # the rate at the fractions 0, 1/4, 2/4, 3/4 of the run (noted after each of the 4 updates), by hand:
    # warm-up over the first half, 0.1 f / 0.5, then 0.1 (1 - (f - 0.5) / 0.5); the schedule moves in
    # thousandths of an epoch (VIRTUAL_STEPS), hence the tolerance
    np.testing.assert_allclose(trainer.rates, [0.0, 0.05, 0.1, 0.05], atol=5e-4)
    _, _, _, trainer = _loop(monkeypatch, optimizer="adam")   # no warm-up: 0.1 (1 - f)
    np.testing.assert_allclose(trainer.rates, [0.1, 0.075, 0.05, 0.025], atol=5e-4)
    assert [m.split(":")[0] for m in logs if "train loss" in m] == ["epoch 1 step 2", "epoch 2 step 4"]
