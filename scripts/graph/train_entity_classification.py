#!/usr/bin/env python
"""Train an R-GCN entity classifier on a heterograph (papers, words and citations, or your own).

    python scripts/graph/train_entity_classification.py --epochs 50
    python scripts/graph/train_entity_classification.py --dataset tsv --data-dir data/citation_hetero --num-bases 2
    horovodrun -np 2 -H localhost:2 --gloo python scripts/graph/train_entity_classification.py --out runs/rgcn
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags: ``EntityConfig``'s keys, and ``--gpus``/``--dtype`` for its one device."""
    from gluon_suite.graph.hetero_recipe import EntityConfig
    from gluon_suite.graph.script import one_device_parser
    return one_device_parser(EntityConfig, __doc__.split("\n")[0])


def main(argv=None):
    p = build_parser()
    from gluon_suite.graph.hetero_recipe import EntityConfig, train_entity_classification
    from gluon_suite.graph.script import run_one_device_recipe
    return run_one_device_recipe(p, argv, EntityConfig, train_entity_classification,
                                 "train_entity_classification.py",
                                 lambda res: None if res["test_acc"] is None else
                                 f"test accuracy {res['test_acc']:.4f}")


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
