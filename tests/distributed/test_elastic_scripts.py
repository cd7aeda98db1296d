"""`--elastic` in every training script: each runs to the end under a real elastic launch
(`gluon-suite launch --min-np/--max-np` with a discovery script, two workers on loopback), writes
its logs with the worker count, and learns. Resizes themselves are tested in test_elastic.py. The
classification scripts' elastic runs are the elastic halves of the fixed-vs-elastic tests
(tests/cv/test_fixed_and_elastic.py and the fine-tuning one below), which check the same and more.

The discovery script lists a spare host beside the two the job uses (``--max-np 2``): a worker lost
to something these tests are not about (a native crash, the machine's OOM killer) is replaced on
the spare host, the job restores from its last commit and still ends on two workers, as
``test_a_lost_worker_is_replaced_from_the_spare_host`` checks with a real SIGKILL."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from ..conftest import REPO, job_output

CLI = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
pytestmark = pytest.mark.horovod


# one slot per host name: Horovod blacklists a failed *host*, so the spare must have a name of its
# own (three spellings of the loopback address, local on any machine)
HOSTS = ("localhost", "127.0.0.1", "127.0.1")


def write_discovery(folder, hosts=HOSTS):
    """A discovery script in ``folder`` listing ``hosts`` (one slot each); returns its path."""
    (folder / "hosts.txt").write_text("".join(f"{h}:1\n" for h in hosts))
    d = folder / "discover.sh"
    d.write_text(f"#!/bin/sh\ncat {folder / 'hosts.txt'}\n")
    d.chmod(0o755)
    return str(d)


@pytest.fixture(scope="module")
def discovery(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("elastic-scripts")
    return tmp, write_discovery(tmp)


def launcher(discovery_script, workers=2):
    """``gluon-suite launch`` for an elastic job of exactly ``workers`` workers; the discovery
    script's extra hosts are spares that replace a lost worker."""
    return [CLI, "launch", "--min-np", str(workers), "--max-np", str(workers), "--host-discovery-script",
            discovery_script, "--network-interface", "lo", "--"]


def script_env(env=None):
    return dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", **(env or {}))


def elastic(discovery, script, *args, timeout=400, env=None):
    p = subprocess.run([*launcher(discovery[1]), sys.executable, os.path.join(REPO, "scripts", script),
                        "--elastic", *args], capture_output=True, text=True, timeout=timeout, env=script_env(env))
    assert p.returncode == 0, job_output(p)
    return p.stdout


def workers_of(proc, script):
    """The worker processes under launcher ``proc`` that run ``script`` (not the launchers or the
    shells between them)."""
    out = []
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            cmd = child.cmdline()
        except psutil.Error:
            continue
        if len(cmd) > 1 and cmd[1].endswith(script) and "python" in os.path.basename(cmd[0]):
            out.append(child)
    return out


