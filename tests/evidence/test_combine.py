"""`gluon-suite bench combine`: slices of a protocol (``bench run --seeds``) become one new result
whose criteria are evaluated over all their seeds, as a run of all the seeds at once would evaluate
them; the slices are left as they were, and slices that do not belong together are refused."""
import hashlib
import json

import pytest

from gluon_suite.evidence import combine, runner, store
from gluon_suite.utils.errors import UserError

from .conftest import git


def _slice(root, seeds):
    return runner.run("toy", root=str(root), show_progress=False, log=lambda m: None, only_seeds=seeds)


def _combine(root, *paths):
    return combine.combine("toy", list(paths), root=str(root), log=lambda m: None)


def _sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_combined_slices_give_the_whole_run_s_criteria_and_leave_the_slices_alone(toy_root):
    a, ra = _slice(toy_root, [0, 1])
    b, rb = _slice(toy_root, [2, 3])
    before = {p: _sha(p) for p in (a, b)}
    path, res = _combine(toy_root, a, b)
    assert {p: _sha(p) for p in (a, b)} == before
    _, whole = runner.run("toy", root=str(toy_root), show_progress=False, log=lambda m: None)
    assert res["seeds"] == [0, 1, 2, 3] and not res["partial"]
    got, want = res["criteria"][0]["interval"], whole["criteria"][0]["interval"]
    assert [got[k] for k in ("mean", "low", "high")] == pytest.approx([want[k] for k in ("mean", "low", "high")])
    assert res["verdict"] == whole["verdict"] == "holds"
    assert [s["seeds"] for s in res["combined_from"]] == [[0, 1], [2, 3]]
    assert [s["sha256"] for s in res["combined_from"]] == [before[a], before[b]]
    assert {r["part"] for r in res["runs"]} == {s["file"] for s in res["combined_from"]}
    on_disk = json.loads(open(path).read())
    assert on_disk["combined_from"] == res["combined_from"]
    assert store.latest(str(toy_root / "bench" / "results"), "toy")[0] != path   # the whole run came after it


def test_fewer_seeds_than_the_protocol_s_stay_partial(toy_root):
    a, _ = _slice(toy_root, [0])
    b, _ = _slice(toy_root, [3])
    _, res = _combine(toy_root, a, b)
    assert res["partial"] and res["seeds"] == [0, 3]


def test_overlapping_quick_or_foreign_slices_are_refused(toy_root):
    a, _ = _slice(toy_root, [0, 1])
    b, _ = _slice(toy_root, [1, 2])
    with pytest.raises(UserError, match="seed 1 is in both"):
        _combine(toy_root, a, b)
    q, _ = runner.run("toy", root=str(toy_root), quick=True, show_progress=False, log=lambda m: None,
                      results_dir=str(toy_root / "bench" / "results"))
    with pytest.raises(UserError, match="--quick"):
        _combine(toy_root, a, q)
    with pytest.raises(UserError, match="at least two"):
        _combine(toy_root, a)


def test_a_changed_protocol_or_bench_between_slices_is_refused(toy_root):
    a, _ = _slice(toy_root, [0])
    bench = toy_root / "bench" / "toy.py"
    bench.write_text(bench.read_text() + "\n# changed\n")
    git(toy_root, "commit", "-qam", "bench changed")
    b, _ = _slice(toy_root, [1])
    with pytest.raises(UserError, match="differs between the slices' commits"):
        _combine(toy_root, a, b)
    proto = toy_root / "bench" / "protocols" / "toy.yaml"
    proto.write_text(proto.read_text().replace("version: 1", "version: 2"))
    git(toy_root, "commit", "-qam", "protocol v2")
    with pytest.raises(UserError, match="protocol versions do not combine"):
        _combine(toy_root, b, a)


def test_a_bench_s_combined_metrics_run_over_the_union_before_the_criteria(toy_root, monkeypatch):
    a, _ = _slice(toy_root, [0, 1])
    b, _ = _slice(toy_root, [2, 3])
    real = combine._load_bench
    seen = []

    def with_hook(root, bench):
        mod = real(root, bench)

        def combined_metrics(runs, params):   # turns the comparison round: slow scores above fast
            seen.append(sorted({r["seed"] for r in runs}))
            for r in runs:
                r["metrics"]["acc"] = 1.0 - r["metrics"]["acc"]
        monkeypatch.setattr(mod, "combined_metrics", combined_metrics, raising=False)
        return mod
    monkeypatch.setattr(combine, "_load_bench", with_hook)
    _, res = _combine(toy_root, a, b)
    assert seen == [[0, 1, 2, 3]]                       # once, with every slice's runs
    assert res["criteria"][0]["outcome"] == "fails"     # judged on the recomputed values
