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
    from gluon_suite.graph.script import one_device_parser
    return one_device_parser(GraphConfig, __doc__.split("\n")[0])


def main(argv=None):
    p = build_parser()
    from gluon_suite.graph.recipes import GraphConfig, train_graph_classification
    from gluon_suite.graph.script import run_one_device_recipe
    # None: stopped before the first evaluation
    return run_one_device_recipe(p, argv, GraphConfig, train_graph_classification, "train_graph_classification.py",
                                 lambda res: None if res["test_acc"] is None else
                                 f"test accuracy {res['test_acc']:.4f}")


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
