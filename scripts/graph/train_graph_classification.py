#!/usr/bin/env python
"""Train a GIN graph classifier on generated graph families or a TU data set.

    python scripts/graph/train_graph_classification.py --dataset families --epochs 40
    python scripts/graph/train_graph_classification.py --dataset tu --data-dir data/MUTAG --name MUTAG
"""
import argparse
import sys

from gluon_suite.utils import UserError, run_cli


def check_inputs(cfg, defaults):
    """Cross-checks no single flag can make, and the checkpoint to resume from; before any work."""
    from gluon_suite.graph import recipes
    from gluon_suite.utils.checkpoints import check_resume
    merged = {**getattr(recipes, defaults), **cfg}
    if merged["dataset"] in ("linqs", "tu") and not merged["data_dir"]:
        raise UserError(f"dataset {merged['dataset']} reads files from a folder: give --data-dir")
    keys = ("epoch", "history", "workers")
    check_resume(merged["resume"], merged["out"], keys, ("last.rank0.params", "last.rank0.states"))


def main(argv=None):
    from gluon_suite.distributed import ALGORITHMS, COMPRESSORS
    from gluon_suite.distributed.launch import add_elastic_arguments
    from gluon_suite.utils.validate import (ArgumentParser, choice_of, existing_dir, nonneg_int, output_dir,
                                            positive_float, positive_int, ratio, retype, run_folder)
    p = ArgumentParser(description=__doc__.split("\n")[0], argument_default=argparse.SUPPRESS)
    p.add_argument("--dataset", choices=["families", "tu"])
    p.add_argument("--data-dir", type=existing_dir, help="folder of the TU text files")
    p.add_argument("--name", help="TU data set name, the files' prefix (e.g. MUTAG)")
    p.add_argument("--hidden", type=positive_int)
    p.add_argument("--epochs", type=positive_int)
    p.add_argument("--lr", type=positive_float)
    p.add_argument("--batch-size", type=positive_int, help="graphs per worker per step")
    p.add_argument("--seed", type=nonneg_int)
    p.add_argument("--out", type=output_dir)
    p.add_argument("--resume", type=run_folder, help="none, auto (continue OUT if it holds a checkpoint) or a run folder")
    p.add_argument("--stop-after-epochs", type=positive_int, help=argparse.SUPPRESS)
    p.add_argument("--algorithm", type=choice_of(ALGORITHMS, "algorithm"))
    p.add_argument("--compressor", type=choice_of(COMPRESSORS, "compressor"))
    p.add_argument("--ratio", type=ratio)
    p.add_argument("--period", type=positive_int)
    from gluon_suite.model_zoo.publish import add_publish_arguments
    add_publish_arguments(p)
    add_elastic_arguments(p, defaults=False)
    retype(p, ramp_steps=positive_int, commit_every=positive_int, ref_workers=positive_int)
    from gluon_suite.utils.devices import add_device_arguments, resolve_devices, single_device
    add_device_arguments(p, dtypes=("float32",), why=" (the graph kernels are float32)")
    cfg = vars(p.parse_args(argv))
    ctx, _ = resolve_devices(cfg.pop("gpus"), cfg.pop("dtype"))
    device = single_device(ctx, "train_graph_classification.py")
    check_inputs(cfg, "GRAPH_DEFAULTS")
    from gluon_suite.distributed import get_communicator
    from gluon_suite.graph.recipes import train_graph_classification
    comm = get_communicator()
    log = print if comm.rank == 0 or cfg.get("elastic") else (lambda m: None)  # elastic: the recipe checks
    from gluon_suite.graph.recipes import GRAPH_DEFAULTS
    from gluon_suite.utils.fileio import output_folder
    with device, output_folder(cfg.get("out", GRAPH_DEFAULTS["out"])):   # the worker's device as the recipe's default context
        res = train_graph_classification(cfg, comm, log=log)
    if res["test_acc"] is not None and res.get("rank", 0) == 0:  # None: stopped before the first evaluation
        log(f"test accuracy {res['test_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
