#!/usr/bin/env python
"""CSER vs synchronous SGD vs EF-SGD on a slow network (needs root): namespace hosts at
100 Mbit/s train on the digits data, several seeds each; training time (evaluation excluded) to a
target test accuracy and final accuracy per algorithm, as mean and standard deviation over seeds.
JSON and a plot of accuracy over training time (mean curve, band = one standard deviation) in
bench/results/cser_speedup_<model>.json / .png.

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

    sudo .venv/bin/python bench/cser_speedup.py --model resnet --seeds 3
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
# scaling factor reaches 0.9, and checks it. Its runs go to cser_speedup_<model>_auto[_<rate>mbit].json,
# beside the fixed configurations run or reused there (plain local SGD among them: CSER-PL with R2 = 1,
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


def _stats(values):
    import numpy as np
    v = [x for x in values if x is not None]
    if len(v) < len(values):  # a seed that never reached the target: no mean time to it
        return {"mean": None, "std": None, "n": len(v), "of": len(values)}
    return {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
            "n": len(v), "of": len(values)}


def summarise(curves, target):
    """Per algorithm: each seed's numbers, then mean and spread (sample std) over seeds."""
    rows = {}
    for name, runs in curves.items():
        per = []
        for c in runs:
            c = c["curve"] if isinstance(c, dict) else c
            hit = next((r["time_s"] for r in c if r["test_acc"] >= target), None)
            per.append({"final_acc": c[-1]["test_acc"], "time_to_target_s": hit,
                        "total_s": c[-1]["time_s"], "wire_bytes": c[-1]["wire_bytes"]})
        rows[name] = {"seeds": per, **{k: _stats([p[k] for p in per])
                                       for k in ("final_acc", "time_to_target_s", "total_s")}}
        finals = [c.get("final") for c in runs if isinstance(c, dict) and c.get("final")]
        if finals:
            for k in ("averaged_acc_bn_recompute", "averaged_acc_bn_average", "averaged_acc_bn_local",
                      "bn_recompute_seconds"):
                rows[name][k] = _stats([f[k] for f in finals])
            rows[name]["local_acc"] = [f["local_acc"] for f in finals]
            rows[name]["local_distance_from_average"] = [f["local_distance_from_average"] for f in finals]
            cfg = CONFIGS.get(name, {})   # runs of an earlier version keep their own name
            rows[name]["resets_per_coordinate"] = resets_per_coordinate(cfg, runs[0]["steps"])
        decisions = [c.get("auto") for c in runs if isinstance(c, dict) and c.get("auto")]
        if decisions:
            rows[name]["auto_choices"] = [auto_summary(d) for d in decisions]
        loads = [c.get("load_avg_1min") for c in runs if isinstance(c, dict) and c.get("load_avg_1min") is not None]
        if loads:
            rows[name]["load_avg_1min"] = {"min": min(loads), "max": max(loads)}
    base = rows.get("sync")
    for name, r in rows.items():
        if not base or name == "sync":
            continue
        verdicts = {}
        for key in ("time_to_target_s", "final_acc"):
            a, b = r[key], base[key]
            if a["mean"] is None or b["mean"] is None:
                verdicts[key] = "not reached by every seed"
                continue
            diff = a["mean"] - b["mean"]
            spread = max(a["std"], b["std"])
            verdicts[key] = ("within noise" if abs(diff) <= spread else
                             ("higher" if diff > 0 else "lower") + " than sync beyond the spread")
        r["vs_sync"] = verdicts
        t, tb = r["time_to_target_s"]["mean"], base["time_to_target_s"]["mean"]
        r["speedup_to_target_vs_sync"] = (tb / t) if t and tb else None
    if "auto" in rows:   # auto against the fastest fixed configuration to the target
        fixed = {k: v["time_to_target_s"]["mean"] for k, v in rows.items()
                 if not k.startswith("auto") and v["time_to_target_s"]["mean"] is not None}
        a = rows["auto"]["time_to_target_s"]
        if fixed and a["mean"] is not None:
            best = min(fixed, key=fixed.get)
            b = rows[best]["time_to_target_s"]
            rows["auto"]["vs_best_fixed"] = {
                "best": best, "time_ratio": a["mean"] / b["mean"],
                "verdict": ("within noise" if abs(a["mean"] - b["mean"]) <= max(a["std"], b["std"]) else
                            ("slower" if a["mean"] > b["mean"] else "faster") + " beyond the spread")}
    return rows


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


