"""The namespace testbed as the chaos bench (bench/chaos.py) uses it: the suite's
``gluon_suite.whatif.testbed.Testbed`` (hosts on a bridge, each link limited by ``tc tbf``) with

- every host's interface renamed to the bridge's name: Horovod hands all workers one interface
  name (``HOROVOD_GLOO_IFACE``) and its driver takes its own address from the interface of that
  name, which in the root namespace is the bridge, reachable from every host;
- ``horovodrun``'s ssh replaced by a script (:func:`write_ssh_shim`) that runs the command in the
  host's namespace with ``ip netns exec``, so the elastic driver starts and stops workers "on
  remote hosts" as it does on a cluster;
- link faults on both ends of a host's link, the processes on a host, and the killing of them.

Link faults use what the testbed's kernel offers: it has ``tbf`` and ``pfifo`` but no ``netem``
(``tc qdisc add ... netem`` answers "Specified qdisc kind is unknown"), so loss is a token bucket
with a queue too short for the traffic's bursts (tail drop), delay a token bucket with a long queue
at a low rate (queueing delay), and a link down a ``pfifo`` that holds nothing (every packet
dropped). The drops each caused are read back from ``tc -s``.
"""
import os
import re
import signal
import subprocess

from gluon_suite.utils.errors import GluonSuiteError
from gluon_suite.whatif.testbed import Testbed

SHIM = """#!/bin/sh
# horovodrun's "ssh [-o OPT]... HOST COMMAND" for the chaos bench's namespace hosts: run COMMAND
# in the namespace that {names}/HOST names
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-i) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host="$1"; shift
ns=$(cat "{names}/$host") || exit 255
exec ip netns exec "$ns" sh -c "$*"
"""


def _sh(*cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise GluonSuiteError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
    return p


def write_ssh_shim(folder, names_dir):
    """Write ``folder/ssh`` (put ``folder`` first on ``PATH``); ``names_dir/HOST`` holds the
    namespace of each host name the discovery script may list."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "ssh")
    with open(path, "w", encoding="utf-8") as f:
        f.write(SHIM.format(names=names_dir))
    os.chmod(path, 0o755)
    return path


def link_spec(kind, links, rate_mbit):
    """The root qdisc (``tc`` words) of a link under fault ``kind``: ``lossy`` (tail drop: a queue of
    ``lossy_queue_ms`` at ``lossy_mbit``), ``slow`` (``slow_mbit`` with ``slow_queue_ms`` of queue),
    ``partition`` (nothing passes)."""
    def tbf(mbit, queue_ms):
        burst = max(16, int(float(mbit) * 10 / 8))   # kbit, at least one full-size frame
        return ["tbf", "rate", f"{float(mbit)}mbit", "burst", f"{burst}kbit", "latency", f"{float(queue_ms)}ms"]
    if kind == "lossy":
        return tbf(min(links["lossy_mbit"], rate_mbit), links["lossy_queue_ms"])
    if kind == "slow":
        return tbf(min(links["slow_mbit"], rate_mbit), links["slow_queue_ms"])
    if kind == "partition":
        return ["pfifo", "limit", "0"]
    raise ValueError(f"no link fault {kind!r}")


class ChaosTestbed(Testbed):
    """``Testbed`` plus the renamed interfaces, link faults and per-host processes (module doc)."""

    @property
    def nic(self):
        """The interface name every host and the root namespace's bridge share."""
        return f"{self.tag}br"

    def _build(self):
        super()._build()
        for i in range(self.hosts):
            ns, old = self.netns(i), self.interface(i)
            _sh("ip", "-n", ns, "link", "set", "dev", old, "down")
            _sh("ip", "-n", ns, "link", "set", "dev", old, "name", self.nic)
            _sh("ip", "-n", ns, "link", "set", "dev", self.nic, "up")

    def _ends(self, i):
        return [["-n", self.netns(i), "qdisc", "replace", "dev", self.nic],
                ["qdisc", "replace", "dev", f"{self.tag}b{i}"]]

    def set_link(self, i, spec):
        """Replace the root qdisc of both ends of host ``i``'s link by ``spec`` (``tc`` words)."""
        for end in self._ends(i):
            _sh("tc", *end, "root", *spec)

    def restore_link(self, i):
        """Host ``i``'s link as the testbed built it (the rate limit alone)."""
        self.set_link(i, self._tbf())

    def link_counts(self, i):
        """Packets sent and dropped by both ends' root qdiscs since they were last replaced."""
        sent = dropped = 0
        for end in (["-n", self.netns(i)], []):
            dev = self.nic if end else f"{self.tag}b{i}"
            out = _sh("tc", "-s", *end, "qdisc", "show", "dev", dev, check=False).stdout
            m = re.search(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out)
            if m:
                sent, dropped = sent + int(m.group(1)), dropped + int(m.group(2))
        return {"sent": sent, "dropped": dropped}

    def pids(self, i):
        """Process ids running in host ``i``'s namespace."""
        out = _sh("ip", "netns", "pids", self.netns(i), check=False).stdout
        return [int(x) for x in out.split()]

    def worker_pids(self, i, script):
        """The Python processes on host ``i`` running ``script`` (not the shells that started them)."""
        found = []
        for pid in self.pids(i):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().decode("utf-8", "replace").split("\0")
            except OSError:
                continue
            if os.path.basename(argv[0]).startswith("python") and script in argv[1:]:
                found.append(pid)
        return found

    def kill_all(self):
        """SIGKILL every process left in this testbed's namespaces (the workers it ran)."""
        for i in range(self.hosts):
            for pid in self.pids(i):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def teardown(self):
        if self._created:
            self.kill_all()
        super().teardown()
