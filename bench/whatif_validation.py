#!/usr/bin/env python
"""Predicted vs measured scaling factor on the bandwidth-limited namespace testbed (needs root).

Two protocols run this bench (``params.regime``):

``whatif_validation`` (regime comm, bench/protocols/whatif_validation.yaml): for 2 and 4 hosts at
50, 200 and 1000 Mbit/s, Horovod workers (one per namespace) train a 10M-parameter MLP with
synchronous SGD; each step is timed in three parts (compute, gradient allreduce, update). The
measured scaling factor is compute / step; the what-if model predicts it from the measured compute
times, the gradient sizes, the link bandwidth measured with a plain socket on the same testbed, and
one fused allreduce after backward (no overlap). Almost purely communication-bound: scaling factors
0.01-0.3. A repeat ("seed") is one sweep over every point.

``whatif_balanced`` (regime balanced, bench/protocols/whatif_balanced.yaml): a CNN with real
compute (1.7M parameters, most of them in the classifier, whose gradients backward produces
first), 1 MB buckets, and link rates chosen so that communication and compute are of the same size
(scaling factors 0.3-0.95). Each worker alternates two kinds of steps: profiled steps (forward,
backward with each gradient's measured ready time, allreduce and update timed apart) and plain
steps (forward, backward and ``trainer.step`` back to back, so the engine overlaps the buckets'
allreduces with the rest of backward). Measured scaling factor = profiled compute / plain step.
The prediction uses the profiled times, each bucket's measured ready time (its last gradient's),
the socket bandwidth, and the CPU cost of communication: the process's CPU time during the profiled
allreduce per byte sent (the testbed's hosts share this machine's cores, so a transfer that
overlaps backward takes CPU from it), and gamma, the allreduce's local time per byte (copies,
reductions, socket calls), measured once per host count apart from the points: the same buckets
allreduced alone with the links at 20 Gbit/s, minus the wire time at the socket bandwidth there.
The predictions without gamma, and without both costs, are reported beside it. Run with MXNet's
bulk execution on (its default: backward runs in bulk segments) and off
(``MXNET_EXEC_BULK_EXEC_TRAIN=0``: gradients ready layer by layer). A repeat ("seed") is one job
per point and bulk setting, each point on a fresh testbed.

    sudo .venv/bin/gluon-suite bench run whatif_validation [--quick]
    sudo .venv/bin/gluon-suite bench run whatif_balanced [--quick]

``--worker``, ``--balanced-worker`` and ``--allreduce-worker`` are the roles of the Horovod
processes the bench starts on the testbed.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
LATENCY = 100e-6       # per message, for the model
FREE_MBIT = 20000.0    # the calibration's link rate: above what the testbed's hosts can push

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


def profiled_step(net, loss_fn, x, y, tr, batch, params=None):
    """One step timed in parts (forward, backward, gradient allreduce, update), each ended by a
    ``waitall``; with ``params`` (backward order) also each gradient's measured ready time."""
    import mxnet as mx
    from mxnet import autograd
    from gluon_suite.whatif.profiler import grad_ready_times
    mx.nd.waitall()
    t0 = time.perf_counter()
    with autograd.record():
        out = net(x)
        out.wait_to_read()
        t_f = time.perf_counter()
        loss = loss_fn(out, y)
    loss.backward()
    ready = grad_ready_times(params, t_f) if params is not None else None
    mx.nd.waitall()
    t1, c1 = time.perf_counter(), time.process_time()
    tr.allreduce_grads()
    mx.nd.waitall()
    t2, c2 = time.perf_counter(), time.process_time()
    tr.update(batch)
    mx.nd.waitall()
    t3 = time.perf_counter()
    row = {"forward": t_f - t0, "backward": t1 - t_f, "comm": t2 - t1, "opt": t3 - t2, "step": t3 - t0,
           "comm_cpu": c2 - c1}    # CPU seconds of all this process's threads during the allreduce
    return row if ready is None else {**row, "ready": ready}


