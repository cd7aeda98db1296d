#!/usr/bin/env python
"""Quick-start: train a small CNN on the embedded digits data, on one process or many.

    python scripts/cv/train_digits.py --epochs 8
    horovodrun -np 2 -H localhost:2 --gloo python scripts/cv/train_digits.py --epochs 8
"""
import os
import sys

from gluon_suite.utils import run_cli, write_json


def build_parser():
    """The script's flags, generated from ``DigitsConfig``."""
    from gluon_suite.cv.quickstart import DigitsConfig
    return DigitsConfig.build_parser(__doc__.split("\n")[0])


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
