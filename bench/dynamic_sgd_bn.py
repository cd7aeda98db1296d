#!/usr/bin/env python
"""Dynamic SGD in its regime: growth 8 -> 32 -> 128 workers (then the shrink to 16) on a BatchNorm
CNN with momentum 0.9, at the largest linearly scaled rate at which jump still trains (the pilot),
simulated in one process; the rate policies jump and ramp (the default), paired over seeds.

The paper's argument for smoothing the rate is stale momentum when the batch grows a lot at a large
rate; bench/dynamic_sgd.py found no benefit on a BatchNorm-free CNN at eta = 0.1 x B/256. This
bench moves to where the argument should bite: a BatchNorm network, as the paper's are, at the
largest rate the pilot finds stable. Plan, data, K and the other hyperparameters are
bench/dynamic_sgd.py's (its functions are reused here); the two protocols differ in the model, the
rate and a linear warm-up over the first ``warmup_steps`` steps (Goyal et al.'s, over before the
first resize and the same for both policies: without it, large rates blew up in the first steps,
and the pilot would have measured the start of training instead of the growths).

**Simulating W workers with BatchNorm.** One process computing the gradient of the global batch of
8 x W images is synchronous SGD over W workers only if nothing depends on how the batch is split;
BatchNorm does: each worker normalises its own 8 images. ``GhostBatchNorm`` therefore normalises
every group of ``per_worker`` consecutive samples with that group's own mean and (biased) variance,
exactly as W separate BatchNorm layers would, and the mean loss of the global batch is the mean of
the W workers' mean losses, so its gradient is the allreduced mean of the W per-worker gradients
(tests/optim/test_dynamic_sgd_bn.py checks both against a float64 NumPy reference).

**Running statistics** (they change only evaluation, never training): the mean over the groups of
each group's statistic is folded into the moving average (MXNet's rule: momentum 0.9, biased
variance). The moving average is linear, so this is the average of the W workers' own running
statistics when they start equal, as they do after the broadcast that starts every (re)sized job:
what ``DistributedTrainer.averaged`` evaluates for synchronous training (``bn="auto"`` is then
``"average"``, gluon_suite/distributed/averaging.py).
A Horovod user who evaluates rank 0's model sees rank 0's own statistics instead: ``running="first"``
keeps the first group's (not the protocol's choice: one worker's 8 images make a noisier estimate,
which would add evaluation noise unrelated to the rate policy). The broadcast of rank 0's statistics
at each resize is not simulated; it touches evaluation only and fades within about 20 steps
(0.9^20 = 0.12).

**The pilot** (``--pilot``) fixes the protocol's rate before its first run: jump on the full plan
for each lr_per_256 of a doubling grid, the pilot's own seeds (not the protocol's), from the smallest
rate up. A run is unstable when a training loss is non-finite or above ``blowup`` x its first step's
loss; the grid stops at the first rate with an unstable seed. Of the rates below it, the largest whose
mean final test accuracy is within ``acc_margin`` of the best is chosen (``choose_rate``). The
protocol's ``lr_per_256`` is written in from the pilot's JSON; until then it is null and the bench
refuses a full run, and a full run checks that the pilot's ``chosen`` and plan match the protocol.

    python bench/dynamic_sgd_bn.py --pilot                 # writes the protocol's params.pilot.file
    gluon-suite bench run dynamic_sgd_regime [--quick]
"""
import hashlib
import json
import math
import os
import sys
import time

import numpy as np
from mxnet import autograd, gluon, nd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import dynamic_sgd as dsgd  # noqa: E402  (bench/dynamic_sgd.py: plan, simulation, tables)

NAME = "dynamic_sgd_regime"
POLICIES = ("jump", "ramp")
RUNNING = ("mean", "first")
CONFIG = {**dsgd.CONFIG, "lr_per_256": None, "warmup_steps": 0, "bn_momentum": 0.9, "bn_running": "mean",
          "blowup": 2.0}