def worker():
    import mxnet as mx
    import numpy as np
    from mxnet import gluon
    from gluon_suite.distributed import DistributedTrainer, get_communicator
    comm = get_communicator()
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(2048, activation="relu", in_units=784), gluon.nn.Dense(2048, activation="relu", in_units=2048),
            gluon.nn.Dense(2048, activation="relu", in_units=2048), gluon.nn.Dense(10, in_units=2048))
    net.initialize(mx.init.Xavier())
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9}, communicator=comm)
    x, y = mx.nd.random.normal(shape=(32, 784)), mx.nd.zeros(32)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rows = [profiled_step(net, loss_fn, x, y, tr, 32) for _ in range(int(os.environ.get("STEPS", "3")) + 1)][1:]
    med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    sizes = [p.data().size * 4 for p in net.collect_params().values() if p.grad_req != "null"][::-1]
    if comm.rank == 0:
        with open(os.environ["OUT"], "w") as f:
            json.dump({**med, "grad_bytes": sizes, "size": comm.size}, f)


def cnn():
    from mxnet import gluon
    net = gluon.nn.HybridSequential()
    conv = lambda c, i: gluon.nn.Conv2D(c, 3, padding=1, in_channels=i, activation="relu")  # noqa: E731
    net.add(conv(32, 3), conv(32, 32), gluon.nn.MaxPool2D(), conv(64, 32), conv(64, 64), gluon.nn.MaxPool2D(),
            conv(128, 64), gluon.nn.MaxPool2D(), gluon.nn.Flatten(),
            gluon.nn.Dense(768, activation="relu", in_units=2048), gluon.nn.Dense(10, in_units=768))
    return net


def balanced_setup():
    """The balanced regime's CNN, batch, trainer (1 MB buckets by default) and loss on this worker."""
    import mxnet as mx
    import numpy as np
    from mxnet import gluon
    from gluon_suite.distributed import DistributedTrainer, get_communicator
    comm = get_communicator()
    mx.random.seed(0)
    net = cnn()
    net.initialize(mx.init.Xavier())
    batch = int(os.environ.get("BATCH", "16"))
    x = mx.nd.random.uniform(shape=(batch, 3, 32, 32))
    y = mx.nd.array(np.arange(batch) % 10)
    net(x[:1])
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9},
                            communicator=comm, bucket_mb=float(os.environ.get("BUCKET_MB", "1")))
    return comm, net, batch, x, y, params, tr, gluon.loss.SoftmaxCrossEntropyLoss()


def allreduce_worker():
    """The allreduce alone: the balanced regime's gradient buckets, allreduced ``STEPS`` times after
    two warm-up rounds, each round ended by a ``waitall``; rank 0 writes the median time, the
    buckets' sizes and the process's CPU time per round."""
    import mxnet as mx
    import numpy as np
    from mxnet import autograd
    comm, net, batch, x, y, params, tr, loss_fn = balanced_setup()
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    times, cpu = [], []
    for k in range(2 + int(os.environ.get("STEPS", "20"))):
        mx.nd.waitall()
        t0, c0 = time.perf_counter(), time.process_time()
        tr.allreduce_grads()
        mx.nd.waitall()
        if k >= 2:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    sizes = [sum(int(np.prod(p.shape)) * 4 for _, p in b.members) for b in tr.algorithm.buckets]
    if comm.rank == 0:
        with open(os.environ["OUT"], "w") as f:
            json.dump({"allreduce_s": float(np.median(times)), "times": times, "comm_cpu": float(np.median(cpu)),
                       "bucket_bytes": sizes, "size": comm.size}, f)


def balanced_worker():
    import mxnet as mx
    import numpy as np
    from mxnet import autograd
    comm, net, batch, x, y, params, tr, loss_fn = balanced_setup()

    def plain():
        mx.nd.waitall()
        t0 = time.perf_counter()
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        tr.step(batch)
        mx.nd.waitall()
        return time.perf_counter() - t0

    prof, steps = [], []
    for k in range(2 + int(os.environ.get("STEPS", "6"))):
        p, s = profiled_step(net, loss_fn, x, y, tr, batch, params[::-1]), plain()
        if k >= 2:           # two warm-up pairs
            prof.append(p)
            steps.append(s)
    med = {k: float(np.median([r[k] for r in prof])) for k in ("forward", "backward", "comm", "opt", "comm_cpu")}
    ready = np.median(np.array([r["ready"] for r in prof]), axis=0)       # backward order
    where = {id(p): k for k, p in enumerate(params[::-1])}
    buckets = [{"bytes": sum(int(np.prod(p.shape)) * 4 for _, p in b.members),
                "ready": float(max(ready[where[id(p)]] for _, p in b.members))} for b in tr.algorithm.buckets]
    if comm.rank == 0:
        with open(os.environ["OUT"], "w") as f:
            json.dump({**med, "step": float(np.median(steps)), "steps": steps, "buckets": buckets,
                       "grad_ready": ready.tolist(), "size": comm.size,
                       "bulk": os.environ.get("MXNET_EXEC_BULK_EXEC_TRAIN", "default")}, f)


