"""`gluon-suite bench` on bad input: one line naming what was wrong, exit 2, no traceback, nothing
written."""
import os
import subprocess
import sys

import pytest

from gluon_suite.evidence import protocols

from ..conftest import REPO

GLUON_SUITE = os.path.join(os.path.dirname(sys.executable), "gluon-suite")


@pytest.mark.parametrize("args, message", [
    (["run", "no_such_claim"], "no protocol 'no_such_claim' in bench/protocols; known: "),
    (["run", "cv_models", "--seeds", "zero"], "--seeds 'zero': give seeds as comma-separated integers"),
    (["run", "cv_models", "--seeds", "99", "--allow-dirty"], "--seeds 99: not among protocol cv_models's seeds"),
    (["show", "cv_models", "--results", "nowhere"], "no result for cv_models under"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    p = subprocess.run([GLUON_SUITE, "bench", *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr
    assert len([ln for ln in p.stderr.splitlines() if ln.strip()]) == 1, p.stderr


def test_list_names_every_protocol(tmp_path):
    p = subprocess.run([GLUON_SUITE, "bench", "list", "--results", str(tmp_path)], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    names = sorted(f[:-5] for f in os.listdir(os.path.join(REPO, "bench", "protocols")) if f.endswith(".yaml"))
    for name in names:
        assert f"{name} " in p.stdout and "not run yet" in p.stdout
    retired = [n for n in names if protocols.load(REPO, n).retired]
    for name in retired:
        assert f"retired (not run yet)" in p.stdout.split(f"{name} ", 1)[1].split("\n")[0]


def test_a_retired_protocol_is_refused_in_one_line():
    retired = [n for n in protocols.names(REPO) if protocols.load(REPO, n).retired]
    assert retired
    p = subprocess.run([GLUON_SUITE, "bench", "run", retired[0], "--quick"], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"protocol {retired[0]} is retired and is not run: " in p.stderr
    assert len([ln for ln in p.stderr.splitlines() if ln.strip()]) == 1, p.stderr