class GhostBatchNorm(gluon.Block):
    """BatchNorm over groups of ``group`` consecutive samples (one group per simulated worker) in
    training mode; the running statistics in evaluation mode. ``running``: "mean" folds the mean of
    the groups' statistics into the moving average, "first" the first group's (module docstring)."""

    def __init__(self, channels, group, momentum=0.9, epsilon=1e-5, running="mean", **kwargs):
        super().__init__(**kwargs)
        if running not in RUNNING:
            raise ValueError(f"running must be one of {', '.join(RUNNING)} (got {running!r})")
        if int(group) < 1:
            raise ValueError(f"group must be >= 1 (got {group})")
        self.channels, self.group, self.momentum, self.epsilon, self.running = (
            channels, int(group), momentum, epsilon, running)
        with self.name_scope():
            self.gamma = self.params.get("gamma", shape=(channels,), init="ones")
            self.beta = self.params.get("beta", shape=(channels,), init="zeros")
            self.running_mean = self.params.get("running_mean", shape=(channels,), init="zeros",
                                                grad_req="null", differentiable=False)
            self.running_var = self.params.get("running_var", shape=(channels,), init="ones",
                                               grad_req="null", differentiable=False)

    def forward(self, x):
        """Training: (N, C, ...) -> (group, N/group x C, L), one MXNet BatchNorm over channel g*C + c
        (the group's statistics; gamma and beta tiled over the groups), and back: the fused operator
        is several times faster on CPU than the same algebra in broadcast NDArray operations."""
        ctx, c = x.context, self.channels
        gamma, beta = self.gamma.data(ctx), self.beta.data(ctx)
        if not autograd.is_training():
            return nd.BatchNorm(x, gamma, beta, self.running_mean.data(ctx), self.running_var.data(ctx),
                                eps=self.epsilon, fix_gamma=False, use_global_stats=True)
        n = x.shape[0]
        if n % self.group:
            raise ValueError(f"a training batch of {n} is not a whole number of groups of {self.group}")
        g = n // self.group
        z = x.reshape((g, self.group, c, -1)).transpose((1, 0, 2, 3)).reshape((self.group, g * c, -1))
        scratch = [nd.zeros((g * c,), ctx, dtype=x.dtype), nd.ones((g * c,), ctx, dtype=x.dtype)]
        y, mean, inv_std = nd.BatchNorm(z, nd.tile(gamma, reps=(g,)), nd.tile(beta, reps=(g,)), *scratch,
                                        eps=self.epsilon, momentum=self.momentum, fix_gamma=False,
                                        output_mean_var=True)
        with autograd.pause():   # the operator gives 1/sqrt(var + eps): the biased variance back
            var = 1 / (inv_std * inv_std) - self.epsilon
            self._update_running(mean.reshape((g, c)), var.reshape((g, c)))
        return y.reshape((self.group, g, c, -1)).transpose((1, 0, 2, 3)).reshape(x.shape)

    def _update_running(self, means, variances):
        """Fold the groups' ``(groups, C)`` statistics into the running ones (MXNet's moving average)."""
        m = self.momentum
        for param, batch in ((self.running_mean, means), (self.running_var, variances)):
            stat = batch.mean(axis=0) if self.running == "mean" else batch[0]
            param.set_data(param.data(batch.context) * m + stat * (1 - m))


def build_bn_net(cfg):
    """bench/dynamic_sgd.py's CNN with a BatchNorm after each convolution (no conv bias, which
    BatchNorm's beta replaces): Conv(5x5)-BN-ReLU-MaxPool twice, Dense(10); the BatchNorm is per
    simulated worker (``GhostBatchNorm`` over ``per_worker`` samples)."""
    net = gluon.nn.Sequential()   # not Hybrid: GhostBatchNorm writes its running statistics
    for c in cfg["channels"]:
        net.add(gluon.nn.Conv2D(c, 5, padding=2, use_bias=False),
                GhostBatchNorm(c, cfg["per_worker"], momentum=cfg["bn_momentum"], running=cfg["bn_running"]),
                gluon.nn.Activation("relu"), gluon.nn.MaxPool2D(2))
    net.add(gluon.nn.Dense(10))
    return net


def is_unstable(loss, blowup):
    """True when the run diverged: a step's loss is non-finite (None in a run's record) or above
    ``blowup`` x the first step's loss."""
    if not loss or loss[0] is None:
        return True
    return any(x is None or not math.isfinite(x) or x > blowup * loss[0] for x in loss)


def spikes(loss, counts, window):
    """Per resize ``{'8_32': spike}``: the largest training loss from the first step at the new
    batch up to the next resize (or the end) less the mean loss of the ``window`` steps before the
    resize; None when a loss in either is missing (a diverged run has no spike to pair)."""
    changes = dsgd.resize_steps(counts)
    ends = [t0 for t0, _, _ in changes[1:]] + [len(counts)]
    out = {}
    for (t0, a, b), t1 in zip(changes, ends):
        before, after = loss[max(0, t0 - 1 - window):t0 - 1], loss[t0 - 1:t1 - 1]
        ok = before and after and all(x is not None for x in before + after)
        out[f"{a}_{b}"] = float(max(after) - np.mean(before)) if ok else None
    return out


