#!/usr/bin/env python
"""CSER vs synchronous SGD vs EF-SGD on a slow network (needs root): namespace hosts at
100 Mbit/s train on the digits data, several seeds each; training time (evaluation excluded) to a
target test accuracy and final accuracy per algorithm, as mean and standard deviation over seeds.
Each published claim is a protocol, bench/protocols/cser_speedup_*.yaml (model, link, hosts,
configurations, seeds, targets, criteria); ``evidence(ctx)`` runs one and the runner writes the
result, with a plot of accuracy over training time (mean curve, band = one standard deviation),
under bench/results/<protocol>/. Times to a target are interpolated between the epoch-end
evaluations (``gluon_suite.evidence.stats.time_to_target``).

Models: ``mlp`` (64-1024-1024-10, 1.1M parameters, 6 tensors) and ``resnet`` (GluonCV's
cifar_resnet20_v1, 0.27M parameters in 65 tensors, BatchNorm, on the 8x8 images).

``resnet`` runs in CSER's regime (docs/methods.md, "CSER"): 40 epochs with the same linear
learning-rate warm-up for every algorithm (the authors' rule for the most compressed C1, R1 = 128
at lr 0.05: 10 epochs), CSER at about 32x and 64x overall with H = R1/R2 as in the authors' runs,
CSER-PL and EF-SGD top-k. The resets each coordinate of the error goes through, steps / (H R2), are
reported.

Every epoch the worker-averaged model is evaluated with the same BatchNorm choice for every
algorithm (``--eval-bn``, default ``recompute``: statistics recomputed for the averaged weights on 8
of the epoch's batches per worker), and, where it differs, with the trainer's default choice
(``test_acc_default_bn``: recomputed only for algorithms with local models, the running statistics
otherwise). Runs before 2026-12-05's correction used the default choice for the timed accuracy,
which handed the local-model algorithms freshly recomputed statistics and sync lagging running
ones: early in training that alone moved the epoch that reached 0.95 (docs/whatif.md).

At the end, the averaged model is evaluated with each BatchNorm choice (statistics
recomputed for the averaged weights, averaged, each worker's own), beside each worker's own model
and the distance of the local models from their average.

    sudo .venv/bin/gluon-suite bench run cser_speedup_resnet [--quick] [--seeds 0]

(root, for the namespaces). ``--worker`` is the role each testbed host runs.
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

CONFIGS_MLP = {
    "sync": dict(algorithm="sync"),
    # R1 = 128 every step, R2 = 64 every 2 steps: 1/128 + 1/128 = 1/64 of the dense bytes
    "cser (grbs, 64x overall)": dict(algorithm="cser", compressor="grbs", ratio=128, period=2, compressor2="grbs", ratio2=64),
    "ef-sgd (top-k, 64x)": dict(algorithm="ef", compressor="topk", ratio=64),
}
# the authors' structure: H = R1/R2, so that the update and the error cost the same bytes
CONFIGS_RESNET = {
    "sync": dict(algorithm="sync"),
    # 1/64 every step + 1/4 every 16 steps: 1/64 + 1/64 = 1/32
    "cser (grbs 64/4, H 16: 32x)": dict(algorithm="cser", compressor="grbs", ratio=64, period=16,
                                        compressor2="grbs", ratio2=4),
    # 1/128 + 1/(8 x 16) = 1/64
    "cser (grbs 128/8, H 16: 64x)": dict(algorithm="cser", compressor="grbs", ratio=128, period=16,
                                         compressor2="grbs", ratio2=8),
    # nothing every step, 1/4 of the model every 8 steps: 1/32
    "cser-pl (grbs 4, H 8: 32x)": dict(algorithm="cser", compressor="zero", period=8, compressor2="grbs", ratio2=4),
    "ef-sgd (top-k, 64x)": dict(algorithm="ef", compressor="topk", ratio=64),
}
MODELS = {
    "mlp": dict(desc="MLP 64-1024-1024-10 (1.1M parameters) on digits, NAG lr 0.05, batch 32/worker",
                lr=0.05, target=0.95, epochs=8, warmup=0, configs=CONFIGS_MLP),
    "resnet": dict(desc="cifar_resnet20_v1 (0.27M parameters, 65 tensors, BatchNorm) on digits 8x8, NAG lr "
                        "0.05, batch 32/worker, linear warm-up over 10 epochs for every algorithm",
                   lr=0.05, target=0.95, epochs=40, warmup=10, configs=CONFIGS_RESNET),
}
# CSER's two variant switches (docs/methods.md, "CSER"), on the 64x configuration: the operand of
# C1 (the fresh update, as in the paper's pseudo-code, or the local model, as in the authors' code)
# and what the H-th step sends (C1 and C2, or C2 instead of C1)
_CSER64 = CONFIGS_RESNET["cser (grbs 128/8, H 16: 64x)"]
VARIANTS_RESNET = {
    f"cser 64x c1={c1} reset={rs}": dict(_CSER64, c1_operand=c1, reset_step=rs)
    for c1 in ("update", "model") for rs in ("both", "c2_only")
}
# the trainer's own choice (gluon_suite/distributed/auto.py): it measures the first steps (local
# steps, with CSER-PL among the candidates), then takes the least compression whose predicted
# scaling factor reaches 0.9, and checks it. Its protocols (cser_speedup_resnet_auto*) compare it
# with the fixed configurations run or reused there (plain local SGD among them: CSER-PL with R2 = 1,
# what auto's measuring steps run and a choice it can make)
CONFIGS_AUTO = {"auto": dict(algorithm="auto"),
                "local sgd (H 8: 8x)": dict(algorithm="cser", compressor="zero", period=8, compressor2="none"),
                # auto with CSER-PL at periods 8, 16 and 32 (--auto-periods): at 100 Mbit/s the rule then
                # picks local SGD every 32 steps, which runs fixed beside it
                "auto (periods 8, 16, 32)": dict(algorithm="auto", auto_periods=(8, 16, 32)),
                "local sgd (H 32: 32x)": dict(algorithm="cser", compressor="zero", period=32, compressor2="none"),
                # the first version: the choice is not checked against the measured step time
                "auto (no verification)": dict(algorithm="auto", auto_verify=False),
                # the check's first version: it timed the chosen algorithm from its second step on
                "auto (check from its 2nd step)": dict(algorithm="auto", auto_verify_skip=1),
                # the candidates before CSER-PL joined them (sync, fp16 and CSER at R1 = 4 ... 256)
                "auto (without CSER-PL)": dict(algorithm="auto", auto_candidates=("sync", "fp16", "cser"))}
CONFIGS = {**CONFIGS_MLP, **CONFIGS_RESNET, **VARIANTS_RESNET, **CONFIGS_AUTO}


def resets_per_coordinate(cfg, steps):
    """How often each coordinate of a CSER error goes through the error synchronisation:
    steps / H resets, each selecting 1/R2 of the coordinates (the GRBS ratio of C2)."""
    if cfg.get("algorithm") != "cser":
        return None
    return steps / cfg["period"] / float(cfg.get("ratio2") or 1)


def build(model):
    import mxnet as mx
    from mxnet import gluon
    if model == "mlp":
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(1024, activation="relu", in_units=64),
                gluon.nn.Dense(1024, activation="relu", in_units=1024), gluon.nn.Dense(10, in_units=1024))
        net.initialize(mx.init.Xavier())
        return net, lambda x: x.reshape(len(x), -1)
    import gluon_suite.cv.models  # noqa: F401  registers the vision models
    from gluon_suite.model_zoo import get_model
    net = get_model("cifar_resnet20_v1", classes=10)
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 1, 8, 8)))  # finish deferred initialisation before the trainer broadcasts
    return net, lambda x: x.reshape(len(x), 1, 8, 8)


def worker(model, cfg, epochs, seed, out, eval_bn="recompute"):
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    from gluon_suite.cv.data import load_digits
    from gluon_suite.distributed import DistributedTrainer, averaging, get_communicator
    from gluon_suite.optim.schedules import WarmupConstantDecay
    comm = get_communicator()
    mx.random.seed(seed)
    np.random.seed(seed)
    xtr, ytr = load_digits("train")
    xte, yte = load_digits("test")
    net, shape = build(model)
    xtr, xte = shape(xtr), shape(xte)
    B = 32
    steps = len(ytr) // (B * comm.size)
    lr, warm = MODELS[model]["lr"], min(MODELS[model]["warmup"], epochs // 2)
    opt = {"learning_rate": lr, "momentum": 0.9}
    if warm:   # the same linear warm-up for every algorithm, then the constant rate
        total = steps * epochs
        opt["lr_scheduler"] = WarmupConstantDecay(lr, total, steps * warm, total - steps * warm, min_lr=lr)
    cfg = dict(cfg)
    verify, skip = cfg.pop("auto_verify", True), cfg.pop("auto_verify_skip", None)
    kinds = cfg.pop("auto_candidates", None)
    if verify is False or skip is not None or kinds is not None:
        from gluon_suite.distributed.auto import CANDIDATE_KINDS, AutoAlgorithm
        cfg["algorithm"] = AutoAlgorithm(seed=seed, verify=verify, verify_skip=skip,
                                         candidates=kinds or CANDIDATE_KINDS)
    algo = cfg.pop("algorithm")
    if isinstance(algo, str):   # the rest of cfg are its options (the other algorithms' are dropped)
        from gluon_suite.distributed.registry import algorithm_from
        algo = algorithm_from(algo, {**cfg, "seed": seed}, keyed=True)
    tr = DistributedTrainer(net.collect_params(), "nag", opt, communicator=comm, algorithm=algo)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    has_bn = bool(averaging.batchnorm_layers(net))
    rec, train_s = [], 0.0
    for epoch in range(epochs):
        mx.nd.waitall()
        t0 = time.perf_counter()
        perm = np.random.RandomState(1000 * seed + epoch).permutation(len(ytr))[comm.rank::comm.size]
        for k in range(steps):
            idx = perm[k * B:(k + 1) * B]
            with autograd.record():
                loss = loss_fn(net(mx.nd.array(xtr[idx])), mx.nd.array(ytr[idx]))
            loss.backward()
            tr.step(B)
        mx.nd.waitall()
        train_s += time.perf_counter() - t0   # the clock stops for evaluation (a dense averaging)
        acc = evaluate(tr, net, xtr, xte, yte, perm, steps, B, eval_bn)
        # the trainer's own default (bn='auto': statistics recomputed only for local models) beside it
        default = averaging.resolve_choice("auto", has_bn, tr.algorithm.local_models, comm.size)
        acc_default = acc if default == eval_bn else evaluate(tr, net, xtr, xte, yte, perm, steps, B, default)
        rec.append({"epoch": epoch + 1, "time_s": train_s, "test_acc": acc, "test_acc_default_bn": acc_default,
                    "default_bn": default,
                    "wire_bytes": comm.stats.total_wire})
    final = final_metrics(tr, net, xtr, xte, yte, perm, steps, B) if model == "resnet" else {}
    comm.barrier()
    if comm.rank == 0:
        with open(out, "w") as f:
            json.dump({"curve": rec, "final": final, "steps": steps * epochs,
                       "auto": getattr(tr.algorithm, "decision", None)}, f)


def evaluate(tr, net, xtr, xte, yte, perm, steps, B, bn_choice):
    """Test accuracy of the worker-averaged model with the BatchNorm choice ``bn_choice``
    (``recompute``: statistics recomputed for the averaged weights on this epoch's batches)."""
    import mxnet as mx
    bn = (mx.nd.array(xtr[perm[k * B:(k + 1) * B]]) for k in range(steps))
    with tr.averaged(net, bn, bn=bn_choice):
        return float((net(mx.nd.array(xte)).argmax(axis=1).asnumpy() == yte).mean())


def final_metrics(tr, net, xtr, xte, yte, perm, steps, B):
    """The averaged model's accuracy with each BatchNorm choice, each worker's own accuracy and the
    relative distance of its model from the average, ||x_i - mean(x)|| / ||mean(x)||."""
    import mxnet as mx
    import numpy as np
    comm = tr.communicator

    def acc():
        return float((net(mx.nd.array(xte)).argmax(axis=1).asnumpy() == yte).mean())

    def flat():
        return np.concatenate([p.data().asnumpy().ravel() for p in net.collect_params().values()
                               if p.grad_req != "null"])
    out = {}
    for choice in ("recompute", "average", "local"):
        bn = (mx.nd.array(xtr[perm[k * B:(k + 1) * B]]) for k in range(steps))
        with tr.averaged(net, bn, bn=choice) as report:
            out[f"averaged_acc_bn_{choice}"] = acc()
            if choice == "average":
                mean = flat()
        if choice == "recompute":
            out["bn_recompute_seconds"] = report["seconds"]
    local, mine = acc(), flat()
    dist = float(np.linalg.norm(mine - mean) / max(np.linalg.norm(mean), 1e-12))
    rows = comm.allgather(mx.nd.array([[local, dist]], dtype="float64"), name="cser.final").asnumpy()
    out["local_acc"] = rows[:, 0].tolist()
    out["local_distance_from_average"] = rows[:, 1].tolist()
    return out


def auto_summary(d):
    """The parts of an auto decision a table needs."""
    pred = {c["name"]: c["scaling_factor"] for c in d.get("candidates", [])}
    return {"choice": d["choice"], "step": d.get("step"), "reached": d.get("reached"),
            "predicted_sf": pred.get(d["choice"]), "predicted_sf_sync": pred.get("sync"),
            "link_mbit": d.get("link", {}).get("mbit"),
            "per_collective_ms": 1e3 * d.get("link", {}).get("per_collective_s", 0.0),
            "compute_ms": 1e3 * (d.get("measured", {}).get("compute_s", 0.0) + d.get("measured", {}).get("optimizer_s", 0.0)),
            "allreduce_ms": 1e3 * d.get("measured", {}).get("allreduce_s", 0.0),
            # with local measuring steps: the models' timed average (waiting + K t0 + W/B)
            "average_ms": 1e3 * d.get("measured", {}).get("average_s", 0.0),
            "first": d.get("reverted_from", d["choice"]), "verified": d.get("verified")}


def run_metrics(c, targets, cfg):
    """One run's metrics from a worker's record ``c`` (curve of epochs, final metrics, steps, auto's
    decision): final accuracy, the training time to each target by
    :func:`gluon_suite.evidence.stats.time_to_target` (linear interpolation between the epoch-end
    evaluations before and at the target; None when never reached), the epoch that reached it, the
    first and the later epochs' training time, and the curve itself."""
    from gluon_suite.evidence.stats import time_to_target
    curve = c["curve"]
    times = [r["time_s"] for r in curve]
    accs = [r["test_acc"] for r in curve]
    epochs = [t1 - t0 for t0, t1 in zip([0.0] + times[:-1], times)]
    later = sorted(epochs[1:])
    out = {"final_acc": accs[-1], "total_s": times[-1], "first_epoch_s": epochs[0],
           "later_epoch_s": later[len(later) // 2] if later else None,
           "wire_bytes": curve[-1]["wire_bytes"], "steps": c["steps"],
           "resets_per_coordinate": resets_per_coordinate(cfg, c["steps"]),
           "curve_time_s": times, "curve_test_acc": accs,
           "curve_test_acc_default_bn": [r["test_acc_default_bn"] for r in curve]}
    for t in targets:
        out[f"time_to_{t:g}_s"] = time_to_target(times, accs, t)
        out[f"epoch_to_{t:g}"] = next((r["epoch"] for r in curve if r["test_acc"] >= t), None)
    final = c.get("final") or {}
    for k in ("averaged_acc_bn_recompute", "averaged_acc_bn_average", "averaged_acc_bn_local",
              "bn_recompute_seconds"):
        if k in final:
            out[k] = final[k]
    if final.get("local_acc"):
        out["local_acc_min"], out["local_acc_max"] = min(final["local_acc"]), max(final["local_acc"])
        d = final["local_distance_from_average"]
        out["local_distance_min"], out["local_distance_max"] = min(d), max(d)
    d = c.get("auto")
    if d:
        s = auto_summary(d)
        out["auto_switched_to_sync"] = int(s["first"] != s["choice"])
        out["auto_compressing"] = int(s["choice"] != "sync")
        out["auto_predicted_sf"] = s["predicted_sf"]
        out["auto_predicted_sf_sync"] = s["predicted_sf_sync"]
        out["auto_step"] = s["step"]
    return out


def _one_run(tb, p, config, seed, tmp):
    """Launch the ``hosts`` workers of one (configuration, seed) on the testbed; the worker record,
    or None when a worker failed."""
    out = os.path.join(tmp, f"r{seed}.json")
    if os.path.exists(out):
        os.remove(out)
    procs = tb.launch_horovod([sys.executable, os.path.abspath(__file__), "--worker", config,
                               "--model", p["model"], "--epochs", str(p["epochs"]), "--seed", str(seed),
                               "--out", out, "--eval-bn", p["eval_bn"]],
                              env={"OMP_NUM_THREADS": "1", "MXNET_CPU_WORKER_NTHREADS": "1",
                                   "PYTHONPATH": os.path.dirname(HERE)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    codes = tb.wait_all(procs, timeout=p.get("run_timeout_s", 1800))
    if any(codes) or not os.path.exists(out):
        return None, codes
    with open(out) as f:
        return json.load(f), codes


def evidence(ctx):
    """A protocol of bench/protocols/cser_speedup_*.yaml: every (seed, arm) on one testbed of
    ``params.hosts`` namespace hosts at ``params.rate_mbit``, seed by seed, the arms in turn; each
    arm is a configuration of ``CONFIGS`` (its own name, or ``params.configs[arm]``). Tables: the
    summary per arm (reused arms included, from the file the runner names), the averaged model's
    BatchNorm choices and the local models (resnet), auto's decisions; a plot of the curves."""
    from gluon_suite.utils.errors import UserError
    from gluon_suite.whatif.testbed import Testbed, TestbedUnavailable, stop_on_signal
    p = dict(ctx.params)
    p.setdefault("eval_bn", "recompute")
    targets = [float(t) for t in p["targets"]]
    names = p.get("configs") or {}
    configs = {a: names.get(a, a) for a in ctx.arms}
    unknown = [c for c in configs.values() if c not in CONFIGS]
    if unknown:
        raise UserError(f"cser_speedup: unknown configuration(s) {', '.join(map(repr, unknown))}; "
                        f"known: {', '.join(map(repr, CONFIGS))}")
    jobs = [(seed, arm) for seed in ctx.seeds for arm in ctx.arms]
    ctx.note("testbed", {"hosts": p["hosts"], "rate_mbit": p["rate_mbit"], "eval_bn": p["eval_bn"],
                         "evaluation": "the worker-averaged model on the whole test set after every epoch"})
    decisions = {}
    try:
        with stop_on_signal(), Testbed(p["hosts"], p["rate_mbit"]) as tb, tempfile.TemporaryDirectory() as tmp:
            for seed, arm in ctx.progress(jobs, desc=ctx.protocol.name):
                def one():
                    c, codes = _one_run(tb, p, configs[arm], seed, tmp)
                    if c is None:
                        print(f"{arm} seed {seed}: workers failed {codes}", flush=True)
                        return {"failed": 1, "final_acc": None,
                                **{f"time_to_{t:g}_s": None for t in targets}}
                    if c.get("auto"):
                        decisions[f"{arm} / seed {seed}"] = c["auto"]
                    return run_metrics(c, targets, CONFIGS[configs[arm]])
                m = ctx.measure(arm, seed, one)
                if m.get("final_acc") is not None:
                    print(f"seed {seed} {arm:<32} final acc {m['final_acc']:.4f}  total {m['total_s']:.1f} s  "
                          f"to {targets[0]:g}: {_s(m[f'time_to_{targets[0]:g}_s'])}", flush=True)
    except TestbedUnavailable as exc:
        raise UserError(f"cser_speedup: {exc}") from None
    if decisions:
        ctx.note("auto_decisions", {k: auto_summary(d) for k, d in decisions.items()})
    runs = ctx.runs + _reused(ctx)
    tables(ctx, runs, configs, targets)
    plot(runs, ctx.figure(".png"), f"{p['model']}: {p['hosts']} hosts at {p['rate_mbit']:g} Mbit/s", targets[0])


def _reused(ctx):
    """The runs of the protocol's reused arms, from the latest result of the protocol they come
    from (the runner records that file and its hash in the result)."""
    from gluon_suite.evidence import store
    out = []
    for arm, src in (ctx.protocol.data.get("reuses") or {}).items():
        _, res = store.latest(os.path.join(ctx.root, "bench", "results"), src["protocol"])
        if res:
            out += [dict(r, arm=arm) for r in res["runs"] if r["arm"] == src.get("arm", arm) and r["seed"] in ctx.seeds]
    return out


def _s(x, fmt=".2f", unit=" s"):
    return "not reached" if x is None else f"{x:{fmt}}{unit}"


def _ms(xs, fmt=".2f", unit=""):
    from gluon_suite.evidence.stats import summary
    if not xs:
        return "n/a"
    if any(x is None for x in xs):
        return f"not reached by {sum(x is None for x in xs)} of {len(xs)}"
    s = summary(xs)
    return f"{s['mean']:{fmt}}" + (f" ± {s['std']:{fmt}}" if s["std"] is not None else "") + unit


def tables(ctx, runs, configs, targets):
    """The summary table (and, where measured, the final-model and auto tables) over ``runs``."""
    import math
    by = {}
    for r in runs:
        by.setdefault(r["arm"], []).append(r)
    reused = set(ctx.protocol.data.get("reuses") or {})
    arms = [a for a in ctx.protocol.arms() if a in by]
    base = by.get("sync")
    t0 = f"time_to_{targets[0]:g}_s"
    rows = []
    for a in arms:
        ms = [r["metrics"] for r in by[a] if not r["metrics"].get("failed")]
        row = [a + (" (reused)" if a in reused else ""), str(len(ms)), _ms([m["final_acc"] for m in ms], ".4f")]
        for t in targets:
            row.append(_ms([m.get(f"time_to_{t:g}_s") for m in ms], unit=" s"))
        ratio = "-"
        if base and a != "sync":
            mine = {r["seed"]: r["metrics"].get(t0) for r in by[a]}
            theirs = {r["seed"]: r["metrics"].get(t0) for r in base}
            pairs = [(mine[s], theirs[s]) for s in mine if s in theirs]
            if pairs and all(x and y for x, y in pairs):
                ratio = f"{math.exp(sum(math.log(y / x) for x, y in pairs) / len(pairs)):.2f}x"
        row += [ratio, _ms([m.get("first_epoch_s") for m in ms], unit=" s"),
                _ms([m.get("later_epoch_s") for m in ms], unit=" s"), _ms([m.get("total_s") for m in ms], ".1f", " s")]
        rows.append(row)
    ctx.table("summary", ["configuration", "seeds", "final accuracy", *(f"time to {t:g}" for t in targets),
                          f"sync's time to {targets[0]:g} / this (geometric mean)", "first epoch",
                          "later epochs (median)", "whole run (training)"], rows,
              caption="mean ± sample std over seeds; times are training time (evaluation off the clock), "
                      "to a target interpolated between the epoch-end evaluations")
    fin = [a for a in arms if any("averaged_acc_bn_recompute" in r["metrics"] for r in by[a])]
    if fin:
        rows = []
        for a in fin:
            ms = [r["metrics"] for r in by[a] if "averaged_acc_bn_recompute" in r["metrics"]]
            rpc = ms[0].get("resets_per_coordinate")
            rows.append([a, "—" if rpc is None else f"{rpc:.1f}",
                         *(_ms([m[f"averaged_acc_bn_{k}"] for m in ms], ".4f") for k in ("recompute", "average", "local")),
                         f"{min(m['local_acc_min'] for m in ms):.3f}–{max(m['local_acc_max'] for m in ms):.3f}",
                         f"{100 * min(m['local_distance_min'] for m in ms):.1f}–{100 * max(m['local_distance_max'] for m in ms):.1f}%"])
        ctx.table("final_model", ["configuration", "resets per coordinate", "averaged model, recomputed statistics",
                                  "averaged statistics", "each worker's own statistics", "workers' own models",
                                  "distance of a local model from the average"], rows,
                  caption="the models at the end of the run; ranges over workers and seeds")
    decisions = ctx.notes.get("auto_decisions") or {}
    if decisions:
        rows = [[k, d["first"] if d["first"] == d["choice"] else f"{d['first']} → {d['choice']} at step {d['step']}",
                 "n/a" if d["predicted_sf"] is None else f"{d['predicted_sf']:.3f}",
                 "n/a" if d["predicted_sf_sync"] is None else f"{d['predicted_sf_sync']:.3f}",
                 "n/a" if d["link_mbit"] is None else f"{d['link_mbit']:.0f}"] for k, d in decisions.items()]
        ctx.table("auto", ["run", "auto's choice", "predicted scaling factor of the first choice",
                           "predicted scaling factor of sync", "link it measured (Mbit/s)"], rows)


def plot(runs, path, title, target):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, ax = plt.subplots(figsize=(6, 4))
    by = {}
    for r in runs:
        if r["metrics"].get("curve_time_s"):
            by.setdefault(r["arm"], []).append(r["metrics"])
    for name, ms in by.items():
        t = np.array([m["curve_time_s"] for m in ms])
        a = np.array([m["curve_test_acc"] for m in ms])
        tm, am, sd = t.mean(0), a.mean(0), a.std(0)
        line, = ax.plot(tm, am, "o-", ms=3, label=f"{name} ({len(ms)} seeds)")
        ax.fill_between(tm, am - sd, am + sd, color=line.get_color(), alpha=0.2)
    ax.axhline(target, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("training time (s, evaluation excluded)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    """The worker role (``--worker``, launched on each testbed host); anything else runs a protocol
    through ``gluon-suite bench run``."""
    if "--worker" not in sys.argv:
        from gluon_suite.cli import entry
        sys.argv = ["gluon-suite", "bench", "run", *(sys.argv[1:] or ["cser_speedup_resnet"])]
        return entry()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--model", choices=sorted(MODELS), default="mlp")
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--eval-bn", choices=("recompute", "auto", "average"), default="recompute")
    ap.add_argument("--worker", required=True, help="the configuration's name in CONFIGS")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    return worker(args.model, CONFIGS[args.worker], args.epochs, args.seed, args.out, args.eval_bn)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    main()
