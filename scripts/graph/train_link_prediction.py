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
    from gluon_suite.utils.devices import add_device_arguments
    p = LinkConfig.build_parser(__doc__.split("\n")[0])
    add_device_arguments(p, dtypes=("float32",), why=" (the graph kernels are float32)")
    return p


def main(argv=None):
    p = build_parser()
    args = vars(p.parse_args(argv))
    from gluon_suite.utils.devices import resolve_devices, single_device
    ctx, _ = resolve_devices(args.pop("gpus"), args.pop("dtype"))
    device = single_device(ctx, "train_link_prediction.py")
    from gluon_suite.graph.link_recipe import LinkConfig, train_link_prediction
    cfg = LinkConfig.from_sources(args)
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    log = print if comm.rank == 0 or cfg.elastic else (lambda m: None)  # elastic: the recipe checks
    from gluon_suite.utils.fileio import output_folder
    with output_folder(cfg.out):   # a run that saved nothing leaves nothing
        res = train_link_prediction(cfg, comm, log=log, ctx=device)   # the worker's device
    if res["test_auc"] is not None and res.get("rank", 0) == 0:  # None: stopped before the first evaluation
        log(f"test auc {res['test_auc']:.4f}  mrr {res['test_mrr']:.4f}  hits@10 {res['test_hits10']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
