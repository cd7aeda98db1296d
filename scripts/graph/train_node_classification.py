#!/usr/bin/env python
"""Train a GCN, GAT or GraphSAGE node classifier, full-graph or on sampled neighbourhoods.

    python scripts/graph/train_node_classification.py --dataset karate --model gcn --epochs 60
    python scripts/graph/train_node_classification.py --dataset linqs --data-dir data/cora --model gat
    python scripts/graph/train_node_classification.py --dataset sbm --out runs/sbm --resume auto
    horovodrun -np 2 -H localhost:2 --gloo python scripts/graph/train_node_classification.py \\
        --dataset sbm --model sage --sampled --fanouts 10 10
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags: ``NodeConfig``'s keys, and ``--gpus``/``--dtype`` for the one device the
    script hands the recipe."""
    from gluon_suite.graph.recipes import NodeConfig
    from gluon_suite.utils.devices import add_device_arguments
    p = NodeConfig.build_parser(__doc__.split("\n")[0])
    add_device_arguments(p, dtypes=("float32",), why=" (the graph kernels are float32)")
    return p


def main(argv=None):
    p = build_parser()
    args = vars(p.parse_args(argv))
    from gluon_suite.utils.devices import resolve_devices, single_device
    ctx, _ = resolve_devices(args.pop("gpus"), args.pop("dtype"))
    device = single_device(ctx, "train_node_classification.py")
    from gluon_suite.graph.recipes import NodeConfig, train_node_classification
    cfg = NodeConfig.from_sources(args)
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    log = print if comm.rank == 0 or cfg.elastic else (lambda m: None)  # elastic: the recipe checks
    from gluon_suite.utils.fileio import output_folder
    with output_folder(cfg.out):   # a run that saved nothing leaves nothing
        res = train_node_classification(cfg, comm, log=log, ctx=device)   # the worker's device
    if res["test_acc"] is not None and res.get("rank", 0) == 0:  # None: stopped before the first evaluation
        log(f"test accuracy {res['test_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
