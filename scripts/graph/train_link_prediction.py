#!/usr/bin/env python
"""Train a GraphSAGE or GCN encoder with an edge scorer for link prediction (AUC, MRR, Hits@10).

    python scripts/graph/train_link_prediction.py --dataset citation --epochs 40
    python scripts/graph/train_link_prediction.py --dataset lee-cooccurrence --scorer mlp --epochs 20
    python scripts/graph/train_link_prediction.py --dataset linqs --data-dir data/cora --model gcn --scorer mlp
    python scripts/graph/train_link_prediction.py --negative-sampler degree --out runs/link --resume auto
    horovodrun -np 2 -H localhost:2 --gloo python scripts/graph/train_link_prediction.py --dataset sbm
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags: ``LinkConfig``'s keys, and ``--gpus``/``--dtype`` for the one device the
    script hands the recipe."""
    from gluon_suite.graph.link_recipe import LinkConfig
    from gluon_suite.graph.script import one_device_parser
    return one_device_parser(LinkConfig, __doc__.split("\n")[0])


def main(argv=None):
    p = build_parser()
    from gluon_suite.graph.link_recipe import LinkConfig, train_link_prediction
    from gluon_suite.graph.script import run_one_device_recipe
    # None: stopped before the first evaluation
    return run_one_device_recipe(p, argv, LinkConfig, train_link_prediction, "train_link_prediction.py",
                                 lambda res: None if res["test_auc"] is None else
                                 f"test auc {res['test_auc']:.4f}  mrr {res['test_mrr']:.4f}  "
                                 f"hits@10 {res['test_hits10']:.4f}")


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
