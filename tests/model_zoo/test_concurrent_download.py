"""Four processes (as four workers on one host) fetch the same checkpoint into one cache from a
loopback server that misbehaves on a script: the connection dropped mid-body, a stall longer than
the read timeout, a wrong announced length, a short body without a length, a wrong byte; then the
file. One process downloads (every request the server sees is one of the script, in order, and it
sends the whole file once), every process returns the verified path, and the cache holds the file,
its stamp and the lock file (``.locks/NAME.lock``, kept on purpose) and nothing else. A server that
always sends the wrong length fails every process with one line and leaves nothing in the cache; a
download killed mid-body leaves no lock and its partial file is removed by the next fetch; each
fault alone, retried to the end, is one line naming the URL and the fault."""
import hashlib
import http.server
import json
import os
import random
import signal
import subprocess
import sys
import threading

import pytest

from gluon_suite.model_zoo.store import ZooError, fetch

N = 4
SIZE = 256 * 1024
NAME = "probe-3f2a9c1b.params"
READ_TIMEOUT = 1.0
# every fault the server plays, in the order it plays them, before it sends the file
FAULTS = ["drop", "stall", "short", "unframed", "garbled"]

CHILD = r"""
import json, sys
from gluon_suite.model_zoo.store import ZooError, fetch
record, root = json.loads(sys.argv[1]), sys.argv[2]
print("ready", flush=True)
sys.stdin.readline()
try:
    print(fetch(record, root), flush=True)
except ZooError as exc:
    sys.stderr.write(f"{exc}\n")
    sys.exit(1)
"""


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _head(self, length):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def do_GET(self):  # noqa: C901 - one branch per scripted behaviour
        srv, data = self.server, self.server.data
        if self.path != "/" + NAME:
            self.send_error(404)
            return
        with srv.lock:
            n = len(srv.actions)
            action = srv.script[n] if n < len(srv.script) else srv.then
            srv.actions.append(action)
        if action == "ok":
            self._head(len(data))
            self.wfile.write(data)
            with srv.lock:
                srv.full_bodies += 1
        elif action == "drop":        # announced in full, closed after half the body
            self._head(len(data))
            self.wfile.write(data[:len(data) // 2])
        elif action in ("stall", "hang"):  # a quarter of the body, then nothing
            self._head(len(data))
            self.wfile.write(data[:len(data) // 4])
            srv.stalled.set()
            srv.stop.wait(3 * READ_TIMEOUT if action == "stall" else 60)
        elif action == "short":       # a correctly framed response of the wrong length
            self._head(len(data) - 1000)
            self.wfile.write(data[:-1000])
        elif action == "unframed":    # HTTP/1.0 without a length: the body ends when the socket does
            self._head(None)
            self.wfile.write(data[:-1000])
        elif action == "garbled":     # the right length, one byte wrong
            self._head(len(data))
            self.wfile.write(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
        self.close_connection = True


class ScriptedServer:
    """Serves ``data`` as ``/NAME`` on 127.0.0.1; the k-th GET plays ``script[k]`` (``then`` after
    the script). ``actions`` lists what each GET played, ``full_bodies`` counts whole files sent."""

    def __init__(self, data, script, then="ok"):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        h = self.httpd
        h.data, h.script, h.then, h.actions, h.full_bodies = data, list(script), then, [], 0
        h.lock, h.stop, h.stalled = threading.Lock(), threading.Event(), threading.Event()
        h.daemon_threads = True
        self.url = f"http://127.0.0.1:{h.server_address[1]}"
        threading.Thread(target=h.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def zoo(tmp_path):
    """The file, its record (hash by hashlib over the bytes served), a cache folder, a server
    factory and the children's environment: fast retries, a one-second read timeout."""
    data = random.Random(0).randbytes(SIZE)
    record = {"model": "probe", "file_name": NAME, "sha256": hashlib.sha256(data).hexdigest(),
              "size": SIZE}
    servers = []

    def serve(script, then="ok"):
        servers.append(ScriptedServer(data, script, then))
        record["url"] = servers[-1].url
        return servers[-1]

    environ = {k: v for k, v in os.environ.items() if not k.startswith("GLUON_SUITE_")}
    environ.update(GLUON_SUITE_HOME=str(tmp_path / "home"), GLUON_SUITE_QUIET="1", OMP_NUM_THREADS="1",
                   GLUON_SUITE_RETRIES=str(len(FAULTS)), GLUON_SUITE_BACKOFF="0.05",
                   GLUON_SUITE_READ_TIMEOUT=str(READ_TIMEOUT), GLUON_SUITE_CONNECT_TIMEOUT="5")
    yield {"data": data, "record": record, "cache": tmp_path / "cache", "serve": serve, "env": environ}
    for s in servers:
        s.close()


def start(zoo, n, **env):
    """``n`` fetching processes, released together once every one has imported the suite."""
    environ = dict(zoo["env"], **env)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(zoo["record"]), str(zoo["cache"])],
                              env=environ, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    return procs


def finish(procs, timeout=60):
    outs = [p.communicate(timeout=timeout) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs)]


def listing(cache):
    """Everything in the cache folder, ``.locks/`` entries as ``.locks/NAME``."""
    out = sorted(os.listdir(cache))
    if ".locks" in out:
        out += [".locks/" + f for f in sorted(os.listdir(cache / ".locks"))]
    return out


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("cache_state", ["cold", "corrupt"])
def test_four_processes_share_one_download_through_drops_stalls_and_wrong_lengths(zoo, cache_state):
    cache, data = zoo["cache"], zoo["data"]
    if cache_state == "corrupt":  # a damaged copy and a killed download's partial file are already there
        cache.mkdir()
        (cache / NAME).write_bytes(data[:7] + b"X" + data[8:])
        (cache / f".tmp-{NAME}.k1ll3d_0").write_bytes(data[:5000])
    server = zoo["serve"](FAULTS)
    results = finish(start(zoo, N))
    for rc, out, err in results:
        assert rc == 0, err
        assert out.strip() == str(cache / NAME)
    # one process made every request: the five faults in order, then the one whole transfer
    assert server.httpd.actions == FAULTS + ["ok"]
    assert server.httpd.full_bodies == 1
    assert sha256_of(cache / NAME) == hashlib.sha256(data).hexdigest()
    assert listing(cache) == [".locks", NAME, NAME + ".verified", f".locks/{NAME}.lock"]


def test_a_server_that_always_sends_the_wrong_length_fails_every_process_in_one_line(zoo):
    server = zoo["serve"]([], then="short")
    results = finish(start(zoo, N, GLUON_SUITE_RETRIES="2"))
    url = f"{server.url}/{NAME}"
    for rc, out, err in results:
        assert rc == 1 and out == ""
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"model 'probe': download of {url} failed after 3 attempts: ")
        assert f"truncated or wrong (the server announced {SIZE - 1000} bytes, expected {SIZE})" in err
    # each process tried in turn under the lock (3 attempts each); no whole file was ever sent
    assert server.httpd.actions == ["short"] * (3 * N)
    assert server.httpd.full_bodies == 0
    assert listing(zoo["cache"]) == [".locks", f".locks/{NAME}.lock"]


def test_a_download_killed_mid_body_leaves_no_lock_and_its_partial_file_is_removed(zoo):
    cache = zoo["cache"]
    server = zoo["serve"](["hang"])
    (victim,) = start(zoo, 1, GLUON_SUITE_READ_TIMEOUT="60")
    assert server.httpd.stalled.wait(30)  # mid-body: its temporary file was made before the request
    partial = [f for f in os.listdir(cache) if f.startswith(f".tmp-{NAME}.")]
    assert len(partial) == 1
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)
    assert os.path.exists(cache / partial[0])  # a killed process cleans nothing up itself
    # the next process gets the lock at once (the kernel released it) and a whole, verified file
    ((rc, out, err),) = finish(start(zoo, 1), timeout=30)
    assert rc == 0, err
    assert out.strip() == str(cache / NAME)
    assert server.httpd.actions == ["hang", "ok"] and server.httpd.full_bodies == 1
    assert sha256_of(cache / NAME) == hashlib.sha256(zoo["data"]).hexdigest()
    assert listing(cache) == [".locks", NAME, NAME + ".verified", f".locks/{NAME}.lock"]


@pytest.mark.parametrize("fault,says", [
    ("drop", "the connection broke mid-transfer"),
    ("stall", "timed out (the server stalled)"),
    ("short", f"truncated or wrong (the server announced {SIZE - 1000} bytes, expected {SIZE})"),
    ("unframed", f"truncated or wrong ({SIZE - 1000} bytes, expected {SIZE})"),
    ("garbled", "does not match its record"),
])
def test_each_fault_is_retried_and_then_named_in_one_line(zoo, fault, says, monkeypatch):
    for name in ("GLUON_SUITE_REPO", "GLUON_SUITE_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in zoo["env"].items():
        if name.startswith("GLUON_SUITE_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("GLUON_SUITE_RETRIES", "1")
    server = zoo["serve"]([], then=fault)
    with pytest.raises(ZooError) as ei:
        fetch(zoo["record"], str(zoo["cache"]))
    err = str(ei.value)
    assert "\n" not in err
    assert err.startswith(f"model 'probe': download of {server.url}/{NAME} failed after 2 attempts: ")
    assert says in err
    assert server.httpd.actions == [fault, fault]
    assert listing(zoo["cache"]) == [".locks", f".locks/{NAME}.lock"]
