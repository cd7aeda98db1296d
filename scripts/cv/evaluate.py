#!/usr/bin/env python
"""Evaluate a zoo model (its published weights, or a .params file) on a data set's test split.

    python scripts/cv/evaluate.py --model resnest14_digits --pretrained
    python scripts/cv/evaluate.py --model ssd_128_resnet18_canvas --pretrained

A detector or segmenter is evaluated on the validation split its card records, with the card's
settings (data set, canvases, input size, metric): mAP, or mIoU and pixel accuracy.
    python scripts/cv/evaluate.py --model resnest14_digits --serve runs/demo/store

Published weights are evaluated at the input size and on the data set their model card records;
a contradicting --image-size or --dataset is used as given, with a one-line warning naming the
card's value and accuracy. A name the suite ships means the shipped checkpoint; --source local
(records published on this machine) or --source STORE (a store folder) asks for another one, and
NAME.TAG for a checkpoint published with --tag.

--serve STORE serves a zoo store folder on a loopback HTTP server for the duration of the run and
fetches the store's checkpoint from it into a fresh cache, as a remote user of that store would.
"""
import functools
import http.server
import os
import sys
import tempfile
import threading
import warnings

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags, generated from ``EvaluationOptions`` (parsed with their defaults)."""
    from gluon_suite.cv.recipe import EvaluationOptions
    from gluon_suite.utils.flags import build_parser as flags_parser
    return flags_parser(EvaluationOptions, __doc__.split("\n")[0], defaults=True)


def main(argv=None):
    from gluon_suite.model_zoo.registry import check_weights
    p = build_parser()
    args = p.parse_args(argv)
    from gluon_suite.utils import UserError
    from gluon_suite.cv.data.pipeline import EMBEDDED
    if args.dataset and args.dataset not in EMBEDDED and not args.data_dir:
        raise UserError(f"dataset {args.dataset} reads from a local path: give --data-dir")
    if args.params and (args.source or args.serve):
        raise UserError("--params evaluates that file; --source and --serve pick a published checkpoint: "
                        "give one or the other")
    if args.source and args.serve:
        raise UserError("--serve STORE already names the store to evaluate from; drop --source")
    if args.source and args.source not in ("shipped", "local") and not os.path.isdir(args.source):
        raise UserError(f"--source {args.source}: give shipped, local or an existing zoo store folder")
    if args.params:
        check_weights(args.params, args.model.split(".")[0], "--params")
    from gluon_suite.cv.recipe import evaluate_model, evaluation_settings

    server, root, source, served = None, None, args.source, None
    if args.serve:
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *a):
                pass
        handler = functools.partial(Quiet, directory=args.serve)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        served = f"http://127.0.0.1:{server.server_address[1]}"
        os.environ["GLUON_SUITE_REPO"] = served           # the store's downloads come from this server
        root, source = tempfile.mkdtemp(prefix="zoo-cache-"), args.serve
        print(f"serving {args.serve} at {served}; fresh cache {root}")
    warnings.showwarning = lambda message, *a, **k: print(f"warning: {message}", file=sys.stderr, flush=True)
    from gluon_suite.cv.dense_eval import DENSE_TASKS, evaluate_dense
    from gluon_suite.model_zoo import resolve
    if resolve(args.model.split(".")[0]).task in DENSE_TASKS:   # a detector or segmenter: the card's settings
        if args.dataset or args.image_size:
            raise UserError(f"{args.model} is evaluated on the data set and input size its card records; drop "
                            "--dataset/--image-size (--data-dir points at a folder of the card's data set)")
        try:
            metrics, cfg = evaluate_dense(args.model, params=args.params, source=source, root=root,
                                          overrides={"data_dir": args.data_dir})
        finally:
            if server:
                server.shutdown()
        key = "map" if "map" in metrics else "miou"
        name = {"map": f"{cfg.metric_kind() if key == 'map' else ''} mAP", "miou": "mIoU"}[key].strip()
        extra = f", pixel accuracy {metrics['pixel_acc']:.4f}" if key == "miou" else ""
        print(f"{args.model}: {name} {metrics[key]:.4f}{extra} on {cfg.dataset} {cfg.val_split}")
        return 0
    try:
        dataset, size = args.dataset, args.image_size
        if not args.params:  # the card's input size and data set, unless given (a contradiction warns)
            settled = evaluation_settings(args.model, dataset, size, source,
                                          warn=lambda msg: print(f"warning: {msg}", file=sys.stderr, flush=True))
            dataset, size = settled["dataset"], settled["image_size"]
        dataset = dataset or "digits"   # a checkpoint of one's own (--params) has no card
        if dataset not in EMBEDDED and not args.data_dir:
            raise UserError(f"dataset {dataset} (from the model card) reads from a local path: give --data-dir")
        acc = evaluate_model(args.model, dataset, args.data_dir, size, params=args.params, root=root,
                             source=source, warn=lambda msg: None)
    finally:
        if server:
            server.shutdown()
    where = {None: "the zoo", "shipped": "the shipped zoo", "local": "this machine's records"}
    what = args.params or ("the store at " + served if server
                           else where.get(source, f"the store {source}"))
    at = f" at {size}x{size}" if size else ""
    print(f"{args.model} from {what}: test accuracy {acc:.4f} on {dataset}{at}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
