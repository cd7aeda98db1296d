"""A bandwidth-limited multi-host testbed on one machine: network namespaces on a bridge.

Each "host" is a network namespace joined to a bridge in the root namespace by a veth pair; a
token-bucket filter (``tc tbf``) limits both directions of every host's link to ``rate_mbit``.
Commands run "on" host i with ``ip netns exec``. Only addresses inside the namespaces this object
creates are used (10.201.S.0/24, S picked to be free), and everything it creates is deleted on
exit, on error and at interpreter exit. Needs root (``TestbedUnavailable`` otherwise).

Horovod 0.28.1 builds its process-set Gloo context from the machine's hostname; inside a namespace
that resolves to loopback. ``/etc/netns/<ns>/hosts`` (which ``ip netns exec`` mounts over
/etc/hosts) maps the hostname to the namespace's own address.
"""
import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading

from ..utils.errors import GluonSuiteError


class TestbedUnavailable(GluonSuiteError):
    """The testbed cannot be built here (not root, or iproute2/tc missing)."""


def _sh(*cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise GluonSuiteError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
    return p


@contextlib.contextmanager
def stop_on_signal():
    """For a bench that runs jobs on a testbed: the first SIGINT or SIGTERM stops it. The job in
    progress is killed, the testbed removed (on the way out of its ``with``), nothing more is
    written, and the process exits with 130 / 143 after one line. Handlers are installed even when
    the shell started the bench with SIGINT ignored (``bench ... &``)."""
    from ..distributed.loop import Interruption
    from ..utils.errors import Interrupted
    try:
        with Interruption():
            yield
    except Interrupted as exc:
        name = "SIGINT" if exc.signum == signal.SIGINT else "SIGTERM"
        print(f"interrupted ({name}): the running job was stopped, the testbed removed, no result written",
              flush=True)
        raise SystemExit(exc.exit_code)


class Testbed:
    """``hosts`` namespaces on a bridge, each link limited to ``rate_mbit`` Mbit/s; use as a
    context manager. ``address(i)``, ``netns(i)``, ``popen(i, cmd)``, ``run(i, cmd)``."""

    def __init__(self, hosts=2, rate_mbit=100.0, latency_ms=400):
        if os.geteuid() != 0:
            raise TestbedUnavailable("the network-namespace testbed needs root (ip netns, tc)")
        for tool in ("ip", "tc"):
            if shutil.which(tool) is None:
                raise TestbedUnavailable(f"the testbed needs '{tool}' (iproute2)")
        if hosts < 1 or not rate_mbit > 0:
            raise GluonSuiteError(f"need hosts >= 1 and rate_mbit > 0 (got {hosts}, {rate_mbit})")
        self.hosts, self.rate, self.latency_ms = int(hosts), float(rate_mbit), latency_ms
        self.tag = f"gs{os.getpid() % 100000}"
        used = _sh("ip", "-o", "addr", check=False).stdout
        self.subnet = next(s for s in range(1, 250) if f"10.201.{s}." not in used)
        self._created = False

    # ---- names and addresses --------------------------------------------------------------
    def netns(self, i):
        """Namespace name of host i."""
        return f"{self.tag}h{i}"

    def address(self, i):
        """IPv4 address of host i."""
        return f"10.201.{self.subnet}.{i + 1}"

    @property
    def bridge_address(self):
        """The bridge's address in the root namespace (reachable from every host)."""
        return f"10.201.{self.subnet}.254"

    def interface(self, i):
        """Host i's interface name inside its namespace."""
        return f"{self.tag}v{i}"

    # ---- lifecycle ---------------------------------------------------------------------------
    def __enter__(self):
        atexit.register(self.teardown)
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc):
        self.teardown()
        return False

    def _tbf(self):
        burst = max(32, int(self.rate * 10 / 8))  # kbit: about 10 ms worth at the rate, at least 32
        return ["tbf", "rate", f"{self.rate}mbit", "burst", f"{burst}kbit", "latency", f"{self.latency_ms}ms"]

    def _build(self):
        self._created = True
        br = f"{self.tag}br"
        _sh("ip", "link", "add", br, "type", "bridge")
        _sh("ip", "addr", "add", f"{self.bridge_address}/24", "dev", br)
        _sh("ip", "link", "set", br, "up")
        hostname = socket.gethostname()
        for i in range(self.hosts):
            ns, inner, outer = self.netns(i), self.interface(i), f"{self.tag}b{i}"
            _sh("ip", "netns", "add", ns)
            _sh("ip", "link", "add", inner, "type", "veth", "peer", "name", outer)
            _sh("ip", "link", "set", inner, "netns", ns)
            _sh("ip", "link", "set", outer, "master", br)
            _sh("ip", "link", "set", outer, "up")
            _sh("ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", inner)
            _sh("ip", "-n", ns, "link", "set", inner, "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            spec = self._tbf()
            _sh("tc", "-n", ns, "qdisc", "add", "dev", inner, "root", *spec)   # host -> bridge
            _sh("tc", "qdisc", "add", "dev", outer, "root", *spec)             # bridge -> host
            os.makedirs(f"/etc/netns/{ns}", exist_ok=True)
            with open(f"/etc/netns/{ns}/hosts", "w", encoding="utf-8") as f:
                f.write(f"127.0.0.1 localhost\n{self.address(i)} {hostname}\n")

    def teardown(self):
        """Delete every namespace, link and file this testbed created (safe to call twice)."""
        if not self._created:
            return
        # a second SIGINT/SIGTERM (a user pressing Ctrl-C again) must not cut the clean-up short
        main = threading.current_thread() is threading.main_thread()
        held = [signal.SIGINT, signal.SIGTERM]
        if main:
            signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            for i in range(self.hosts):
                _sh("ip", "netns", "del", self.netns(i), check=False)
                _sh("ip", "link", "del", f"{self.tag}b{i}", check=False)
                shutil.rmtree(f"/etc/netns/{self.netns(i)}", ignore_errors=True)
            _sh("ip", "link", "del", f"{self.tag}br", check=False)
            self._created = False
        finally:
            if main:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, held)

    # ---- running commands ------------------------------------------------------------------
    def popen(self, i, cmd, **kwargs):
        """Start ``cmd`` (a list) on host i."""
        return subprocess.Popen(["ip", "netns", "exec", self.netns(i), *cmd], **kwargs)

    def run(self, i, cmd, **kwargs):
        """Run ``cmd`` on host i to completion (``subprocess.run`` arguments)."""
        return subprocess.run(["ip", "netns", "exec", self.netns(i), *cmd], **kwargs)

    def launch_horovod(self, cmd, env=None, stdout=None, stderr=None):
        """Start ``cmd`` as one Horovod worker per host (rank i on host i) with Gloo rendezvous
        through a server in the root namespace; no ssh. Returns the ``Popen`` list; the caller
        waits for them (``wait_all``)."""
        from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts
        from horovod.runner.http.http_server import RendezvousServer
        n = self.hosts
        names = [self.netns(i) for i in range(n)]
        self._rendezvous = RendezvousServer()
        port = self._rendezvous.start()
        slots = get_host_assignments(parse_hosts(",".join(f"{h}:1" for h in names)), n)
        self._rendezvous.init(slots)
        procs = []
        for i, slot in enumerate(slots):
            host = names.index(slot.hostname)
            e = dict(os.environ, **(env or {}))
            e.update(HOROVOD_GLOO_RENDEZVOUS_ADDR=self.bridge_address, HOROVOD_GLOO_RENDEZVOUS_PORT=str(port),
                     HOROVOD_CONTROLLER="gloo", HOROVOD_CPU_OPERATIONS="gloo",
                     HOROVOD_GLOO_IFACE=self.interface(host), HOROVOD_HOSTNAME=slot.hostname,
                     HOROVOD_RANK=str(slot.rank), HOROVOD_SIZE=str(slot.size),
                     HOROVOD_LOCAL_RANK=str(slot.local_rank), HOROVOD_LOCAL_SIZE=str(slot.local_size),
                     HOROVOD_CROSS_RANK=str(slot.cross_rank), HOROVOD_CROSS_SIZE=str(slot.cross_size))
            procs.append(self.popen(host, list(cmd), env=e, stdout=stdout, stderr=stderr))
        return procs

    def wait_all(self, procs, timeout=None):
        """Wait for the workers; if one fails, stop the others. Returns the exit codes."""
        import time
        deadline = None if timeout is None else time.time() + timeout
        codes = [None] * len(procs)
        try:
            while None in codes:
                for k, p in enumerate(procs):
                    if codes[k] is None:
                        codes[k] = p.poll()
                if any(c not in (None, 0) for c in codes) or (deadline and time.time() > deadline):
                    break
                time.sleep(0.05)
        finally:
            for k, p in enumerate(procs):
                if p.poll() is None:
                    p.kill()
                    p.wait()
                    codes[k] = p.returncode if codes[k] is None else codes[k]
            if getattr(self, "_rendezvous", None) is not None:
                self._rendezvous.stop()
                self._rendezvous = None
        return codes

    def exists(self):
        """Whether any of this testbed's namespaces still exist."""
        names = _sh("ip", "netns", "list", check=False).stdout
        return any(self.netns(i) in names for i in range(self.hosts))
