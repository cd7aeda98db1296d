#!/usr/bin/env python
"""Model-zoo benchmark: warm-cache ``get_model(pretrained=True)`` vs a bare ``load_parameters``, and
download throughput of the checkpoint store vs a plain ``requests`` stream from the same loopback
HTTP server. The protocol (bench/protocols/zoo.yaml) fixes the repeats and the criteria.

    gluon-suite bench run zoo [--quick]
"""
import functools
import http.server
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


class ThrottledHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files at about ``rate`` bytes/s (0: as fast as it can)."""
    rate = 0

    def log_message(self, *args):
        pass

    def copyfile(self, source, outputfile):
        if not self.rate:
            return super().copyfile(source, outputfile)
        t0, sent = time.perf_counter(), 0
        for chunk in iter(lambda: source.read(1 << 18), b""):
            outputfile.write(chunk)
            sent += len(chunk)
            ahead = sent / self.rate - (time.perf_counter() - t0)
            if ahead > 0:
                time.sleep(ahead)


def serve(directory, rate):
    """Serve ``directory`` on a free loopback port (printed on stdout) until killed."""
    ThrottledHandler.rate = float(rate)
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(ThrottledHandler, directory=directory))
    print(httpd.server_address[1], flush=True)
    httpd.serve_forever()


def median_time(fn, reps):
    import numpy as np
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


class _Setup:
    """A 100 MB checkpoint published into a store served by two static HTTP servers (their own
    processes, as a real one would be: an in-process server would share the interpreter lock with
    the client being measured), one unlimited and one limited to 1 Gbit/s."""

    def __init__(self, tmp):
        os.environ.update(GLUON_SUITE_HOME=os.path.join(tmp, "home"), GLUON_SUITE_QUIET="1")
        from mxnet import gluon
        from gluon_suite.model_zoo import get_model, register_model
        from gluon_suite.model_zoo.publish import publish
        from gluon_suite.utils import write_json

        def bench_mlp():
            net = gluon.nn.HybridSequential()
            for _ in range(6):
                net.add(gluon.nn.Dense(2048, in_units=2048))
            return net
        self.build = bench_mlp
        register_model("bench_mlp")(bench_mlp)
        net = get_model("bench_mlp")
        net.initialize()
        ckpt = os.path.join(tmp, "bench.params")
        net.save_parameters(ckpt)
        card = os.path.join(tmp, "bench_mlp.json")
        write_json(card, {"name": "bench_mlp", "architecture": "6x Dense(2048)", "command": "bench/zoo.py",
                          "hyperparameters": {}, "metric": {}, "training_log": "-"})
        store = os.path.join(tmp, "store")
        os.makedirs(store)
        self.servers = []
        for rate in (0, 125e6):
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", store, str(rate)],
                                 stdout=subprocess.PIPE, text=True)
            self.servers.append((p, f"http://127.0.0.1:{int(p.stdout.readline())}"))
        self.urls = {"loopback": self.servers[0][1], "1gbit": self.servers[1][1]}
        self.rec = publish(ckpt, "bench_mlp", card, store, url=self.urls["loopback"])
        self.size_mb = self.rec["size"] / 1e6
        self.tmp = tmp

    def close(self):
        for p, _ in self.servers:
            p.kill()
            p.wait()

    def plain(self, label, reps):
        """Median seconds of a plain ``requests`` stream of the checkpoint into a file."""
        import requests
        base, ts = self.urls[label], []
        for i in range(reps):
            out = os.path.join(self.tmp, f"plain{i}.bin")
            t0 = time.perf_counter()
            with requests.get(f"{base}/{self.rec['file_name']}", stream=True) as r, open(out, "wb") as f:
                r.raise_for_status()
                for chunk in r.iter_content(1 << 20):
                    f.write(chunk)
            ts.append(time.perf_counter() - t0)
            if os.path.getsize(out) != self.rec["size"]:
                raise RuntimeError("the plain stream got a different file")
            os.unlink(out)
            os.sync()
        return _median(ts)

    def store(self, label, reps):
        """Median seconds of the store's download (streamed SHA-256 check, lock, atomic rename),
        from an empty cache each time."""
        from gluon_suite.model_zoo.store import checkpoint_path, purge
        os.environ["GLUON_SUITE_REPO"] = self.urls[label]
        ts = []
        try:
            for _ in range(reps):
                purge()
                os.sync()   # start from a clean page-cache writeback state
                t0 = time.perf_counter()
                checkpoint_path("bench_mlp")
                ts.append(time.perf_counter() - t0)
                os.sync()
        finally:
            del os.environ["GLUON_SUITE_REPO"]
        return _median(ts)


def _median(ts):
    import numpy as np
    return float(np.median(ts))


def evidence(ctx):
    """The protocol bench/protocols/zoo.yaml. A "seed" is one repeat of the whole bench: per link,
    the plain stream and the store's download (each the median of ``download_reps``), then the warm
    cache: ``get_model(pretrained=True)`` against building the model and ``load_parameters`` on the
    cached file, interleaved in ABBA order (the median of ``warm_pairs`` each)."""
    from gluon_suite.model_zoo import get_model
    from gluon_suite.model_zoo.store import checkpoint_path
    p = ctx.params
    setup = _Setup(tempfile.mkdtemp(prefix="zoo-bench-", dir=ctx.workdir))
    try:
        os.environ["GLUON_SUITE_REPO"] = setup.urls["loopback"]
        path = checkpoint_path("bench_mlp")
        del os.environ["GLUON_SUITE_REPO"]
        for rep in ctx.progress(ctx.seeds, desc="zoo repeats"):
            for label in ("1gbit", "loopback"):
                reps = p["download_reps"][label]
                plain = ctx.measure(f"plain_{label}", rep, lambda: {"seconds": setup.plain(label, reps)})
                ours = ctx.measure(f"store_{label}", rep, lambda: {"seconds": setup.store(label, reps)})
                for m in (plain, ours):
                    m["MBps"] = setup.size_mb / m["seconds"]
            os.environ["GLUON_SUITE_REPO"] = setup.urls["loopback"]
            checkpoint_path("bench_mlp")              # the cache is warm again
            del os.environ["GLUON_SUITE_REPO"]

            def bare():
                n = setup.build()
                n.load_parameters(path)
            warm, bare_t = [], []
            for k in range(p["warm_pairs"]):    # ABBA: both see the same page-cache and allocator state
                pair = [(warm, lambda: get_model("bench_mlp", pretrained=True)), (bare_t, bare)]
                for out, fn in (pair if k % 2 else pair[::-1]):
                    t0 = time.perf_counter()
                    fn()
                    out.append(time.perf_counter() - t0)
            ctx.measure("get_model_pretrained", rep, lambda: {"seconds": _median(warm)})
            ctx.measure("bare_load_parameters", rep, lambda: {"seconds": _median(bare_t)})
    finally:
        setup.close()
    # what get_model(pretrained=True) adds to a bare load: finding the verified cached file
    os.environ["GLUON_SUITE_REPO"] = "http://127.0.0.1:9"     # never contacted: the file is cached
    ts = []
    for _ in range(201):
        t0 = time.perf_counter()
        checkpoint_path("bench_mlp")
        ts.append(time.perf_counter() - t0)
    del os.environ["GLUON_SUITE_REPO"]
    ctx.note("cached_file_lookup_s", _median(ts))
    # the floor on a CPU-bound link: SHA-256 of the file alone, from memory
    import hashlib
    with open(path, "rb") as f:
        data = memoryview(f.read())
    hs = []
    for _ in range(5):
        h, t0 = hashlib.sha256(), time.perf_counter()
        for i in range(0, len(data), 1 << 20):
            h.update(data[i:i + (1 << 20)])
        hs.append(time.perf_counter() - t0)
    ctx.note("sha256_alone_s", _median(hs))
    ctx.note("checkpoint_mb", setup.size_mb)
    _tables(ctx, setup.size_mb)


def _tables(ctx, size_mb):
    from gluon_suite.evidence.stats import summary

    def rng(arm, key):
        xs = [r["metrics"][key] for r in ctx.runs if r["arm"] == arm]
        s = summary(xs)
        return s, (f"{s['min']:.0f}-{s['max']:.0f}" if key == "MBps" else f"{s['min'] * 1e3:.0f}-{s['max'] * 1e3:.0f} ms")

    def ratios(a, b):
        xa = {r["seed"]: r["metrics"]["seconds"] for r in ctx.runs if r["arm"] == a}
        xb = {r["seed"]: r["metrics"]["seconds"] for r in ctx.runs if r["arm"] == b}
        rs = [xb[s] / xa[s] for s in xa if s in xb]
        return f"{min(rs):.2f}-{max(rs):.2f}x"
    rows = []
    for label, what in (("1gbit", "download from a 1 Gbit/s-limited loopback server"),
                        ("loopback", "download from an unlimited loopback server")):
        rows.append([what, rng(f"store_{label}", "MBps")[1] + " MB/s", rng(f"plain_{label}", "MBps")[1] + " MB/s",
                     ratios(f"store_{label}", f"plain_{label}") + " of plain's throughput"])
    rows.append(["warm cache: `get_model(pretrained=True)` vs build + `load_parameters`",
                 rng("get_model_pretrained", "seconds")[1], rng("bare_load_parameters", "seconds")[1],
                 ratios("bare_load_parameters", "get_model_pretrained") + " of the bare load's time"])
    lookup = ctx.notes["cached_file_lookup_s"]
    bare = summary([r["metrics"]["seconds"] for r in ctx.runs if r["arm"] == "bare_load_parameters"])["mean"]
    rows.append(["what `get_model(pretrained=True)` adds: finding the verified cached file", f"{lookup * 1e3:.2f} ms",
                 "", f"{100 * lookup / bare:.2f}% of a bare load"])
    sha = ctx.notes["sha256_alone_s"]
    rows.append(["SHA-256 of the file alone, from memory (median of 5)", f"{sha * 1e3:.0f} ms ({size_mb / sha:.0f} MB/s)",
                 "", ""])
    ctx.table("summary", ["", "store", "plain `requests` / bare load", "ratio (range over repeats)"], rows,
              caption=f"A {size_mb:.0f} MB checkpoint; ranges over {len(ctx.seeds)} repeats.")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], sys.argv[3])
    else:
        from gluon_suite.cli import entry
        sys.argv = ["gluon-suite", "bench", "run", "zoo", *sys.argv[1:]]
        entry()
