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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], argument_default=argparse.SUPPRESS)
    p.add_argument("--dataset", choices=["karate", "sbm", "linqs"])
    p.add_argument("--data-dir", help="folder of {name}.content and {name}.cites (linqs)")
    p.add_argument("--name", help="LINQS data set name (default cora)")
    p.add_argument("--model", choices=["gcn", "gat", "sage"])
    p.add_argument("--hidden", type=int)
    p.add_argument("--epochs", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--wd", type=float)
    p.add_argument("--dropout", type=float)
    p.add_argument("--sampled", action="store_true", help="train on sampled neighbourhood blocks")
    p.add_argument("--fanouts", type=int, nargs="+", help="neighbours sampled per layer (-1: all)")
    p.add_argument("--batch-size", type=int, help="seed nodes per sampled mini-batch")
    p.add_argument("--seed", type=int)
    p.add_argument("--out")
    p.add_argument("--resume", help="none, auto (continue OUT if it holds a checkpoint) or a run folder")
    p.add_argument("--stop-after-epochs", type=int, help=argparse.SUPPRESS)
    p.add_argument("--algorithm")
    p.add_argument("--compressor")
    p.add_argument("--ratio", type=float)
    p.add_argument("--period", type=int)
    from gluon_suite.model_zoo.publish import add_publish_arguments
    add_publish_arguments(p)
    from gluon_suite.distributed.launch import add_elastic_arguments
    add_elastic_arguments(p, defaults=False)
    cfg = vars(p.parse_args(argv))
    from gluon_suite.distributed import get_communicator
    from gluon_suite.graph.recipes import train_node_classification
    comm = get_communicator()
    log = print if comm.rank == 0 or cfg.get("elastic") else (lambda m: None)  # elastic: the recipe checks
    res = train_node_classification(cfg, comm, log=log)
    if res["test_acc"] is not None and res.get("rank", 0) == 0:  # None: stopped before the first evaluation
        log(f"test accuracy {res['test_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
