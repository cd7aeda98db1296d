"""The namespace testbed as the chaos bench (bench/chaos.py) uses it: the suite's
``gluon_suite.whatif.testbed.Testbed`` (hosts on a bridge, each link limited by ``tc tbf``) with

- every host's interface renamed to the bridge's name: Horovod hands all workers one interface
  name (``HOROVOD_GLOO_IFACE``) and its driver takes its own address from the interface of that
  name, which in the root namespace is the bridge, reachable from every host;
- ``horovodrun``'s ssh replaced by a script (:func:`write_ssh_shim`) that runs the command in the
  host's namespace with ``ip netns exec``, so the elastic driver starts and stops workers "on
  remote hosts" as it does on a cluster;
- link faults on both ends of a host's link, the processes on a host, and the killing of them.

Link faults use what the testbed's kernel offers: it has ``tbf`` and ``pfifo`` but no ``netem``,
no tc filters or actions and no iptables (``tc qdisc add ... netem`` answers "Specified qdisc kind
is unknown"). A link down is a ``pfifo`` that holds nothing (every packet dropped); loss is that
cut switched on for the first ``share`` of every ``period`` (bursty loss in a fixed share of the
time: a token bucket's tail drop alone lost 0.1% of the packets, TCP adapting to it); delay is a
token bucket with a long queue at a low rate (queueing delay). The packets each fault dropped are
read back from ``tc -s``.
"""
import math
import os
import re
import signal
import subprocess
import time

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


CUT = ["pfifo", "limit", "0"]


def link_spec(kind, links, rate_mbit):
    """The root qdisc (``tc`` words) of a link under fault ``kind`` for its whole duration: ``slow``
    (``slow_mbit``, never above the link's rate, with ``slow_queue_ms`` of queue) or ``partition``
    (nothing passes). ``lossy`` switches between the cut and the link's own qdisc
    (:func:`flap_windows`)."""
    if kind == "slow":
        mbit = float(min(links["slow_mbit"], rate_mbit))
        burst = max(16, int(mbit * 10 / 8))   # kbit, at least one full-size frame
        return ["tbf", "rate", f"{mbit}mbit", "burst", f"{burst}kbit", "latency", f"{float(links['slow_queue_ms'])}ms"]
    if kind == "partition":
        return list(CUT)
    raise ValueError(f"no whole-duration link fault {kind!r}")


def flap_windows(duration_s, period_s, share):
    """When a lossy link is cut: ``(start, end)`` seconds from the fault's start, the first
    ``share`` of every ``period_s`` until ``duration_s``."""
    if not (0 < share < 1 and period_s > 0 and duration_s >= 0):
        raise ValueError(f"need 0 < share < 1, period_s > 0, duration_s >= 0 (got {share}, {period_s}, {duration_s})")
    n = int(math.ceil(duration_s / period_s - 1e-9))
    return [(k * period_s, min(k * period_s + share * period_s, duration_s)) for k in range(n)]


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

    def flap(self, i, stop, duration_s, period_s, share):
        """Make host ``i``'s link lossy for ``duration_s`` (:func:`flap_windows`), or until ``stop``
        (an Event) is set. Returns the packets sent and dropped meanwhile (each qdisc is new at each
        switch, so its counters are read before the next), the time it was cut (from the middle of
        one switch to the middle of the next) and the number of cuts."""
        t0, sent, dropped, cut, cuts = time.time(), 0, 0, 0.0, 0
        for start, end in flap_windows(duration_s, period_s, share):
            if stop.wait(max(0.0, t0 + start - time.time())):
                break
            if cuts:
                c = self.link_counts(i)          # the link's own qdisc since the last cut
                sent, dropped = sent + c["sent"], dropped + c["dropped"]
            a = time.time()
            self.set_link(i, CUT)
            b = time.time()
            stop.wait(max(0.0, t0 + end - time.time()))
            dropped += self.link_counts(i)["dropped"]
            d = time.time()
            self.restore_link(i)
            cut, cuts = cut + (d + time.time()) / 2 - (a + b) / 2, cuts + 1
        stop.wait(max(0.0, t0 + duration_s - time.time()))
        c = self.link_counts(i)
        return {"sent": sent + c["sent"], "dropped": dropped + c["dropped"], "cut_s": round(cut, 3), "cuts": cuts}

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