def digits_job(folder, kill_after_first_epoch):
    """A 4-epoch elastic train_digits.py job of two workers in ``folder``; with
    ``kill_after_first_epoch`` one worker (rank 1, the one whose loss leaves rank 0 in place) is
    SIGKILLed once the first epoch is logged. Returns (stdout + stderr tail, log, result)."""
    run = folder / "run"
    p = subprocess.Popen([*launcher(write_discovery(folder)), sys.executable,
                          os.path.join(REPO, "scripts", "cv", "train_digits.py"), "--elastic", "--epochs", "4",
                          "--commit-every", "5", "--lr", "0.05", "--no-progress", "--out", str(run)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=script_env())
    try:
        if kill_after_first_epoch:
            deadline = time.time() + 300
            while time.time() < deadline and p.poll() is None and not (
                    (run / "log.jsonl").exists() and (run / "log.jsonl").read_text().strip()):
                time.sleep(0.2)
            workers = workers_of(p, os.path.join("cv", "train_digits.py"))
            ranks = [w.environ().get("HOROVOD_RANK") for w in workers]
            assert sorted(ranks) == ["0", "1"], ranks
            workers[ranks.index("1")].kill()
        out, err = p.communicate(timeout=400)
    finally:
        if p.poll() is None:
            p.kill()
    said = out[-3000:] + err[-3000:]
    assert p.returncode == 0, said
    return said, lines(run / "log.jsonl"), json.load(open(run / "result.json"))


@pytest.mark.long   # make test's time budget; the long tier runs it
def test_a_lost_worker_is_replaced_from_the_spare_host(tmp_path):
    # a worker SIGKILLed after the first epoch: the survivor goes back to its last commit, a new
    # worker starts on the spare host, and the job ends as if nothing had happened: every epoch
    # logged once on two workers and the same model as a job that lost nothing (the data order and
    # every random draw follow the step, and the commit is restored exactly). Before the restore
    # waited for the failed step's operations, about one such job in six went on from
    # uninitialised memory and ended at chance with a NaN loss.
    (tmp_path / "whole").mkdir()
    (tmp_path / "killed").mkdir()
    _, ref_log, ref = digits_job(tmp_path / "whole", False)
    said, log, res = digits_job(tmp_path / "killed", True)
    said += json.dumps(res)[-1000:]
    assert "exit with status code 137" in said or "Killed" in said, said     # the kill happened
    assert [r["epoch"] for r in log] == [1, 2, 3, 4] and {r["workers"] for r in log} == {2}, said
    assert {n for n, _ in res["lrs"]} == {2} and len(res["lrs"]) == len(ref["lrs"]), said
    assert res["test_acc"] == ref["test_acc"] and ref["test_acc"] >= 0.8, said
    assert [r["train_loss"] for r in log[2:]] == pytest.approx([r["train_loss"] for r in ref_log[2:]], rel=1e-4)


def lines(path):
    return [json.loads(line) for line in open(path)]


def test_train_digits_elastic(discovery, tmp_path):
    elastic(discovery, "cv/train_digits.py", "--epochs", "2", "--lr", "0.05", "--no-progress", "--out",
            str(tmp_path))
    res = json.load(open(tmp_path / "result.json"))
    assert len(res["history"]) == 2 and res["test_acc"] >= 0.8
    assert {n for n, _ in res["lrs"]} == {2}


def test_train_digits_elastic_shrink_logs_the_smaller_batch_rate(tmp_path):
    # a real 2-worker job loses one worker (its host leaves the discovery list after epoch 1) and
    # finishes alone; the rate at every step on one worker is the one-worker target 0.05 x 1/2,
    # at once, although --ramp-steps is far longer than the run (a downward ramp would still be
    # near 0.05 at the end)
    hosts, disc, run = tmp_path / "hosts.txt", tmp_path / "discover.sh", tmp_path / "run"
    hosts.write_text("localhost:1\n127.0.0.1:1\n")
    disc.write_text(f"#!/bin/sh\ncat {hosts}\n")
    disc.chmod(0o755)
    p = subprocess.Popen([CLI, "launch", "--min-np", "1", "--max-np", "2", "--host-discovery-script", str(disc),
                          "--network-interface", "lo", "--", sys.executable,
                          os.path.join(REPO, "scripts", "cv", "train_digits.py"), "--elastic", "--epochs", "30", "--commit-every", "5",
                          "--lr", "0.05", "--ramp-steps", "1000", "--no-progress", "--out", str(run)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1"))
    try:
        deadline = time.time() + 300
        while time.time() < deadline and p.poll() is None and not (
                (run / "log.jsonl").exists() and (run / "log.jsonl").read_text().strip()):
            time.sleep(0.2)
        hosts.write_text("localhost:1\n")
        out, err = p.communicate(timeout=400)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out[-3000:] + err[-3000:]
    log = lines(run / "log.jsonl")
    assert log[0]["workers"] == 2 and log[-1]["workers"] == 1 and len(log) == 30, out[-3000:] + err[-3000:]
    assert [r["lr"] for r in log] == pytest.approx([0.05 if r["workers"] == 2 else 0.025 for r in log])
    res = json.load(open(run / "result.json"))
    # two workers, then one to the end: how many steps each had depends on when the job saw the
    # host leave, so only the order and the one-worker rate are asserted
    sizes = [n for n, _ in res["lrs"]]
    assert sizes[0] == 2 and sizes[-1] == 1 and sizes == sorted(sizes, reverse=True)
    one = [lr for n, lr in res["lrs"] if n == 1]
    assert one == pytest.approx([0.025] * len(one))
    assert res["test_acc"] >= 0.8


@pytest.fixture(scope="module")
def pretrained(discovery):
    tmp = discovery[0]
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from gluon_suite.nlp.text import write_corpus
    rs = np.random.RandomState(0)
    words = "alpha bravo charlie delta echo foxtrot golf hotel".split()
    docs = [[f"the film was {'good' if (d + i) % 2 else 'bad'} and {' '.join(rs.choice(words, 4))} ."
             for i in range(4)] for d in range(30)]
    write_corpus(docs, tmp / "corpus.txt")
    out = tmp / "bert"
    stdout = elastic(discovery, "nlp/pretrain_bert.py", "--corpus", str(tmp / "corpus.txt"), "--min-freq", "1",
                     "--phase", "seq_len=32,batch_size=8,steps=12,lr=0.01", "--ckpt-every", "6",
                     "--no-progress", "--out", str(out))
    return tmp, out, stdout


def test_pretrain_bert_elastic(pretrained):
    _, out, stdout = pretrained
    log = lines(out / "log.jsonl")
    assert [r["step"] for r in log] == list(range(1, 13)) and {r["workers"] for r in log} == {2}
    assert log[-1]["mlm_loss"] < log[0]["mlm_loss"]
    state = json.load(open(out / "state.json"))
    assert state["elastic"] and state["phase"] == 1 and (out / "ckpt.rank0.params").exists()
    assert "phase 1 done" in stdout


def test_finetune_squad_elastic(pretrained, tmp_path):
    # (classification fine-tuning under --elastic: test_finetune_classification_is_the_same_fixed_size_and_elastic)
    tmp, out, _ = pretrained
    paras = [{"context": f"the code is {w} .", "qas": [{"id": f"q{i}", "question": "what is the code ?",
              "answers": [{"text": w, "answer_start": 12}]}]} for i, w in enumerate(["alpha", "bravo"] * 16)]
    for name in ("train", "dev"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"version": "1.1", "data": [{"title": "t",
                                                                                    "paragraphs": paras}]}))
    stdout = elastic(discovery_of(tmp), "nlp/finetune_squad.py", "--init", str(out), "--train",
                     str(tmp_path / "train.json"), "--dev", str(tmp_path / "dev.json"), "--max-len", "24",
                     "--max-query-length", "8", "--epochs", "2", "--batch-size", "8", "--out", str(tmp_path / "squad"))
    assert stdout.count("dev_exact_match") == 2


def discovery_of(tmp):
    return tmp, str(tmp / "discover.sh")


@pytest.mark.parametrize("extra", [[], ["--sampled", "--batch-size", "16"]], ids=["full", "sampled"])
def test_train_node_classification_elastic(discovery, tmp_path, extra):
    """The elastic run ends as a fixed-size one: config.json, the averaged model, and --publish
    publishes it (the elastic path once returned before all three)."""
    stdout = elastic(discovery, "graph/train_node_classification.py", "--dataset", "sbm", "--model", "sage",
                     "--epochs", "20", "--out", str(tmp_path), "--publish", str(tmp_path / "store"), *extra,
                     env={"GLUON_SUITE_HOME": str(tmp_path / "home")})
    log = lines(tmp_path / "log.jsonl")
    assert [r["epoch"] for r in log] == [10, 20] and {r["workers"] for r in log} == {2}
    assert log[-1]["test_acc"] >= 0.8 and json.load(open(tmp_path / "state.json"))["elastic"]
    assert stdout.count("test accuracy") == 1                       # printed once, by rank 0
    config = json.load(open(tmp_path / "config.json"))
    assert config["elastic"] and config["workers"] == 2 and config["model"] == "sage"
    index = json.load(open(tmp_path / "store" / "index.json"))
    assert "sage" in json.dumps(index) and stdout.count("published ") == 1
    assert (tmp_path / "model.params").exists()


@pytest.mark.long   # make test's time budget; the long tier runs it
def test_train_graph_classification_elastic(discovery, tmp_path):
    elastic(discovery, "graph/train_graph_classification.py", "--epochs", "20", "--out", str(tmp_path))
    log = lines(tmp_path / "log.jsonl")
    assert [r["epoch"] for r in log] == [10, 20] and {r["workers"] for r in log} == {2}
    assert log[-1]["test_acc"] >= 0.7 and (tmp_path / "model.params").exists()


@pytest.mark.long   # make test's time budget; the long tier runs it
def test_float16_bert_elastic(pretrained, tmp_path):
    """--dtype float16 under an elastic launch (emulated on the CPU): the loss scale is elastic
    state, logged every step; pretraining learns and its checkpoint fine-tunes in float16 too."""
    tmp, _, _ = pretrained
    out = tmp_path / "bert16"
    env = {"GLUON_SUITE_EMULATE_FLOAT16": "1"}
    elastic(discovery_of(tmp), "nlp/pretrain_bert.py", "--corpus", str(tmp / "corpus.txt"), "--min-freq", "1",
            "--phase", "seq_len=32,batch_size=8,steps=12,lr=0.01", "--no-progress", "--dtype", "float16",
            "--out", str(out), env=env)
    log = lines(out / "log.jsonl")
    assert [r["step"] for r in log] == list(range(1, 13)) and {r["workers"] for r in log} == {2}
    assert all(r["loss_scale"] == 1024.0 and r["loss_scale_skipped"] == 0 for r in log)
    assert log[-1]["mlm_loss"] < log[0]["mlm_loss"]
    rows = ["sentence\tlabel"] + [f"the film was {'good' if i % 2 else 'bad'}\t{i % 2}" for i in range(64)]
    for name in ("train", "dev"):
        (tmp_path / f"{name}.tsv").write_text("\n".join(rows) + "\n")
    stdout = elastic(discovery_of(tmp), "nlp/finetune_classification.py", "--init", str(out), "--train",
                     str(tmp_path / "train.tsv"), "--dev", str(tmp_path / "dev.tsv"), "--max-len", "16",
                     "--epochs", "2", "--batch-size", "8", "--dtype", "float16", "--out", str(tmp_path / "cls16"), env=env)
    assert stdout.count("dev_accuracy") == 2 and stdout.count("loss_scale 1024") == 2


@pytest.mark.long   # make test's time budget; the long tier runs it
def test_finetune_classification_is_the_same_fixed_size_and_elastic(pretrained, tmp_path):
    """Fine-tuning runs one loop: the same 2-worker job with horovodrun and under an elastic launch
    that never resizes logs the same epochs and ends with the same checkpoint."""
    from ..conftest import HOROVODRUN, max_param_diff
    tmp, out, _ = pretrained
    rows = ["sentence\tlabel"] + [f"the film was {'good' if i % 3 else 'bad'} today\t{int(i % 3 > 0)}"
                                  for i in range(48)]
    for name in ("train", "dev"):
        (tmp_path / f"{name}.tsv").write_text("\n".join(rows) + "\n")
    args = ["--init", str(out), "--train", str(tmp_path / "train.tsv"), "--dev", str(tmp_path / "dev.tsv"),
            "--max-len", "16", "--epochs", "2", "--batch-size", "8", "--seed", "3"]
    a, b = tmp_path / "fixed", tmp_path / "elastic"
    p = subprocess.run([HOROVODRUN, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.join(REPO, "scripts", "nlp", "finetune_classification.py"), *args, "--out", str(a)],
                       capture_output=True, text=True, timeout=400,
                       env=dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1"))
    assert p.returncode == 0, job_output(p)
    stdout = elastic(discovery_of(tmp), "nlp/finetune_classification.py", *args, "--out", str(b))
    assert stdout.count("dev_accuracy") == 2 and "workers 2" in stdout     # printed once per epoch, by rank 0
    la, lb = lines(a / "log.jsonl"), lines(b / "log.jsonl")
    assert [r["epoch"] for r in la] == [r["epoch"] for r in lb] == [1, 2]
    for ra, rb in zip(la, lb):
        assert set(ra) == set(rb) and ra["workers"] == rb["workers"] == 2
        for key in ("train_loss", "dev_accuracy", "dev_f1"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-4, abs=1e-6), key
    sa, sb = json.load(open(a / "state.json")), json.load(open(b / "state.json"))
    # 48 sentences, 16 per global step: 3 steps per epoch
    assert (sa["epoch"], sa["step"]) == (sb["epoch"], sb["step"]) == (2, 6) and sb["elastic"]
    assert max_param_diff(a / "last.rank0.params", b / "last.rank0.params") <= 1e-5
