#!/usr/bin/env python
"""ResNeSt's downstream claim at our scale: the same SSD detector and the same semantic FPN
segmenter with a ResNet-18 v1b or a ResNeSt-14 backbone, trained with the same recipe on the
embedded digit canvases, several seeds. Per run: the final validation mAP (detection) or mIoU
(segmentation) and the time per training step. The protocol (bench/protocols/cv_downstream.yaml)
fixes the canvases, the schedule, the seeds and the criteria.

    gluon-suite bench run cv_downstream [--quick]
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def run_one(p, model, seed):
    """One training run of ``model`` (a zoo detector or segmenter) with ``seed``: its final metric,
    the metric's name, and the time per step (training time of all epochs over their steps)."""
    from gluon_suite.distributed import LocalCommunicator
    detection = model.startswith("ssd_")
    if detection:
        from gluon_suite.cv.detection import train_detection as train
    else:
        from gluon_suite.cv.segmentation import train_segmentation as train
    with tempfile.TemporaryDirectory() as out:
        cfg = {"model": model, "canvases": p["canvases"], "val_canvases": p["val_canvases"], "epochs": p["epochs"],
               "batch_size": p["batch_size"], "lr": p.get("lr", 0.02), "lr_mode": "cosine", "warmup_epochs": 1,
               "val_interval": p["epochs"], "seed": seed, "canvas_seed": 0, "out": out, "progress": False}
        res = train(cfg, LocalCommunicator(), log=lambda m: None)
    hist = res["history"]
    steps = hist[-1]["step"]
    return {"final_metric": res["final_metric"], "metric": res["metric"],
            "step_s": sum(h["epoch_time_s"] for h in hist) / max(steps, 1), "steps": steps,
            "train_loss": [h["train_loss"] for h in hist]}


def evidence(ctx):
    """The protocol bench/protocols/cv_downstream.yaml: every (model, seed) run and a summary table."""
    from gluon_suite.evidence.stats import summary
    p = ctx.params
    runs = {m: [] for m in ctx.arms}
    for seed, model in ctx.progress([(s, m) for s in ctx.seeds for m in ctx.arms], desc="cv_downstream runs"):
        runs[model].append(ctx.measure(model, seed, lambda: run_one(p, model, seed)))

    def ms(xs, f):
        s = summary(xs)
        return f"{s['mean']:{f}}" + (f" ± {s['std']:{f}}" if s["std"] is not None else "")
    rows = []
    for m, rs in runs.items():
        name = "VOC07 mAP" if m.startswith("ssd_") else "mIoU"
        rows.append([m, name, ms([r["final_metric"] for r in rs], ".4f"),
                     ", ".join(f"{r['final_metric']:.3f}" for r in rs), ms([r["step_s"] for r in rs], ".3f")])
    ctx.table("summary", ["model", "metric", "final (validation)", "per seed", "s per step"], rows)


if __name__ == "__main__":
    from gluon_suite.cli import entry
    from gluon_suite.utils.quiet import quiet_native_warnings
    quiet_native_warnings()
    sys.argv = ["gluon-suite", "bench", "run", "cv_downstream", *sys.argv[1:]]
    entry()
