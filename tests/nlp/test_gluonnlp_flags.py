"""GluonNLP's spellings carry over to the BERT scripts (--num_steps, --total_batch_size,
--batch_size, --lr/--learning_rate, --max_seq_length, --doc_stride, ...): each alias parses to the
same value as our spelling. A phase's batch is per worker (batch_size) or global (total_batch_size,
as GluonNLP's): global = per-worker x workers x accumulate, with the arithmetic worked out by hand."""
import json
import os
import subprocess
import sys

import pytest

from gluon_suite.distributed import LocalCommunicator
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
