"""MXNet's float16 "MXNET_SAFE_ACCUMULATION=1 is recommended" notice, printed by its C++ code, stays
off an entry point's stderr (and shows with GLUON_SUITE_VERBOSE=1); off a terminal, a loop's plain
progress is one line, at its end, by default."""
import io
import os
import subprocess
import sys
import textwrap

from gluon_suite.utils.progress import LineProgress

from ..conftest import REPO

JOB = textwrap.dedent("""
    import sys
    from gluon_suite.utils import run_cli

    def main(argv):
        import mxnet as mx
        x = mx.nd.ones((2, 8), dtype="float16")
        y = mx.nd.LayerNorm(x, mx.nd.ones(8, dtype="float16"), mx.nd.zeros(8, dtype="float16"))
        z = mx.nd.softmax(x)
        mx.nd.waitall()
        print("ok", y.dtype.__name__, z.shape, flush=True)
        return 0

    if __name__ == "__main__":
        run_cli(main, sys.argv[1:])
""")


def run(tmp_path, **env):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    full = {k: v for k, v in os.environ.items() if k not in ("GLUON_SUITE_VERBOSE", "MXNET_SAFE_ACCUMULATION")}
    full.update(PYTHONPATH=REPO, **env)
    return subprocess.run([sys.executable, str(job)], capture_output=True, text=True, env=full, timeout=120)


def test_float16_safe_accumulation_notice_is_filtered_unless_verbose(tmp_path):
    loud = run(tmp_path, GLUON_SUITE_VERBOSE="1")
    assert loud.returncode == 0 and "MXNET_SAFE_ACCUMULATION=1 is recommended" in loud.stderr  # MXNet prints it
    quiet = run(tmp_path)
    assert quiet.returncode == 0 and "ok float16 (2, 8)" in quiet.stdout
    assert "SAFE_ACCUMULATION" not in quiet.stderr, quiet.stderr


def test_plain_progress_is_one_line_per_loop_by_default(monkeypatch):
    monkeypatch.delenv("GLUON_SUITE_PROGRESS_EVERY", raising=False)
    out = io.StringIO()
    assert list(LineProgress(range(37), desc="epoch 2/5", stream=out)) == list(range(37))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("epoch 2/5: 100% (37/37,")
