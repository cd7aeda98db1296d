"""Atomic writes, one-line CLI errors, JSON-lines logs, CSV summaries."""
import csv
import json
import os
import subprocess
import sys

import pytest

from gluon_suite.utils import CsvSummary, JsonLinesLogger, atomic_path, atomic_write, write_json


def test_atomic_write_replaces_whole_file(tmp_path):
    p = tmp_path / "a.json"
    write_json(p, {"x": 1})
    write_json(p, {"x": 2})
    assert json.loads(p.read_text()) == {"x": 2}
    assert os.listdir(tmp_path) == ["a.json"]


def test_failed_write_leaves_old_file_and_no_temp(tmp_path):
    p = tmp_path / "ckpt.params"
    atomic_write(p, b"old", mode="wb")
    with pytest.raises(RuntimeError):
        with atomic_path(p) as tmp:
            with open(tmp, "wb") as f:
                f.write(b"half-")
            raise RuntimeError("killed mid-write")
    assert p.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["ckpt.params"]


def test_jsonl_and_csv(tmp_path):
    with JsonLinesLogger(tmp_path / "log.jsonl") as log:
        log.log(epoch=1, loss=0.5)
        log.log(epoch=2, loss=0.25)
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [json.loads(l)["loss"] for l in lines] == [0.5, 0.25]
    s = CsvSummary(tmp_path / "summary.csv")
    s.add(epoch=1, acc=0.5)
    CsvSummary(tmp_path / "summary.csv").add(epoch=2, acc=0.75)  # reopened: header kept once
    rows = list(csv.DictReader(open(tmp_path / "summary.csv")))
    assert rows == [{"epoch": "1", "acc": "0.5"}, {"epoch": "2", "acc": "0.75"}]


def test_run_cli_turns_user_errors_into_one_line(tmp_path):
    code = ("from gluon_suite.utils import run_cli\n"
            "def main(argv):\n    raise ValueError('ratio must be >= 1, got 0.5; pass --ratio 1 or more')\n"
            "run_cli(main)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 2  # bad input (docs/getting_started.md, Exit codes)
    assert p.stderr.strip() == "error: ratio must be >= 1, got 0.5; pass --ratio 1 or more"
