#!/usr/bin/env python
"""Train an image classifier from the zoo, on one process or many (horovodrun).

    python scripts/cv/train_classification.py --model resnest14_digits --epochs 10
    horovodrun -np 2 -H localhost:2 --gloo python scripts/cv/train_classification.py \\
        --config configs/cv/digits_resnest14_cser.yaml --out runs/demo

GluonCV's classification command lines (train_imagenet.py, train_horovod.py, train_cifar10.py,
train_mixup_cifar10.py) run here: each of their flags is taken with GluonCV's meaning or refused in
one line that says it does not apply (docs/cv.md, "Coming from GluonCV").

A YAML --config sets defaults; flags override it; the merged configuration is saved as
OUT/config.json. Outputs: OUT/log.jsonl (one JSON line per epoch), OUT/summary.csv, OUT/best.params
(worker-averaged best model), OUT/last.rank*.params|states + OUT/state.json (resumable).
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags, generated from ``ClassificationConfig`` (its keys, GluonCV's aliases)."""
    from gluon_suite.cv.recipe import ClassificationConfig
    return ClassificationConfig.build_parser(__doc__.split("\n")[0],
                                             config="YAML file of defaults (keys as the flags, with _ for -)")


def main(argv=None):
    parser = build_parser()
    from gluon_suite.cv.recipe import ClassificationConfig
    cfg = ClassificationConfig.from_sources(vars(parser.parse_args(argv)), parser)
    from gluon_suite.cv.recipe import train_classification
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    elastic = cfg.elastic
    # elastic: whoever is rank 0 when something is logged prints it (the recipe checks the rank)
    log = (lambda msg: print(msg, flush=True)) if comm.rank == 0 or elastic else (lambda msg: None)
    from gluon_suite.cv.gluoncv_flags import gluoncv_notes
    for note in gluoncv_notes(cfg) if comm.rank == 0 else ():   # GluonCV flags the recipe covers its own way
        log(f"note: {note}")
    from gluon_suite.utils.fileio import output_folder
    with output_folder(cfg.out):   # a run that saved nothing leaves nothing
        res = train_classification(cfg, comm, log=log)
    if res["rank"] != 0:   # the rank at the end (an elastic job's may have changed)
        return 0
    if res["history"] and res["workers"] > 1:
        from gluon_suite.distributed.comm import traffic_line
        print(traffic_line(sum(h["wire_bytes"] for h in res["history"]),
                           sum(h["dense_wire_bytes"] for h in res["history"])))
    if elastic:
        sizes = " -> ".join(str(n) for _, n in res["sizes"])
        print(f"workers over the run: {sizes}; best test accuracy {res['best_acc']:.4f}")
    else:
        print(f"best test accuracy {res['best_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
