"""`gluon-suite launch`: bad worker counts and discovery scripts give one line before anything
starts (no hang); a job left with fewer than --min-np workers stops with one line; malformed
discovery output met mid-run is reported and ignored while the job goes on."""
import os
import subprocess
import sys

import pytest

from gluon_suite.distributed.launch import check_sizes
from gluon_suite.utils.hosts import parse_hosts
from gluon_suite.utils import UserError

from ..conftest import REPO

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.path.join(os.path.dirname(sys.executable), "gluon-suite")


def script(tmp_path, name, body):
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)
    return str(p)


def launch(args, timeout=60, **env):
    return subprocess.run([CLI, "launch", *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1",
                                   MXNET_CPU_WORKER_NTHREADS="1", **env))


def one_line_error(p):
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    return lines[0]


def test_parse_hosts_against_hand_written_lists():
    assert parse_hosts("a:2\n\nb\n a:1 \n", "s") == {"a": 3, "b": 1}
    for bad, line in (("localhost:2\nhello world\n", 2), ("x:0\n", 1), ("x:-1\n", 1), ("h:2:3", 1)):
        with pytest.raises(UserError, match=f"on line {line}"):
            parse_hosts(bad, "s")


def test_check_sizes():
    assert check_sizes(None, 2, 4) == (2, 2, 4)
    assert check_sizes(3, 2, 4) == (3, 2, 4)
    with pytest.raises(UserError, match="--min-np 3 is larger than --max-np 2"):
        check_sizes(None, 3, 2)
    with pytest.raises(UserError, match="-np 5 must lie between"):
        check_sizes(5, 2, 4)
    with pytest.raises(UserError, match="--min-np must be >= 1"):
        check_sizes(None, 0, 4)


@pytest.mark.horovod
def test_bad_input_is_one_line_before_anything_starts(tmp_path):
    good = script(tmp_path, "good.sh", "echo localhost:1\necho 127.0.0.1:1\n")
    cases = [
        (["--min-np", "3", "--max-np", "2", "--host-discovery-script", good], "larger than --max-np"),
        (["--min-np", "2", "--max-np", "3", "--host-discovery-script",
          script(tmp_path, "garbage.sh", "echo 'hello world!!'\n")], "printed 'hello world!!' on line 1"),
        (["--min-np", "2", "--max-np", "3", "--host-discovery-script",
          script(tmp_path, "fail.sh", "echo 'scheduler unreachable' >&2\nexit 3\n")],
         "failed (exit 3: scheduler unreachable)"),
        (["--min-np", "3", "--max-np", "4", "--host-discovery-script", good], "lists 2 slot(s); --min-np 3"),
        (["--min-np", "2", "--max-np", "3"], "needs --host-discovery-script"),
    ]
    for args, expected in cases:
        p = launch([*args, "--network-interface", "lo", "--", sys.executable, "-c", "pass"], timeout=60)
        assert expected in one_line_error(p), (args, p.stderr)
    assert "no command to launch" in one_line_error(launch(["-np", "2"]))


def _hosts(tmp_path, n):
    names = ["localhost", "127.0.0.1", "127.0.1"][:n]
    (tmp_path / "hosts.txt").write_text("".join(f"{h}:1\n" for h in names))
    return script(tmp_path, "discover.sh", f"cat {tmp_path / 'hosts.txt'}\n")


@pytest.mark.long   # make test's time budget; the long tier runs it
@pytest.mark.horovod
def test_fewer_than_min_np_left_stops_with_one_line(tmp_path):
    disc = _hosts(tmp_path, 3)
    # the worker of rank 2 dies (SIGKILL) mid-run; with --min-np 3 nobody can replace it
    p = launch(["-np", "3", "--min-np", "3", "--max-np", "3", "--elastic-timeout", "5",
                "--host-discovery-script", disc, "--network-interface", "lo", "--",
                sys.executable, os.path.join(HERE, "_elastic_job.py")], timeout=300,
               OUT=str(tmp_path), KILL="1", HOROVOD_GLOO_TIMEOUT_SECONDS="10")   # (a survivor's wait on the dead peer)
    assert (tmp_path / "killed").exists()
    msg = one_line_error(p)
    assert "fewer than --min-np 3 workers were left for 5 s" in msg


@pytest.mark.long   # make test's time budget; the long tier runs it
@pytest.mark.horovod
def test_malformed_discovery_output_mid_run_is_reported_and_ignored(tmp_path):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("localhost:1\n127.0.0.1:1\n")
    count = tmp_path / "calls"
    # good for the first two calls (the launcher's check and Horovod's first), garbage afterwards
    disc = script(tmp_path, "discover.sh",
                  f"echo x >> {count}\nif [ $(wc -l < {count}) -le 2 ]; then cat {hosts}; "
                  "else echo 'oops: not a host list'; fi\n")
    p = launch(["--min-np", "2", "--max-np", "3", "--host-discovery-script", disc,
                "--network-interface", "lo", "--", sys.executable, os.path.join(HERE, "_elastic_job.py")],
               timeout=300, OUT=str(tmp_path), WAIT_FOR_LINES=f"{count}:4")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert len(count.read_text().split()) >= 4                     # Horovod kept asking during the run
    assert "printed 'oops: not a host list' on line 1" in p.stdout + p.stderr
    assert "ignored; keeping the last good host list" in p.stdout + p.stderr
    assert len(list(tmp_path.glob("rank*.json"))) == 2             # both workers finished


