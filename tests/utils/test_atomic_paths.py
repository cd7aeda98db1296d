"""atomic_paths: files that belong together (a checkpoint's parameters and trainer state) are
replaced together or not at all."""
import os
import subprocess
import sys

import pytest

from gluon_suite.utils.errors import WriteError
from gluon_suite.utils.fileio import atomic_paths


def test_both_files_replaced_when_both_writes_succeed(tmp_path):
    a, b = tmp_path / "a.params", tmp_path / "b.states"
    a.write_text("old a"), b.write_text("old b")
    with atomic_paths(a, b) as (ta, tb):
        open(ta, "w").write("new a")
        open(tb, "w").write("new b")
    assert (a.read_text(), b.read_text()) == ("new a", "new b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.params", "b.states"]   # no temp left


def test_a_failure_in_the_second_write_leaves_the_first_file_as_it_was(tmp_path):
    a, b = tmp_path / "a.params", tmp_path / "b.states"
    a.write_text("old a"), b.write_text("old b")
    with pytest.raises(RuntimeError):
        with atomic_paths(a, b) as (ta, tb):
            open(ta, "w").write("new a")
            raise RuntimeError("the trainer state could not be written")
    assert (a.read_text(), b.read_text()) == ("old a", "old b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.params", "b.states"]


def test_a_file_size_limit_hit_by_one_file_is_a_write_error_naming_it_and_changes_neither(tmp_path):
    # in a child process: the limit applies to the whole process; SIGXFSZ ignored so that the
    # write fails with EFBIG instead of killing it
    code = f"""
import resource, signal, sys
sys.path.insert(0, {os.getcwd()!r})
from gluon_suite.utils.fileio import atomic_paths
from gluon_suite.utils.errors import WriteError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
try:
    with atomic_paths({str(tmp_path / 'a.params')!r}, {str(tmp_path / 'b.states')!r}) as (ta, tb):
        open(ta, 'w').write('x' * 10)
        with open(tb, 'w') as f:
            f.write('y' * 5000)
except WriteError as e:
    print('WriteError', e)
"""
    (tmp_path / "a.params").write_text("old a")
    (tmp_path / "b.states").write_text("old b")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "WriteError" in out.stdout and "b.states" in out.stdout, out.stdout + out.stderr
    assert (tmp_path / "a.params").read_text() == "old a" and (tmp_path / "b.states").read_text() == "old b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.params", "b.states"]