def run_metrics(policy, seed, cfg, data):
    """bench/dynamic_sgd.py's metrics of one run on the BatchNorm CNN, plus ``spike_W_W'`` per
    resize (``spikes``), ``unstable`` (``is_unstable``: 0 or 1) and the first and largest loss."""
    out = dsgd.run_metrics(policy, seed, cfg, data, build=build_bn_net)
    counts = dsgd.plan(cfg, len(data[0]))
    out.update({f"spike_{k}": v for k, v in spikes(out["loss"], counts, cfg["window"]).items()})
    finite = [x for x in out["loss"] if x is not None]
    out.update(unstable=int(is_unstable(out["loss"], cfg["blowup"])), first_loss=out["loss"][0],
               max_loss=max(finite) if finite else None)
    return out


def choose_rate(rows, acc_margin):
    """The pilot's rule: ``rows`` ``[{lr_per_256, unstable, final_acc}]`` (per rate: unstable seeds,
    mean final accuracy) in grid order; the largest rate below the first unstable one whose accuracy
    is within ``acc_margin`` of the best of those; None when the first rate is already unstable."""
    rows = sorted(rows, key=lambda r: r["lr_per_256"])
    stable = []
    for r in rows:
        if r["unstable"]:
            break
        stable.append(r)
    if not stable:
        return None
    best = max(r["final_acc"] for r in stable)
    return max(r["lr_per_256"] for r in stable if r["final_acc"] >= best - acc_margin)


PILOT_RULE = ("jump on the full plan for each lr_per_256 of the grid, smallest first, on the pilot's seeds; a run "
              "is unstable when a training loss is non-finite or above blowup x its first step's loss; the grid "
              "stops at the first rate with an unstable seed; chosen: the largest rate below it whose mean final "
              "test accuracy is within acc_margin of the best mean of those rates")


def pilot(params, out, grid=None, seeds=None, log=print):
    """Run the pilot on the protocol's ``params`` (their ``pilot`` section: grid, seeds, policy,
    acc_margin) and write its JSON to ``out``: every run's metrics, each rate's summary, the chosen
    rate, and what ran (protocol file and hash, commit, versions)."""
    from gluon_suite.evidence import protocols, runner
    spec = params["pilot"]
    grid, seeds = list(grid or spec["grid"]), list(seeds or spec["seeds"])
    data = dsgd.load_data()
    t0, runs, rows = time.time(), [], []
    for lr in sorted(grid):
        cfg = {**CONFIG, **params, "lr_per_256": lr}
        rate = []
        for seed in seeds:
            t = time.time()
            m = run_metrics(spec["policy"], seed, cfg, data)
            m.pop("lr")
            rate.append({"lr_per_256": lr, "seed": seed, "wall_s": time.time() - t, **m})
            log(f"lr_per_256 {lr:g} seed {seed}: final {m['final_acc']:.4f}, unstable {m['unstable']}, "
                f"max loss {m['max_loss']}, {rate[-1]['wall_s']:.0f} s")
            if m["unstable"]:
                break        # the rate is unstable whatever its other seeds do
        runs += rate
        rows.append({"lr_per_256": lr, "seeds": [r["seed"] for r in rate],
                     "unstable": sum(r["unstable"] for r in rate),
                     "final_acc": float(np.mean([r["final_acc"] for r in rate]))})
        if rows[-1]["unstable"]:
            break
    chosen = choose_rate(rows, spec["acc_margin"])
    proto = protocols.load(ROOT, NAME)
    record = {"protocol": {"file": proto.path, "version": proto.version, "sha256": proto.sha256},
              "git": runner.git_state(ROOT), "versions": runner.versions(), "date": time.strftime(
                  "%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)), "wall_s": time.time() - t0,
              "params": params, "grid": grid, "seeds": seeds, "definition": PILOT_RULE,
              "rates": rows, "chosen": {"lr_per_256": chosen}, "runs": runs}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".tmp", "w") as f:
        json.dump(_json_ready(record), f, indent=1)
    os.replace(out + ".tmp", out)
    log(f"chosen lr_per_256: {chosen} ({out})")
    return record


def _json_ready(obj):
    """``obj`` with NaN and infinite floats as None (JSON holds none), at any depth."""
    if isinstance(obj, float):
        return dsgd._finite(obj)
    if isinstance(obj, dict):
        return {k: _json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_ready(v) for v in obj]
    return obj


