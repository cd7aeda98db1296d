#!/usr/bin/env python
"""float16 with float32 master weights and a dynamic loss scale against float32: BERT pretraining
(the tiny bert_2_128_2, LANS, masked LM + next sentence) on gensim's Lee background corpus, same
seeds and settings for both; the final masked-LM loss is the mean of the last 10 steps. The
protocol (bench/protocols/float16_bert.yaml) fixes the schedule, the seeds and the criterion
(float16 no worse than float32 by more than 2%, paired over seeds, 95% interval).

On a CPU the float16 runs use ``GLUON_SUITE_EMULATE_FLOAT16=1`` (float16 weights, activations and
gradients; every unit computing from float16 inputs in float32 and rounding its outputs, as GPU
kernels do; docs/gpus.md). On a GPU (params ``gpus: 0``) nothing is emulated.

    gluon-suite bench run float16_bert [--quick]
"""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from seedstats import mean_std, plot_band  # noqa: E402


def final_loss(mlm, tail):
    """The final masked-LM loss: the mean of the last ``tail`` steps' losses."""
    xs = [float(x) for x in mlm[-int(tail):]]
    return sum(xs) / len(xs)


def run_one(p, dtype, seed):
    """One pretraining run: its per-step masked-LM loss, final loss, loss-scale record, time."""
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    from gluon_suite.utils.devices import EMULATE_FLOAT16, resolve_devices
    old = os.environ.get(EMULATE_FLOAT16)
    os.environ[EMULATE_FLOAT16] = "1"      # used only where the run is float16 on the CPU
    t0 = time.time()
    try:
        ctx, _ = resolve_devices(str(p["gpus"]), dtype, cpu_float16=True)
        with tempfile.TemporaryDirectory() as out:
            cfg = {"out": out, "corpus": p["corpus"], "progress": False, "seed": seed,
                   "ckpt_every": 10 ** 9, "dtype": dtype,
                   "phases": [{"seq_len": p["seq_len"], "batch_size": p["batch_size"], "steps": p["steps"],
                               "lr": p["lr"], "warmup": 0.1, "constant": 0.3}]}
            h = pretrain_bert(cfg, LocalCommunicator(), log=lambda m: None, ctx=ctx)["history"]
    finally:
        if old is None:
            os.environ.pop(EMULATE_FLOAT16, None)
        else:
            os.environ[EMULATE_FLOAT16] = old
    mlm = [r["mlm_loss"] for r in h]
    return {"final_mlm_loss": final_loss(mlm, p["tail"]), "mlm_loss": mlm,
            "loss_scale_final": h[-1].get("loss_scale"), "skipped_steps": h[-1].get("loss_scale_skipped", 0),
            "wall_s": time.time() - t0}


def summary_rows(runs):
    """Rows of the summary table: dtype, final MLM loss mean ± sample std, per seed, skipped steps
    and seconds per run (``runs``: {dtype: [metrics per seed]})."""
    rows = []
    for d, rs in runs.items():
        if not rs:
            continue
        f, w = mean_std([r["final_mlm_loss"] for r in rs]), mean_std([r["wall_s"] for r in rs])
        rows.append([d, f"{f['mean']:.3f} ± {f['std']:.3f}", ", ".join(f"{r['final_mlm_loss']:.3f}" for r in rs),
                     ", ".join(str(r["skipped_steps"]) for r in rs), f"{w['mean']:.0f}"])
    return rows


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for dtype, rs in runs.items():
        if rs:
            plot_band(ax, [r["mlm_loss"] for r in rs], dtype, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("masked-LM loss (training batch)")
    ax.legend()
    ax.set_title("BERT pretraining: float16 (float32 masters, loss scale) vs float32")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _emulated(p):
    return str(p.get("gpus", "-1")).strip() in ("", "-1")


def evidence(ctx):
    """The protocol bench/protocols/float16_bert.yaml: every (seed, dtype) run, a summary table and
    the loss curves."""
    p = ctx.params
    runs = {d: [] for d in ctx.arms}
    for seed, dtype in ctx.progress([(s, d) for s in ctx.seeds for d in ctx.arms], desc="float16_bert runs"):
        runs[dtype].append(ctx.measure(dtype, seed, lambda: run_one(p, dtype, seed)))
    ctx.table("summary", ["dtype", "final MLM loss", "per seed", "skipped steps", "seconds per run"],
              summary_rows(runs),
              caption=f"final = mean masked-LM loss of the last {p['tail']} steps; mean ± sample std over seeds "
                      f"{', '.join(map(str, ctx.seeds))}")
    ctx.note("device", "CPU, float16 emulated (GLUON_SUITE_EMULATE_FLOAT16=1)" if _emulated(p) else f"GPU {p['gpus']}")
    ctx.note("loss_scale_final", {d: [r["loss_scale_final"] for r in rs] for d, rs in runs.items()})
    plot(runs, ctx.figure(".png"))


if __name__ == "__main__":
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "float16_bert", *sys.argv[1:]]
    entry()
