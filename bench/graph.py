#!/usr/bin/env python
"""GCN and GAT training-epoch time and peak memory: gluon_suite.graph vs PyTorch Geometric on the
same synthetic graph (100k nodes, 1M random edges plus self-loops, 64 features, hidden 64 for GCN
and 8 heads x 8 for GAT, 16 classes, Adam, full graph), CPU, same thread count.

PyG runs from its own virtual environment (torch 2.13.0 CPU + torch_geometric), so the suite's pins
stay untouched:

    python3.11 -m venv .cache/pyg-venv && .cache/pyg-venv/bin/pip install torch==2.13.0 torch_geometric psutil
    .venv/bin/python bench/graph.py [--pyg-python .cache/pyg-venv/bin/python]

Each (framework, model) runs in a fresh process; peak memory is that process's maximum RSS.
``--repeats`` runs the pair that many times, alternating which framework goes first, so that load
from other jobs on the machine hits both sides alike; the table gives the medians over the repeats
and the range of the per-repeat time ratios. Writes bench/results/graph.json and prints a table.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
N, E, F, HID, C, HEADS = 100_000, 1_000_000, 64, 64, 16, 8


def make_graph(seed=0):
    import numpy as np
    rs = np.random.RandomState(seed)
    src, dst = rs.randint(0, N, E), rs.randint(0, N, E)
    x = rs.normal(size=(N, F)).astype(np.float32)
    y = rs.randint(0, C, N)
    return src, dst, x, y


def run_ours(model, epochs, threads):
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    sys.path.insert(0, os.path.dirname(HERE))
    from gluon_suite.graph import Graph
    from gluon_suite.graph.nn import GATConv, GraphConv
    src, dst, x, y = make_graph()
    g = Graph((src, dst), num_nodes=N).add_self_loop()
    X, Y = mx.nd.array(x), mx.nd.array(y)

    class Net(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                if model == "gcn":
                    self.l1, self.l2 = GraphConv(F, HID, activation=mx.nd.relu), GraphConv(HID, C)
                else:
                    self.l1 = GATConv(F, HID // HEADS, HEADS, activation=lambda h: mx.nd.LeakyReLU(h, act_type="elu"))
                    self.l2 = GATConv(HID, C, 1)

        def forward(self, g, h):
            h = self.l1(g, h).reshape((N, -1))
            return self.l2(g, h).reshape((N, -1))

    net = Net()
    net.initialize(mx.init.Xavier())
    tr = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    times = []
    for ep in range(epochs + 1):
        mx.nd.waitall()
        t0 = time.perf_counter()
        with autograd.record():
            loss = loss_fn(net(g, X), Y).mean()
        loss.backward()
        tr.step(1)
        mx.nd.waitall()
        if ep:
            times.append(time.perf_counter() - t0)
    return times


def run_pyg(model, epochs, threads):
    import numpy as np
    import torch
    from torch_geometric.nn import GATConv, GCNConv
    torch.set_num_threads(threads)
    src, dst, x, y = make_graph()
    ei = torch.tensor(np.stack([src, dst]), dtype=torch.long)
    X, Y = torch.tensor(x), torch.tensor(y)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if model == "gcn":
                self.l1, self.l2 = GCNConv(F, HID), GCNConv(HID, C)
            else:
                self.l1, self.l2 = GATConv(F, HID // HEADS, heads=HEADS), GATConv(HID, C, heads=1)

        def forward(self, x, ei):
            h = self.l1(x, ei)
            h = torch.relu(h) if model == "gcn" else torch.nn.functional.elu(h)
            return self.l2(h, ei)

    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    times = []
    for ep in range(epochs + 1):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(X, ei), Y)
        loss.backward()
        opt.step()
        if ep:
            times.append(time.perf_counter() - t0)
    return times


def worker(args):
    fn = run_ours if args.worker == "ours" else run_pyg
    times = fn(args.model, args.epochs, args.threads)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"epoch_s": statistics.median(times), "peak_rss_mb": peak_mb, "epochs": len(times)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each (framework, model), interleaved")
    ap.add_argument("--pyg-python", default=os.path.join(os.path.dirname(HERE), ".cache", "pyg-venv", "bin", "python"))
    ap.add_argument("--worker", choices=["ours", "pyg"], help=argparse.SUPPRESS)
    ap.add_argument("--model", choices=["gcn", "gat"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MXNET_CPU_WORKER_NTHREADS=str(args.threads),
               MKL_NUM_THREADS=str(args.threads), MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0")
    pythons = {"ours": sys.executable, "pyg": args.pyg_python}
    if not os.path.exists(args.pyg_python):
        print(f"skipping PyG: {args.pyg_python} not found (see the module docstring)")
        del pythons["pyg"]
    runs = {}
    for model in ("gcn", "gat"):
        for rep in range(args.repeats):
            for fw in (list(pythons) if rep % 2 == 0 else list(pythons)[::-1]):
                load = os.getloadavg()[0]
                p = subprocess.run([pythons[fw], os.path.abspath(__file__), "--worker", fw, "--model", model,
                                    "--epochs", str(args.epochs), "--threads", str(args.threads)],
                                   capture_output=True, text=True, env=env)
                if p.returncode != 0:
                    print(f"{fw} {model} failed:\n{p.stderr[-2000:]}")
                    continue
                r = json.loads(p.stdout.strip().splitlines()[-1])
                r["load_before"] = round(load, 2)
                runs.setdefault(model, {}).setdefault(fw, []).append(r)
                print(f"{model} {fw} #{rep + 1}: {r}", flush=True)
    results = {}
    for model, by_fw in runs.items():
        res = results[model] = {}
        for fw, rs in by_fw.items():
            res[fw] = {"epoch_s": statistics.median(r["epoch_s"] for r in rs),
                       "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
                       "epochs": rs[0]["epochs"], "runs": rs}
        if "ours" in res and "pyg" in res:
            res["time_ratio_ours_over_pyg"] = res["ours"]["epoch_s"] / res["pyg"]["epoch_s"]
            res["memory_ratio_ours_over_pyg"] = res["ours"]["peak_rss_mb"] / res["pyg"]["peak_rss_mb"]
            res["time_ratio_per_repeat"] = [o["epoch_s"] / q["epoch_s"]
                                            for o, q in zip(by_fw["ours"], by_fw["pyg"])]
    out = {"benchmark": "graph", "date": time.strftime("%Y-%m-%d"), "nodes": N, "edges": E,
           "features": F, "hidden": HID, "classes": C, "gat_heads": HEADS, "threads": args.threads,
           "epochs_measured": args.epochs, "repeats": args.repeats, "results": results}
    sys.path.insert(0, os.path.dirname(HERE))
    from gluon_suite.utils import write_json
    write_json(os.path.join(HERE, "results", "graph.json"), out)
    print(f"\n{N} nodes, {E} edges (+ self-loops), {F} features, {args.threads} threads, "
          f"median of {args.repeats} repeat(s) of {args.epochs} epochs")
    print(f"{'model':<6}{'ours s':>9}{'PyG s':>9}{'time x':>8}{'range':>13}{'ours MB':>9}{'PyG MB':>9}{'mem x':>7}")
    nan = float("nan")
    for model, r in results.items():
        o, q = r.get("ours", {}), r.get("pyg", {})
        per = r.get("time_ratio_per_repeat") or [nan]
        print(f"{model:<6}{o.get('epoch_s', nan):>9.3f}{q.get('epoch_s', nan):>9.3f}"
              f"{r.get('time_ratio_ours_over_pyg', nan):>8.2f}{f'{min(per):.2f}-{max(per):.2f}':>13}"
              f"{o.get('peak_rss_mb', nan):>9.0f}{q.get('peak_rss_mb', nan):>9.0f}"
              f"{r.get('memory_ratio_ours_over_pyg', nan):>7.2f}")
    print("results: bench/results/graph.json")


if __name__ == "__main__":
    main()
