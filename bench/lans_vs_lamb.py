#!/usr/bin/env python
"""LANS vs LAMB for BERT pretraining at two global batches (through gradient accumulation), each
optimizer with its best peak learning rate from a small sweep, over several seeds. The protocol
(bench/protocols/lans_vs_lamb.yaml) fixes the model, corpus, steps, batches, sweep, seeds and the
criteria (LANS's final MLM loss lower than LAMB's at each batch, paired over seeds, 95% interval).

The same tiny BERT (bert_2_128_2) on gensim's Lee background corpus, the same number of steps and
the same schedule shape (warm-up 10%, plateau 30%, linear decay to 0) for every run. Per global
batch and optimizer:

1. sweep: one run per peak learning rate on seed 0 (arm ``OPT_bBATCH_lrRATE``); the chosen rate is
   the one with the lowest final MLM loss (mean of the last 5 steps' MLM loss);
2. seeds: the arm ``OPT_bBATCH`` at the chosen rate on every seed; its seed 0 is the sweep's
   seed-0 run at that rate (recorded again, with ``reused_from_sweep`` naming the sweep arm).

    gluon-suite bench run lans_vs_lamb [--quick] [--seeds 0,1]
"""
import math
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from seedstats import mean_std  # noqa: E402


def arm(opt, batch, lr=None):
    """The protocol's arm name: ``lans_b256`` (the chosen rate over seeds) or ``lans_b256_lr0.04``
    (one sweep point)."""
    return f"{opt}_b{batch}" if lr is None else f"{opt}_b{batch}_lr{lr:g}"


def run_one(p, opt, lr, batch, seed):
    """One pretraining run; returns its final metrics and its per-step MLM loss and accuracy."""
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    micro = min(int(p["micro_batch"]), batch)
    if batch % micro:
        raise ValueError(f"global batch {batch} is not a multiple of the micro-batch {micro}")
    last = int(p["last"])
    t0 = time.time()
    with tempfile.TemporaryDirectory() as out:
        res = pretrain_bert({"out": out, "optimizer": opt, "wd": float(p["weight_decay"]), "dropout": 0.0,
                             "seed": seed, "corpus": p["corpus"], "progress": False, "ckpt_every": 10 ** 9,
                             "phases": [{"seq_len": p["seq_len"], "batch_size": micro,
                                         "accumulate": batch // micro, "steps": p["steps"],
                                         "lr": lr, "warmup": 0.1, "constant": 0.3}]},
                            LocalCommunicator(), log=lambda m: None)
    h = res["history"]
    loss, acc = [r["mlm_loss"] for r in h], [r["mlm_acc"] for r in h]
    return {"lr": lr, "batch": batch, "accumulate": batch // micro,
            "final_mlm_loss": sum(loss[-last:]) / len(loss[-last:]),
            "final_mlm_acc": sum(acc[-last:]) / len(acc[-last:]),
            "first_mlm_loss": loss[0], "run_wall_s": time.time() - t0, "mlm_loss": loss, "mlm_acc": acc}


def choose_lr(sweep):
    """The lr whose run has the lowest final MLM loss (``sweep``: {lr: run metrics}); a non-finite
    loss never wins."""
    finite = {lr: r for lr, r in sweep.items() if math.isfinite(r["final_mlm_loss"])}
    if not finite:
        raise RuntimeError("every run of the sweep diverged")
    return min(finite, key=lambda lr: finite[lr]["final_mlm_loss"])


def sweep_rows(sweeps, chosen):
    """The sweep table: one row per (batch, optimizer), the seed-0 final MLM loss at each rate,
    the chosen rate marked with *, and whether it sits at the grid's edge."""
    rows = []
    for (batch, opt), sweep in sweeps.items():
        lrs = sorted(sweep)
        cells = [f"{lr:g}: {sweep[lr]['final_mlm_loss']:.3f}" + ("*" if lr == chosen[batch, opt] else "") for lr in lrs]
        edge = len(lrs) > 1 and chosen[batch, opt] in (lrs[0], lrs[-1])
        rows.append([str(batch), opt, ", ".join(cells), f"{chosen[batch, opt]:g}", "yes" if edge else "no"])
    return rows


