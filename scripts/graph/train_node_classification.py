#!/usr/bin/env python
"""Train a GCN, GAT or GraphSAGE node classifier, full-graph or on sampled neighbourhoods.

    python scripts/graph/train_node_classification.py --dataset karate --model gcn --epochs 60
    python scripts/graph/train_node_classification.py --dataset linqs --data-dir data/cora --model gat
    python scripts/graph/train_node_classification.py --dataset sbm --out runs/sbm --resume auto
    horovodrun -np 2 -H localhost:2 --gloo python scripts/graph/train_node_classification.py \\
        --dataset sbm --model sage --sampled --fanouts 10 10
"""
import argparse
import sys

from gluon_suite.utils import run_cli


def build_parser():
    from gluon_suite.distributed import ALGORITHMS, COMPRESSORS
    from gluon_suite.graph import recipes
    from gluon_suite.distributed.launch import add_auto_arguments, add_elastic_arguments
    from gluon_suite.utils.validate import (ArgumentParser, choice_of, existing_dir, float_range, nonneg_float,
                                            nonneg_int, output_dir, positive_float, positive_int, ratio,
                                            run_folder)
    p = ArgumentParser(description=__doc__.split("\n")[0], argument_default=argparse.SUPPRESS)
    p.add_argument("--dataset", choices=["karate", "sbm", "linqs"])
    p.add_argument("--data-dir", type=existing_dir, help="folder of {name}.content and {name}.cites (linqs)")
    p.add_argument("--name", help="LINQS data set name")
    p.add_argument("--drop-dangling-cites", action="store_true",
                   help="skip cites lines naming a paper absent from the content file (else an error)")
    p.add_argument("--model", choices=["gcn", "gat", "sage"])
    p.add_argument("--hidden", type=positive_int)
    p.add_argument("--epochs", type=positive_int)
    p.add_argument("--lr", type=positive_float)
    p.add_argument("--wd", type=nonneg_float)
    p.add_argument("--dropout", type=float_range(0, 1, high_open=True, what="a fraction"))
    p.add_argument("--sampled", action="store_true", help="train on sampled neighbourhood blocks")
    p.add_argument("--fanouts", type=recipes.fanout, nargs="+", help="neighbours sampled per layer (-1: all)")
    p.add_argument("--batch-size", type=positive_int, help="seed nodes per sampled mini-batch")
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
    add_auto_arguments(p)
    add_elastic_arguments(p)
    from gluon_suite.utils.devices import add_device_arguments
    add_device_arguments(p, dtypes=("float32",), why=" (the graph kernels are float32)")
    from gluon_suite.graph.recipes import NodeConfig
    return NodeConfig.describe_defaults(p)   # the defaults are the configuration's


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
