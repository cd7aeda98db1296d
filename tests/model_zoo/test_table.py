"""`gluon-suite zoo table`: one row per catalogue checkpoint, checked against the catalogue, the
cards and the shipped files read independently; docs/model_zoo.md carries the current table."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

from gluon_suite.model_zoo.store import ZooError
from gluon_suite.model_zoo.table import BEGIN, END, render_markdown, write_into, zoo_rows

from ..conftest import REPO

CLI = os.path.join(os.path.dirname(sys.executable), "gluon-suite")


def test_rows_match_the_catalogue_cards_and_files():
    with open(os.path.join(REPO, "gluon_suite", "model_zoo", "checkpoints.json")) as f:
        records = {r["model"]: r for r in json.load(f)["checkpoints"] if not r.get("companion")}
    rows = {r["model"]: r for r in zoo_rows()}
    assert rows.keys() == records.keys() and rows
    for name, rec in records.items():
        with open(os.path.join(REPO, rec["card"])) as f:
            card = json.load(f)
        row = rows[name]
        assert row["value"] == card["metric"]["value"] and row["command"] == card["command"]
        assert row["sha256"] == rec["sha256"][:8] == card["checkpoint"]["sha256"][:8]
        if rec["url"] == "repo:model_zoo/store":   # the shipped file itself has that hash and size
            path = os.path.join(REPO, "model_zoo", "store", rec["file_name"])
            with open(path, "rb") as f:
                assert hashlib.sha256(f.read()).hexdigest() == rec["sha256"]
            assert row["size_mb"] == round(os.path.getsize(path) / 1e6, 2)
        assert os.path.exists(os.path.join(REPO, row["log"]))


def test_docs_carry_the_current_table():
    with open(os.path.join(REPO, "docs", "model_zoo.md")) as f:
        text = f.read()
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert block.strip() == render_markdown(zoo_rows()).strip(), \
        "docs/model_zoo.md is stale: run gluon-suite zoo table --write docs/model_zoo.md"


def test_write_into_replaces_only_the_block_and_refuses_a_file_without_markers(tmp_path):
    doc = tmp_path / "zoo.md"
    doc.write_text(f"# Zoo\n\nbefore\n\n{BEGIN}\nold table\n{END}\n\nafter\n")
    write_into(str(doc), zoo_rows())
    text = doc.read_text()
    assert "old table" not in text and text.startswith("# Zoo\n\nbefore\n") and text.endswith("after\n")
    assert "| `resnest14_digits` |" in text
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    with pytest.raises(ZooError, match="has no zoo-table markers"):
        write_into(str(plain), zoo_rows())
    p = subprocess.run([CLI, "zoo", "table", "--write", str(plain)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=REPO), timeout=120)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert plain.read_text() == "no markers\n"


def test_every_shipped_checkpoint_builds_through_get_model_offline(tmp_path, monkeypatch):
    """No network, a fresh cache: get_model(name, pretrained=True) for every catalogue model of
    every domain (vision, language, graphs) loads the weights shipped in the source tree."""
    import mxnet as mx

    from gluon_suite.model_zoo import get_model
    from gluon_suite.model_zoo.registry import resolve
    monkeypatch.setenv("GLUON_SUITE_OFFLINE", "1")
    monkeypatch.setenv("GLUON_SUITE_HOME", str(tmp_path))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)
    with open(os.path.join(REPO, "gluon_suite", "model_zoo", "checkpoints.json")) as f:
        records = [r for r in json.load(f)["checkpoints"] if not r.get("companion")]
    tasks = set()
    for rec in records:
        net = get_model(rec["model"], pretrained=True)
        shipped = mx.nd.load(os.path.join(REPO, "model_zoo", "store", rec["file_name"]))
        params = net._collect_params_with_prefix()
        assert set(params) <= set(shipped)
        for k, p in params.items():        # the loaded values are the shipped ones
            assert (p.data().asnumpy() == shipped[k].asnumpy()).all(), (rec["model"], k)
        tasks.add(resolve(rec["model"]).task)
    assert {"classification", "masked-lm", "node-classification", "graph-classification"} <= tasks