def plot(curves, path, title, target):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, runs in curves.items():
        runs = [c["curve"] if isinstance(c, dict) else c for c in runs]
        t = np.array([[r["time_s"] for r in c] for c in runs])
        a = np.array([[r["test_acc"] for r in c] for c in runs])
        tm, am, sd = t.mean(0), a.mean(0), a.std(0)
        line, = ax.plot(tm, am, "o-", ms=3, label=f"{name} ({len(runs)} seeds)")
        ax.fill_between(tm, am - sd, am + sd, color=line.get_color(), alpha=0.2)
    ax.axhline(target, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("training time (s, evaluation excluded)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="mlp")
    ap.add_argument("--epochs", type=int, default=None, help="default: 8 (mlp), 40 (resnet)")
    ap.add_argument("--target", type=float, default=None, help="test accuracy to time (default 0.95)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--rate-mbit", type=float, default=100)
    ap.add_argument("--seed-start", type=int, default=0, help="first seed (seeds run: S .. S+seeds-1)")
    ap.add_argument("--append", action="store_true",
                    help="add these runs to the results already in the JSON (same epochs, hosts, rate, target)")
    ap.add_argument("--configs", default=None,
                    help="subset of the configurations to run, separated by commas, or by semicolons when a name "
                         "holds a comma (default: all of the model's)")
    ap.add_argument("--reuse", default=None,
                    help="a result file under bench/results whose runs of the configurations not run here "
                         "enter this file's comparison (same epochs, hosts, rate and target)")
    ap.add_argument("--variants", action="store_true",
                    help="resnet only: CSER 64x's four variants (C1 operand x reset step) instead of the "
                         "algorithm comparison; results in cser_speedup_resnet_variants.json")
    ap.add_argument("--suffix", default="",
                    help="added to the result file's name (e.g. _rerun: a comparison run afresh side by side)")
    ap.add_argument("--eval-bn", choices=("recompute", "auto", "average"), default="recompute",
                    help="BatchNorm statistics of the model evaluated each epoch, the same for every algorithm "
                         "(default: recomputed for the averaged weights; 'auto' is the trainer's default, "
                         "which recomputes only for algorithms with local models)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    spec = MODELS[args.model]
    epochs = args.epochs or spec["epochs"]
    target = args.target or spec["target"]
    if args.worker:
        return worker(args.model, CONFIGS[args.worker], epochs, args.seed, args.out, args.eval_bn)
    from gluon_suite.whatif.testbed import Testbed, TestbedUnavailable, stop_on_signal
    from gluon_suite.utils import write_json
    from gluon_suite.utils.progress import progress
    configs = spec["configs"]
    stem = os.path.join(HERE, "results", f"cser_speedup_{args.model}")
    if args.variants:
        if args.model != "resnet":
            ap.error("--variants needs --model resnet")
        configs, stem = VARIANTS_RESNET, stem + "_variants"
    if args.configs:
        # names hold commas ('cser-pl (grbs 4, H 8: 32x)'): ';' separates them when given
        wanted = [c.strip() for c in args.configs.split(";" if ";" in args.configs else ",") if c.strip()]
        if "auto" in wanted and not args.variants:
            configs, stem = {**configs, **CONFIGS_AUTO}, stem + "_auto"
        unknown = [c for c in wanted if c not in configs]
        if unknown:
            ap.error(f"--configs: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(map(repr, configs))}")
        configs = {c: configs[c] for c in wanted}
    if args.rate_mbit != 100:    # another link: its own file (e.g. the compute floor on a fast link)
        stem += f"_{args.rate_mbit:g}mbit"
    stem += args.suffix
    curves = {name: [] for name in configs}
    reused = {}
    mine = {"epochs": epochs, "hosts": args.hosts, "rate_mbit": args.rate_mbit, "target_acc": target,
            "eval_bn": args.eval_bn}

    def setting(results, key):   # files without eval_bn were evaluated with the trainer's default
        return results.get(key, "auto" if key == "eval_bn" else None)

    def differs(results):
        return any(setting(results, k) != v for k, v in mine.items())

    if args.append and os.path.exists(stem + ".json"):
        with open(stem + ".json") as f:
            old = json.load(f)
        reused.update(old.get("reused") or {})
        if differs(old):
            ap.error(f"--append: {stem}.json was run with other settings "
                     f"({', '.join(f'{k} {setting(old, k)}' for k in mine)}); run without --append to start afresh")
        for name, runs in old["curves"].items():
            curves.setdefault(name, []).extend(runs)
    if args.reuse:
        path = os.path.join(HERE, "results", os.path.basename(args.reuse))
        with open(path) as f:
            other = json.load(f)
        if differs(other):
            ap.error(f"--reuse: {args.reuse} was run with other settings "
                     f"({', '.join(f'{k} {setting(other, k)}' for k in mine)})")
        for name, runs in other["curves"].items():
            if name not in configs and name in CONFIGS:
                curves[name] = list(runs)
                reused[name] = os.path.basename(path)
    jobs = [(seed, name) for seed in range(args.seed_start, args.seed_start + args.seeds) for name in configs]

    def write(curves):
        curves = {k: v for k, v in curves.items() if v}
        rows = summarise(curves, target)
        write_json(stem + ".json",
                   {"benchmark": "cser_speedup", "date": time.strftime("%Y-%m-%d"), "hosts": args.hosts,
                    "rate_mbit": args.rate_mbit, "target_acc": target, "epochs": epochs, "eval_bn": args.eval_bn,
                    "seeds_run": {k: len(v) for k, v in curves.items()}, "reused": reused,
                    "seeds": max(map(len, curves.values()), default=0), "model": spec["desc"], "results": rows, "curves": curves})
        plot(curves, stem + ".png", f"{args.model}: {args.hosts} hosts at {args.rate_mbit:g} Mbit/s", target)
        return rows

    try:
        with stop_on_signal(), Testbed(args.hosts, args.rate_mbit) as tb, tempfile.TemporaryDirectory() as tmp:
            for seed, name in progress(jobs, desc="runs"):
                out = os.path.join(tmp, "r.json")
                procs = tb.launch_horovod([sys.executable, os.path.abspath(__file__), "--worker", name,
                                           "--model", args.model, "--epochs", str(epochs),
                                           "--seed", str(seed), "--out", out, "--eval-bn", args.eval_bn],
                                          env={"OMP_NUM_THREADS": "1", "MXNET_CPU_WORKER_NTHREADS": "1",
                                               "PYTHONPATH": os.path.dirname(HERE)},
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                codes = tb.wait_all(procs, timeout=1800)
                if any(codes):
                    print(f"{name} seed {seed}: workers failed {codes}")
                    continue
                with open(out) as f:
                    c = json.load(f)
                c["seed"], c["load_avg_1min"] = seed, os.getloadavg()[0]   # how busy the cores were
                curves[name].append(c)
                last = c["curve"][-1]
                extra = "".join(f"  {k} {v:.4f}" for k, v in c["final"].items() if k.startswith("averaged_acc"))
                if c.get("auto"):
                    extra += f"  auto: {c['auto']['choice']} (link {c['auto']['link']['mbit']:.0f} Mbit/s)"
                print(f"seed {seed} {name:<30} final acc {last['test_acc']:.4f}  total {last['time_s']:.1f} s{extra}",
                      flush=True)
                write(curves)      # partial results survive an interrupted bench
    except TestbedUnavailable as exc:
        print(f"skipped: {exc}")
        return
    rows = write(curves)

    def ms(s, fmt):
        return "never (some seed)" if s["mean"] is None else f"{s['mean']:{fmt}} ± {s['std']:{fmt}}"
    print(f"{'algorithm':<30}{'final acc':>18}{'time to ' + str(target):>22}{'speedup':>9}  vs sync")
    for name, r in rows.items():
        sp = r.get("speedup_to_target_vs_sync")
        print(f"{name:<30}{ms(r['final_acc'], '.4f'):>18}{ms(r['time_to_target_s'], '.1f'):>22}"
              f"{(f'{sp:.1f}x' if sp else '-'):>9}  {r.get('vs_sync', {}).get('time_to_target_s', '')}")
    print(f"results: {os.path.relpath(stem, os.path.dirname(HERE))}.json")


if __name__ == "__main__":
    main()
