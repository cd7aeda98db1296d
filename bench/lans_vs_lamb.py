#!/usr/bin/env python
"""LANS vs LAMB vs Adam for BERT pretraining at a large global batch (through gradient
accumulation): the same tiny BERT, the same embedded-corpus instances, the same number of steps and
the same schedule shape (warm-up, plateau, linear decay). Final MLM loss per optimizer, JSON and a
plot of the curves in bench/results/.

    .venv/bin/python bench/lans_vs_lamb.py [--steps 60] [--accumulate 8]
"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--accumulate", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=32)
    args = ap.parse_args()
    import numpy as np
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    from gluon_suite.utils import write_json

    runs = {  # optimizer: (peak lr, weight decay); Adam's L2 is coupled, so it gets none
        "lans": (0.02, 0.01), "lamb": (0.02, 0.01), "adam": (0.002, 0.0)}
    curves, rows = {}, {}
    for opt, (lr, wd) in runs.items():
        with tempfile.TemporaryDirectory() as out:
            t0 = time.time()
            res = pretrain_bert({"out": out, "optimizer": opt, "wd": wd, "dropout": 0.0, "seed": 0,
                                 "progress": False, "ckpt_every": 10 ** 9,
                                 "phases": [{"seq_len": args.seq_len, "batch_size": args.batch_size,
                                             "accumulate": args.accumulate, "steps": args.steps,
                                             "lr": lr, "warmup": 0.1, "constant": 0.3}]},
                                LocalCommunicator(), log=lambda m: None)
            h = res["history"]
            curves[opt] = [r["mlm_loss"] for r in h]
            rows[opt] = {"lr": lr, "wd": wd, "first_mlm_loss": h[0]["mlm_loss"],
                         "final_mlm_loss": float(np.mean(curves[opt][-5:])),
                         "final_mlm_acc": float(np.mean([r["mlm_acc"] for r in h[-5:]])),
                         "wall_s": time.time() - t0}
        print(f"{opt:<6} lr {lr:<6} final MLM loss {rows[opt]['final_mlm_loss']:.4f} "
              f"(from {rows[opt]['first_mlm_loss']:.4f})  {rows[opt]['wall_s']:.0f} s", flush=True)
    glob = args.batch_size * args.accumulate
    result = {"benchmark": "lans_vs_lamb", "date": time.strftime("%Y-%m-%d"), "model": "bert_2_128_2",
              "global_batch": glob, "seq_len": args.seq_len, "steps": args.steps,
              "final": "mean MLM loss over the last 5 steps", "results": rows, "curves": curves,
              "lans_le_lamb": rows["lans"]["final_mlm_loss"] <= rows["lamb"]["final_mlm_loss"]}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    write_json(os.path.join(HERE, "results", "lans_vs_lamb.json"), result)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for opt, c in curves.items():
        ax.plot(range(1, len(c) + 1), c, label=f"{opt} (lr {runs[opt][0]})")
    ax.set_xlabel("step")
    ax.set_ylabel("masked-LM loss")
    ax.set_title(f"tiny BERT, global batch {glob} ({args.batch_size} x {args.accumulate} accumulation)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "results", "lans_vs_lamb.png"), dpi=100)
    print(f"global batch {glob}: LANS {rows['lans']['final_mlm_loss']:.4f} vs LAMB "
          f"{rows['lamb']['final_mlm_loss']:.4f} vs Adam {rows['adam']['final_mlm_loss']:.4f}; "
          "results: bench/results/lans_vs_lamb.json, .png")


if __name__ == "__main__":
    main()
