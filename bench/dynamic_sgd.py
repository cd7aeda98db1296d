#!/usr/bin/env python
"""Dynamic SGD in the paper's regime, simulated in one process: elastic resizes 8 -> 32 -> 128 -> 16
workers on MNIST-5k with a small CNN and momentum SGD, for four learning-rate policies.

A simulated worker count W means a global batch of ``per_worker x W`` (per-worker batch fixed, 8);
one process computes the gradient of the whole global batch, which is exactly what synchronous SGD
over W workers computes (the CNN has no BatchNorm, so no statistic depends on how the batch is
split). The worker count follows the plan in *samples* (epochs of the 4,000 training images):
8 workers for 2 epochs, 32 for 3, 128 for 8, then 16 for 3 (16 epochs; a resize takes effect at
the first step that starts at or after its sample boundary).

Policies (eta_8 is the rate for the starting 8 workers, see below):

- fixed: eta_8 throughout, whatever the worker count (no scaling);
- jump:  eta_8 x W/8 from the first step after each resize (linear scaling at once; ElasticRamp, K = 1);
- ramp:  the suite's default (ElasticRamp, down="jump"; docs/methods.md, "Dynamic SGD"): on growth
         the target T is reached linearly over K steps from the rate eta_0 in force (the k-th step
         after the resize runs at eta_0 + (T - eta_0)·k/K, then T); on a shrink the rate drops to T
         at once;
- ramp2: the two-way ramp, kept as a labelled variant (ElasticRamp, down="ramp"; experimental):
         downwards over K steps too, so the smaller batch runs above its own target for K steps.

Hyperparameters, chosen once from the linear-scaling setup of Goyal et al. (2017, "Accurate,
Large Minibatch SGD") and not tuned: eta = 0.1 x B/256, so eta_8 = 0.025 for B = 64 (0.1 at 32
workers, 0.4 at 128, 0.05 at 16); momentum 0.9 (MXNet's SGD, which keeps the rate inside its
momentum buffer; no momentum compensation); weight decay 1e-4; a constant base rate (the resizes
are the subject, not a decay); K = 20 steps, twice the momentum horizon 1/(1 - 0.9) over which
Dynamic SGD says stale momentum acts (and the K of bench/elastic.py). Seeds 0..n-1: a seed fixes
the initial weights and the data order, identical for the three policies, so differences are paired.

    PYTHONPATH=. OMP_NUM_THREADS=1 MXNET_CPU_WORKER_NTHREADS=1 .venv/bin/python bench/dynamic_sgd.py --seeds 5

Writes bench/results/dynamic_sgd.json and bench/results/dynamic_sgd.png and prints a table.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

POLICIES = ("fixed", "jump", "ramp", "ramp2")
CONFIG = {
    "per_worker": 8,
    "workers": [8, 32, 128, 16],
    "phase_epochs": [2, 3, 8, 3],
    "lr_per_256": 0.1,        # Goyal et al.: eta = 0.1 x B / 256
    "momentum": 0.9,
    "wd": 1e-4,
    "ramp_steps": 20,         # K
    "window": 20,             # steps after a resize over which the loss spike and accuracy are read
    "eval_every": 2000,       # samples between test evaluations (for the curves)
    "channels": [8, 16],
    "pixel_mean": 0.1307, "pixel_std": 0.3081,   # MNIST's usual normalisation
}


def base_lr(cfg):
    """eta_8: the linearly scaled rate for the starting worker count, 0.1 x B/256."""
    return cfg["lr_per_256"] * cfg["per_worker"] * cfg["workers"][0] / 256


def plan(cfg, n_train):
    """The worker count of every step: a list ``W[s]`` for steps s = 1..S (``W[0]`` unused).

    Phase k runs from sample ``n_train x sum(phase_epochs[:k])``; each step takes a full global batch
    of ``per_worker x W`` samples, so a phase's last step may cross its boundary; the run ends at the
    first step boundary at or past the total."""
    bounds = np.cumsum([0] + [e * n_train for e in cfg["phase_epochs"]])
    counts, done = [None], 0
    while done < bounds[-1]:
        phase = int(np.searchsorted(bounds, done, side="right") - 1)
        counts.append(cfg["workers"][phase])
        done += cfg["per_worker"] * cfg["workers"][phase]
    return counts


def resize_steps(counts):
    """``[(t0, W_old, W_new), ...]``: the first step t0 run with the new count."""
    return [(s, counts[s - 1], counts[s]) for s in range(2, len(counts)) if counts[s] != counts[s - 1]]


def make_schedule(policy, cfg):
    """The schedule of a policy: an ElasticRamp over a constant base with reference batch the
    starting global batch; 'fixed' is never told of a resize, 'jump' has K = 1, 'ramp2' ramps down too."""
    from gluon_suite.optim import ElasticRamp
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    eta8, ref = base_lr(cfg), cfg["per_worker"] * cfg["workers"][0]
    return ElasticRamp(lambda t: eta8, ref_batch=ref, ramp_steps=1 if policy == "jump" else cfg["ramp_steps"],
                       global_batch=ref, down="ramp" if policy == "ramp2" else "jump")


def build_net(cfg):
    """Conv(5x5)-ReLU-MaxPool twice and a Dense layer; no BatchNorm (see the module docstring)."""
    from mxnet import gluon
    c1, c2 = cfg["channels"]
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(c1, 5, padding=2, activation="relu"), gluon.nn.MaxPool2D(2),
            gluon.nn.Conv2D(c2, 5, padding=2, activation="relu"), gluon.nn.MaxPool2D(2),
            gluon.nn.Dense(10))
    return net


def eval_steps(cfg, counts, n_train):
    """Steps after which the test accuracy is measured: every ``eval_every`` samples, just before
    each resize, ``window`` steps after it, and the last step."""
    out, done, nxt = set(), 0, cfg["eval_every"]
    for s in range(1, len(counts)):
        done += cfg["per_worker"] * counts[s]
        if done >= nxt:
            out.add(s)
            nxt += cfg["eval_every"] * math.ceil((done - nxt + 1) / cfg["eval_every"])
    for t0, _, _ in resize_steps(counts):
        out.update({t0 - 1, min(t0 + cfg["window"] - 1, len(counts) - 1)})
    out.add(len(counts) - 1)
    return sorted(out)


def simulate(policy, seed, cfg, data):
    """Train one run; ``data`` is ``(x_train, y_train, x_test, y_test)`` as NumPy arrays (NCHW in
    [0, 1], integer labels). Returns per-step ``workers``, ``batch``, ``lr`` (the rate the update
    used), ``loss`` (the batch's mean loss before the update, NaN after a divergence), the test
    accuracies ``evals`` ``[(step, samples, acc), ...]``, ``final_acc`` and ``diverged_at``."""
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    xtr, ytr, xte, yte = data
    norm = lambda x: (x - cfg["pixel_mean"]) / cfg["pixel_std"]  # noqa: E731
    xtr, xte = norm(xtr).astype(np.float32), nd.array(norm(xte))
    n = len(xtr)
    counts = plan(cfg, n)
    t0s = {t0: w for t0, _, w in resize_steps(counts)}
    evals_at = set(eval_steps(cfg, counts, n))

    mx.random.seed(seed)
    rng = np.random.RandomState(seed)
    net = build_net(cfg)
    # Gluon's default Xavier (uniform, fan average): He's init (gaussian, fan in, x2) gives this
    # BN-free net initial logits so large that the first phase never left loss 2.30
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True)
    sched = make_schedule(policy, cfg)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"lr_scheduler": sched, "momentum": cfg["momentum"],
                                                          "wd": cfg["wd"]})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def accuracy():
        pred = net(xte).argmax(axis=1).asnumpy()
        return float((pred == yte).mean())

    order, pos = rng.permutation(n), 0
    rec = {"workers": [], "batch": [], "lr": [], "loss": [], "evals": [], "diverged_at": None}
    done = 0
    for s in range(1, len(counts)):
        if s in t0s and policy != "fixed":
            # as distributed/elastic.py does on a reset: the next update is the first at the new batch
            sched.set_global_batch(cfg["per_worker"] * t0s[s], trainer.optimizer.num_update + 1)
        batch = cfg["per_worker"] * counts[s]
        idx = []
        while len(idx) < batch:  # the data stream crosses epochs; each epoch is a new permutation
            take = order[pos:pos + batch - len(idx)]
            idx.extend(take)
            pos += len(take)
            if pos == n:
                order, pos = rng.permutation(n), 0
        idx = np.asarray(idx)
        if rec["diverged_at"] is None:
            x, y = nd.array(xtr[idx]), nd.array(ytr[idx])
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(batch)
            value = float(loss.mean().asscalar())
            lr = sched.last_lr
            if not math.isfinite(value):
                rec["diverged_at"] = s
        else:  # a diverged run stays diverged: its accuracy is the NaN network's
            value, lr = float("nan"), sched(s)
        done += batch
        rec["workers"].append(counts[s])
        rec["batch"].append(batch)
        rec["lr"].append(lr)
        rec["loss"].append(value if rec["diverged_at"] is None else float("nan"))
        if s in evals_at:
            rec["evals"].append((s, done, accuracy()))
    rec["final_acc"] = rec["evals"][-1][2]
    return rec


def load_data():
    """MNIST-5k's fixed 4,000/1,000 split."""
    from gluon_suite.cv.data import load_mnist5k
    xtr, ytr = load_mnist5k("train")
    xte, yte = load_mnist5k("test")
    return xtr, ytr.astype(np.float32), xte, yte


def _ms(values):
    v = np.asarray(values, dtype=float)
    return {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
            "per_seed": [float(x) for x in v]}


def change_metrics(rec, cfg):
    """Per resize: the mean loss over the ``window`` steps before, the largest loss in the
    ``window`` steps from the first one at the new batch, and the test accuracy just before and
    ``window`` steps after."""
    counts = [None] + rec["workers"]
    acc = {s: a for s, _, a in rec["evals"]}
    out = []
    for t0, w_old, w_new in resize_steps(counts):
        w = cfg["window"]
        before = rec["loss"][max(0, t0 - 1 - w):t0 - 1]
        after = rec["loss"][t0 - 1:t0 - 1 + w]
        out.append({"change": f"{w_old}->{w_new}", "step": t0, "loss_before": float(np.mean(before)),
                    "max_loss_after": float(np.max(after)), "acc_before": acc[t0 - 1],
                    "acc_after": acc[min(t0 + w - 1, len(counts) - 1)]})
    return out


def verdict(a, b, name_a, name_b):
    """'<a> better than <b> by more than the spread', the reverse, or 'within noise', where the
    spread is the larger of the two sample standard deviations over seeds."""
    diff, spread = a["mean"] - b["mean"], max(a["std"], b["std"])
    if abs(diff) <= spread:
        word = "within noise"
    else:
        word = f"{name_a if diff > 0 else name_b} better by more than the spread"
    return {"difference_points": 100 * diff, "spread_points": 100 * spread, "verdict": word}


def summarise(runs, cfg):
    """Per-policy means and standard deviations (ddof 1) of final accuracy and of each change's
    metrics; ramp vs jump and ramp vs fixed verdicts, also as paired per-seed differences."""
    summary = {}
    for p, rs in runs.items():
        changes = [change_metrics(r, cfg) for r in rs]
        summary[p] = {"final_acc": _ms([r["final_acc"] for r in rs]),
                      "diverged_runs": sum(r["diverged_at"] is not None for r in rs),
                      "runs_ending_at_chance": sum(r["final_acc"] < 0.2 for r in rs),   # 10 classes
                      "changes": [{"change": c0["change"], "step": c0["step"],
                                   **{k: _ms([c[i][k] for c in changes])
                                      for k in ("loss_before", "max_loss_after", "acc_before", "acc_after")}}
                                  for i, c0 in enumerate(changes[0])]}
    counts = [None] + runs["ramp"][0]["workers"]
    largest = max(range(len(resize_steps(counts))),
                  key=lambda i: abs(math.log(resize_steps(counts)[i][2] / resize_steps(counts)[i][1])))
    comp = {}
    for other in ("jump", "fixed", "ramp2"):
        paired = [100 * (r["final_acc"] - o["final_acc"]) for r, o in zip(runs["ramp"], runs[other])]
        comp[f"ramp_vs_{other}"] = {
            "final_acc": verdict(summary["ramp"]["final_acc"], summary[other]["final_acc"], "ramp", other),
            "acc_after_largest_change": verdict(summary["ramp"]["changes"][largest]["acc_after"],
                                                summary[other]["changes"][largest]["acc_after"], "ramp", other),
            "paired_final_diff_points": _ms(paired),
            "acc_after_each_change": {
                c["change"]: verdict(c["acc_after"], o["acc_after"], "ramp", other)
                for c, o in zip(summary["ramp"]["changes"], summary[other]["changes"])}}
    return summary, comp, largest


def plot(runs, cfg, path):
    """LR per step, training loss and test accuracy (mean and +-1 std bands over seeds)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"fixed": "tab:gray", "jump": "tab:red", "ramp": "tab:blue", "ramp2": "tab:orange"}
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    n_train, off_scale = 4000, []
    counts = plan(cfg, n_train)
    samples = np.cumsum([cfg["per_worker"] * w for w in counts[1:]]) / n_train
    for p, rs in runs.items():
        axes[0].plot(samples, rs[0]["lr"], color=colors[p], label=p)
        loss = np.array([r["loss"] for r in rs], dtype=float)
        m, s = np.nanmean(loss, axis=0), np.nanstd(loss, axis=0, ddof=1)
        axes[1].plot(samples, m, color=colors[p], lw=1, label=p)
        axes[1].fill_between(samples, np.maximum(m - s, 1e-3), m + s, color=colors[p], alpha=0.2)
        ev = np.array([[a for _, _, a in r["evals"]] for r in rs]) * 100
        x = np.array([d for _, d, _ in rs[0]["evals"]]) / n_train
        m, s = ev.mean(axis=0), ev.std(axis=0, ddof=1)
        if m[-1] < 85:
            off_scale.append(f"{p}: {m[-1]:.1f}% at the end (off scale)")
        axes[2].plot(x, m, color=colors[p], label=f"{p} (mean of {len(rs)})")
        axes[2].fill_between(x, m - s, m + s, color=colors[p], alpha=0.2)
    bounds = np.cumsum(cfg["phase_epochs"])[:-1]
    for ax in axes:
        for b in bounds:
            ax.axvline(b, ls=":", color="k", lw=0.8)
        ax.set_xlabel("epochs (samples / 4,000)")
        ax.legend()
    axes[0].set_ylabel("learning rate")
    axes[0].set_title("workers " + " -> ".join(map(str, cfg["workers"])) + f", {cfg['per_worker']} per worker")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("training loss (batch mean)")
    axes[1].set_title("mean +- 1 std over seeds")
    axes[2].set_ylabel("test accuracy (%)")
    axes[2].set_ylim(85, 100)  # the policies that train differ by tenths of a point
    if off_scale:  # a collapsed policy is named rather than squashing the others' curves
        axes[2].text(0.98, 0.30, "\n".join(off_scale), transform=axes[2].transAxes, ha="right",
                     va="bottom")
    axes[2].legend(loc="lower right")
    axes[2].set_title("MNIST-5k test split (1,000 images)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--replot", action="store_true", help="redraw the plot from the JSON only")
    args = ap.parse_args()
    from gluon_suite.utils import write_json
    cfg = dict(CONFIG)
    if args.replot:
        import json
        with open(os.path.join(args.out, "dynamic_sgd.json")) as f:
            res = json.load(f)
        plot(res["runs"], {**cfg, **res["config"]}, os.path.join(args.out, "dynamic_sgd.png"))
        return
    data = load_data()
    runs = {p: [] for p in POLICIES}
    t_all = time.time()
    for seed in range(args.seeds):
        for p in POLICIES:
            t = time.time()
            r = simulate(p, seed, cfg, data)
            r["wall_s"] = round(time.time() - t, 1)
            runs[p].append(r)
            print(f"{p:5s} seed {seed}: final accuracy {100 * r['final_acc']:.2f}%"
                  + (f" (diverged at step {r['diverged_at']})" if r["diverged_at"] else "")
                  + f" ({r['wall_s']} s)", flush=True)
    wall = time.time() - t_all
    summary, comp, largest = summarise(runs, cfg)
    counts = [None] + runs["ramp"][0]["workers"]
    result = {"benchmark": "dynamic_sgd", "date": time.strftime("%Y-%m-%d"), "seeds": args.seeds,
              "config": {**cfg, "base_lr_8_workers": base_lr(cfg), "steps": len(counts) - 1,
                         "resizes": [{"step": t0, "from": a, "to": b} for t0, a, b in resize_steps(counts)]},
              "std": "sample standard deviation over seeds (ddof 1)",
              "largest_change": summary["ramp"]["changes"][largest]["change"],
              "summary": summary, "comparisons": comp, "wall_s": round(wall, 1),
              "runs": {p: [{k: r[k] for k in ("final_acc", "diverged_at", "evals", "lr", "loss", "wall_s")}
                           for r in rs] for p, rs in runs.items()}}
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "dynamic_sgd.json"), result)
    plot(runs, cfg, os.path.join(args.out, "dynamic_sgd.png"))

    pct = lambda d: f"{100 * d['mean']:6.2f} ± {100 * d['std']:4.2f}"  # noqa: E731
    print(f"\n{args.seeds} seeds, {len(counts) - 1} steps, workers {' -> '.join(map(str, cfg['workers']))}; "
          f"mean ± sample std")
    print(f"{'policy':7s} {'final acc (%)':>15s} " + " ".join(
        f"{'acc ' + c['change'] + ' +' + str(cfg['window']):>17s}" for c in summary["ramp"]["changes"]))
    for p, s in summary.items():
        print(f"{p:7s} {pct(s['final_acc']):>15s} " + " ".join(f"{pct(c['acc_after']):>17s}" for c in s["changes"]))
    print(f"\n{'policy':7s} " + " ".join(f"{'max loss ' + c['change'] + ' (before)':>26s}"
                                         for c in summary["ramp"]["changes"]))
    for p, s in summary.items():
        print(f"{p:7s} " + " ".join(f"{c['max_loss_after']['mean']:8.3f} ± {c['max_loss_after']['std']:5.3f} "
                                    f"({c['loss_before']['mean']:5.3f})" for c in s["changes"]))
    for name, c in comp.items():
        f, a = c["final_acc"], c["acc_after_largest_change"]
        print(f"{name}: final {f['difference_points']:+.2f} points (spread {f['spread_points']:.2f}): {f['verdict']}; "
              f"after {result['largest_change']} {a['difference_points']:+.2f} (spread {a['spread_points']:.2f}): "
              f"{a['verdict']}; paired per seed {c['paired_final_diff_points']['mean']:+.2f} ± "
              f"{c['paired_final_diff_points']['std']:.2f}")
    for c, v in comp["ramp_vs_jump"]["acc_after_each_change"].items():
        print(f"ramp vs jump, accuracy {cfg['window']} steps after {c}: {v['difference_points']:+.2f} points "
              f"(spread {v['spread_points']:.2f}): {v['verdict']}")
    print(f"wall time {wall:.0f} s; results: dynamic_sgd.json and dynamic_sgd.png in {os.path.relpath(args.out)}")


if __name__ == "__main__":
    main()
