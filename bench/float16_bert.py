#!/usr/bin/env python
"""float16 with float32 master weights and a dynamic loss scale against float32: BERT pretraining
(the tiny bert_2_128_2, LANS, masked LM + next sentence) on gensim's Lee background corpus, same
seeds and settings for both; the masked-LM loss of the last 10 steps, mean and sample std over
seeds, and whether the difference is within noise.

On a CPU the float16 runs use ``GLUON_SUITE_EMULATE_FLOAT16=1`` (float16 weights, activations and
gradients; every unit computing from float16 inputs in float32 and rounding its outputs, as GPU
kernels do; docs/gpus.md). On a GPU (``--gpus 0``) nothing is emulated.

    .venv/bin/python bench/float16_bert.py [--seeds 3] [--steps 200] [--gpus -1]
        [--cache bench/results/float16_bert_runs.jsonl]
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

TAIL = 10   # the final loss: mean over the last TAIL steps


def run_one(args, dtype, seed):
    """One pretraining run: its per-step masked-LM loss, final loss, loss-scale record, time."""
    import numpy as np
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    from gluon_suite.utils.devices import EMULATE_FLOAT16, resolve_devices
    old = os.environ.get(EMULATE_FLOAT16)
    os.environ[EMULATE_FLOAT16] = "1"      # used only where the run is float16 on the CPU
    t0 = time.time()
    try:
        ctx, _ = resolve_devices(args.gpus, dtype, cpu_float16=True)
        with tempfile.TemporaryDirectory() as out:
            cfg = {"out": out, "corpus": "gensim:lee_background", "progress": False, "seed": seed,
                   "ckpt_every": 10 ** 9, "dtype": dtype,
                   "phases": [{"seq_len": args.seq_len, "batch_size": args.batch_size, "steps": args.steps,
                               "lr": args.lr, "warmup": 0.1, "constant": 0.3}]}
            h = pretrain_bert(cfg, LocalCommunicator(), log=lambda m: None, ctx=ctx)["history"]
    finally:
        if old is None:
            os.environ.pop(EMULATE_FLOAT16, None)
        else:
            os.environ[EMULATE_FLOAT16] = old
    mlm = [r["mlm_loss"] for r in h]
    return {"dtype": dtype, "seed": seed, "mlm_loss": mlm, "final_mlm_loss": float(np.mean(mlm[-TAIL:])),
            "loss_scale_final": h[-1].get("loss_scale"), "skipped_steps": h[-1].get("loss_scale_skipped", 0),
            "wall_s": time.time() - t0}


def compare(runs):
    """float16 against float32 on the final masked-LM loss (lower is better): difference of the
    means, the larger std, the relative difference and the noise verdict."""
    rows = {d: {"final_mlm_loss": mean_std([r["final_mlm_loss"] for r in rs]),
                "final_mlm_loss_seeds": [r["final_mlm_loss"] for r in rs],
                "skipped_steps": [r["skipped_steps"] for r in rs], "wall_s": mean_std([r["wall_s"] for r in rs])}
            for d, rs in runs.items()}
    a, b = rows["float16"]["final_mlm_loss"], rows["float32"]["final_mlm_loss"]
    diff, spread = a["mean"] - b["mean"], max(a["std"], b["std"])
    return rows, {"difference": diff, "relative": diff / b["mean"], "spread": spread,
                  "verdict": "within noise" if abs(diff) <= spread else
                             f"float{'32' if diff > 0 else '16'} lower by more than the spread",
                  "time_ratio": rows["float16"]["wall_s"]["mean"] / rows["float32"]["wall_s"]["mean"]}


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for dtype, rs in runs.items():
        plot_band(ax, [r["mlm_loss"] for r in rs], dtype, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("masked-LM loss (training batch)")
    ax.legend()
    ax.set_title("BERT pretraining: float16 (float32 masters, loss scale) vs float32")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.02, help="LANS peak rate, the same for both dtypes")
    ap.add_argument("--gpus", default="-1", help="-1: the CPU (float16 emulated); 0: GPU 0")
    ap.add_argument("--cache", default="", help="JSON-lines file of finished runs: read, reused and appended to")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args(argv)
    from gluon_suite.utils import progress, write_json
    cache = RunCache(args.cache)
    runs = {"float32": [], "float16": []}
    for seed, dtype in progress([(s, d) for s in range(args.seeds) for d in runs], desc="runs"):
        key = {"dtype": dtype, "seed": seed, "steps": args.steps, "seq_len": args.seq_len,
               "batch": args.batch_size, "lr": args.lr, "gpus": args.gpus}
        r = cache.get(key, lambda: run_one(args, dtype, seed))
        runs[dtype].append(r)
        print(f"seed {seed} {dtype}: final mlm loss {r['final_mlm_loss']:.4f}  skipped {r['skipped_steps']}  "
              f"{r['wall_s']:.0f} s", flush=True)
    rows, cmp = compare(runs)
    emulated = str(args.gpus).strip() in ("", "-1")
    result = {"benchmark": "float16_bert", "date": time.strftime("%Y-%m-%d"),
              "device": "CPU, float16 emulated (GLUON_SUITE_EMULATE_FLOAT16=1)" if emulated else f"GPU {args.gpus}",
              "setup": f"bert_2_128_2, LANS lr {args.lr}, gensim:lee_background, seq {args.seq_len}, batch "
                       f"{args.batch_size}, {args.steps} steps, 1 worker; final = mean of the last {TAIL} steps",
              "seeds": args.seeds, "results": rows, "float16_vs_float32": cmp, "runs": runs}
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "float16_bert.json"), result)
    plot(runs, os.path.join(args.out, "float16_bert.png"))
    for d, r in rows.items():
        print(f"{d:<8} final mlm loss {r['final_mlm_loss']['mean']:.4f} ± {r['final_mlm_loss']['std']:.4f}  "
              f"{r['wall_s']['mean']:.0f} s per run")
    print(f"float16 - float32: {cmp['difference']:+.4f} ({cmp['relative'] * 100:+.1f}%, spread "
          f"{cmp['spread']:.4f}): {cmp['verdict']}; time x{cmp['time_ratio']:.1f}")
    return result


if __name__ == "__main__":
    main()