def socket_bandwidth(tb, rate):
    """Bytes/s a plain TCP socket gets from host 0 to host 1 on this testbed."""
    srv = tb.popen(1, [sys.executable, "-c", SOCK_SERVER, tb.address(1)])
    time.sleep(0.3)
    mb = max(4, int(rate / 8 * 1.5))  # about 1.5 s of traffic
    c = tb.run(0, [sys.executable, "-c", SOCK_CLIENT, tb.address(1), str(mb)], capture_output=True, text=True,
               timeout=120)
    srv.wait(timeout=30)
    return float(c.stdout.strip())


def run_job(tb, mode, env):
    """One Horovod job on the testbed; rank 0's measurements, or None if a worker failed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        procs = tb.launch_horovod([sys.executable, os.path.abspath(__file__), mode],
                                  env={"OUT": out, "OMP_NUM_THREADS": "1", "MXNET_CPU_WORKER_NTHREADS": "1",
                                       "PYTHONPATH": os.path.dirname(HERE), **env},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        codes = tb.wait_all(procs, timeout=600)
        if any(codes):
            print(f"{tb.hosts} hosts at {tb.rate:g} Mbit/s: workers failed {codes}", flush=True)
            return None
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def comm_cpu_per_byte(m, hosts):
    """CPU seconds per byte sent, from the profiled steps' allreduce: the process's CPU time during
    it over the bytes a worker sends in a ring allreduce of every bucket, 2(n-1)/n of them."""
    sent = 2.0 * (hosts - 1) / hosts * sum(b["bytes"] for b in m["buckets"])
    return m["comm_cpu"] / sent if sent else 0.0


def predict_balanced(m, hosts, bw, comm_cpu=True, gamma=0.0):
    """The what-if prediction for one balanced-regime job: one tensor per bucket (the trainer's
    buckets, each ready when its last gradient is), no further fusion; with ``comm_cpu`` the
    transfers' measured CPU cost is charged to the backward they overlap (every testbed host
    shares this machine's cores, so none has a spare core); ``gamma``: the allreduce's local time
    per bucket byte, measured apart with the links unthrottled (``allreduce_local_cost``)."""
    from gluon_suite.whatif import StepProfile, predict
    prof = StepProfile(m["forward"], m["backward"], [b["bytes"] for b in m["buckets"]], m["opt"],
                       ready=[b["ready"] for b in m["buckets"]],
                       comm_cpu_s_per_byte=comm_cpu_per_byte(m, hosts) if comm_cpu else 0.0,
                       allreduce_local_s_per_byte=gamma)
    return predict(prof, hosts, bw, latency=LATENCY, fusion_bytes=1)


def gamma_from(allreduce_s, bucket_bytes, hosts, bw):
    """(gamma, wire seconds): the allreduce's time beyond the ring's wire and latency time at
    socket bandwidth ``bw`` (bytes/s), per bucket byte, never below 0."""
    from gluon_suite.whatif import ring_allreduce_s
    wire = sum(ring_allreduce_s(s, hosts, bw, LATENCY) for s in bucket_bytes)
    return max(0.0, (allreduce_s - wire) / sum(bucket_bytes)), wire


def allreduce_local_cost(hosts, steps, repeats):
    """gamma for ``hosts`` workers, measured apart from the validation points: the balanced regime's
    buckets allreduced alone on the testbed with its links at FREE_MBIT (faster than these hosts
    can push), minus the ring's wire and latency time at the socket bandwidth measured there, per
    byte of the buckets; the median over ``repeats`` jobs."""
    import numpy as np
    from gluon_suite.whatif.testbed import Testbed
    with Testbed(hosts, FREE_MBIT) as tb:
        bw = socket_bandwidth(tb, FREE_MBIT)
        jobs = [run_job(tb, "--allreduce-worker", {"STEPS": str(steps)}) for _ in range(repeats)]
    jobs = [j for j in jobs if j is not None]
    if not jobs:
        from gluon_suite.utils.errors import GluonSuiteError
        raise GluonSuiteError(f"the allreduce calibration failed at {hosts} hosts")
    sizes = jobs[0]["bucket_bytes"]
    t = float(np.median([j["allreduce_s"] for j in jobs]))
    gamma, wire = gamma_from(t, sizes, hosts, bw)
    print(f"{hosts} hosts, links at {FREE_MBIT:g} Mbit/s: socket {bw / 1e6:.0f} MB/s, allreduce of "
          f"{sum(sizes) / 1e6:.2f} MB in {len(sizes)} buckets {t * 1e3:.1f} ms (wire {wire * 1e3:.1f} ms): "
          f"gamma {gamma * 1e9:.2f} ns/B", flush=True)
    return {"hosts": hosts, "rate_mbit": FREE_MBIT, "socket_MBps": bw / 1e6, "allreduce_s": t,
            "allreduce_s_jobs": [j["allreduce_s"] for j in jobs], "wire_s": wire, "bucket_bytes": sizes,
            "gamma_ns_per_byte": gamma * 1e9}


def parse_points(points):
    """``["2@50", "4@1000"]`` (hosts@Mbit/s) as ``[(2, 50.0), (4, 1000.0)]``."""
    return [(int(h), float(r)) for h, r in (str(p).split("@") for p in points)]


def comm_point(hosts, rate, steps):
    """One point of the communication-bound regime: a testbed of ``hosts`` at ``rate`` Mbit/s, its
    socket bandwidth, one MLP job of ``steps`` measured steps; the measured and predicted scaling
    factors (None if a worker failed)."""
    from gluon_suite.whatif import StepProfile, predict
    from gluon_suite.whatif.testbed import Testbed
    with Testbed(hosts, rate) as tb:
        bw = socket_bandwidth(tb, rate)
        m = run_job(tb, "--worker", {"STEPS": str(steps)})
    if m is None:
        return None
    prof = StepProfile(m["forward"], m["backward"], m["grad_bytes"], m["opt"],
                       ready=[m["backward"]] * len(m["grad_bytes"]))
    pred = predict(prof, hosts, bw, latency=LATENCY, fusion_bytes=1 << 62)
    measured_sf = (m["forward"] + m["backward"] + m["opt"]) / m["step"]
    row = {"hosts": hosts, "rate_mbit": rate, "socket_MBps": bw / 1e6, "step_s": m["step"], "comm_s": m["comm"],
           "measured_sf": measured_sf, "predicted_sf": pred["scaling_factor"], "predicted_step_s": pred["step_s"],
           "rel_error": abs(pred["scaling_factor"] - measured_sf) / measured_sf,
           "measured_utilisation": 2 * (hosts - 1) / hosts * sum(m["grad_bytes"]) / m["comm"] / (rate * 1e6 / 8)}
    print(f"{hosts} hosts {rate:>5g} Mbit/s: socket {bw / 1e6:6.1f} MB/s  step {m['step']:.3f} s "
          f"(comm {m['comm']:.3f})  SF measured {measured_sf:.3f} predicted {pred['scaling_factor']:.3f}  "
          f"error {row['rel_error'] * 100:.1f}%  link utilisation {row['measured_utilisation']:.2f}", flush=True)
    return row


def comm_sweep(p):
    """One repeat of the communication-bound regime: every point of ``p["points"]``; the worst
    relative error (None if a point failed) and the per-point values."""
    rows, failed = [], []
    for hosts, rate in parse_points(p["points"]):
        r = comm_point(hosts, rate, int(p["steps"]))
        if r is None:
            failed.append(f"{hosts}@{rate:g}")
        else:
            rows.append(r)
    return {"max_rel_error": max(r["rel_error"] for r in rows) if rows and not failed else None,
            "failed_points": failed, "points": rows}


def balanced_job(tb, hosts, bw, bulk, p, gamma):
    """One balanced-regime job on testbed ``tb`` with MXNet bulk execution ``bulk``; measured and
    predicted scaling factors (with gamma and kappa, without gamma, with free communication)."""
    env = {"STEPS": str(p["steps"]), "BATCH": str(p["batch"]), "BUCKET_MB": str(p["bucket_mb"])}
    if bulk == "off":
        env["MXNET_EXEC_BULK_EXEC_TRAIN"] = "0"
    m = run_job(tb, "--balanced-worker", env)
    if m is None:
        return None
    pred = predict_balanced(m, hosts, bw, gamma=gamma)
    nog = predict_balanced(m, hosts, bw)
    free = predict_balanced(m, hosts, bw, comm_cpu=False)
    compute = m["forward"] + m["backward"] + m["opt"]
    sf = compute / m["step"]
    lo, hi = p["range"]
    row = {"hosts": hosts, "rate_mbit": tb.rate, "bulk": bulk, "socket_MBps": bw / 1e6, "compute_s": compute,
           "step_s": m["step"], "comm_cpu_ns_per_byte": comm_cpu_per_byte(m, hosts) * 1e9,
           "gamma_ns_per_byte": gamma * 1e9, "measured_sf": sf, "predicted_sf": pred["scaling_factor"],
           "predicted_step_s": pred["step_s"], "predicted_sf_without_gamma": nog["scaling_factor"],
           "predicted_sf_free_comm": free["scaling_factor"], "in_range": lo <= sf <= hi,
           "buckets": m["buckets"]}
    for k, key in (("rel_error", "predicted_sf"), ("rel_error_without_gamma", "predicted_sf_without_gamma"),
                   ("rel_error_free_comm", "predicted_sf_free_comm")):
        row[k] = abs(row[key] - sf) / sf
    print(f"{hosts} hosts {tb.rate:>6g} Mbit/s bulk {bulk:>7}: socket {bw / 1e6:6.1f} MB/s  compute {compute:.3f} s  "
          f"step {m['step']:.3f} s  SF measured {sf:.3f} predicted {row['predicted_sf']:.3f}  error "
          f"{row['rel_error'] * 100:.1f}%  (kappa {row['comm_cpu_ns_per_byte']:.2f} ns/B; without gamma "
          f"{row['rel_error_without_gamma'] * 100:.1f}%, free comm {row['rel_error_free_comm'] * 100:.1f}%)", flush=True)
    return row


def _worst(rows, key="rel_error", **match):
    xs = [r[key] for r in rows if r["in_range"] and all(r[k] == v for k, v in match.items())]
    return max(xs) if xs else None


def balanced_sweep(p, calib):
    """One repeat of the balanced regime: one job per (point, bulk setting), each point on a fresh
    testbed with its socket bandwidth measured; the worst relative error among the jobs whose
    measured scaling factor is in ``p["range"]`` (overall, per bulk setting, and without gamma)."""
    from gluon_suite.whatif.testbed import Testbed
    rows, failed = [], []
    for hosts, rate in parse_points(p["points"]):
        gamma = calib[hosts]["gamma_ns_per_byte"] * 1e-9
        with Testbed(hosts, rate) as tb:
            bw = socket_bandwidth(tb, rate)
            for bulk in p["bulk"]:
                r = balanced_job(tb, hosts, bw, bulk, p, gamma)
                if r is None:
                    failed.append(f"{hosts}@{rate:g} bulk {bulk}")
                else:
                    rows.append(r)
    out = {"points_in_range": sum(r["in_range"] for r in rows), "jobs": len(rows), "failed_points": failed,
           "worst_error_in_range": None if failed else _worst(rows),
           "worst_error_in_range_without_gamma": None if failed else _worst(rows, "rel_error_without_gamma"),
           "worst_error_in_range_free_comm": None if failed else _worst(rows, "rel_error_free_comm"),
           "points": rows}
    for bulk in p["bulk"]:
        out[f"worst_error_in_range_bulk_{bulk}"] = None if failed else _worst(rows, bulk=bulk)
    return out


def _ms(xs, fmt="{:.3f}"):
    from seedstats import mean_std
    s = mean_std(xs)
    return fmt.format(s["mean"]) + (" ± " + fmt.format(s["std"]) if len(xs) > 1 else "")


def _pct(x):
    return "n/a" if x is None else f"{x * 100:.1f}%"


def _by_point(sweeps, keys):
    """The per-point rows of every repeat, grouped by ``keys`` in the order of the first repeat."""
    groups = {}
    for sw in sweeps:
        for r in sw["points"]:
            groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    return groups


def evidence_comm(ctx):
    """whatif_validation: the communication-bound regime, one sweep of every point per repeat
    ("seed"); the criterion is on each sweep's worst prediction error."""
    p = ctx.params
    sweeps = []
    for seed in ctx.progress(ctx.seeds, desc="whatif_validation sweeps"):
        sweeps.append(ctx.measure("whatif", seed, lambda: comm_sweep(p)))
    rows = []
    for (hosts, rate), rs in _by_point(sweeps, ("hosts", "rate_mbit")).items():
        e = [r["rel_error"] for r in rs]
        rows.append([str(hosts), f"{rate:g} Mbit/s", _ms([r["measured_sf"] for r in rs]),
                     _ms([r["predicted_sf"] for r in rs]), f"{_pct(sum(e) / len(e))} (worst {_pct(max(e))})",
                     _ms([r["measured_utilisation"] for r in rs], "{:.2f}"), str(len(rs))])
    ctx.table("points", ["hosts", "link", "measured SF", "predicted SF", "error (mean over repeats)",
                         "link utilisation", "repeats"], rows,
              caption="mean ± sample std over the repeats; error: |predicted - measured| / measured of each repeat")
    plot_comm(sweeps, ctx.figure(".png"))


