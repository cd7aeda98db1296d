#!/usr/bin/env python
"""Quick-start: train a small CNN on the embedded digits data, on one process or many.

    python scripts/cv/train_digits.py --epochs 8
    horovodrun -np 2 -H localhost:2 --gloo python scripts/cv/train_digits.py --epochs 8
"""
import os
import sys

from gluon_suite.utils import run_cli, write_json


def build_parser():
    import argparse

    from gluon_suite.distributed import ALGORITHMS, COMPRESSORS
    from gluon_suite.distributed.launch import add_auto_arguments, add_elastic_arguments
    from gluon_suite.utils.devices import add_device_arguments
    from gluon_suite.utils.validate import (ArgumentParser, choice_of, nonneg_int, output_dir, positive_float,
                                            positive_int, ratio)
    p = ArgumentParser(description=__doc__.split("\n")[0], argument_default=argparse.SUPPRESS)
    p.add_argument("--epochs", type=positive_int)
    p.add_argument("--batch-size", type=positive_int, help="per worker")
    p.add_argument("--lr", type=positive_float)
    p.add_argument("--seed", type=nonneg_int)
    p.add_argument("--out", type=output_dir, help="folder for the log, config.json and the result")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("--algorithm", type=choice_of(ALGORITHMS, "algorithm"), help="sync, ef, local, cser, local_adaalter or auto")
    p.add_argument("--compressor", type=choice_of(COMPRESSORS, "compressor"),
                   help="none, zero, fp16, grbs, randomk, topk or sign")
    p.add_argument("--ratio", type=ratio, help="compression ratio of --compressor")
    p.add_argument("--period", type=positive_int, help="steps between model/error syncs")
    p.add_argument("--compressor2", type=choice_of(COMPRESSORS, "compressor"),
                   help="CSER's error compressor (default: derived)")
    p.add_argument("--ratio2", type=ratio)
    add_auto_arguments(p)
    add_elastic_arguments(p)
    add_device_arguments(p, defaults=False)
    from gluon_suite.cv.quickstart import DigitsConfig
    return DigitsConfig.describe_defaults(p)   # the defaults are the configuration's


def main(argv=None):
    from gluon_suite.cv.quickstart import DigitsConfig, train_digits
    cfg = DigitsConfig.from_sources(vars(build_parser().parse_args(argv)))
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    # elastic: whoever is rank 0 when an epoch ends prints it (the recipe checks the rank)
    log = (lambda msg: print(msg, flush=True)) if comm.rank == 0 or cfg.elastic else (lambda msg: None)
    from gluon_suite.utils.fileio import output_folder
    with output_folder(cfg.out):   # a run refused before it began leaves nothing
        result = train_digits(cfg, comm, log=log)
    if result["rank"] == 0:   # the rank at the end (an elastic job's may have changed)
        write_json(os.path.join(cfg.out, "result.json"), result)
        last = result["history"][-1]
        if last["workers"] > 1:
            from gluon_suite.distributed.comm import traffic_line
            print(traffic_line(last["train_wire_bytes"], last["dense_wire_bytes"]))
        print(f"final test accuracy {result['test_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
