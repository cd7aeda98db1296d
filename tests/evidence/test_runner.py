"""`gluon-suite bench run`: a new result file per run, never a change to an existing one; the result
names its protocol's hash and the commit; protocols are committed before they run."""
import hashlib
import json
import os

import pytest

from gluon_suite.evidence import protocols, runner, store
from gluon_suite.utils.errors import UserError

from .conftest import git


def _sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _run(root, **kw):
    return runner.run("toy", root=str(root), show_progress=False, log=lambda m: None, **kw)


def test_a_run_writes_a_new_file_and_never_modifies_an_existing_one(toy_root):
    results = toy_root / "bench" / "results"
    path1, res1 = _run(toy_root)
    before = {p: _sha(p) for p in store.result_files(str(results), "toy")}
    mtimes = {p: os.stat(p).st_mtime_ns for p in before}
    path2, res2 = _run(toy_root)
    assert path2 != path1
    after = store.result_files(str(results), "toy")
    assert set(after) == set(before) | {path2}
    for p, h in before.items():                  # the earlier file: same bytes, untouched
        assert _sha(p) == h and os.stat(p).st_mtime_ns == mtimes[p]
    ptr = json.loads((results / "toy" / "latest.json").read_text())
    assert ptr["file"] == os.path.basename(path2) and ptr["sha256"] == _sha(path2)


def test_the_result_names_the_protocol_hash_and_the_commit(toy_root):
    path, res = _run(toy_root)
    text = (toy_root / "bench" / "protocols" / "toy.yaml").read_bytes()
    assert res["protocol"]["sha256"] == hashlib.sha256(text).hexdigest()
    assert res["protocol"]["version"] == 1 and res["protocol"]["text"] == text.decode()
    assert res["commit"] == git(toy_root, "rev-parse", "HEAD") and res["dirty"] is False
    on_disk = json.loads(open(path).read())
    assert on_disk["protocol"]["sha256"] == res["protocol"]["sha256"] and on_disk["commit"] == res["commit"]
    assert os.path.basename(path).endswith(f"-{res['commit'][:12]}.json")
    # every per-seed value, each with the load while it ran
    assert sorted((r["arm"], r["seed"]) for r in on_disk["runs"]) == sorted(
        (a, s) for a in ("slow", "fast") for s in range(4))
    assert all({"start", "mean", "max"} <= set(r["load"]) for r in on_disk["runs"])
    assert on_disk["versions"]["python"] and on_disk["machine"]["cpus"] >= 1


def test_the_verdict_follows_the_paired_interval(toy_root):
    _, res = _run(toy_root)
    (c,) = res["criteria"]
    # fast - slow = 0.10 + 0.002 s for s = 0..3: mean 0.103, a tight interval above 0
    assert c["interval"]["mean"] == pytest.approx(0.103)
    # sd of (0.100, 0.102, 0.104, 0.106) = 0.002 sqrt(5/3); t(0.975, 3) = 3.182446; sqrt(4) = 2
    half = 3.182446305284263 * 0.002 * (5 / 3) ** 0.5 / 2
    assert (c["interval"]["low"], c["interval"]["high"]) == (pytest.approx(0.103 - half), pytest.approx(0.103 + half))
    assert c["verdict"] == "better" and c["outcome"] == "holds"
    assert res["verdict"] == "holds"


def test_write_result_never_replaces_a_file_of_the_same_second(toy_root, monkeypatch):
    results = str(toy_root / "r")
    monkeypatch.setattr("time.strftime", lambda fmt, t=None: "20260101-000000")
    p1 = store.write_result(results, "toy", {"a": 1}, "abc")
    p2 = store.write_result(results, "toy", {"a": 2}, "abc")
    assert p1 != p2 and json.load(open(p1)) == {"a": 1} and json.load(open(p2)) == {"a": 2}


def test_an_edited_result_file_is_refused(toy_root):
    path, _ = _run(toy_root)
    with open(path, "a") as f:
        f.write(" ")
    with pytest.raises(UserError, match="never edited"):
        store.latest(str(toy_root / "bench" / "results"), "toy")


def test_an_uncommitted_protocol_does_not_run_except_quick(toy_root):
    p = toy_root / "bench" / "protocols" / "toy.yaml"
    p.write_text(p.read_text().replace("seeds: [0, 1, 2, 3]", "seeds: [0, 1]"))
    with pytest.raises(UserError, match="committed before its first run"):
        _run(toy_root)
    path, res = _run(toy_root, quick=True)
    assert res["quick"] and res["seeds"] == [0] and res["params"] == {"scale": 0.5}
    assert os.path.relpath(path, toy_root).startswith(os.path.join("runs", "bench-quick", "toy"))
    assert not (toy_root / "bench" / "results").exists()


