#!/usr/bin/env python
"""Dynamic SGD at small scale on real elastic Horovod jobs (loopback, Gloo): the digits MLP with
the per-worker batch fixed while the worker count follows 4 -> 2 -> 4, for three learning-rate
policies:

- fixed: 4 workers throughout (the reference);
- jump:  on every resize the rate jumps at once to the linearly scaled value (K = 1);
- ramp:  up linearly over K steps, down at once (ElasticRamp; docs/methods.md, "Dynamic SGD").

Final test accuracy over several seeds; JSON in bench/results/elastic.json and a plot of the
learning rate and the accuracy over training in bench/results/elastic.png.

    sudo-free, one machine:  .venv/bin/python bench/elastic.py [--seeds 3] [--ramp 20]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

FOUR = "localhost:2\n127.0.0.1:2\n"  # Horovod removes or adds the second host name's 2 slots
TWO = "localhost:2\n"


def run(variant, seed, args, tmp):
    out = os.path.join(tmp, f"{variant}-{seed}")
    os.makedirs(out)
    with open(os.path.join(out, "hosts.txt"), "w") as f:
        f.write(FOUR)
    disc = os.path.join(out, "discover.sh")
    with open(disc, "w") as f:
        f.write(f"#!/bin/sh\ncat {out}/hosts.txt\n")
    os.chmod(disc, 0o755)
    plan = [] if variant == "fixed" else [[args.shrink_at, TWO], [args.grow_at, FOUR]]
    env = dict(os.environ, OUT=out, PLAN=json.dumps(plan), LR=str(args.lr),
               RAMP=str(1 if variant == "jump" else args.ramp), EPOCHS=str(args.epochs),
               BATCH=str(args.batch), SEED=str(seed), REF_WORKERS="4", OMP_NUM_THREADS="1",
               MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO)
    cli = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
    t0 = time.time()
    p = subprocess.run([cli, "launch", "-np", "4", "--min-np", "2", "--max-np", "4",
                        "--host-discovery-script", disc, "--network-interface", "lo", "--",
                        sys.executable, os.path.join(HERE, "_elastic_worker.py")],
                       env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{variant} seed {seed} failed:\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
    with open(os.path.join(out, "result.json")) as f:
        res = json.load(f)
    res["wall_s"] = round(time.time() - t0, 1)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--ramp", type=int, default=20, help="K: ramp length in steps")
    ap.add_argument("--lr", type=float, default=0.2, help="rate for 4 workers x --batch")
    ap.add_argument("--batch", type=int, default=8, help="per worker")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--shrink-at", type=float, default=1.0, help="epoch at which 2 workers leave")
    ap.add_argument("--grow-at", type=float, default=2.5, help="epoch at which they come back")
    args = ap.parse_args()
    import numpy as np
    from gluon_suite.utils import write_json

    tmp = tempfile.mkdtemp(prefix="elastic-bench-")
    runs = {v: [] for v in ("fixed", "jump", "ramp")}
    for seed in range(args.seeds):
        for variant in runs:
            r = run(variant, seed, args, tmp)
            runs[variant].append(r)
            print(f"{variant:5s} seed {seed}: final accuracy {r['final_acc']:.4f} ({r['wall_s']} s)", flush=True)
    summary = {v: {"final_acc_mean": float(np.mean([r["final_acc"] for r in rs])),
                   "final_acc_std": float(np.std([r["final_acc"] for r in rs])),
                   "final_acc": [r["final_acc"] for r in rs]} for v, rs in runs.items()}
    f, j, r = (summary[v]["final_acc_mean"] for v in ("fixed", "jump", "ramp"))
    result = {"benchmark": "elastic", "date": time.strftime("%Y-%m-%d"), "config": vars(args),
              "schedule": f"4 workers -> 2 at epoch {args.shrink_at} -> 4 at epoch {args.grow_at}",
              "summary": summary, "ramp_minus_jump_points": 100 * (r - j),
              "ramp_minus_fixed_points": 100 * (r - f),
              "runs": {v: [{k: x[k] for k in ("final_acc", "accs", "wall_s")} for x in rs]
                       for v, rs in runs.items()}}
    write_json(os.path.join(HERE, "results", "elastic.json"), result)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for v, c in (("fixed", "tab:gray"), ("jump", "tab:red"), ("ramp", "tab:blue")):
        tr = np.array(runs[v][0]["trace"])
        a1.plot(tr[:, 0], tr[:, 2], color=c, label=v)
        accs = np.array([[a[0] for a in x["accs"]] for x in runs[v]], dtype=float)
        vals = np.array([[a[1] for a in x["accs"]] for x in runs[v]])
        a2.plot(accs[0], 100 * vals.mean(axis=0), "o-", color=c, label=f"{v} (mean of {args.seeds})")
    for x in (args.shrink_at, args.grow_at):
        a1.axvline(x, ls=":", color="k")
    a1.set_xlabel("epoch")
    a1.set_ylabel("learning rate")
    a1.set_title("4 -> 2 -> 4 workers, per-worker batch fixed")
    a1.legend()
    a2.set_xlabel("epoch")
    a2.set_ylabel("test accuracy (%)")
    a2.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "results", "elastic.png"), dpi=110)

    print(f"\n{'policy':8s} {'final acc (mean)':>17s} {'std':>7s}   per seed")
    for v, s in summary.items():
        print(f"{v:8s} {100 * s['final_acc_mean']:16.2f}% {100 * s['final_acc_std']:6.2f}   "
              + " ".join(f"{100 * a:.2f}" for a in s["final_acc"]))
    print(f"ramp - jump: {100 * (r - j):+.2f} points (target >= 0); ramp - fixed: {100 * (r - f):+.2f} points "
          "(target within 0.5)")
    print("results: bench/results/elastic.json, bench/results/elastic.png")


if __name__ == "__main__":
    main()
