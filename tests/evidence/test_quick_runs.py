"""Every protocol runs from the checkout on its quick schedule (`gluon-suite bench run NAME --quick`),
as a user checking that a claim can still be rerun would run it: one seed, a shortened schedule, a
result file written under a temporary folder and nowhere else. About 18 minutes on 2 cores in all, so
they form their own tier, `make test-bench` (before a bench is rerun), outside CI's 60 minutes."""
import json
import os
import subprocess
import sys

import pytest

from gluon_suite.evidence import protocols

from ..conftest import REPO

# a retired protocol is refused (tests/evidence/test_cli_bench.py); every other one must run
NAMES = [n for n in protocols.names(REPO) if not protocols.load(REPO, n).retired]
GLUON_SUITE = os.path.join(os.path.dirname(sys.executable), "gluon-suite")


def test_there_are_protocols():
    assert len(NAMES) >= 10


@pytest.mark.long
@pytest.mark.bench
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", NAMES)
def test_quick_run_works_from_the_checkout(name, tmp_path):
    p = subprocess.run([GLUON_SUITE, "bench", "run", name, "--quick", "--results", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"{name} --quick failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    latest = json.loads((tmp_path / name / "latest.json").read_text())
    res = json.loads((tmp_path / name / latest["file"]).read_text())
    proto = protocols.load(REPO, name)
    assert res["quick"] and res["protocol"]["sha256"] == proto.sha256 and res["name"] == name
    assert res["seeds"] == proto.seeds(quick=True)
    # a quick schedule may run a subset of the arms (a sweep's first rate, the frameworks that are
    # installed), but what it runs is the protocol's and it runs something
    ran = {r["arm"] for r in res["runs"] if "reused_from" not in r}
    assert ran and ran <= set(proto.arms()), f"arms measured: {sorted(ran)}; the protocol's: {proto.arms()}"
    assert {c["id"] for c in res["criteria"]} == {c["id"] for c in proto.criteria}
