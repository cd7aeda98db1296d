#!/usr/bin/env python
"""float16 with float32 master weights against float32: the digits ResNeSt-14 (the zoo card's
recipe, configs/cv/digits_resnest14_cser.yaml, with synchronous SGD on one worker at the card's
global batch of 64), same seeds, final and best test accuracy. The protocol
(bench/protocols/float16_digits.yaml) fixes the schedule, the seeds and the criterion (float16 no
worse than float32 by more than 1 point, paired over seeds, 95% interval).

MXNet 1.9.1 has no float16 matrix product on the CPU, so on a CPU the float16 runs use
``GLUON_SUITE_EMULATE_FLOAT16=1``: float16 weights, activations and gradients, float32 master
weights in the optimizer (multi_precision), and every layer computing from float16 inputs in
float32 with its output rounded to float16, as GPU kernels do (docs/gpus.md). On a GPU
(``--gpus 0``) nothing is emulated.

    gluon-suite bench run float16_digits [--quick]
"""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from seedstats import plot_band  # noqa: E402

CONFIG = os.path.join(os.path.dirname(HERE), "configs", "cv", "digits_resnest14_cser.yaml")


def run_one(p, dtype, seed):
    """One training run; its per-epoch test accuracy, best and final accuracy, time."""
    import yaml
    from gluon_suite.cv.recipe import train_classification
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.utils.devices import EMULATE_FLOAT16
    with open(CONFIG, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    cfg.update(algorithm="sync", compressor="none", ratio=None, period=None, batch_size=p["batch_size"],
               epochs=p["epochs"], seed=seed, dtype=dtype, gpus=p["gpus"], progress=False)
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
    return {"final_acc": res["final_acc"], "best_acc": res["best_acc"],
            "test_acc": [h["test_acc"] for h in res["history"]], "wall_s": time.time() - t0}


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


def evidence(ctx):
    """The protocol bench/protocols/float16_digits.yaml: every (seed, dtype) run, a summary table and
    the accuracy curves."""
    from gluon_suite.evidence.stats import summary
    p = ctx.params
    runs = {d: [] for d in ctx.arms}
    for seed, dtype in ctx.progress([(s, d) for s in ctx.seeds for d in ctx.arms], desc="float16_digits runs"):
        r = ctx.measure(dtype, seed, lambda: run_one(p, dtype, seed))
        runs[dtype].append(r)
    def ms(xs, f=".4f"):
        s = summary(xs)
        return f"{s['mean']:{f}}" + (f" ± {s['std']:{f}}" if s["std"] is not None else "")
    rows = [[d, ms([r["final_acc"] for r in rs]), ms([r["best_acc"] for r in rs]), ms([r["wall_s"] for r in rs], ".0f")]
            for d, rs in runs.items()]
    ctx.table("summary", ["dtype", "final test accuracy", "best test accuracy", "seconds per run"], rows)
    ctx.note("device", "CPU, float16 emulated (GLUON_SUITE_EMULATE_FLOAT16=1)" if _emulated(p) else f"GPU {p['gpus']}")
    plot(runs, ctx.figure(".png"))


def _emulated(p):
    return str(p.get("gpus", "-1")).strip() in ("", "-1")


if __name__ == "__main__":
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "float16_digits", *sys.argv[1:]]
    entry()
