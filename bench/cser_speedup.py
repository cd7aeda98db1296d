#!/usr/bin/env python
"""CSER vs synchronous SGD vs EF-SGD on a slow network (needs root): 4 namespace hosts at
100 Mbit/s train a 1.1M-parameter MLP on the digits data; training time (evaluation excluded) to a
target test accuracy and final accuracy per algorithm. JSON and a plot of accuracy over training
time in bench/results/.

    sudo .venv/bin/python bench/cser_speedup.py [--epochs 10] [--target 0.95]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CONFIGS = {
    "sync": dict(algorithm="sync"),
    # R1 = 128 every step, R2 = 64 every 2 steps: 1/128 + 1/128 = 1/64 of the dense bytes
    "cser (grbs, 64x overall)": dict(algorithm="cser", compressor="grbs", ratio=128, period=2, compressor2="grbs", ratio2=64),
    "ef-sgd (top-k, 64x)": dict(algorithm="ef", compressor="topk", ratio=64),
}


def worker(cfg, epochs, out):
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    from gluon_suite.cv.data import load_digits
    from gluon_suite.distributed import DistributedTrainer, get_communicator
    comm = get_communicator()
    mx.random.seed(0)
    xtr, ytr = load_digits("train")
    xte, yte = load_digits("test")
    xtr, xte = xtr.reshape(len(xtr), -1), xte.reshape(len(xte), -1)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(1024, activation="relu", in_units=64), gluon.nn.Dense(1024, activation="relu", in_units=1024),
            gluon.nn.Dense(10, in_units=1024))
    net.initialize(mx.init.Xavier())
    tr = DistributedTrainer(net.collect_params(), "nag", {"learning_rate": 0.05, "momentum": 0.9}, communicator=comm, **cfg)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    B = 32
    steps = len(ytr) // (B * comm.size)
    rec, train_s = [], 0.0
    for epoch in range(epochs):
        mx.nd.waitall()
        t0 = time.perf_counter()
        perm = np.random.RandomState(epoch).permutation(len(ytr))[comm.rank::comm.size]
        for k in range(steps):
            idx = perm[k * B:(k + 1) * B]
            with autograd.record():
                loss = loss_fn(net(mx.nd.array(xtr[idx])), mx.nd.array(ytr[idx]))
            loss.backward()
            tr.step(B)
        mx.nd.waitall()
        train_s += time.perf_counter() - t0   # the clock stops for evaluation (a dense averaging)
        with tr.averaged():
            acc = float((net(mx.nd.array(xte)).argmax(axis=1).asnumpy() == yte).mean())
        rec.append({"epoch": epoch + 1, "time_s": train_s, "test_acc": acc,
                    "wire_bytes": comm.stats.total_wire})
    comm.barrier()
    if comm.rank == 0:
        with open(out, "w") as f:
            json.dump(rec, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--target", type=float, default=0.95)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--rate-mbit", type=float, default=100)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(CONFIGS[args.worker], args.epochs, args.out)
    from gluon_suite.whatif.testbed import Testbed, TestbedUnavailable
    from gluon_suite.utils import write_json
    curves = {}
    try:
        with Testbed(args.hosts, args.rate_mbit) as tb, tempfile.TemporaryDirectory() as tmp:
            for name in CONFIGS:
                out = os.path.join(tmp, "r.json")
                procs = tb.launch_horovod([sys.executable, os.path.abspath(__file__), "--worker", name,
                                           "--epochs", str(args.epochs), "--out", out],
                                          env={"OMP_NUM_THREADS": "1", "MXNET_CPU_WORKER_NTHREADS": "1",
                                               "PYTHONPATH": os.path.dirname(HERE)},
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                codes = tb.wait_all(procs, timeout=1800)
                if any(codes):
                    print(f"{name}: workers failed {codes}")
                    continue
                curves[name] = json.load(open(out))
                c = curves[name]
                print(f"{name:<26} final acc {c[-1]['test_acc']:.4f}  total {c[-1]['time_s']:.1f} s", flush=True)
    except TestbedUnavailable as exc:
        print(f"skipped: {exc}")
        return
    rows = {}
    for name, c in curves.items():
        hit = next((r["time_s"] for r in c if r["test_acc"] >= args.target), None)
        rows[name] = {"final_acc": c[-1]["test_acc"], "best_acc": max(r["test_acc"] for r in c),
                      "time_to_target_s": hit, "total_s": c[-1]["time_s"], "wire_bytes": c[-1]["wire_bytes"]}
    base = rows.get("sync", {}).get("time_to_target_s")
    for r in rows.values():
        r["speedup_to_target_vs_sync"] = (base / r["time_to_target_s"]) if base and r["time_to_target_s"] else None
    write_json(os.path.join(HERE, "results", "cser_speedup.json"),
               {"benchmark": "cser_speedup", "date": time.strftime("%Y-%m-%d"), "hosts": args.hosts,
                "rate_mbit": args.rate_mbit, "target_acc": args.target, "epochs": args.epochs,
                "model": "MLP 64-1024-1024-10 (1.1M parameters) on digits, NAG lr 0.05, batch 32/worker",
                "results": rows, "curves": curves})
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, c in curves.items():
        ax.plot([r["time_s"] for r in c], [r["test_acc"] for r in c], "o-", label=name)
    ax.axhline(args.target, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("training time (s, evaluation excluded)")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{args.hosts} hosts at {args.rate_mbit:g} Mbit/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "results", "cser_speedup.png"), dpi=100)
    print(f"{'algorithm':<26}{'final acc':>10}{'to ' + str(args.target):>10}{'speedup':>9}")
    for name, r in rows.items():
        t = f"{r['time_to_target_s']:.1f}s" if r["time_to_target_s"] else "never"
        sp = f"{r['speedup_to_target_vs_sync']:.1f}x" if r["speedup_to_target_vs_sync"] else "-"
        print(f"{name:<26}{r['final_acc']:>10.4f}{t:>10}{sp:>9}")
    print("results: bench/results/cser_speedup.json")


if __name__ == "__main__":
    main()
