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
    from gluon_suite.graph.script import one_device_parser
    return one_device_parser(NodeConfig, __doc__.split("\n")[0])


def main(argv=None):
    p = build_parser()
    from gluon_suite.graph.recipes import NodeConfig, train_node_classification
    from gluon_suite.graph.script import run_one_device_recipe
    # None: stopped before the first evaluation
    return run_one_device_recipe(p, argv, NodeConfig, train_node_classification, "train_node_classification.py",
                                 lambda res: None if res["test_acc"] is None else
                                 f"test accuracy {res['test_acc']:.4f}")


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