def evidence_balanced(ctx):
    """whatif_balanced: gamma calibrated once per host count, then per repeat ("seed") one job per
    (point, bulk setting); the criteria are on each repeat's worst error among its in-range jobs."""
    p = ctx.params
    calib = {}
    for h in sorted({h for h, _ in parse_points(p["points"])}):
        c = allreduce_local_cost(h, int(p["calibration_steps"]), int(p["calibration_repeats"]))
        calib[h] = {k: v for k, v in c.items() if k != "bucket_bytes"}
        calib[h]["bucket_bytes"] = c["bucket_bytes"]
    ctx.note("allreduce_local_cost", list(calib.values()))
    ctx.table("gamma", ["hosts", "socket at 20 Gbit/s", "allreduce alone", "wire time", "gamma"],
              [[str(h), f"{c['socket_MBps']:.0f} MB/s",
                f"{c['allreduce_s'] * 1e3:.1f} ms for {sum(c['bucket_bytes']) / 1e6:.2f} MB",
                f"{c['wire_s'] * 1e3:.1f} ms", f"{c['gamma_ns_per_byte']:.2f} ns/B"] for h, c in calib.items()],
              caption=f"median over {p['calibration_repeats']} jobs of {p['calibration_steps']} allreduce rounds")
    sweeps = []
    for seed in ctx.progress(ctx.seeds, desc="whatif_balanced repeats"):
        sweeps.append(ctx.measure("whatif", seed, lambda: balanced_sweep(p, calib)))
    lo, hi = p["range"]
    rows = []
    for (hosts, rate, bulk), rs in _by_point(sweeps, ("hosts", "rate_mbit", "bulk")).items():
        ms = sum(r["measured_sf"] for r in rs) / len(rs)
        ps = sum(r["predicted_sf"] for r in rs) / len(rs)
        gs = sum(r["predicted_sf_without_gamma"] for r in rs) / len(rs)
        inr = [r for r in rs if r["in_range"]]
        rows.append([str(hosts), f"{rate:g} Mbit/s", bulk,
                     _ms([r["measured_sf"] for r in rs]) + ("" if lo <= ms <= hi else " (out)"),
                     _ms([r["predicted_sf"] for r in rs]), _pct(abs(ps - ms) / ms),
                     _pct(max(r["rel_error"] for r in inr)) if inr else "-", f"{len(inr)} of {len(rs)}",
                     _pct(abs(gs - ms) / ms), _ms([r["comm_cpu_ns_per_byte"] for r in rs], "{:.2f}")])
    ctx.table("points", ["hosts", "link", "MXNet bulk", "measured SF", "predicted SF", "error of the means",
                         "worst job error in range", "jobs in range", "error of the means without γ",
                         "κ (ns/B)"], rows,
              caption=f"mean ± sample std over the repeats (one job of {p['steps']} measured step pairs each); "
                      f"'(out)': the mean measured SF is outside [{lo}, {hi}]")
    ctx.table("repeats", ["repeat", "jobs in range", "worst error in range", "bulk default", "bulk off",
                          "without γ", "free communication"],
              [[str(seed), f"{sw['points_in_range']} of {sw['jobs']}", _pct(sw["worst_error_in_range"]),
                _pct(sw.get("worst_error_in_range_bulk_default")), _pct(sw.get("worst_error_in_range_bulk_off")),
                _pct(sw["worst_error_in_range_without_gamma"]), _pct(sw["worst_error_in_range_free_comm"])]
               for seed, sw in zip(ctx.seeds, sweeps)],
              caption=f"per repeat, the worst |predicted - measured| / measured among its jobs with a measured SF "
                      f"in [{lo}, {hi}]")
    plot_balanced(sweeps, (lo, hi), ctx.figure(".png"))


