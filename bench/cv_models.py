#!/usr/bin/env python
"""ResNeSt vs ResNet of equal depth on the embedded digits: same recipe, same epochs, same seed.
Test accuracy per epoch and training throughput; JSON to bench/results/cv_models.json.

    .venv/bin/python bench/cv_models.py [--epochs 8] [--image-size 16]
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
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--image-size", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    from gluon_suite.cv.recipe import train_classification
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.utils import write_json

    rows = {}
    for model in ("resnest14_digits", "resnet14_digits"):
        runs = []
        for seed in range(args.seeds):
            with tempfile.TemporaryDirectory() as out:
                t0 = time.time()
                res = train_classification({"model": model, "epochs": args.epochs, "image_size": args.image_size,
                                            "optimizer": "nag", "lr": 0.1, "seed": seed, "out": out,
                                            "progress": False}, LocalCommunicator(), log=lambda m: None)
                runs.append({"seed": seed, "final_acc": res["final_acc"], "best_acc": res["best_acc"],
                             "curve": [h["test_acc"] for h in res["history"]],
                             "samples_per_s": sum(h["samples_per_s"] for h in res["history"]) / len(res["history"]),
                             "wall_s": time.time() - t0})
        rows[model] = {"runs": runs, "mean_final_acc": sum(r["final_acc"] for r in runs) / len(runs),
                       "mean_samples_per_s": sum(r["samples_per_s"] for r in runs) / len(runs)}
    result = {"benchmark": "cv_models", "date": time.strftime("%Y-%m-%d"), "epochs": args.epochs,
              "image_size": args.image_size, "seeds": args.seeds, "cpu_count": os.cpu_count(),
              "recipe": "nag lr 0.1 cosine, 1 warm-up epoch, batch 32, 1 worker, sync", "results": rows}
    write_json(os.path.join(HERE, "results", "cv_models.json"), result)
    print(f"digits {args.image_size}x{args.image_size}, {args.epochs} epochs, {args.seeds} seeds, same recipe")
    print(f"{'model':<20}{'final acc':>10}{'img/s':>8}   per-seed final")
    for m, r in rows.items():
        print(f"{m:<20}{r['mean_final_acc']:>10.4f}{r['mean_samples_per_s']:>8.0f}   "
              + ", ".join(f"{x['final_acc']:.4f}" for x in r["runs"]))
    print("results: bench/results/cv_models.json")


if __name__ == "__main__":
    main()
