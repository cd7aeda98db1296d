"""A loopback HTTP server for zoo tests: serves a folder, counts requests, and can misbehave."""
import http.server
import os
import threading
import time

import pytest


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        with srv.lock:
            srv.requests.append(self.path)
        if srv.status:
            self.send_error(srv.status)
            return
        if srv.stall:
            time.sleep(srv.stall)
        super().do_GET()


class ZooServer:
    """Serves ``folder`` on 127.0.0.1; ``status`` forces an HTTP error, ``stall`` delays answers."""

    def __init__(self, folder):
        handler = lambda *a, **kw: _Handler(*a, directory=str(folder), **kw)  # noqa: E731
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.requests, self.httpd.lock = [], threading.Lock()
        self.httpd.status, self.httpd.stall = None, 0
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def requests(self):
        return list(self.httpd.requests)

    def set(self, status=None, stall=0):
        self.httpd.status, self.httpd.stall = status, stall

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def zoo_env(tmp_path, monkeypatch):
    """An isolated GLUON_SUITE_HOME, a store folder and a server on it; fast retries/timeouts."""
    home, store = tmp_path / "home", tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("GLUON_SUITE_HOME", str(home))
    monkeypatch.setenv("GLUON_SUITE_QUIET", "1")
    monkeypatch.setenv("GLUON_SUITE_RETRIES", "1")
    monkeypatch.setenv("GLUON_SUITE_BACKOFF", "0.05")
    monkeypatch.setenv("GLUON_SUITE_READ_TIMEOUT", "1")
    monkeypatch.setenv("GLUON_SUITE_CONNECT_TIMEOUT", "1")
    monkeypatch.delenv("GLUON_SUITE_OFFLINE", raising=False)
    monkeypatch.delenv("GLUON_SUITE_REPO", raising=False)
    server = ZooServer(store)
    yield {"home": home, "store": store, "server": server, "cache": home / "models"}
    server.close()


def cache_files(cache):
    """Checkpoint-like files in the cache (lock files live apart, in .locks/)."""
    if not os.path.isdir(cache):
        return []
    return sorted(f for f in os.listdir(cache) if f != ".locks")
