#!/usr/bin/env python
"""float16 with float32 master weights against float32: the digits ResNeSt-14 (the zoo card's
recipe, configs/cv/digits_resnest14_cser.yaml, with synchronous SGD on one worker at the card's
global batch of 64), same seeds, final and best test accuracy; mean and sample std over seeds, and
whether float16 reaches float32 within 1 point.

MXNet 1.9.1 has no float16 matrix product on the CPU, so on a CPU the float16 runs use
``GLUON_SUITE_EMULATE_FLOAT16=1``: float16 weights, activations and gradients, float32 master
weights in the optimizer (multi_precision), and every layer computing from float16 inputs in
float32 with its output rounded to float16, as GPU kernels do (docs/gpus.md). On a GPU
(``--gpus 0``) nothing is emulated.

    .venv/bin/python bench/float16_digits.py [--seeds 3] [--epochs 15] [--gpus -1]
        [--cache bench/results/float16_digits_runs.jsonl]
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
from seedstats import mean_std, plot_band  # noqa: E402

CONFIG = os.path.join(os.path.dirname(HERE), "configs", "cv", "digits_resnest14_cser.yaml")
TOLERANCE = 0.01      # the target: float16 within 1 point of float32


def run_one(args, dtype, seed):
    """One training run; its per-epoch test accuracy, best and final accuracy, time."""
    import yaml
    from gluon_suite.cv.recipe import train_classification
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.utils.devices import EMULATE_FLOAT16
    with open(CONFIG, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    cfg.update(algorithm="sync", compressor="none", ratio=None, period=None, batch_size=args.batch_size,
               epochs=args.epochs, seed=seed, dtype=dtype, gpus=args.gpus, progress=False)
    old = os.environ.get(EMULATE_FLOAT16)
    os.environ[EMULATE_FLOAT16] = "1"      # used only where the run is float16 on the CPU
    t0 = time.time()
    try:
        with tempfile.TemporaryDirectory() as out:
            res = train_classification({**cfg, "out": out}, LocalCommunicator(), log=lambda m: None)
    finally:
        if old is None:
            os.environ.pop(EMULATE_FLOAT16, None)
        else:
            os.environ[EMULATE_FLOAT16] = old
    return {"dtype": dtype, "seed": seed, "final_acc": res["final_acc"], "best_acc": res["best_acc"],
            "test_acc": [h["test_acc"] for h in res["history"]], "wall_s": time.time() - t0}


def compare(runs):
    """float16 against float32 on the final accuracy: the difference of the means, the larger
    std, whether float16 is within ``TOLERANCE`` of float32 (not below it by more), and the noise
    verdict."""
    rows = {d: {"final_acc": mean_std([r["final_acc"] for r in rs]), "best_acc": mean_std([r["best_acc"] for r in rs]),
                "final_acc_seeds": [r["final_acc"] for r in rs], "wall_s": mean_std([r["wall_s"] for r in rs])}
            for d, rs in runs.items()}
    a, b = rows["float16"]["final_acc"], rows["float32"]["final_acc"]
    diff, spread = a["mean"] - b["mean"], max(a["std"], b["std"])
    return rows, {"difference": diff, "spread": spread, "within_1_point": diff >= -TOLERANCE,
                  "verdict": "within noise" if abs(diff) <= spread else
                             f"float{'16' if diff > 0 else '32'} higher by more than the spread",
                  "time_ratio": rows["float16"]["wall_s"]["mean"] / rows["float32"]["wall_s"]["mean"]}


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for dtype, rs in runs.items():
        plot_band(ax, [r["test_acc"] for r in rs], dtype, marker="o", ms=3)
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1.0)
    ax.legend()
    ax.set_title("digits ResNeSt-14: float16 (float32 masters) vs float32")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=64, help="one worker; the card's global batch")
    ap.add_argument("--gpus", default="-1", help="-1: the CPU (float16 emulated); 0: GPU 0")
    ap.add_argument("--cache", default="", help="JSON-lines file of finished runs: read, reused and appended to")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args(argv)
    from gluon_suite.utils import progress, write_json
    cache = RunCache(args.cache)
    runs = {"float32": [], "float16": []}
    for seed, dtype in progress([(s, d) for s in range(args.seeds) for d in runs], desc="runs"):
        key = {"dtype": dtype, "seed": seed, "epochs": args.epochs, "batch": args.batch_size, "gpus": args.gpus}
        r = cache.get(key, lambda: run_one(args, dtype, seed))
        runs[dtype].append(r)
        print(f"seed {seed} {dtype}: final {r['final_acc']:.4f}  best {r['best_acc']:.4f}  {r['wall_s']:.0f} s",
              flush=True)
    rows, cmp = compare(runs)
    emulated = str(args.gpus).strip() in ("", "-1")
    result = {"benchmark": "float16_digits", "date": time.strftime("%Y-%m-%d"),
              "device": "CPU, float16 emulated (GLUON_SUITE_EMULATE_FLOAT16=1)" if emulated else f"GPU {args.gpus}",
              "recipe": f"{os.path.relpath(CONFIG, os.path.dirname(HERE))} with algorithm sync, 1 worker, batch "
                        f"{args.batch_size}, {args.epochs} epochs",
              "seeds": args.seeds, "results": rows, "float16_vs_float32": cmp, "runs": runs}
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "float16_digits.json"), result)
    plot(runs, os.path.join(args.out, "float16_digits.png"))
    for d, r in rows.items():
        print(f"{d:<8} final {r['final_acc']['mean']:.4f} ± {r['final_acc']['std']:.4f}  best "
              f"{r['best_acc']['mean']:.4f} ± {r['best_acc']['std']:.4f}  {r['wall_s']['mean']:.0f} s per run")
    print(f"float16 - float32: {cmp['difference'] * 100:+.2f} points (spread {cmp['spread'] * 100:.2f}): "
          f"{cmp['verdict']}; within 1 point: {'yes' if cmp['within_1_point'] else 'NO'}; "
          f"time x{cmp['time_ratio']:.1f}")
    return result


if __name__ == "__main__":
    main()
