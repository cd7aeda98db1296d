#!/usr/bin/env python
"""Model-zoo benchmark: warm-cache ``get_model(pretrained=True)`` vs a bare ``load_parameters``, and
download throughput of the checkpoint store vs a plain ``requests`` stream from the same loopback
HTTP server. Writes bench/results/zoo.json and prints a table.

    .venv/bin/python bench/zoo.py
"""
import functools
import http.server
import os
import subprocess
import sys
import tempfile
import threading
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


def main():
    tmp = tempfile.mkdtemp(prefix="zoo-bench-")
    os.environ.update(GLUON_SUITE_HOME=os.path.join(tmp, "home"), GLUON_SUITE_QUIET="1")
    import mxnet as mx
    import requests
    from mxnet import gluon
    from gluon_suite.model_zoo import get_model, register_model
    from gluon_suite.model_zoo.publish import publish
    from gluon_suite.model_zoo.store import purge
    from gluon_suite.utils import write_json

    @register_model("bench_mlp")
    def bench_mlp():
        net = gluon.nn.HybridSequential()
        for _ in range(6):
            net.add(gluon.nn.Dense(2048, in_units=2048))
        return net

    net = get_model("bench_mlp")
    net.initialize()
    ckpt = os.path.join(tmp, "bench.params")
    net.save_parameters(ckpt)
    card = os.path.join(tmp, "bench_mlp.json")
    write_json(card, {"name": "bench_mlp", "architecture": "6x Dense(2048)", "command": "bench/zoo.py",
                      "hyperparameters": {}, "metric": {}, "training_log": "-"})
    store = os.path.join(tmp, "store")
    os.makedirs(store)
    # the static servers run as their own processes, as a real one would (an in-process server
    # would share the interpreter lock with the client being measured)
    servers, url = [], None
    for rate in (0, 125e6):
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", store, str(rate)],
                             stdout=subprocess.PIPE, text=True)
        servers.append((p, f"http://127.0.0.1:{int(p.stdout.readline())}"))
    url, turl = servers[0][1], servers[1][1]
    rec = publish(ckpt, "bench_mlp", card, store, url=url)
    size_mb = rec["size"] / 1e6

    # download throughput: plain requests stream vs the store (fresh cache each time), alternating;
    # once from an unlimited loopback server (CPU-bound: server, client and hash share the cores)
    # and once from a server limited to 1 Gbit/s
    import numpy as np
    from gluon_suite.model_zoo.store import checkpoint_path
    download = {}
    for label, base, reps in (("loopback", url, 9), ("1gbit", turl, 3)):
        os.environ["GLUON_SUITE_REPO"] = base
        plain, ours = [], []
        for i in range(reps):
            out = os.path.join(tmp, f"plain{i}.bin")
            t0 = time.perf_counter()
            with requests.get(f"{base}/{rec['file_name']}", stream=True) as r, open(out, "wb") as f:
                r.raise_for_status()
                for chunk in r.iter_content(1 << 20):
                    f.write(chunk)
            plain.append(time.perf_counter() - t0)
            assert os.path.getsize(out) == rec["size"], "the plain stream got a different file"

            os.unlink(out)
            purge()
            os.sync()  # start both from a clean page-cache writeback state
            t0 = time.perf_counter()
            checkpoint_path("bench_mlp")
            ours.append(time.perf_counter() - t0)
            os.sync()
        p_s, o_s = float(np.median(plain)), float(np.median(ours))
        download[label] = {"plain_requests_s": p_s, "store_s": o_s, "plain_MBps": size_mb / p_s,
                           "store_MBps": size_mb / o_s, "ratio": p_s / o_s}
    del os.environ["GLUON_SUITE_REPO"]

    # warm cache: get_model(pretrained=True) vs building + load_parameters on the cached file
    path = checkpoint_path("bench_mlp")

    def bare():
        n = bench_mlp()
        n.load_parameters(path)

    warm, bare_t = [], []
    for k in range(41):  # interleaved in ABBA order: both see the same page-cache/allocator state
        pair = [(warm, lambda: get_model("bench_mlp", pretrained=True)), (bare_t, bare)]
        for store, fn in (pair if k % 2 else pair[::-1]):
            store.append(median_time(fn, 1))
    warm_s, bare_s = float(np.median(warm)), float(np.median(bare_t))
    # what get_model(pretrained=True) adds to a bare load: finding the verified cached file
    lookup_s = median_time(lambda: checkpoint_path("bench_mlp"), 201)
    for p, _ in servers:
        p.kill()
        p.wait()

    # the floor on a CPU-bound link: SHA-256 of the file alone, from memory
    import hashlib
    data = memoryview(open(path, "rb").read())
    hash_t = []
    for _ in range(5):
        h, t0 = hashlib.sha256(), time.perf_counter()
        for i in range(0, len(data), 1 << 20):
            h.update(data[i:i + (1 << 20)])
        hash_t.append(time.perf_counter() - t0)
    hash_s = float(np.median(hash_t))

    result = {"benchmark": "zoo", "date": time.strftime("%Y-%m-%d"), "checkpoint_mb": size_mb,
              "cpu_count": os.cpu_count(),
              "download": download,
              "download_note": "store time includes the streamed sha256 check, lock and atomic rename",
              "sha256_alone_s": hash_s, "sha256_alone_MBps": size_mb / hash_s,
              "warm_cache": {"get_model_pretrained_s": warm_s, "bare_load_parameters_s": bare_s,
                             "ratio": warm_s / bare_s, "cached_file_lookup_s": lookup_s,
                             "lookup_over_bare": lookup_s / bare_s}}
    write_json(os.path.join(HERE, "results", "zoo.json"), result)
    w = result["warm_cache"]
    print(f"sha256 of the file alone, from memory: {hash_s * 1e3:.0f} ms ({size_mb / hash_s:.0f} MB/s)")
    print(f"checkpoint {size_mb:.1f} MB on a loopback HTTP server")
    for label, d in download.items():
        print(f"download ({label}): store {d['store_MBps']:.0f} MB/s vs plain requests "
              f"{d['plain_MBps']:.0f} MB/s = {d['ratio']:.2f}x of plain (target >= 0.8x)")
    print(f"warm cache: get_model(pretrained=True) {w['get_model_pretrained_s'] * 1e3:.1f} ms vs bare "
          f"load_parameters {w['bare_load_parameters_s'] * 1e3:.1f} ms = {w['ratio']:.3f}x (target <= 1.1x); "
          f"the cached-file lookup it adds: {w['cached_file_lookup_s'] * 1e3:.2f} ms "
          f"({100 * w['lookup_over_bare']:.1f}% of a bare load)")
    print("results: bench/results/zoo.json")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], sys.argv[3])
    else:
        main()
