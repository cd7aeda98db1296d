#!/usr/bin/env python
"""Evaluate a zoo model (its published weights, or a .params file) on a data set's test split.

    python scripts/cv/evaluate.py --model resnest14_digits --pretrained
    python scripts/cv/evaluate.py --model resnest14_digits --serve runs/demo/store

--serve STORE serves a zoo store folder on a loopback HTTP server for the duration of the run and
fetches the weights from it into a fresh cache, as a remote user of that store would.
"""
import functools
import http.server
import os
import sys
import tempfile
import threading

from gluon_suite.utils import run_cli


def main(argv=None):
    from gluon_suite.model_zoo.registry import check_weights, model_name
    from gluon_suite.utils.validate import ArgumentParser, existing_dir, existing_file, existing_path, positive_int
    p = ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, type=model_name)
    p.add_argument("--dataset", default="digits", choices=["digits", "mnist5k", "cifar10", "cifar100", "rec", "folder"])
    p.add_argument("--data-dir", type=existing_path)
    p.add_argument("--image-size", type=positive_int)
    p.add_argument("--params", type=existing_file, help="a .params file instead of the published weights")
    p.add_argument("--pretrained", action="store_true", help="use the published weights (default)")
    p.add_argument("--serve", metavar="STORE", type=existing_dir,
                   help="serve this zoo store folder on loopback and fetch from it")
    args = p.parse_args(argv)
    from gluon_suite.utils import UserError
    from gluon_suite.cv.data.pipeline import EMBEDDED
    if args.dataset not in EMBEDDED and not args.data_dir:
        raise UserError(f"dataset {args.dataset} reads from a local path: give --data-dir")
    if args.params:
        check_weights(args.params, args.model, "--params")
    from gluon_suite.cv.recipe import evaluate_model

    server, root = None, None
    if args.serve:
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *a):
                pass
        handler = functools.partial(Quiet, directory=args.serve)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        os.environ["GLUON_SUITE_REPO"] = f"http://127.0.0.1:{server.server_address[1]}"
        root = tempfile.mkdtemp(prefix="zoo-cache-")
        print(f"serving {args.serve} at {os.environ['GLUON_SUITE_REPO']}; fresh cache {root}")
    try:
        acc = evaluate_model(args.model, args.dataset, args.data_dir, args.image_size,
                             params=args.params, root=root)
    finally:
        if server:
            server.shutdown()
    source = args.params or ("the store at " + os.environ["GLUON_SUITE_REPO"] if server else "the zoo")
    print(f"{args.model} from {source}: test accuracy {acc:.4f} on {args.dataset}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
