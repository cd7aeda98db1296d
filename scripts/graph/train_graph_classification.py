#!/usr/bin/env python
"""Train a GIN graph classifier on generated graph families or a TU data set.

    python scripts/graph/train_graph_classification.py --dataset families --epochs 40
    python scripts/graph/train_graph_classification.py --dataset tu --data-dir data/MUTAG --name MUTAG
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags: ``GraphConfig``'s keys, and ``--gpus``/``--dtype`` for the one device the
    script hands the recipe."""
    from gluon_suite.graph.recipes import GraphConfig
    from gluon_suite.utils.devices import add_device_arguments
    p = GraphConfig.build_parser(__doc__.split("\n")[0])
    add_device_arguments(p, dtypes=("float32",), why=" (the graph kernels are float32)")
    return p


def main(argv=None):
    p = build_parser()
    args = vars(p.parse_args(argv))
    from gluon_suite.utils.devices import resolve_devices, single_device
    ctx, _ = resolve_devices(args.pop("gpus"), args.pop("dtype"))
    device = single_device(ctx, "train_graph_classification.py")
    from gluon_suite.graph.recipes import GraphConfig, train_graph_classification
    cfg = GraphConfig.from_sources(args)
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    log = print if comm.rank == 0 or cfg.elastic else (lambda m: None)  # elastic: the recipe checks
    from gluon_suite.utils.fileio import output_folder
    with output_folder(cfg.out):   # a run that saved nothing leaves nothing
        res = train_graph_classification(cfg, comm, log=log, ctx=device)   # the worker's device
    if res["test_acc"] is not None and res.get("rank", 0) == 0:  # None: stopped before the first evaluation
        log(f"test accuracy {res['test_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
