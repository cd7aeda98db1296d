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
Dynamic SGD says stale momentum acts (and the K of bench/elastic.py). A seed fixes the initial
weights and the data order, identical for the four policies, so differences are paired.

The protocol bench/protocols/dynamic_sgd.yaml fixes this plan, the seeds and the criteria (paired
over seeds); the runner writes the result under bench/results/dynamic_sgd/.

    gluon-suite bench run dynamic_sgd [--quick] [--seeds 0,1]
"""
import math
import os
import sys

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
    starting global batch; 'fixed' is never told of a resize, 'jump' has K = 1, 'ramp2' ramps down too.
    With ``cfg["warmup_steps"]`` = N > 0 (bench/dynamic_sgd_bn.py; absent here) the base rises
    linearly from eta_8/N at step 1 to eta_8 at step N (Goyal et al.'s gradual warm-up)."""
    from gluon_suite.optim import ElasticRamp
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    eta8, ref, warm = base_lr(cfg), cfg["per_worker"] * cfg["workers"][0], int(cfg.get("warmup_steps", 0))
    base = (lambda t: eta8 * min(1.0, t / warm)) if warm else (lambda t: eta8)
    return ElasticRamp(base, ref_batch=ref, ramp_steps=1 if policy == "jump" else cfg["ramp_steps"],
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


def simulate(policy, seed, cfg, data, build=None):
    """Train one run; ``data`` is ``(x_train, y_train, x_test, y_test)`` as NumPy arrays (NCHW in
    [0, 1], integer labels); ``build(cfg)`` makes the network (default ``build_net``; the BatchNorm
    variant in bench/dynamic_sgd_bn.py passes its own). Returns per-step ``workers``, ``batch``,
    ``lr`` (the rate the update used), ``loss`` (the batch's mean loss before the update, NaN after
    a divergence), the test accuracies ``evals`` ``[(step, samples, acc), ...]``, ``final_acc`` and
    ``diverged_at``."""
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
    net = (build or build_net)(cfg)
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


def plot(runs, cfg, path, n_train=4000):
    """LR per step, training loss and test accuracy (mean and +-1 std bands over seeds); ``runs``
    maps a policy to its runs' metrics (run_metrics)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"fixed": "tab:gray", "jump": "tab:red", "ramp": "tab:blue", "ramp2": "tab:orange"}
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    off_scale = []
    counts = plan(cfg, n_train)
    samples = np.cumsum([cfg["per_worker"] * w for w in counts[1:]]) / n_train
    for p, rs in runs.items():
        axes[0].plot(samples, rs[0]["lr"], color=colors[p], label=p)
        loss = np.array([r["loss"] for r in rs], dtype=float)
        m, s = np.nanmean(loss, axis=0), _std(loss)
        axes[1].plot(samples, m, color=colors[p], lw=1, label=p)
        axes[1].fill_between(samples, np.maximum(m - s, 1e-3), m + s, color=colors[p], alpha=0.2)
        ev = np.array([[a for _, _, a in r["evals"]] for r in rs]) * 100
        x = np.array([d for _, d, _ in rs[0]["evals"]]) / n_train
        m, s = ev.mean(axis=0), _std(ev)
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




def _std(a):
    """The sample standard deviation over seeds (axis 0; ddof 1), zeros for one seed."""
    import warnings
    if len(a) < 2:
        return np.zeros(a.shape[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a step where every seed's loss is NaN
        return np.nanstd(a, axis=0, ddof=1)


def _finite(x):
    """``x`` as a float, None when it is NaN or infinite (a result file holds no NaN)."""
    x = float(x)
    return x if math.isfinite(x) else None


def change_key(change):
    """'8->32' -> '8_32', the suffix of a resize's metrics."""
    return change.replace("->", "_")


def run_metrics(policy, seed, cfg, data, build=None):
    """One simulated run as the runner records it: final accuracy, each resize's accuracy before
    and ``window`` steps after (acc_before_W_W', acc_after_W_W'), loss before and largest loss after
    (loss_before_W_W', max_loss_after_W_W'), divergence, and the per-step rate and loss and the test
    accuracy curve ``[[step, samples, acc], ...]`` for the plot."""
    rec = simulate(policy, seed, cfg, data, build)
    out = {"final_acc": rec["final_acc"], "diverged": int(rec["diverged_at"] is not None),
           "diverged_at": rec["diverged_at"], "ended_at_chance": int(rec["final_acc"] < 0.2)}   # 10 classes
    for c in change_metrics(rec, cfg):
        k = change_key(c["change"])
        out.update({f"acc_before_{k}": c["acc_before"], f"acc_after_{k}": c["acc_after"],
                    f"loss_before_{k}": _finite(c["loss_before"]),
                    f"max_loss_after_{k}": _finite(c["max_loss_after"])})
    out.update(evals=[[s, d, a] for s, d, a in rec["evals"]], lr=[float(x) for x in rec["lr"]],
               loss=[_finite(x) for x in rec["loss"]])
    return out


def _pm(values, scale=1.0, digits=2):
    """'mean ± sample std' of the values that are not None (scaled); 'n/a' when there are none."""
    v = np.array([x for x in values if x is not None], dtype=float) * scale
    if not len(v):
        return "n/a"
    std = f" ± {np.std(v, ddof=1):.{digits}f}" if len(v) > 1 else ""
    missing = len(values) - len(v)
    return f"{np.mean(v):.{digits}f}{std}" + (f" ({missing} diverged)" if missing else "")


def _mean(values):
    v = [x for x in values if x is not None]
    return float(np.mean(v)) if v else float("nan")


def evidence(ctx):
    """The protocol bench/protocols/dynamic_sgd.yaml: every (seed, policy) run through ctx.measure,
    the accuracy and loss-spike tables, and the plot of rates, losses and accuracies."""
    cfg = {**CONFIG, **ctx.params}
    data = load_data()
    counts = plan(cfg, len(data[0]))
    changes = [f"{a}->{b}" for _, a, b in resize_steps(counts)]
    runs = {p: [] for p in ctx.arms}
    for seed, policy in ctx.progress([(s, p) for s in ctx.seeds for p in ctx.arms], desc="dynamic_sgd runs"):
        runs[policy].append(ctx.measure(policy, seed, lambda: run_metrics(policy, seed, cfg, data)))
    n = len(ctx.seeds)
    ctx.table("accuracy", ["policy", "final"] + [f"{cfg['window']} steps after {c}" for c in changes],
              [[p, _pm([r["final_acc"] for r in rs], 100)]
               + [_pm([r[f"acc_after_{change_key(c)}"] for r in rs], 100) for c in changes]
               for p, rs in runs.items()],
              caption=f"Test accuracy (%), mean ± sample standard deviation over {n} seed(s).")
    ctx.table("loss_spike", ["policy"] + changes,
              [[p] + [f"{_pm([r[f'max_loss_after_{change_key(c)}'] for r in rs], digits=3)} "
                      f"({_mean([r[f'loss_before_{change_key(c)}'] for r in rs]):.3f})"
                      for c in changes] for p, rs in runs.items()],
              caption=f"Largest training loss in the {cfg['window']} steps from the first at the new batch, "
                      f"mean ± sample standard deviation over {n} seed(s); in brackets the mean loss over "
                      f"the {cfg['window']} steps before the resize.")
    ctx.note("steps", len(counts) - 1)
    ctx.note("resizes", [{"step": t0, "from": a, "to": b} for t0, a, b in resize_steps(counts)])
    ctx.note("base_lr_8_workers", base_lr(cfg))
    ctx.note("diverged_runs", {p: sum(r["diverged"] for r in rs) for p, rs in runs.items()})
    plot(runs, cfg, ctx.figure(".png"), n_train=len(data[0]))


if __name__ == "__main__":
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "dynamic_sgd", *sys.argv[1:]]
    entry()