def check_rate(params, root, quick):
    """Refuse a run (``params``: the protocol's) whose rate is still the placeholder, or (a full
    run) whose rate or plan is not the pilot's: the pilot's JSON ``chosen`` must equal
    ``lr_per_256`` and the params it ran the protocol's, the rate aside. Returns what the result
    notes about the pilot (its file, SHA-256, choice and per-rate summary)."""
    from gluon_suite.utils.errors import UserError
    if params.get("lr_per_256") is None:
        raise UserError(f"protocol {NAME}: lr_per_256 is the placeholder null; run the pilot "
                        "(python bench/dynamic_sgd_bn.py --pilot) and write its chosen rate into the protocol first")
    if quick:
        return {"quick": "the quick schedule's own rate, not the pilot's"}
    rel = params["pilot"]["file"]
    path = os.path.join(root, rel)
    if not os.path.isfile(path):
        raise UserError(f"protocol {NAME}: the pilot {rel} is missing; run python bench/dynamic_sgd_bn.py --pilot")
    with open(path, "rb") as f:
        raw = f.read()
    rec = json.loads(raw)
    if rec["chosen"]["lr_per_256"] != params["lr_per_256"]:
        raise UserError(f"protocol {NAME}: lr_per_256 is {params['lr_per_256']} but the pilot chose "
                        f"{rec['chosen']['lr_per_256']} ({rel})")
    others = lambda p: {k: v for k, v in p.items() if k != "lr_per_256"}  # noqa: E731
    if others(params) != others(rec["params"]):
        raise UserError(f"protocol {NAME}: its params differ from those the pilot ran ({rel})")
    return {"file": rel, "sha256": hashlib.sha256(raw).hexdigest(), "chosen": rec["chosen"], "rates": rec["rates"]}


def decide_default(results, runs, ids, complete):
    """The protocol's decision rule over its criteria ``results`` (``{id: runner.evaluate(...)}``):
    the default stays ramp when one of the growth criteria ``ids`` holds, or jump is unstable in a
    seed where ramp is not; otherwise it becomes jump. ``complete``: every protocol seed ran (a quick
    or partial run decides nothing)."""
    unstable = {(r["arm"], r["seed"]): r["metrics"].get("unstable") for r in runs}
    seeds = sorted({s for _, s in unstable})
    jump_only = [s for s in seeds if unstable.get(("jump", s)) and not unstable.get(("ramp", s))]
    held = [i for i in ids if results[i]["outcome"] == "holds"]
    if not complete:
        default = "not decided (a quick or partial run)"
    else:
        default = "ramp" if held or jump_only else "jump"
    return {"default": default, "growth_criteria_holding": held, "seeds_jump_unstable_ramp_not": jump_only}


def tables(runs, params, criteria, complete):
    """The result's tables from its ``runs``: accuracy, loss spikes, the decision."""
    from gluon_suite.evidence.runner import evaluate
    by = {p: [r["metrics"] for r in runs if r["arm"] == p] for p in POLICIES}
    changes = [k[len("spike_"):] for k in runs[0]["metrics"] if k.startswith("spike_")]   # in resize order
    n = len({r["seed"] for r in runs})
    w = params["window"]
    out = {"accuracy": {"columns": ["policy", "final"] + [f"{w} steps after {c.replace('_', '->')}" for c in changes],
                        "rows": [[p, dsgd._pm([m["final_acc"] for m in ms], 100)]
                                 + [dsgd._pm([m.get(f"acc_after_{c}") for m in ms], 100) for c in changes]
                                 for p, ms in by.items()],
                        "caption": f"Test accuracy (%), mean ± sample standard deviation over {n} seed(s)."},
           "loss_spike": {"columns": ["policy"] + [c.replace("_", "->") for c in changes] + ["unstable runs"],
                          "rows": [[p] + [dsgd._pm([m.get(f"spike_{c}") for m in ms], digits=3) for c in changes]
                                   + [sum(m["unstable"] for m in ms)] for p, ms in by.items()],
                          "caption": f"Loss spike: the largest training loss from the first step at the new batch "
                                     f"to the next resize, less the mean loss of the {w} steps before the resize; "
                                     f"mean ± sample standard deviation over {n} seed(s)."}}
    results = {c["id"]: evaluate(c, runs) for c in criteria}
    ids = params["decision_criteria"]
    d = decide_default(results, runs, ids, complete)
    rows = [[i, results[i]["statement"], results[i]["verdict"], results[i]["outcome"]] for i in ids]
    rows.append(["jump unstable where ramp is not", "seeds: " + (", ".join(map(str, d["seeds_jump_unstable_ramp_not"]))
                                                                or "none"), "-", "-"])
    rows.append(["default rate policy", d["default"], "-", "-"])
    out["decision"] = {"columns": ["growth criterion", "statement", "verdict", "outcome"], "rows": rows,
                       "caption": "The protocol's decision rule: the default stays ramp when one growth criterion "
                                  "holds or jump alone is unstable in a seed; otherwise it becomes jump."}
    return out, d


