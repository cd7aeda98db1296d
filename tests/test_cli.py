"""`gluon-suite` command: info lists the stack, a broken Horovod gives a one-line fix, bad usage exits 2."""
import json
import os
import subprocess
import sys

import pytest

CLI = os.path.join(os.path.dirname(sys.executable), "gluon-suite")


def run(args, env=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=120)


def test_info_lists_versions_and_horovod_build():
    p = run(["info"])
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for key in ("python", "mxnet", "numpy", "gluoncv", "gluonnlp", "horovod", "cpu count"):
        assert key in out
    assert "1.9.1" in out and "0.28.1" in out
    frameworks = [l for l in out.splitlines() if l.startswith("horovod frameworks")][0]
    controllers = [l for l in out.splitlines() if l.startswith("horovod controllers")][0]
    assert "MXNet" in frameworks and "Gloo" in controllers
    assert str(os.cpu_count()) in [l for l in out.splitlines() if l.startswith("cpu count")][0]


def test_info_json():
    p = run(["info", "--json"])
    facts = json.loads(p.stdout)
    assert facts["horovod_build"] == {"mxnet": True, "gloo": True, "mpi": False}
    assert facts["mxnet"] == "1.9.1" and facts["numpy"] == "1.23.5"


@pytest.mark.parametrize("fake, expect", [
    ("raise ImportError('libmxnet_mpi_lib.so: undefined symbol: MXEnginePushAsync')",
     "MXNet extension cannot be loaded"),
    ("raise OSError('mpi_lib.cpython-311-x86_64-linux-gnu.so: cannot open shared object file')",
     "MXNet extension cannot be loaded"),
])
def test_info_names_the_fix_when_horovod_mxnet_extension_is_broken(tmp_path, fake, expect):
    # a horovod package whose MXNet extension fails to load, first on the path
    pkg = tmp_path / "horovod"
    (pkg / "mxnet").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mxnet" / "__init__.py").write_text(fake + "\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    p = run(["info"], env=env)
    assert p.returncode == 1
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert expect in lines[0] and "make setup" in lines[0] and "HOROVOD_WITH_MXNET=1" in lines[0]


def test_info_when_horovod_is_missing(tmp_path):
    (tmp_path / "horovod.py").write_text("raise ImportError('No module named horovod')\n")
    p = run(["info"], env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "Horovod is not installed" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["bogus"], ["--frobnicate"], ["info", "--nope"], []])
def test_bad_usage_prints_usage_and_exits_2(args):
    p = run(args)
    assert p.returncode == 2
    assert "usage: gluon-suite" in p.stderr
    assert "Traceback" not in p.stderr
