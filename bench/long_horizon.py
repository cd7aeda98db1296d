#!/usr/bin/env python
"""The communication claims on a job long enough to show them (protocols long_horizon_*): GluonCV's
cifar_resnet20_v1 (BatchNorm, 65 tensors) on MNIST-5k at a small input size, 4 namespace hosts,
every method evaluated every few steps with the clock stopped, on one link per protocol (the
unthrottled floor, 100 Mbit/s, and a slow link at which sync's step is mostly communication).

The digits job of ``bench/cser_speedup.py`` crosses its target in about 33 steps, during the
warm-up, and is evaluated once an epoch (11 steps), so one evaluation interval is a third of the
time to target and no compressor can gain more than the 2.7x that communication costs there.
Here sync needs hundreds of steps to its target, the evaluation interval is a few percent of that,
and the slow link makes sync's step mostly communication.

Each run writes its curve (step, training time, test accuracy of the worker-averaged model with
BatchNorm statistics recomputed for the averaged weights, bytes sent) and auto's decision; times to
a target are interpolated between evaluations (``gluon_suite.evidence.stats.time_to_target``).
The configurations are ``bench/cser_speedup.py``'s (``CONFIGS``), so a name means the same
algorithm in both benches.

    sudo .venv/bin/gluon-suite bench run long_horizon_floor [--quick] [--seeds 0]
    sudo .venv/bin/python bench/long_horizon.py --pilot 1200 --rate 10000   # sync alone, one seed

(root, for the namespaces). ``--worker`` is the role each testbed host runs.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

from cser_speedup import CONFIGS, _ms, auto_summary  # noqa: E402  (the same configurations)

# the pilot's choice (bench/pilots/long_horizon, c_28px_shift_wd); a protocol's params override these
DEFAULTS = dict(size=28, batch=32, lr=0.05, momentum=0.9, wd=5e-4, shift=2, warmup_steps=150, steps=600,
                eval_every=6, bn_batches=4, targets=[0.98, 0.97], hosts=4, rate_mbit=10000)


def _algorithm(name, seed):
    """The configuration ``name`` of ``CONFIGS`` as a trainer algorithm."""
    from gluon_suite.distributed.registry import algorithm_from
    cfg = dict(CONFIGS[name])
    algo = cfg.pop("algorithm")
    return algorithm_from(algo, {**cfg, "seed": seed}, keyed=True)


def worker(name, p, seed, out):
    """One worker of one run: ``p['steps']`` steps of NAG with a linear warm-up over
    ``p['warmup_steps']`` steps, then the constant rate; every ``p['eval_every']`` steps (and at the
    last) the clock stops for an evaluation of the worker-averaged model."""
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    import gluon_suite.cv.models  # noqa: F401  registers the vision models
    from gluon_suite.cv.data.mnist5k import load_mnist5k
    from gluon_suite.distributed import DistributedTrainer, get_communicator
    from gluon_suite.model_zoo import get_model
    from gluon_suite.optim.schedules import WarmupConstantDecay
    comm = get_communicator()
    mx.random.seed(seed)
    np.random.seed(seed)
    S, B, steps, every = int(p["size"]), int(p["batch"]), int(p["steps"]), int(p["eval_every"])
    shift = int(p["shift"])
    xtr, ytr = load_mnist5k("train", size=S)
    xte, yte = load_mnist5k("test", size=S)
    net = get_model("cifar_resnet20_v1", classes=10)
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 1, S, S)))   # finish deferred initialisation before the trainer broadcasts
    warm = int(p["warmup_steps"])
    sched = WarmupConstantDecay(p["lr"], steps, warm, steps - warm, min_lr=p["lr"])
    tr = DistributedTrainer(net.collect_params(), "nag", {"learning_rate": p["lr"], "momentum": p["momentum"],
                                                         "wd": float(p["wd"]), "lr_scheduler": sched},
                            communicator=comm, algorithm=_algorithm(name, seed))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    per_epoch = len(ytr) // (B * comm.size)
    xte_nd, yte_mine = mx.nd.array(xte[comm.rank::comm.size]), yte[comm.rank::comm.size]

    def batch(t, train=True):
        epoch, k = divmod(t, per_epoch)
        perm = np.random.RandomState(1000 * seed + epoch).permutation(len(ytr))[comm.rank::comm.size]
        idx = perm[k * B:(k + 1) * B]
        x = xtr[idx]
        if shift and train:   # each image moved by up to ``shift`` pixels each way, zeros shifted in
            rs = np.random.RandomState((1000 * seed + t) * 64 + comm.rank)
            pad = np.pad(x, ((0, 0), (0, 0), (shift, shift), (shift, shift)))
            off = rs.randint(0, 2 * shift + 1, size=(len(x), 2))
            x = np.stack([pad[i, :, a:a + S, b:b + S] for i, (a, b) in enumerate(off)])
        return mx.nd.array(x), mx.nd.array(ytr[idx])

    def evaluate(t):
        """The averaged model's accuracy on the whole test set, each worker scoring its share."""
        bn = [batch(max(t - 1 - j, 0), train=False)[0] for j in range(int(p["bn_batches"]))]   # the latest batches
        with tr.averaged(net, bn, bn="recompute", bn_num_batches=len(bn)):
            right = float((net(xte_nd).argmax(axis=1).asnumpy() == yte_mine).sum())
        rows = comm.allgather(mx.nd.array([[right, len(yte_mine)]], dtype="float64"), name=f"lh.eval.{t}").asnumpy()
        return float(rows[:, 0].sum() / rows[:, 1].sum())

    curve, train_s, losses, eval_wire = [], 0.0, [], 0.0
    mx.nd.waitall()
    t0 = time.perf_counter()
    for t in range(steps):
        x, y = batch(t)
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        tr.step(B)
        if (t + 1) % every == 0 or t + 1 == steps:
            losses.append(loss.mean())
            mx.nd.waitall()
            train_s += time.perf_counter() - t0    # the clock stops for the evaluation
            wire = comm.stats.total_wire - eval_wire
            acc = evaluate(t + 1)
            mx.nd.waitall()
            eval_wire = comm.stats.total_wire - wire  # the evaluation's averaging is not the method's
            curve.append({"step": t + 1, "time_s": train_s, "test_acc": acc,
                          "loss": float(losses[-1].asscalar()), "wire_bytes": wire})
            t0 = time.perf_counter()
    comm.barrier()
    if comm.rank == 0:
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"curve": curve, "steps": steps, "auto": getattr(tr.algorithm, "decision", None)}, f)
        os.replace(tmp, out)


