#!/usr/bin/env python
"""Predicted vs measured scaling factor on the bandwidth-limited namespace testbed (needs root).

For 2 and 4 hosts at 50, 200 and 1000 Mbit/s: Horovod workers (one per namespace) train a 10M-
parameter MLP with synchronous SGD; each step is timed in three parts (compute, gradient
allreduce, update). The measured scaling factor is compute / step; the what-if model predicts it
from the measured compute times, the gradient sizes, the link bandwidth measured with a plain
socket on the same testbed, and the trainer's reduction schedule (one fused allreduce after
backward: no overlap). JSON and a plot in bench/results/.

    sudo .venv/bin/python bench/whatif_validation.py
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

SOCK_SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5598)); s.listen(1); c, _ = s.accept()
while c.recv(1 << 16): pass
"""
SOCK_CLIENT = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], 5598)); data = b"x" * (1 << 20); n = int(sys.argv[2])
t = time.perf_counter()
for _ in range(n): s.sendall(data)
s.shutdown(socket.SHUT_WR); s.recv(1); print(n * (1 << 20) / (time.perf_counter() - t))
"""


def worker():
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    from gluon_suite.distributed import DistributedTrainer, get_communicator
    comm = get_communicator()
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(2048, activation="relu", in_units=784), gluon.nn.Dense(2048, activation="relu", in_units=2048),
            gluon.nn.Dense(2048, activation="relu", in_units=2048), gluon.nn.Dense(10, in_units=2048))
    net.initialize(mx.init.Xavier())
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9}, communicator=comm)
    x, y = mx.nd.random.normal(shape=(32, 784)), mx.nd.zeros(32)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rows = []
    for step in range(int(os.environ.get("STEPS", "3")) + 1):
        mx.nd.waitall()
        t0 = time.perf_counter()
        with autograd.record():
            out = net(x)
            out.wait_to_read()
            t_f = time.perf_counter()
            loss = loss_fn(out, y)
        loss.backward()
        mx.nd.waitall()
        t1 = time.perf_counter()
        tr.allreduce_grads()
        mx.nd.waitall()
        t2 = time.perf_counter()
        tr.update(32)
        mx.nd.waitall()
        t3 = time.perf_counter()
        if step:
            rows.append({"forward": t_f - t0, "backward": t1 - t_f, "comm": t2 - t1, "opt": t3 - t2, "step": t3 - t0})
    med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    sizes = [p.data().size * 4 for p in net.collect_params().values() if p.grad_req != "null"][::-1]
    if comm.rank == 0:
        with open(os.environ["OUT"], "w") as f:
            json.dump({**med, "grad_bytes": sizes, "size": comm.size}, f)


def main():
    if "--worker" in sys.argv:
        return worker()
    from gluon_suite.whatif.testbed import Testbed, TestbedUnavailable
    from gluon_suite.whatif import StepProfile, predict
    from gluon_suite.utils import write_json
    results = []
    try:
        for hosts in (2, 4):
            for rate in (50, 200, 1000):
                with Testbed(hosts, rate) as tb, tempfile.TemporaryDirectory() as tmp:
                    srv = tb.popen(1, [sys.executable, "-c", SOCK_SERVER, tb.address(1)])
                    time.sleep(0.3)
                    mb = max(4, int(rate / 8 * 1.5))  # about 1.5 s of traffic
                    c = tb.run(0, [sys.executable, "-c", SOCK_CLIENT, tb.address(1), str(mb)],
                               capture_output=True, text=True, timeout=120)
                    srv.wait(timeout=30)
                    bw = float(c.stdout.strip())
                    out = os.path.join(tmp, "r.json")
                    procs = tb.launch_horovod([sys.executable, os.path.abspath(__file__), "--worker"],
                                              env={"OUT": out, "OMP_NUM_THREADS": "1", "MXNET_CPU_WORKER_NTHREADS": "1",
                                                   "STEPS": "3", "PYTHONPATH": os.path.dirname(HERE)},
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    codes = tb.wait_all(procs, timeout=600)
                    if any(codes):
                        print(f"{hosts} hosts at {rate} Mbit/s: workers failed {codes}")
                        continue
                    m = json.load(open(out))
                prof = StepProfile(m["forward"], m["backward"], m["grad_bytes"], m["opt"],
                                   ready=[m["backward"]] * len(m["grad_bytes"]))
                pred = predict(prof, hosts, bw, latency=100e-6, fusion_bytes=1 << 62)
                measured_sf = (m["forward"] + m["backward"] + m["opt"]) / m["step"]
                row = {"hosts": hosts, "rate_mbit": rate, "socket_MBps": bw / 1e6, "measured": m,
                       "measured_sf": measured_sf, "predicted_sf": pred["scaling_factor"],
                       "predicted_step_s": pred["step_s"],
                       "rel_error": abs(pred["scaling_factor"] - measured_sf) / measured_sf,
                       "measured_utilisation": 2 * (hosts - 1) / hosts * sum(m["grad_bytes"]) / m["comm"] / (rate * 1e6 / 8)}
                results.append(row)
                print(f"{hosts} hosts {rate:>5} Mbit/s: socket {bw / 1e6:6.1f} MB/s  step {m['step']:.3f} s "
                      f"(comm {m['comm']:.3f})  SF measured {measured_sf:.3f} predicted {pred['scaling_factor']:.3f}  "
                      f"error {row['rel_error'] * 100:.1f}%  link utilisation {row['measured_utilisation']:.2f}", flush=True)
    except TestbedUnavailable as exc:
        print(f"skipped: {exc}")
        return
    write_json(os.path.join(HERE, "results", "whatif_validation.json"),
               {"benchmark": "whatif_validation", "date": time.strftime("%Y-%m-%d"),
                "model": "MLP 784-2048-2048-2048-10 (10.0M parameters), batch 32, sync SGD",
                "max_rel_error": max(r["rel_error"] for r in results), "results": results})
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for hosts, mk in ((2, "o"), (4, "s")):
        rs = [r for r in results if r["hosts"] == hosts]
        ax.plot([r["rate_mbit"] for r in rs], [r["measured_sf"] for r in rs], mk + "-", label=f"{hosts} hosts measured")
        ax.plot([r["rate_mbit"] for r in rs], [r["predicted_sf"] for r in rs], mk + "--", label=f"{hosts} hosts predicted")
    ax.set_xscale("log")
    ax.set_xlabel("link rate (Mbit/s)")
    ax.set_ylabel("scaling factor")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "results", "whatif_validation.png"), dpi=100)
    print(f"max relative error {max(r['rel_error'] for r in results) * 100:.1f}%; results: bench/results/whatif_validation.json")


if __name__ == "__main__":
    main()
