"""The namespace testbed: a 100 Mbit/s link measures 10-13 MB/s with a plain socket, and nothing
is left behind."""
import os
import subprocess
import sys
import time

import pytest

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
        assert 10.0 <= rate <= 13.0, rate
        assert tb.exists()
    assert not tb.exists()
    assert not os.path.exists(f"/etc/netns/{tb.netns(0)}")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert tb.tag not in links