def plot_comm(sweeps, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = _by_point(sweeps, ("hosts", "rate_mbit"))
    for hosts, mk in ((2, "o"), (4, "s")):
        pts = sorted((rate, rs) for (h, rate), rs in groups.items() if h == hosts)
        if not pts:
            continue
        x = [rate for rate, _ in pts]
        ax.plot(x, [sum(r["measured_sf"] for r in rs) / len(rs) for _, rs in pts], mk + "-",
                label=f"{hosts} hosts measured")
        ax.plot(x, [sum(r["predicted_sf"] for r in rs) / len(rs) for _, rs in pts], mk + "--",
                label=f"{hosts} hosts predicted")
    ax.set_xscale("log")
    ax.set_xlabel("link rate (Mbit/s)")
    ax.set_ylabel("scaling factor (mean over repeats)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def plot_balanced(sweeps, rng, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 5))
    rows = [r for sw in sweeps for r in sw["points"]]
    for (hosts, bulk), mk in zip(sorted({(r["hosts"], r["bulk"]) for r in rows}), "osD^v<>"):
        rs = [r for r in rows if (r["hosts"], r["bulk"]) == (hosts, bulk)]
        ax.plot([r["measured_sf"] for r in rs], [r["predicted_sf"] for r in rs], mk, label=f"{hosts} hosts, bulk {bulk}")
    ax.plot([0, 1], [0, 1], "k-", lw=0.8)
    ax.fill_between([0, 1], [0, 0.9], [0, 1.1], color="grey", alpha=0.2, label="within 10%")
    ax.axvspan(rng[0], rng[1], color="tab:green", alpha=0.06)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("measured scaling factor (one job)")
    ax.set_ylabel("predicted scaling factor (its profile)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def evidence(ctx):
    """The protocols bench/protocols/whatif_validation.yaml (``params.regime`` comm) and
    whatif_balanced.yaml (balanced). The first SIGINT/SIGTERM stops the run: the job is killed,
    the testbed removed, no result written (exit 130 / 143)."""
    from gluon_suite.whatif.testbed import stop_on_signal
    with stop_on_signal():
        (evidence_balanced if ctx.params.get("regime") == "balanced" else evidence_comm)(ctx)


def main():
    if "--worker" in sys.argv:
        return worker()
    if "--balanced-worker" in sys.argv:
        return balanced_worker()
    if "--allreduce-worker" in sys.argv:
        return allreduce_worker()
    from gluon_suite.cli import entry
    args = sys.argv[1:]
    name = "whatif_validation"
    if args[:1] in (["whatif_validation"], ["whatif_balanced"]):
        name, args = args[0], args[1:]
    sys.argv = ["gluon-suite", "bench", "run", name, *args]
    return entry()


if __name__ == "__main__":
    main()
