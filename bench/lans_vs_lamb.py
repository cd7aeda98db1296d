#!/usr/bin/env python
"""LANS vs LAMB for BERT pretraining at two global batches (through gradient accumulation), each
optimizer with its best peak learning rate from a small sweep, over several seeds.

The same tiny BERT (bert_2_128_2) on a real corpus from gensim's test data (default: the Lee
background corpus), the same number of steps and the same schedule shape (warm-up 10%, plateau
30%, linear decay to 0) for every run. Per global batch and optimizer:

1. sweep: one run per peak learning rate on seed 0; the chosen rate is the one with the lowest
   final MLM loss (mean of the last 5 steps' MLM loss);
2. seeds: the chosen rate on seeds 1 .. N-1 (the seed-0 run of the sweep is reused as seed 0).

Reports mean and sample standard deviation (ddof 1) of the final MLM loss and accuracy; LANS vs
LAMB is 'within noise' when the difference of the means is at most the larger of the two standard
deviations. JSON and a plot (mean curve, band mean +- std, one panel per batch) in bench/results/.

    .venv/bin/python bench/lans_vs_lamb.py [--batches 256,1024] [--seeds 3] [--steps 50]
        [--lrs-lans 0.02,0.04,0.08] [--lrs-lamb 0.02,0.04,0.08] [--optimizers lans,lamb,adam]
"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from runcache import RunCache  # noqa: E402
from seedstats import mean_std  # noqa: E402

LAST = 5                 # the final MLM loss / accuracy is the mean over the last LAST steps
WD = {"lans": 0.01, "lamb": 0.01, "adam": 0.0}   # Adam's L2 is coupled, so it gets none
DEFAULT_LRS = {"lans": "0.02,0.04,0.08", "lamb": "0.02,0.04,0.08", "adam": "0.001,0.002,0.004"}
RULE = ("per global batch and optimizer, one run per peak lr on seed 0; the chosen lr has the lowest "
        f"final MLM loss (mean of the last {LAST} steps); then seeds 1..N-1 at that lr, the seed-0 "
        "sweep run reused as seed 0")


def floats(text):
    return [float(x) for x in text.split(",") if x.strip()]


def ints(text):
    return [int(x) for x in text.split(",") if x.strip()]


def run_one(args, opt, lr, batch, seed):
    """One pretraining run; returns its final metrics and its per-step MLM loss and accuracy."""
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    import numpy as np
    micro = min(args.micro_batch, batch)
    if batch % micro:
        raise SystemExit(f"global batch {batch} is not a multiple of --micro-batch {micro}")
    t0 = time.time()
    with tempfile.TemporaryDirectory() as out:
        res = pretrain_bert({"out": out, "optimizer": opt, "wd": WD[opt], "dropout": 0.0, "seed": seed,
                             "corpus": args.corpus, "progress": False, "ckpt_every": 10 ** 9,
                             "phases": [{"seq_len": args.seq_len, "batch_size": micro,
                                         "accumulate": batch // micro, "steps": args.steps,
                                         "lr": lr, "warmup": 0.1, "constant": 0.3}]},
                            LocalCommunicator(), log=lambda m: None)
    h = res["history"]
    loss, acc = [r["mlm_loss"] for r in h], [r["mlm_acc"] for r in h]
    return {"optimizer": opt, "lr": lr, "batch": batch, "seed": seed,
            "final_mlm_loss": float(np.mean(loss[-LAST:])), "final_mlm_acc": float(np.mean(acc[-LAST:])),
            "first_mlm_loss": loss[0], "wall_s": time.time() - t0, "mlm_loss": loss, "mlm_acc": acc}


def run_key(args, opt, lr, batch, seed):
    """What makes two runs the same run (for ``--cache``)."""
    return [args.corpus, args.seq_len, args.steps, min(args.micro_batch, batch), batch, opt, lr, seed, WD[opt]]


def cached_run(args, cache, opt, lr, batch, seed):
    """``run_one``, or the same run from ``cache`` (a ``RunCache`` on ``--cache``)."""
    return cache.get(run_key(args, opt, lr, batch, seed), lambda: run_one(args, opt, lr, batch, seed))


def choose_lr(sweep):
    """The lr whose run has the lowest final MLM loss (``sweep``: {lr: run}); a non-finite loss
    never wins."""
    import math
    finite = {lr: r for lr, r in sweep.items() if math.isfinite(r["final_mlm_loss"])}
    if not finite:
        raise SystemExit("every run of the sweep diverged")
    return min(finite, key=lambda lr: finite[lr]["final_mlm_loss"])


def verdict(a, b, name_a, name_b):
    """Compare final MLM losses (lower is better): 'within noise' when |mean a - mean b| is at
    most the larger standard deviation, else which one is lower by more than the spread."""
    diff, spread = a["mean"] - b["mean"], max(a["std"], b["std"])
    if abs(diff) <= spread:
        word = "within noise"
    else:
        word = f"{name_a if diff < 0 else name_b} lower by more than the spread"
    return {"difference": diff, "spread": spread, "verdict": word}


def summarise(cell):
    """Statistics of one (batch, optimizer) cell: the sweep, the chosen lr, the seeds."""
    import numpy as np
    lrs = sorted(cell["sweep"])
    seeds = cell["seeds"]
    loss = np.array([r["mlm_loss"] for r in seeds])
    out = {"sweep": {str(lr): cell["sweep"][lr]["final_mlm_loss"] for lr in lrs},
           "chosen_lr": cell["lr"],
           "chosen_at_grid_edge": len(lrs) > 1 and cell["lr"] in (lrs[0], lrs[-1]),
           "seeds": [r["seed"] for r in seeds],
           "final_mlm_loss_seeds": [r["final_mlm_loss"] for r in seeds],
           "final_mlm_acc_seeds": [r["final_mlm_acc"] for r in seeds],
           "final_mlm_loss": mean_std([r["final_mlm_loss"] for r in seeds]),
           "final_mlm_acc": mean_std([r["final_mlm_acc"] for r in seeds]),
           "wall_s_per_run": mean_std([r["wall_s"] for r in list(cell["sweep"].values()) + seeds[1:]]),
           "curve_mean": loss.mean(0).tolist(),
           "curve_std": (loss.std(0, ddof=1) if len(seeds) > 1 else 0 * loss[0]).tolist()}
    return out


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    batches = result["batches"]
    fig, axes = plt.subplots(1, len(batches), figsize=(5.5 * len(batches), 4), squeeze=False)
    for ax, b in zip(axes[0], batches):
        for opt, s in result["results"][str(b)].items():
            m, sd = np.array(s["curve_mean"]), np.array(s["curve_std"])
            x = np.arange(1, len(m) + 1)
            fl = s["final_mlm_loss"]
            line, = ax.plot(x, m, label=f"{opt} lr {s['chosen_lr']:g}: {fl['mean']:.3f} ± {fl['std']:.3f}")
            ax.fill_between(x, m - sd, m + sd, color=line.get_color(), alpha=0.25)
        ax.set_xlabel("step")
        ax.set_ylabel("masked-LM loss")
        ax.set_title(f"global batch {b}, {len(result['seeds'])} seeds (mean ± std)")
        ax.legend()
    fig.suptitle(f"tiny BERT on {result['corpus']}, seq {result['seq_len']}, {result['steps']} steps")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="256,1024", help="global batches, comma-separated")
    ap.add_argument("--seeds", type=int, default=3, help="seeds at the chosen lr (0 .. N-1)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--micro-batch", type=int, default=128,
                    help="samples per forward/backward; global batch / micro-batch = accumulation")
    ap.add_argument("--corpus", default="gensim:lee_background")
    ap.add_argument("--optimizers", default="lans,lamb", help="any of lans, lamb, adam")
    for opt, lrs in DEFAULT_LRS.items():
        ap.add_argument(f"--lrs-{opt}", default=lrs, help=f"peak lrs swept for {opt} (default {lrs})")
    ap.add_argument("--cache", default="", help="JSON-lines file of finished runs: read, reused and "
                    "appended to (resumes an interrupted bench; a changed setting means a new run)")
    ap.add_argument("--budget-note", default="", help="recorded in the JSON as 'budget'")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args(argv)
    from gluon_suite.utils import write_json

    batches, opts = ints(args.batches), [o for o in args.optimizers.split(",") if o]
    for o in opts:
        if o not in WD:
            raise SystemExit(f"unknown optimizer {o!r}; choose from {', '.join(WD)}")
    if args.seeds < 1:
        raise SystemExit("--seeds must be >= 1")
    sweeps = {o: floats(getattr(args, f"lrs_{o}")) for o in opts}
    n_runs = len(batches) * sum(len(v) + args.seeds - 1 for v in sweeps.values())
    t_start, done, cache = time.time(), 0, RunCache(args.cache)
    cells = {b: {} for b in batches}
    for b in batches:
        for o in opts:
            cell = cells[b][o] = {"sweep": {}}
            for lr in sweeps[o]:
                cell["sweep"][lr] = r = cached_run(args, cache, o, lr, b, 0)
                done += 1
                print(f"[{done}/{n_runs}] batch {b} {o} lr {lr:g} seed 0 (sweep): final MLM loss "
                      f"{r['final_mlm_loss']:.4f}, acc {r['final_mlm_acc']:.4f}  {r['wall_s']:.0f} s", flush=True)
            cell["lr"] = choose_lr(cell["sweep"])
            cell["seeds"] = [cell["sweep"][cell["lr"]]]
            for seed in range(1, args.seeds):
                r = cached_run(args, cache, o, cell["lr"], b, seed)
                cell["seeds"].append(r)
                done += 1
                print(f"[{done}/{n_runs}] batch {b} {o} lr {cell['lr']:g} seed {seed}: final MLM loss "
                      f"{r['final_mlm_loss']:.4f}, acc {r['final_mlm_acc']:.4f}  {r['wall_s']:.0f} s", flush=True)

    results = {str(b): {o: summarise(cells[b][o]) for o in opts} for b in batches}
    comparison, lines = {}, []
    for b in batches:
        r = results[str(b)]
        row = {o: f"{r[o]['final_mlm_loss']['mean']:.4f} ± {r[o]['final_mlm_loss']['std']:.4f} "
                  f"(lr {r[o]['chosen_lr']:g})" for o in opts}
        if "lans" in r and "lamb" in r:
            comparison[str(b)] = verdict(r["lans"]["final_mlm_loss"], r["lamb"]["final_mlm_loss"], "LANS", "LAMB")
            row["LANS vs LAMB"] = comparison[str(b)]["verdict"]
        lines.append(f"global batch {b}: " + "; ".join(f"{k} {v}" for k, v in row.items()))
    wall = time.time() - t_start
    result = {"benchmark": "lans_vs_lamb", "date": time.strftime("%Y-%m-%d"), "model": "bert_2_128_2",
              "corpus": args.corpus, "seq_len": args.seq_len, "steps": args.steps, "batches": batches,
              "micro_batch": args.micro_batch,
              "accumulation": {str(b): b // min(args.micro_batch, b) for b in batches},
              "schedule": "warm-up 10% of steps, plateau 30%, linear decay to 0 (WarmupConstantDecay)",
              "weight_decay": {o: WD[o] for o in opts}, "dropout": 0.0,
              "seeds": list(range(args.seeds)), "lr_sweep": {o: sweeps[o] for o in opts},
              "lr_selection": RULE,
              "final": f"mean MLM loss (and accuracy) over the last {LAST} steps; mean and sample std "
                       "(ddof 1) over the seeds",
              "noise_rule": "'within noise' when |mean LANS - mean LAMB| <= the larger of the two stds",
              "budget": args.budget_note, "wall_s": wall,
              "runs_wall_s": sum(r["wall_s"] for b in batches for o in opts
                                 for r in list(cells[b][o]["sweep"].values()) + cells[b][o]["seeds"][1:]),
              "results": results, "lans_vs_lamb": comparison, "summary": lines,
              "runs": [{k: v for k, v in r.items() if k not in ("mlm_loss", "mlm_acc")}
                       for b in batches for o in opts
                       for r in list(cells[b][o]["sweep"].values()) + cells[b][o]["seeds"][1:]]}
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "lans_vs_lamb.json"), result)
    plot(result, os.path.join(args.out, "lans_vs_lamb.png"))
    for line in lines:
        print(line)
    print(f"{len(result['runs'])} runs in {wall / 60:.1f} min; results: "
          f"{os.path.join(args.out, 'lans_vs_lamb.json')}, .png", flush=True)
    return result


if __name__ == "__main__":
    main()