def evidence(ctx):
    """The protocol bench/protocols/dynamic_sgd_regime.yaml: every (seed, policy) through
    ctx.measure, the accuracy, spike and decision tables, and bench/dynamic_sgd.py's plot."""
    ctx.note("pilot", check_rate(ctx.params, ctx.root, ctx.quick))
    cfg = {**CONFIG, **ctx.params}
    missing = [i for i in cfg["decision_criteria"] if i not in {c["id"] for c in ctx.protocol.criteria}]
    if missing:
        raise ValueError(f"decision_criteria name no criterion: {', '.join(missing)}")
    data = dsgd.load_data()
    counts = dsgd.plan(cfg, len(data[0]))
    runs = {p: [] for p in ctx.arms}
    for seed, policy in ctx.progress([(s, p) for s in ctx.seeds for p in ctx.arms], desc=f"{NAME} runs"):
        runs[policy].append(ctx.measure(policy, seed, lambda: run_metrics(policy, seed, cfg, data)))
    complete = not ctx.quick and sorted(ctx.seeds) == sorted(ctx.protocol.seeds())
    made, decision = tables(ctx.runs, cfg, ctx.protocol.criteria, complete)
    for name, t in made.items():
        ctx.table(name, t["columns"], t["rows"], caption=t["caption"])
    ctx.note("decision", decision)
    ctx.note("steps", len(counts) - 1)
    ctx.note("resizes", [{"step": t0, "from": a, "to": b} for t0, a, b in dsgd.resize_steps(counts)])
    ctx.note("base_lr_8_workers", dsgd.base_lr(cfg))
    dsgd.plot(runs, cfg, ctx.figure(".png"), n_train=len(data[0]))


def combined_tables(runs, params, notes):
    """The tables of a result combined from slices (``gluon-suite bench combine``), the decision
    over all their seeds; ``bench combine`` has checked that the slices ran this protocol's text."""
    from gluon_suite.evidence import protocols
    proto = protocols.load(ROOT, NAME)
    complete = sorted({r["seed"] for r in runs}) == sorted(proto.seeds())
    return tables(runs, params, proto.criteria, complete)[0]


def main(argv):
    import argparse
    from gluon_suite.evidence import protocols
    ap = argparse.ArgumentParser(description="the learning-rate pilot of protocol dynamic_sgd_regime")
    ap.add_argument("--pilot", action="store_true", required=True)
    ap.add_argument("--quick", action="store_true", help="the protocol's quick schedule (a check, not the pilot)")
    ap.add_argument("--grid", help="comma-separated lr_per_256 values instead of the protocol's grid")
    ap.add_argument("--seeds", help="comma-separated seeds instead of the protocol's pilot seeds")
    ap.add_argument("--out", help="the JSON to write; only the full pilot may write the protocol's pilot file")
    a = ap.parse_args(argv)
    params = protocols.load(ROOT, NAME).params(quick=a.quick)
    params.pop("lr_per_256", None)
    shortened = a.quick or a.grid or a.seeds
    if shortened and not a.out:
        ap.error("a shortened pilot (--quick, --grid, --seeds) needs --out, away from the protocol's pilot file")
    out = a.out or os.path.join(ROOT, params["pilot"]["file"])
    if shortened and os.path.abspath(out) == os.path.abspath(os.path.join(ROOT, params["pilot"]["file"])):
        ap.error("a shortened pilot must not write the protocol's pilot file")
    floats = lambda s: [float(x) for x in s.split(",")] if s else None  # noqa: E731
    pilot(params, out, grid=floats(a.grid), seeds=[int(x) for x in a.seeds.split(",")] if a.seeds else None)


if __name__ == "__main__":
    if "--pilot" in sys.argv[1:]:
        main(sys.argv[1:])
    else:
        from gluon_suite.cli import entry
        sys.argv = ["gluon-suite", "bench", "run", NAME, *sys.argv[1:]]
        entry()
