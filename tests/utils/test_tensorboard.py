"""``--tensorboard DIR``: the scalars a run logs to ``log.jsonl`` come back, equal, from the event
files, read here with a TFRecord reader of this file's own (its CRC-32C checked against the
standard check value) and the event message of the writer's package; a folder that cannot be
created and a missing mxboard are one line at start-up; an interrupted run's event file holds every
record it logged, whole; other ranks write nothing; a run in stages writes a subfolder per stage."""
import json
import math
import os
import re
import signal
import struct
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from gluon_suite.utils import UserError, tensorboard

from ..conftest import REPO

ENV = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO)
ENV.pop("GLUON_SUITE_VERBOSE", None)
# the quickest classification run whose log has the loss, metrics, rate, throughput and wire bytes
CLASSIFY = ["scripts/cv/train_classification.py", "--model", "digits_cnn", "--image-size", "8", "--epochs", "2",
            "--batch-size", "256", "--no-progress"]


def crc32c(data):
    """CRC-32C (Castagnoli), bit by bit: the checksum of the TFRecord framing."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(path):
    """The events of one file: each record is length (u64), its masked CRC (u32), the bytes and
    their masked CRC; the file ends exactly after a whole record."""
    from mxboard.proto.event_pb2 import Event
    data, pos, events = open(path, "rb").read(), 0, []
    while pos < len(data):
        head = data[pos:pos + 8]
        (length,), (head_crc,) = struct.unpack("<Q", head), struct.unpack("<I", data[pos + 8:pos + 12])
        assert head_crc == masked(crc32c(head)), f"bad length checksum at byte {pos} of {path}"
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert len(body) == length and body_crc == masked(crc32c(body)), f"bad record at byte {pos} of {path}"
        event = Event()
        event.ParseFromString(body)
        events.append(event)
        pos += 16 + length
    assert pos == len(data)
    return events


def scalars_in(folder):
    """``{step: {tag: value}}`` of the one event file in ``folder`` (no tag written twice at a step)."""
    files = [f for f in os.listdir(folder) if f.startswith("events.out.tfevents.")]
    assert len(files) == 1, files
    events = read_events(os.path.join(folder, files[0]))
    assert events[0].wall_time > 0 and not events[0].HasField("summary")   # the writer's opening event
    out = {}
    for ev in events[1:]:
        for v in ev.summary.value:
            assert v.tag not in out.setdefault(ev.step, {}), (ev.step, v.tag)
            out[ev.step][v.tag] = v.simple_value
    return out


def expected_tags(record):
    """The documented rule, written out: every finite number but ``step``; train_/val_/test_/dev_
    keys under their split, the bare ``loss`` as train/loss, the rest by their own name."""
    out = {}
    for key, value in record.items():
        if key == "step" or type(value) not in (int, float) or not math.isfinite(value):
            continue
        m = re.fullmatch(r"(train|val|test|dev)_(.+)", key)
        out["train/loss" if key == "loss" else f"{m.group(1)}/{m.group(2)}" if m else key] = value
    return out


def run(args, **kw):
    return subprocess.run([sys.executable, *args], cwd=REPO, env=ENV, capture_output=True, text=True,
                          timeout=300, **kw)


def test_crc32c_reference_gives_the_standard_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def test_event_files_hold_the_logged_scalars(tmp_path):
    out, board = tmp_path / "run", tmp_path / "tb"
    p = run([*CLASSIFY, "--out", str(out), "--tensorboard", str(board)])
    assert p.returncode == 0, p.stderr[-2000:]
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    got = scalars_in(board)
    assert sorted(got) == [r["step"] for r in records] and len(records) == 2
    for rec in records:
        want = expected_tags(rec)
        assert {"train/loss", "train/acc", "test/acc", "lr", "samples_per_s", "wire_bytes", "epoch"} <= set(want)
        assert "test/bn" not in got[rec["step"]]   # text ("none") is not a scalar
        assert set(got[rec["step"]]) == set(want)
        # TensorBoard keeps float32: the value logged, rounded once
        assert {t: np.float32(v) for t, v in got[rec["step"]].items()} == {t: np.float32(v) for t, v in want.items()}


def test_pretraining_writes_the_logged_steps_of_each_phase_into_its_subfolder(tmp_path):
    """Per-step records, of which the log keeps every second (``log_every``), in two phases whose
    steps count from 0 again."""
    out, board, config = tmp_path / "run", tmp_path / "tb", tmp_path / "c.yaml"
    config.write_text("log_every: 2\n")
    p = run(["scripts/nlp/pretrain_bert.py", "--config", str(config), "--no-progress", "--out", str(out),
             "--phase", "seq_len=32,batch_size=8,steps=4,lr=0.001",
             "--phase", "seq_len=32,batch_size=4,steps=2,lr=0.001", "--tensorboard", str(board)])
    assert p.returncode == 0, p.stderr[-2000:]
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [(r["phase"], r["step"]) for r in records] == [(1, 2), (1, 4), (2, 2)]
    assert sorted(os.listdir(board)) == ["phase1", "phase2"]
    for phase in (1, 2):
        got = scalars_in(board / f"phase{phase}")
        mine = [r for r in records if r["phase"] == phase]
        assert sorted(got) == [r["step"] for r in mine]
        for rec in mine:
            want = expected_tags(rec)
            assert {"train/loss", "mlm_loss", "lr"} <= set(want)
            assert {t: np.float32(v) for t, v in got[rec["step"]].items()} == \
                {t: np.float32(v) for t, v in want.items()}


def test_a_folder_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for bad, words in ((blocker / "tb", "cannot be created"), (blocker, "is a file, not a folder")):
        p = run(["scripts/cv/train_digits.py", "--epochs", "1", "--out", str(tmp_path / "run"),
                 "--tensorboard", str(bad)])
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
        assert p.stderr.strip().count("\n") == 0 and "--tensorboard" in p.stderr and words in p.stderr, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_missing_mxboard_is_one_line_saying_how_to_install(tmp_path):
    code = ("import runpy, sys; sys.modules['mxboard'] = None; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    p = run(["-c", code, "scripts/cv/train_digits.py", "--epochs", "1", "--out", str(tmp_path / "run"),
             "--tensorboard", str(tmp_path / "tb")])
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.stderr.strip().count("\n") == 0, p.stderr
    assert "needs mxboard" in p.stderr and "pip install -c constraints.txt mxboard" in p.stderr
    assert os.listdir(tmp_path) == []


def test_interrupted_run_keeps_every_logged_record_whole(tmp_path):
    out, board = tmp_path / "run", tmp_path / "tb"
    proc = subprocess.Popen([sys.executable, "scripts/cv/train_digits.py", "--epochs", "200", "--no-progress",
                             "--out", str(out), "--tensorboard", str(board)], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, deadline = 0, time.time() + 240
    for line in proc.stdout:   # the epoch line is printed after the epoch's scalars were written
        seen += line.startswith("epoch ")
        if seen == 2 or time.time() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert seen == 2 and proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    got = scalars_in(board)
    # the signal may land between the log's line and the event file's: at most that record is missing
    assert len(got) >= 2 and len(records) - len(got) in (0, 1)
    for step, rec in zip(sorted(got), records):
        want = expected_tags(rec)
        assert {t: np.float32(v) for t, v in got[step].items()} == {t: np.float32(v) for t, v in want.items()}
        assert want["epoch"] == rec["epoch"] and "train/loss" in want and "lr" in want and "wire_bytes" in want


def test_scalars_keep_finite_numbers_only():
    rec = {"step": 7, "epoch": 2, "loss": 0.5, "val_ppl": 12.0, "dev_f1": 0.25, "test_acc": 1, "lr": 1e-3,
           "best_val_ppl": 11.0, "samples_per_s": 10, "done": True, "name": "x", "none": None, "nan": float("nan"),
           "inf": float("inf"), "intervals": [{"batch": 1, "train_ppl": 3.0}], "train_": 4.0}
    assert tensorboard.scalars(rec) == {"epoch": 2.0, "train/loss": 0.5, "val/ppl": 12.0, "dev/f1": 0.25,
                                        "test/acc": 1.0, "lr": 1e-3, "best_val_ppl": 11.0, "samples_per_s": 10.0,
                                        "train_": 4.0}


def test_other_ranks_write_nothing_and_a_stage_has_its_subfolder(tmp_path):
    with tensorboard.EventLog(str(tmp_path / "a")) as log:
        log.add({"loss": 1.0}, 3, SimpleNamespace(rank=1))
    assert not (tmp_path / "a").exists()
    with tensorboard.EventLog(str(tmp_path / "b"), stage=("phase", 1)) as log:
        log.add({"loss": 1.5, "lr": 0.25}, 4, SimpleNamespace(rank=0))
        log.add({"loss": 0.75, "lr": 0.125, "note": "x"}, 6, SimpleNamespace(rank=0))
    assert os.listdir(tmp_path / "b") == ["phase2"]
    assert scalars_in(tmp_path / "b" / "phase2") == {4: {"train/loss": 1.5, "lr": 0.25},
                                                      6: {"train/loss": 0.75, "lr": 0.125}}


def test_use_checks_mxboard_at_once(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "mxboard", None)
    with pytest.raises(UserError, match=r"^--tensorboard needs mxboard .* pip install -c constraints.txt mxboard$"):
        tensorboard.use(str(tmp_path))
    tensorboard.use(None)   # no folder: nothing to check
    assert tensorboard.current() is None