def run_metrics(c, targets):
    """Final accuracy (the median of the last 5 evaluations beside the last one), time and step to
    each target (interpolated), bytes sent, the median training time of a step, auto's decision."""
    from gluon_suite.evidence.stats import time_to_target
    curve = c["curve"]
    times, accs, steps = [r["time_s"] for r in curve], [r["test_acc"] for r in curve], [r["step"] for r in curve]
    per_step = sorted((t1 - t0) / (s1 - s0) for t0, t1, s0, s1 in zip(times, times[1:], steps, steps[1:]))
    tail = sorted(accs[-5:])
    out = {"final_acc": accs[-1], "final_acc_median5": tail[len(tail) // 2], "total_s": times[-1],
           "step_s": per_step[len(per_step) // 2] if per_step else times[-1] / steps[-1],
           "wire_bytes": curve[-1]["wire_bytes"], "steps": c["steps"],
           "curve_step": steps, "curve_time_s": times, "curve_test_acc": accs,
           "curve_loss": [r["loss"] for r in curve]}
    for t in targets:
        out[f"time_to_{t:g}_s"] = time_to_target(times, accs, t)
        out[f"step_to_{t:g}"] = time_to_target(steps, accs, t)
    d = c.get("auto")
    if d:
        s = auto_summary(d)
        out["auto_compressing"] = int(s["choice"] != "sync")
        out["auto_switched"] = int(s["first"] != s["choice"])
        out["auto_decided_at_step"] = s["step"]
        out["auto_measuring_fraction"] = (s["step"] or 0) / float(c["steps"])
    return out


def launch(tb, name, p, seed, tmp, quiet=True):
    """Run configuration ``name`` on seed ``seed`` on the testbed ``tb``: the rank-0 record, or
    (None, exit codes) when a worker failed."""
    out = os.path.join(tmp, f"{seed}.json")
    if os.path.exists(out):
        os.remove(out)
    pj = os.path.join(tmp, "params.json")
    with open(pj, "w") as f:
        json.dump(p, f)
    sink = subprocess.DEVNULL if quiet else None
    procs = tb.launch_horovod([sys.executable, os.path.abspath(__file__), "--worker", name, "--params", pj,
                               "--seed", str(seed), "--out", out],
                              env={"OMP_NUM_THREADS": "1", "MXNET_CPU_WORKER_NTHREADS": "1",
                                   "PYTHONPATH": os.path.dirname(HERE)}, stdout=sink, stderr=sink)
    codes = tb.wait_all(procs, timeout=p.get("run_timeout_s", 3600))
    if any(codes) or not os.path.exists(out):
        return None, codes
    with open(out) as f:
        return json.load(f), codes


def evidence(ctx):
    """Every (seed, arm) of a long_horizon_* protocol on one testbed of ``params.hosts`` hosts at
    ``params.rate_mbit``, seed by seed, the arms in turn. Reused arms (sync at the floor) come from
    the runner; the tables put every arm's time beside the floor's."""
    from gluon_suite.utils.errors import UserError
    from gluon_suite.whatif.testbed import Testbed, TestbedUnavailable, stop_on_signal
    p = {**DEFAULTS, **ctx.params}
    targets = [float(t) for t in p["targets"]]
    unknown = [a for a in ctx.arms if a not in CONFIGS]
    if unknown:
        raise UserError(f"long_horizon: unknown configuration(s) {', '.join(map(repr, unknown))}; "
                        f"known: {', '.join(map(repr, CONFIGS))}")
    ctx.note("testbed", {"hosts": p["hosts"], "rate_mbit": p["rate_mbit"], "eval_every": p["eval_every"],
                         "evaluation": "the worker-averaged model (BatchNorm recomputed) on the 1,000 test images"})
    decisions = {}
    try:
        with stop_on_signal(), Testbed(p["hosts"], p["rate_mbit"]) as tb, tempfile.TemporaryDirectory() as tmp:
            for seed, arm in ctx.progress([(s, a) for s in ctx.seeds for a in ctx.arms], desc=ctx.protocol.name):
                def one():
                    c, codes = launch(tb, arm, p, seed, tmp)
                    if c is None:
                        print(f"{arm} seed {seed}: workers failed {codes}", flush=True)
                        return {"failed": 1, "final_acc": None, **{f"time_to_{t:g}_s": None for t in targets}}
                    if c.get("auto"):
                        decisions[f"{arm} / seed {seed}"] = c["auto"]
                    return run_metrics(c, targets)
                m = ctx.measure(arm, seed, one)
                if m.get("final_acc") is not None:
                    print(f"seed {seed} {arm:<32} final {m['final_acc']:.4f}  step {1e3 * m['step_s']:.1f} ms  "
                          f"to {targets[0]:g}: {_t(m[f'time_to_{targets[0]:g}_s'])}", flush=True)
    except TestbedUnavailable as exc:
        raise UserError(f"long_horizon: {exc}") from None
    if decisions:
        ctx.note("auto_decisions", {k: auto_summary(d) for k, d in decisions.items()})
    best = compare_auto(ctx.runs, f"time_to_{targets[0]:g}_s")
    if best:
        ctx.note("best_fixed", best)
    runs = list(ctx.runs) + _reused(ctx)
    tables(ctx, runs, targets)
    plot(runs, ctx.figure(".png"), f"cifar_resnet20_v1 on MNIST-5k: {p['hosts']} hosts at {p['rate_mbit']:g} Mbit/s",
         targets[0])


def compare_auto(runs, metric):
    """Auto against the best fixed choice: the configuration run here (auto and reused arms aside)
    whose time to the target has the lowest geometric mean over the seeds, every seed reaching it;
    each auto run gets ``time_over_best_fixed`` (its time / the best fixed one's, same seed; None
    where either misses) and ``best_fixed``. Returns {"arm", "geometric_mean_s"} or None."""
    by = {}
    for r in runs:
        if not r.get("reused_from"):
            by.setdefault(r["arm"], {})[r["seed"]] = r["metrics"].get(metric)
    means = {a: math.exp(sum(math.log(v) for v in vs.values()) / len(vs)) for a, vs in by.items()
             if not a.startswith("auto") and vs and all(v for v in vs.values())}
    if not means or not any(a.startswith("auto") for a in by):
        return None
    best = min(means, key=means.get)
    for r in runs:
        if r["arm"].startswith("auto"):
            mine, theirs = r["metrics"].get(metric), by[best].get(r["seed"])
            r["metrics"]["best_fixed"] = best
            r["metrics"]["time_over_best_fixed"] = mine / theirs if mine and theirs else None
    return {"arm": best, "geometric_mean_s": means[best]}


def combined_metrics(runs, params):
    """For ``gluon-suite bench combine``: auto against the best fixed choice over all the slices'
    seeds (each slice chose it from its own seeds)."""
    compare_auto(runs, f"time_to_{float(params['targets'][0]):g}_s")


def combined_tables(runs, params, notes):
    """For ``gluon-suite bench combine``: the summary and auto tables over the union of the slices'
    runs (arms in the order the runs first name them; reused arms are the ones with ``reused_from``)."""
    got, reuses = {}, {r["arm"]: {} for r in runs if r.get("reused_from")}
    decisions = {k: v for n in notes for k, v in (n.get("auto_decisions") or {}).items()}
    arms = list(dict.fromkeys(r["arm"] for r in runs))

    class Shim:   # what ``tables`` reads of a runner context
        class protocol:
            data = {"reuses": reuses}

            @staticmethod
            def arms():
                return arms
        notes = {"auto_decisions": decisions}

        @staticmethod
        def table(name, columns, rows, caption=None):
            got[name] = {"columns": list(columns), "rows": rows, "caption": caption}

        @staticmethod
        def note(key, value):
            pass
    tables(Shim, runs, [float(t) for t in params["targets"]])
    return got


def _reused(ctx):
    from gluon_suite.evidence import store
    out = []
    for arm, src in (ctx.protocol.data.get("reuses") or {}).items():
        _, res = store.latest(os.path.join(ctx.root, "bench", "results"), src["protocol"])
        if res:
            out += [dict(r, arm=arm) for r in res["runs"] if r["arm"] == src.get("arm", arm) and r["seed"] in ctx.seeds]
    return out


def _t(x):
    return "not reached" if x is None else f"{x:.2f} s"


def _geo_ratio(by, a, b, metric):
    """Geometric mean over the seeds both arms have of a's metric / b's; None where a seed misses."""
    mine = {r["seed"]: r["metrics"].get(metric) for r in by.get(a, [])}
    theirs = {r["seed"]: r["metrics"].get(metric) for r in by.get(b, [])}
    pairs = [(mine[s], theirs[s]) for s in mine if s in theirs]
    if not pairs or not all(x and y for x, y in pairs):
        return None
    return math.exp(sum(math.log(x / y) for x, y in pairs) / len(pairs))


def tables(ctx, runs, targets):
    by = {}
    for r in runs:
        by.setdefault(r["arm"], []).append(r)
    arms = [a for a in ctx.protocol.arms() if a in by]
    floor = next((a for a in arms if a in (ctx.protocol.data.get("reuses") or {})), "sync" if "sync" in by else None)
    t0 = f"time_to_{targets[0]:g}_s"
    rows = []
    for a in arms:
        ms = [r["metrics"] for r in by[a] if not r["metrics"].get("failed")]
        row = [a, str(len(ms)), _ms([m["final_acc"] for m in ms], ".4f")]
        row += [_ms([m.get(f"time_to_{t:g}_s") for m in ms], unit=" s") for t in targets]
        row.append(_ms([m.get(f"step_to_{targets[0]:g}") for m in ms], ".0f"))
        row.append(_ms([1e3 * m["step_s"] for m in ms], ".1f", " ms"))
        row.append(_ms([m["wire_bytes"] / 1e6 for m in ms], ".1f", " MB"))
        for ref in ("sync", floor):
            g = _geo_ratio(by, a, ref, t0) if ref and a != ref else None
            row.append("-" if g is None else f"{g:.2f}x")
        rows.append(row)
    ctx.table("summary", ["configuration", "seeds", "final accuracy", *(f"time to {t:g}" for t in targets),
                          f"steps to {targets[0]:g}", "step (median)", "bytes sent per worker",
                          f"time to {targets[0]:g} / sync's", f"time to {targets[0]:g} / the floor's"], rows,
              caption="mean ± sample std over seeds; training time (evaluations off the clock), to a target "
                      "interpolated between evaluations; ratios are geometric means over seeds of the paired "
                      "ratios; the floor is sync on the unthrottled link")
    if "sync" in by and floor and floor != "sync":
        fast = [r["metrics"]["step_s"] for r in by[floor] if r["metrics"].get("step_s")]
        slow = [r["metrics"]["step_s"] for r in by["sync"] if r["metrics"].get("step_s")]
        if fast and slow:
            f, s = sorted(fast)[len(fast) // 2], sorted(slow)[len(slow) // 2]
            ctx.note("sync_step_decomposition", {"floor_step_s": f, "step_s": s, "communication_fraction": 1 - f / s})
    decisions = ctx.notes.get("auto_decisions") or {}
    if decisions:
        rows = [[k, d["first"] if d["first"] == d["choice"] else f"{d['first']} → {d['choice']} at step {d['step']}",
                 "n/a" if d["predicted_sf"] is None else f"{d['predicted_sf']:.3f}",
                 "n/a" if d["link_mbit"] is None else f"{d['link_mbit']:.0f}", str(d["step"])]
                for k, d in decisions.items()]
        ctx.table("auto", ["run", "auto's choice", "its predicted scaling factor", "link it measured (Mbit/s)",
                           "decided at step"], rows)


def plot(runs, path, title, target):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, ax = plt.subplots(figsize=(6.5, 4))
    by = {}
    for r in runs:
        if r["metrics"].get("curve_time_s"):
            by.setdefault(r["arm"], []).append(r["metrics"])
    for name, ms in by.items():
        n = min(len(m["curve_time_s"]) for m in ms)
        t = np.array([m["curve_time_s"][:n] for m in ms]).mean(0)
        a = np.array([m["curve_test_acc"][:n] for m in ms])
        line, = ax.plot(t, a.mean(0), "-", lw=1.2, label=f"{name} ({len(ms)} seeds)")
        ax.fill_between(t, a.mean(0) - a.std(0), a.mean(0) + a.std(0), color=line.get_color(), alpha=0.15)
    ax.axhline(target, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_ylim(0.9, 1.0)
    ax.set_xlabel("training time (s, evaluations excluded)")
    ax.set_ylabel("test accuracy (1,000 images)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def pilot(args):
    """Sync alone, one seed, on the testbed: the curve and step time that choose a protocol's steps,
    cadence and slow link (written to ``args.out``; a pilot, not a claim)."""
    from gluon_suite.whatif.testbed import Testbed, stop_on_signal
    p = {**DEFAULTS, "steps": args.pilot, "rate_mbit": args.rate, "warmup_steps": args.warmup,
         "eval_every": args.eval_every, "size": args.size, "wd": args.wd, "shift": args.shift, "lr": args.lr}
    started = time.time()
    with stop_on_signal(), Testbed(p["hosts"], p["rate_mbit"]) as tb, tempfile.TemporaryDirectory() as tmp:
        c, codes = launch(tb, args.config, p, args.seed, tmp, quiet=False)
    if c is None:
        raise SystemExit(f"long_horizon pilot: workers failed {codes}")
    rec = {"what": "pilot (not a claim)", "config": args.config, "seed": args.seed, "params": p,
           "wall_s": time.time() - started, "load": os.getloadavg(), "record": c,
           "metrics": {k: v for k, v in run_metrics(c, p["targets"]).items() if not k.startswith("curve")}}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rec, f, indent=1)
    os.replace(tmp, args.out)
    print(json.dumps(rec["metrics"], indent=1))


def main():
    if "--worker" not in sys.argv and "--pilot" not in sys.argv:
        from gluon_suite.cli import entry
        sys.argv = ["gluon-suite", "bench", "run", *(sys.argv[1:] or ["long_horizon_floor"])]
        return entry()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--worker", help="the configuration's name in CONFIGS (the role of a testbed host)")
    ap.add_argument("--params", help="the run's parameters (JSON file)")
    ap.add_argument("--pilot", type=int, help="steps of a pilot run")
    ap.add_argument("--config", default="sync")
    ap.add_argument("--rate", type=float, default=10000.0)
    ap.add_argument("--warmup", type=int, default=DEFAULTS["warmup_steps"])
    ap.add_argument("--eval-every", type=int, default=DEFAULTS["eval_every"])
    ap.add_argument("--size", type=int, default=DEFAULTS["size"])
    ap.add_argument("--wd", type=float, default=DEFAULTS["wd"])
    ap.add_argument("--lr", type=float, default=DEFAULTS["lr"])
    ap.add_argument("--shift", type=int, default=DEFAULTS["shift"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.pilot:
        return pilot(args)
    with open(args.params) as f:
        p = json.load(f)
    return worker(args.worker, p, args.seed, args.out)


if __name__ == "__main__":
    main()