def test_a_dirty_checkout_does_not_run_unless_allowed(toy_root):
    (toy_root / "bench" / "toy.py").write_text((toy_root / "bench" / "toy.py").read_text() + "\n# edit\n")
    with pytest.raises(UserError, match="uncommitted changes"):
        _run(toy_root)
    _, res = _run(toy_root, allow_dirty=True)
    assert res["dirty"] is True


def test_a_reused_arm_names_its_file_and_hash(toy_root):
    path_a, _ = _run(toy_root)
    text = (toy_root / "bench" / "protocols" / "toy.yaml").read_text()
    (toy_root / "bench" / "protocols" / "toy2.yaml").write_text(
        text.replace("name: toy", "name: toy2") + "reuses:\n  slow: {protocol: toy, arm: slow}\n")
    git(toy_root, "add", "-A")
    git(toy_root, "commit", "-qm", "toy2")
    _, res = runner.run("toy2", root=str(toy_root), show_progress=False, log=lambda m: None)
    assert res["reused"]["slow"]["file"] == os.path.relpath(path_a, toy_root)
    assert res["reused"]["slow"]["sha256"] == _sha(path_a)
    assert {r["arm"] for r in res["runs"] if "reused_from" in r} == {"slow"}
    assert res["criteria"][0]["outcome"] == "holds"


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("version: 1\n", ""), "missing key(s) version"),
    (lambda t: t.replace("test: better", "test: greater"), "criteria[0].test is 'greater'"),
    (lambda t: t.replace("a: fast", "a: quick"), "criteria[0].a is 'quick', not one of compared"),
    (lambda t: t.replace("name: toy", "name: other"), "the file is toy.yaml"),
    (lambda t: t + "colour: red\n", "unknown key(s) colour"),
    (lambda t: t.replace("seeds: [0, 1, 2, 3]", "seeds: three"), "seeds must be a non-empty list"),
    (lambda t: t + "  - id: fast_better\n", "criteria ids must be distinct"),
    (lambda t: t + "  - {id: y, statement: s, metric: acc, a: fast, b: slow, test: within}\n", "needs a numeric margin"),
    (lambda t: t + "retired: ''\n", "retired must say why the protocol is no longer run"),
])
def test_a_malformed_protocol_is_one_line_naming_file_and_key(toy_root, edit, message):
    p = toy_root / "bench" / "protocols" / "toy.yaml"
    p.write_text(edit(p.read_text()))
    with pytest.raises(UserError) as err:
        protocols.load(str(toy_root), "toy")
    assert message in str(err.value) and "bench/protocols/toy.yaml" in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_protocol_lists_the_known_ones(toy_root):
    with pytest.raises(UserError, match="no protocol 'nope'.*known: toy"):
        protocols.load(str(toy_root), "nope")


def test_a_partial_run_is_marked_and_keeps_the_protocol_seeds(toy_root):
    _, res = runner.run("toy", root=str(toy_root), show_progress=False, log=lambda m: None, only_seeds=[1])
    assert res["partial"] and res["seeds"] == [1] and res["protocol_seeds"] == [0, 1, 2, 3]
    assert {r["seed"] for r in res["runs"]} == {1}
    assert res["criteria"][0]["verdict"] == "one seed: no interval" and res["verdict"] == "inconclusive"
    with pytest.raises(UserError, match="not among protocol toy's seeds"):
        runner.run("toy", root=str(toy_root), show_progress=False, log=lambda m: None, only_seeds=[9])


def test_an_infinite_metric_is_stored_as_missing_and_named(toy_root):
    p = toy_root / "bench" / "protocols" / "toy.yaml"
    p.write_text(p.read_text().replace("params: {scale: 1}", "params: {scale: 1, inf: true}")
                 + "  - {id: speed, statement: s, metric: speedup, a: fast, test: at_least, value: 1.0}\n")
    git(toy_root, "commit", "-qam", "inf")
    path, res = _run(toy_root)
    on_disk = json.loads(open(path).read())          # valid JSON: no Infinity in the file
    assert all(r["metrics"]["speedup"] is None for r in on_disk["runs"])
    assert len(on_disk["nonfinite_values"]) == 8 and "runs[0].metrics.speedup: inf" in on_disk["nonfinite_values"]
    speed = next(c for c in on_disk["criteria"] if c["id"] == "speed")
    assert speed["outcome"] == "inconclusive" and speed["verdict"] == "no values"
    assert {c["id"]: c["outcome"] for c in on_disk["criteria"]}["fast_better"] == "holds"


def test_a_retired_protocol_is_not_run_and_says_why(toy_root):
    p = toy_root / "bench" / "protocols" / "toy.yaml"
    p.write_text(p.read_text() + "retired: >-\n  superseded by a longer job\n  before any run\n")
    with pytest.raises(UserError, match="protocol toy is retired and is not run: superseded by a longer job before any run"):
        runner.run("toy", root=str(toy_root), show_progress=False, log=lambda m: None, quick=True)