def summary_rows(cells):
    """The summary table: per (batch, optimizer), the chosen rate, final MLM loss and accuracy
    (mean ± sample std over the seeds) and the loss per seed."""
    rows = []
    for (batch, opt), c in cells.items():
        if not c["seeds"]:
            continue
        f = mean_std([r["final_mlm_loss"] for r in c["seeds"]])
        a = mean_std([r["final_mlm_acc"] for r in c["seeds"]])
        rows.append([str(batch), opt, f"{c['lr']:g}", f"{f['mean']:.3f} ± {f['std']:.3f}",
                     f"{a['mean']:.3f} ± {a['std']:.3f}", ", ".join(f"{r['final_mlm_loss']:.3f}" for r in c["seeds"])])
    return rows


def plot(cells, p, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    batches = list(p["batches"])
    fig, axes = plt.subplots(1, len(batches), figsize=(5.5 * len(batches), 4), squeeze=False)
    for ax, b in zip(axes[0], batches):
        for (batch, opt), c in cells.items():
            if batch != b or not c["seeds"]:
                continue
            loss = np.array([r["mlm_loss"] for r in c["seeds"]])
            m = loss.mean(0)
            sd = loss.std(0, ddof=1) if len(loss) > 1 else 0 * m
            x = np.arange(1, len(m) + 1)
            line, = ax.plot(x, m, label=f"{opt} lr {c['lr']:g} ({len(loss)} seeds)")
            ax.fill_between(x, m - sd, m + sd, color=line.get_color(), alpha=0.25)
        ax.set_xlabel("step")
        ax.set_ylabel("masked-LM loss")
        ax.set_title(f"global batch {b} (mean ± sample std)")
        ax.legend()
    fig.suptitle(f"tiny BERT on {p['corpus']}, seq {p['seq_len']}, {p['steps']} steps")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def evidence(ctx):
    """The protocol bench/protocols/lans_vs_lamb.yaml: per global batch and optimizer the sweep on
    seed 0, the chosen rate by the fixed rule, then the chosen rate on every seed; a sweep table, a
    summary table and the loss curves."""
    p = ctx.params
    batches, opts = [int(b) for b in p["batches"]], list(p["optimizers"])
    sweeps, chosen, cells = {}, {}, {}
    plan = [(b, o) for b in batches for o in opts]
    for b, o in ctx.progress(plan, desc="lans_vs_lamb (batch, optimizer)"):
        sweep = sweeps[b, o] = {}
        for lr in [float(x) for x in p["lrs"][o]]:
            sweep[lr] = ctx.measure(arm(o, b, lr), 0, lambda: run_one(p, o, lr, b, 0))
        lr = chosen[b, o] = choose_lr(sweep)
        cell = cells[b, o] = {"lr": lr, "seeds": []}
        for seed in ctx.seeds:
            if seed == 0:
                # the sweep's seed-0 run at the chosen rate is seed 0 of the arm
                run = ctx.measure(arm(o, b), 0, lambda: dict(sweep[lr], reused_from_sweep=arm(o, b, lr)))
            else:
                run = ctx.measure(arm(o, b), seed, lambda: run_one(p, o, lr, b, seed))
            cell["seeds"].append(run)
    ctx.table("sweep", ["global batch", "optimizer", "final MLM loss per peak lr (seed 0; * chosen)",
                        "chosen lr", "at the sweep's edge"], sweep_rows(sweeps, chosen))
    ctx.table("summary", ["global batch", "optimizer", "lr", "final MLM loss", "final MLM accuracy",
                          "loss per seed"], summary_rows(cells),
              caption=f"final = mean over the last {p['last']} steps; mean ± sample std over seeds "
                      f"{', '.join(map(str, ctx.seeds))}")
    ctx.note("chosen_lr", {arm(o, b): lr for (b, o), lr in chosen.items()})
    plot(cells, p, ctx.figure(".png"))


if __name__ == "__main__":
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "lans_vs_lamb", *sys.argv[1:]]
    entry()
