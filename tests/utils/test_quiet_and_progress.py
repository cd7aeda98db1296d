"""Quiet by default: known-harmless native warnings are dropped from fd 2 in the entry points (and
come back with --verbose / GLUON_SUITE_VERBOSE=1); off a terminal the progress display is one plain
line per N percent."""
import io
import os
import subprocess
import sys
import textwrap

from gluon_suite.utils.progress import LineProgress, progress

from ..conftest import REPO

JOB = textwrap.dedent("""
    import os, sys
    from gluon_suite.utils import run_cli

    def main(argv):
        # what MXNet's C++ logging writes straight to file descriptor 2
        os.write(2, b"[06:31:12] ../src/operator/nn/mkldnn/mkldnn_pooling.cc:163: "
                    b"MKLDNN Pooling: training with prop_kind is forward_scoring\\n")
        os.write(2, b"a warning the user must see\\n")
        print("argv", argv, flush=True)
        return 0

    if __name__ == "__main__":
        run_cli(main, sys.argv[1:])
""")


def run(tmp_path, *args, **env):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    full = {k: v for k, v in os.environ.items() if k != "GLUON_SUITE_VERBOSE"}
    full.update(PYTHONPATH=REPO, **env)
    return subprocess.run([sys.executable, str(job), *args], capture_output=True, text=True, env=full,
                          timeout=60)


def test_harmless_native_warning_is_dropped_and_others_pass(tmp_path):
    p = run(tmp_path, "--x", "1")
    assert p.returncode == 0
    assert p.stderr == "a warning the user must see\n"
    assert "argv ['--x', '1']" in p.stdout


def test_verbose_flag_and_environment_show_everything(tmp_path):
    for p in (run(tmp_path, "--verbose", "--x", "1"), run(tmp_path, "--x", "1", GLUON_SUITE_VERBOSE="1")):
        assert p.returncode == 0
        assert "MKLDNN Pooling" in p.stderr and "a warning the user must see" in p.stderr
        assert "argv ['--x', '1']" in p.stdout          # --verbose is not passed on to the script
    # after "--", --verbose belongs to the launched command
    p = run(tmp_path, "--", "--verbose")
    assert "argv ['--', '--verbose']" in p.stdout and "MKLDNN" not in p.stderr


def test_line_progress_prints_at_each_quarter_against_hand_computed_marks():
    out = io.StringIO()
    items = list(LineProgress(range(10), desc="epoch 1/3", every=25, stream=out))
    assert items == list(range(10))
    lines = out.getvalue().splitlines()
    # 3/10 is the first count at or past 25%, then 5/10 (50%), 8/10 (80% >= 75%), 10/10
    assert [line.split(" (")[1].split(",")[0] for line in lines] == ["3/10", "5/10", "8/10", "10/10"]
    assert lines[0].startswith("epoch 1/3:  30% ") and all("\r" not in line for line in lines)


def test_progress_off_a_terminal_is_plain_lines_and_disabled_is_the_iterable():
    assert isinstance(progress(range(4), desc="x"), LineProgress)   # pytest's stderr is no TTY
    r = range(4)
    assert progress(r, enabled=False) is r