@pytest.mark.horovod
def test_fixed_size_job_and_a_failing_worker(tmp_path):
    job = tmp_path / "job.py"
    job.write_text("import os, sys\nrank = int(os.environ['HOROVOD_RANK'])\nprint('hello from', rank)\n"
                   "sys.exit(3 if rank == 1 and os.environ.get('FAIL') else 0)\n")
    ok = launch(["-np", "2", "--", sys.executable, str(job)])
    assert ok.returncode == 0 and "hello from 0" in ok.stdout and "hello from 1" in ok.stdout
    bad = launch(["-np", "2", "--", sys.executable, str(job)], FAIL="1")
    assert "exited with code 3" in one_line_error(bad)


def test_launcher_traceback_cut_by_other_threads_is_still_dropped_whole():
    """The interleaving that used to leak a traceback: the launcher's rendezvous thread prints a
    request error in several writes, a worker line and another launcher thread's line arrive in
    the middle of it, then the main thread's traceback. Routed and filtered, the user sees the
    worker line and the plain launcher line, whole, and nothing of either traceback."""
    import threading

    from gluon_suite.distributed.launch import _SEP, _TAG, _LauncherFilter, _LineRouter

    w_r, w_w = os.pipe()
    l_r, l_w = os.pipe()
    lock = threading.Lock()
    out, err = _LineRouter(lock, 1, w_w, l_w), _LineRouter(lock, 2, w_w, l_w)
    turn = [threading.Event() for _ in range(6)]

    def server():      # socketserver.handle_error + a traceback, printed piece by piece
        err.write("Exception occurred during processing of request from")
        turn[0].set(); turn[1].wait()
        err.write(" ('127.0.0.1', 34252)\n")
        err.write("Traceback (most recent call last):\n")
        turn[2].set(); turn[3].wait()
        err.write('  File "socketserver.py", line 316, in _handle_request_noblock\n')
        err.write("ConnectionResetError: [Errno 104] Connection reset by peer\n")
        err.write("----------------------------------------\n")
        turn[4].set()

    def other():       # a worker's forwarded line and the main thread's own lines in between
        turn[0].wait()
        out.write("[2]<stderr>:epoch 2 done\n")
        turn[1].set(); turn[2].wait()
        err.write("Traceback (most recent call last):\n")
        err.write('  File "horovodrun", line 8, in <module>\n')
        turn[3].set(); turn[4].wait()
        err.write("RuntimeError: Horovod detected that one or more processes exited\n")
        err.write("a launcher message worth showing\n")

    threads = [threading.Thread(target=f) for f in (server, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for fd in (w_w, l_w):
        os.close(fd)
    workers = os.fdopen(w_r).read()
    launcher = os.fdopen(l_r).read().split("\n")[:-1]
    assert workers == "[2]<stderr>:epoch 2 done\n"
    assert all(line.startswith(_TAG) for line in launcher) and len(launcher) == 9
    filt = _LauncherFilter()
    shown = [line for thread, line in (x[len(_TAG):].split(_SEP, 1) for x in launcher)
             if filt.keep(thread, line)]
    assert shown == ["a launcher message worth showing"]


def test_the_discovery_wrapper_prints_the_checked_list_without_loading_mxnet(tmp_path):
    """Horovod runs the wrapper about once a second for a whole elastic job: it must not import
    MXNet (about a second of CPU per call on the test machine: half a core for the whole job)."""
    from gluon_suite.distributed.launch import wrapper_command
    disc = script(tmp_path, "discover.sh", "echo localhost:2\necho '  '\necho 127.0.0.1\n")
    cmd = wrapper_command(disc)
    assert " -m gluon_suite.utils.hosts " in cmd
    probe = ("import runpy, sys; sys.argv = ['hosts', sys.argv[1]]\n"
             "try:\n    runpy.run_module('gluon_suite.utils.hosts', run_name='__main__')\n"
             "except SystemExit as e:\n    print('exit', e.code, 'mxnet' in sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", probe, disc], capture_output=True, text=True, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=REPO))
    assert p.stdout.splitlines() == ["localhost:2", "127.0.0.1:1", "exit 0 False"], p.stdout + p.stderr
    bad = script(tmp_path, "bad.sh", "echo 'oops: not a host list'\n")
    p = subprocess.run([sys.executable, "-c", probe, bad], capture_output=True, text=True, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=REPO))
    assert p.stdout.strip() == "exit 1 False", p.stdout + p.stderr
    assert "printed 'oops: not a host list' on line 1" in p.stderr and "(ignored; keeping the last good host list)" in p.stderr
