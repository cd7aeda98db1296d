"""`make setup CUDA=...` on a machine that cannot run MXNet's CUDA build stops before touching any
virtual environment, with one line naming what is missing."""
import os
import re
import shutil
import subprocess

import pytest

from .conftest import REPO

no_driver = shutil.which("nvidia-smi") is None and subprocess.run(
    "ldconfig -p | grep -qE 'libcuda\\.so'", shell=True).returncode != 0


def make_setup(tmp_path, cuda):
    # a venv path of the test's own and no usable Python: if the check did not stop the recipe,
    # nothing of the project's environment could be touched
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    p = subprocess.run(["make", "--no-print-directory", "-C", REPO, "setup", f"CUDA={cuda}",
                        f"VENV={venv}", "PYTHON=false"], capture_output=True, text=True, timeout=120,
                       cwd=REPO, env=env)
    return p, venv


def own_lines(stderr):
    """The recipe's own lines, without make's report of the failed target (``make:`` or, under
    another make such as ``make test``, ``make[1]:``)."""
    return [ln for ln in stderr.splitlines() if not re.match(r"make(\[\d+\])?: ", ln)]


@pytest.mark.skipif(not no_driver, reason="this machine has an NVIDIA driver: the CUDA set-up would run")
def test_cuda_setup_without_a_driver_stops_first_with_one_line(tmp_path):
    p, venv = make_setup(tmp_path, "117")
    assert p.returncode == 2
    ours = own_lines(p.stderr)
    assert len(ours) == 1 and "no NVIDIA driver" in ours[0] and "CUDA=" in ours[0], p.stderr
    assert not venv.exists() and "venv" not in p.stdout


def test_cuda_setup_of_a_version_mxnet_does_not_build_names_the_ones_it_does(tmp_path):
    p, venv = make_setup(tmp_path, "999")
    assert p.returncode == 2
    ours = own_lines(p.stderr)
    assert len(ours) == 1 and "no CUDA 999 build" in ours[0] and "117" in ours[0], p.stderr
    assert not venv.exists()
