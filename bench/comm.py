#!/usr/bin/env python
"""Communication benchmark of the distributed layer.

1. Per algorithm x compressor, on 2 Horovod workers and a 10M-parameter MLP: wire bytes per step
   (from the communicator's counters), step time, and both as ratios against ``sync``.
2. Single worker: DistributedTrainer (sync) step time vs plain ``gluon.Trainer``.
3. Allreduce throughput of our communicator path vs raw ``hvd.allreduce_`` on a 40 MB tensor.

    .venv/bin/python bench/comm.py            # launches the 2-worker part with horovodrun itself

Writes bench/results/comm.json and prints a table. Times are medians over the measured steps.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results", "comm.json")

CONFIGS = [
    ("sync", dict(algorithm="sync")),
    ("sync+fp16", dict(algorithm="sync", compressor="fp16")),
    ("ef+topk32", dict(algorithm="ef", compressor="topk", ratio=32)),
    ("ef+sign", dict(algorithm="ef", compressor="sign")),
    ("local H=8", dict(algorithm="local", period=8)),
    ("cser grbs 32/H4", dict(algorithm="cser", compressor="grbs", ratio=32, period=4)),
    ("cser grbs 256/H16", dict(algorithm="cser", compressor="grbs", ratio=256, period=16)),
    ("cser-pl grbs 16/H4", dict(algorithm="cser", compressor="zero", compressor2="grbs", ratio2=16, period=4)),
]


def mlp():
    from mxnet import gluon
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(2048, activation="relu", in_units=784),
            gluon.nn.Dense(2048, activation="relu", in_units=2048),
            gluon.nn.Dense(2048, activation="relu", in_units=2048),
            gluon.nn.Dense(10, in_units=2048))
    return net


def time_steps(net, trainer, steps, warmup, batch=32, seed=0):
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    rs = np.random.RandomState(seed)
    x = mx.nd.array(rs.normal(size=(batch, 784)))
    y = mx.nd.array(rs.randint(0, 10, size=batch))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    times = []
    for s in range(warmup + steps):
        mx.nd.waitall()
        t0 = time.perf_counter()
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        mx.nd.waitall()
        if s >= warmup:
            times.append(time.perf_counter() - t0)
    return float(np.median(times)) if times else float("nan")


def worker(args):
    """The 2-worker part (runs under horovodrun)."""
    import mxnet as mx
    import numpy as np
    import horovod.mxnet as hvd
    from gluon_suite.distributed import DistributedTrainer, get_communicator

    comm = get_communicator()
    out = {"workers": comm.size, "algorithms": {}, "allreduce": {}}
    nparams = None
    for label, cfg in CONFIGS:
        mx.random.seed(0)
        net = mlp()
        net.initialize(mx.init.Xavier())
        nparams = sum(p.data().size for p in net.collect_params().values())
        tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9},
                                communicator=comm, **cfg)
        time_steps(net, tr, 0, 2)  # warm-up, then count bytes over the measured steps only
        comm.stats.reset()
        t = time_steps(net, tr, args.steps, 0)
        out["algorithms"][label] = {"config": cfg, "step_s": t,
                                    "wire_bytes_per_step": comm.stats.total_wire / args.steps,
                                    "payload_bytes_per_step": comm.stats.total_payload / args.steps}
    out["params"] = int(nparams)
    out["dense_bytes"] = int(nparams) * 4
    # allreduce throughput: our path vs raw Horovod, 40 MB, alternating
    x = mx.nd.ones((10 * 1024 * 1024,))
    ours, raw = [], []
    for rep in range(args.reps + 1):
        for fn, acc in ((lambda: comm.allreduce_(x, average=True, name="bench.ours"), ours),
                        (lambda: hvd.allreduce_(x, op=hvd.Average, name="bench.raw"), raw)):
            mx.nd.waitall()
            t0 = time.perf_counter()
            fn().wait_to_read()
            if rep:
                acc.append(time.perf_counter() - t0)
    mb = x.size * 4 / 1e6
    out["allreduce"] = {"megabytes": mb, "ours_s": float(np.median(ours)), "raw_s": float(np.median(raw)),
                        "ours_MBps": mb / float(np.median(ours)), "raw_MBps": mb / float(np.median(raw))}
    if comm.rank == 0:
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump(out, f)


def single(args):
    """Single worker: DistributedTrainer (sync) vs gluon.Trainer, interleaved rounds."""
    import mxnet as mx
    import numpy as np
    from mxnet import gluon
    from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
    res = {"gluon": [], "ours": []}
    nets = {}
    for kind in ("gluon", "ours"):
        mx.random.seed(0)
        net = mlp()
        net.initialize(mx.init.Xavier())
        opt = {"learning_rate": 0.01, "momentum": 0.9}
        tr = gluon.Trainer(net.collect_params(), "sgd", opt) if kind == "gluon" else \
            DistributedTrainer(net.collect_params(), "sgd", opt, communicator=LocalCommunicator())
        nets[kind] = (net, tr)
        time_steps(net, tr, 0, 3)
    for _ in range(args.rounds):
        for kind in ("gluon", "ours"):
            res[kind].append(time_steps(*nets[kind], args.steps, 0))
    g, o = float(np.median(res["gluon"])), float(np.median(res["ours"]))
    return {"gluon_trainer_step_s": g, "distributed_trainer_step_s": o, "ratio": o / g}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)

    single_res = single(args)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "w.json")
        env = dict(os.environ, BENCH_OUT=out, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1")
        hvdrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
        subprocess.run([hvdrun, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.abspath(__file__), "--worker", "--steps", str(args.steps),
                        "--reps", str(args.reps)], env=env, check=True)
        with open(out) as f:
            multi = json.load(f)
    base = multi["algorithms"]["sync"]
    for row in multi["algorithms"].values():
        row["bytes_vs_sync"] = row["wire_bytes_per_step"] / base["wire_bytes_per_step"]
        row["time_vs_sync"] = row["step_s"] / base["step_s"]
    result = {"benchmark": "comm", "date": time.strftime("%Y-%m-%d"), "cpu_count": os.cpu_count(),
              "model": f"MLP 784-2048-2048-2048-10 ({multi['params'] / 1e6:.1f}M parameters), batch 32/worker",
              "two_workers": multi, "single_worker": single_res}
    sys.path.insert(0, os.path.dirname(HERE))
    from gluon_suite.utils import write_json
    write_json(RESULTS, result)

    print(f"\n{result['model']}, 2 workers on loopback ({os.cpu_count()} cores)")
    print(f"{'configuration':<22}{'wire MB/step':>14}{'x sync bytes':>14}{'step ms':>10}{'x sync time':>13}")
    for label, row in multi["algorithms"].items():
        print(f"{label:<22}{row['wire_bytes_per_step'] / 1e6:>14.3f}{row['bytes_vs_sync']:>14.4f}"
              f"{row['step_s'] * 1e3:>10.1f}{row['time_vs_sync']:>13.2f}")
    s = single_res
    print(f"\nsingle worker: DistributedTrainer {s['distributed_trainer_step_s'] * 1e3:.1f} ms vs "
          f"gluon.Trainer {s['gluon_trainer_step_s'] * 1e3:.1f} ms per step: {s['ratio']:.3f}x (target <= 1.05x)")
    a = multi["allreduce"]
    print(f"allreduce 40 MB: ours {a['ours_MBps']:.0f} MB/s vs raw hvd {a['raw_MBps']:.0f} MB/s: "
          f"{a['ours_MBps'] / a['raw_MBps']:.3f}x (target >= 0.9x)")
    print(f"results: {os.path.relpath(RESULTS)}")


if __name__ == "__main__":
    main()
