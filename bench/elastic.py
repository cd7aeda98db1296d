#!/usr/bin/env python
"""Dynamic SGD at small scale on real elastic Horovod jobs (loopback, Gloo): the digits MLP with
the per-worker batch fixed while the worker count follows 4 -> 2 -> 4, for three learning-rate
policies:

- fixed: 4 workers throughout (the reference);
- jump:  on every resize the rate jumps at once to the linearly scaled value (K = 1);
- ramp:  up linearly over K steps, down at once (ElasticRamp; docs/methods.md, "Dynamic SGD").

The protocol bench/protocols/elastic.yaml fixes the plan (rate 0.2 for 4 workers x 8, 6 epochs,
2 workers leave at epoch 1.0 and come back at 2.5, K = 20), the seeds and the criteria (paired over
seeds); the runner writes the result, a table of final accuracies and a plot of the rate and the
accuracy over training under bench/results/elastic/. Each job is a ``gluon-suite launch`` of
bench/_elastic_worker.py on this machine (sudo-free).

    gluon-suite bench run elastic [--quick] [--seeds 0,1]
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

VARIANTS = ("fixed", "jump", "ramp")
FOUR = "localhost:2\n127.0.0.1:2\n"  # Horovod removes or adds the second host name's 2 slots
TWO = "localhost:2\n"


def plan(variant, p):
    """The worker's PLAN: ``[[epoch progress, hosts-file text], ...]``; none for fixed."""
    return [] if variant == "fixed" else [[p["shrink_at"], TWO], [p["grow_at"], FOUR]]


def job_env(variant, seed, p, out):
    """The environment of one job's workers (bench/_elastic_worker.py reads it)."""
    return dict(os.environ, OUT=out, PLAN=json.dumps(plan(variant, p)), LR=str(p["lr"]),
                RAMP=str(1 if variant == "jump" else p["ramp"]), EPOCHS=str(p["epochs"]),
                BATCH=str(p["batch"]), SEED=str(seed), REF_WORKERS="4", OMP_NUM_THREADS="1",
                MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO)


def run(variant, seed, p, tmp):
    """One elastic job; rank 0's result.json (final_acc, accs, trace, workers_at_end)."""
    out = os.path.join(tmp, f"{variant}-{seed}")
    os.makedirs(out)
    with open(os.path.join(out, "hosts.txt"), "w") as f:
        f.write(FOUR)
    disc = os.path.join(out, "discover.sh")
    with open(disc, "w") as f:
        f.write(f"#!/bin/sh\ncat {out}/hosts.txt\n")
    os.chmod(disc, 0o755)
    cli = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
    proc = subprocess.run([cli, "launch", "-np", "4", "--min-np", "2", "--max-np", "4",
                           "--host-discovery-script", disc, "--network-interface", "lo", "--",
                           sys.executable, os.path.join(HERE, "_elastic_worker.py")],
                          env=job_env(variant, seed, p, out), capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{variant} seed {seed} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    with open(os.path.join(out, "result.json")) as f:
        return json.load(f)


def plot(runs, p, path):
    """The first seed's rate over training and the mean test accuracy at every epoch end."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for v, c in (("fixed", "tab:gray"), ("jump", "tab:red"), ("ramp", "tab:blue")):
        if not runs.get(v):
            continue
        tr = np.array(runs[v][0]["trace"])
        a1.plot(tr[:, 0], tr[:, 2], color=c, label=v)
        epochs = [a[0] for a in runs[v][0]["accs"]]
        vals = np.array([[a[1] for a in x["accs"]] for x in runs[v]])
        a2.plot(epochs, 100 * vals.mean(axis=0), "o-", color=c, label=f"{v} (mean of {len(runs[v])})")
    for x in (p["shrink_at"], p["grow_at"]):
        a1.axvline(x, ls=":", color="k")
    a1.set_xlabel("epoch")
    a1.set_ylabel("learning rate")
    a1.set_title("4 -> 2 -> 4 workers, per-worker batch fixed (first seed)")
    a1.legend()
    a2.set_xlabel("epoch")
    a2.set_ylabel("test accuracy (%)")
    a2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def evidence(ctx):
    """The protocol bench/protocols/elastic.yaml: one elastic job per (seed, policy) through
    ctx.measure, a table of final accuracies and the plot."""
    import numpy as np
    p = ctx.params
    runs = {v: [] for v in ctx.arms}
    for seed, variant in ctx.progress([(s, v) for s in ctx.seeds for v in ctx.arms], desc="elastic jobs"):
        def job():
            r = run(variant, seed, p, ctx.workdir)
            return {"final_acc": r["final_acc"], "accs": r["accs"], "workers_at_end": r["workers_at_end"],
                    "trace": r["trace"]}
        runs[variant].append(ctx.measure(variant, seed, job))
    rows = []
    for v, rs in runs.items():
        accs = [100 * r["final_acc"] for r in rs]
        sd = f" ± {np.std(accs, ddof=1):.2f}" if len(accs) > 1 else ""
        rows.append([v, f"{np.mean(accs):.2f}{sd}", " ".join(f"{a:.2f}" for a in accs)])
    ctx.table("final_accuracy", ["policy", "final test accuracy (%), mean ± sd", "per seed"], rows,
              caption=f"Seeds {', '.join(map(str, ctx.seeds))}; one test image is {100 / 359:.2f} points.")
    ctx.note("schedule", f"4 workers -> 2 at epoch {p['shrink_at']} -> 4 at epoch {p['grow_at']}"
                         f" (fixed: 4 throughout), {p['epochs']} epochs")
    plot(runs, p, ctx.figure(".png"))


if __name__ == "__main__":
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "elastic", *sys.argv[1:]]
    entry()
