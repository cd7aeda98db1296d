"""The namespace testbed: each host's link is a 100 Mbit/s token bucket, a plain socket moves no
faster than that over it, and nothing is left behind."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ..conftest import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the network-namespace testbed needs root")

SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5599)); s.listen(1)
c, _ = s.accept(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    n += len(b)
print(n)
"""
CLIENT = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], 5599))
data = b"x" * (1 << 20); t = time.perf_counter()
for _ in range(int(sys.argv[2])): s.sendall(data)
s.shutdown(socket.SHUT_WR); s.recv(1); print(time.perf_counter() - t)
"""


def test_two_hosts_at_100_mbit_measure_10_to_13_MBps():
    from gluon_suite.whatif.testbed import Testbed
    tb = Testbed(hosts=2, rate_mbit=100)
    with tb:
        server = tb.popen(1, [sys.executable, "-c", SERVER, tb.address(1)], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        mb = 24
        c = tb.run(0, [sys.executable, "-c", CLIENT, tb.address(1), str(mb)], capture_output=True, text=True,
                   timeout=120)
        got = int(server.communicate(timeout=60)[0].strip())
        assert c.returncode == 0, c.stderr
        seconds = float(c.stdout.strip())
        rate = got / seconds / 1e6
        assert got == mb << 20
        # the limit itself: a token bucket at 100 Mbit/s on both ends of each host's link
        for i in range(2):
            inner = subprocess.run(["tc", "-n", tb.netns(i), "qdisc", "show", "dev", tb.interface(i)],
                                   capture_output=True, text=True).stdout
            outer = subprocess.run(["tc", "qdisc", "show", "dev", f"{tb.tag}b{i}"], capture_output=True, text=True).stdout
            for shown in (inner, outer):
                assert re.search(r"qdisc tbf .* rate 100Mbit", shown), shown
        # and it holds: a busy machine can only make the transfer slower, never faster than the link
        assert rate <= 13.0, rate
        assert tb.exists()
    assert not tb.exists()
    assert not os.path.exists(f"/etc/netns/{tb.netns(0)}")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert tb.tag not in links


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_testbed_bench_stops_at_the_first_signal_and_removes_its_testbed(tmp_path, signum):
    """Started as ``bench &`` starts it (SIGINT ignored), the whatif_balanced protocol's bench
    (bench/whatif_validation.py's evidence) still stops at the first SIGINT/SIGTERM while a job runs:
    one line, exit 128 + signal, the workers gone, the namespaces gone, nothing written."""
    script = (
        "import sys\n"
        f"sys.path.insert(0, {os.path.join(REPO, 'bench')!r})\n"
        "import whatif_validation as b\n"
        "class Ctx:\n"
        "    params = {'regime': 'balanced', 'points': ['2@1000'], 'bulk': ['default'], 'steps': 400,\n"
        "              'batch': 16, 'bucket_mb': 1.0, 'range': [0.3, 0.95], 'calibration_repeats': 1,\n"
        "              'calibration_steps': 2}\n"
        "    seeds, workdir = [0], sys.argv[1]\n"
        "    def progress(self, xs, desc=None): return xs\n"
        "    def measure(self, arm, seed, fn): return fn()\n"
        "    def note(self, *a): pass\n"
        "    def table(self, *a, **k): pass\n"
        "    def figure(self, suffix): return sys.argv[1] + '/fig' + suffix\n"
        "b.evidence(Ctx())\n")
    cmd = [sys.executable, "-c", script, str(tmp_path)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    namespaces = [f"gs{p.pid % 100000}h{i}" for i in range(2)]
    workers, deadline = [], time.time() + 120
    try:
        while time.time() < deadline and len(workers) < 2:     # both hosts run a worker: a job is on
            time.sleep(0.5)
            assert p.poll() is None, p.stdout.read()
            workers = [subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
                       for ns in namespaces]
            workers = [int(w[0]) for w in workers if w]
        assert len(workers) == 2, "no job started within 120 s"
        time.sleep(2)
        p.send_signal(signum)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        leftover = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        left = [ns for ns in namespaces if ns in leftover]
        for ns in left:         # a failed run must not leave its testbed behind for the next tests
            for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
                subprocess.run(["kill", "-9", pid])
            subprocess.run(["ip", "netns", "del", ns])
            subprocess.run(["rm", "-rf", f"/etc/netns/{ns}"])
        for link in ("b0", "b1", "br"):
            subprocess.run(["ip", "link", "del", f"gs{p.pid % 100000}{link}"], capture_output=True)
    assert not left, f"the bench left its namespaces behind: {left}"
    assert p.returncode == 128 + signum, out
    lines = out.strip().splitlines()
    assert lines[-1].startswith(f"interrupted ({signal.Signals(signum).name}): the running job was stopped"), out
    assert "Traceback" not in out
    def running(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    end = time.time() + 60      # a guard for a worker that never ends, not a measure of how fast they do
    while any(running(w) for w in workers) and time.time() < end:
        time.sleep(0.2)
    assert not any(running(w) for w in workers), "a worker still runs"
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(ns in listed for ns in namespaces)
    assert not any(os.path.exists(f"/etc/netns/{ns}") for ns in namespaces)
    assert f"gs{p.pid % 100000}br" not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert os.listdir(tmp_path) == []
