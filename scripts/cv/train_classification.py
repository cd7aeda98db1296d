#!/usr/bin/env python
"""Train an image classifier from the zoo, on one process or many (horovodrun).

    python scripts/cv/train_classification.py --model resnest14_digits --epochs 10
    horovodrun -np 2 -H localhost:2 --gloo python scripts/cv/train_classification.py \\
        --config configs/cv/digits_resnest14_cser.yaml --out runs/demo

A YAML --config sets defaults; flags override it; the merged configuration is saved as
OUT/config.json. Outputs: OUT/log.jsonl (one JSON line per epoch), OUT/summary.csv, OUT/best.params
(worker-averaged best model), OUT/last.rank*.params|states + OUT/state.json (resumable).
"""
import argparse
import sys

from gluon_suite.utils import UserError, run_cli


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                argument_default=argparse.SUPPRESS)
    p.add_argument("--config", help="YAML file of defaults (keys as the flags, with _ for -)")
    g = p.add_argument_group("model and data")
    g.add_argument("--model", help="registered zoo name (default resnest14_digits)")
    g.add_argument("--dataset", choices=["digits", "mnist5k", "cifar10", "cifar100", "rec", "folder"])
    g.add_argument("--data-dir", help="local path of the data set (not needed for digits, mnist5k)")
    g.add_argument("--image-size", type=int)
    g = p.add_argument_group("optimisation")
    g.add_argument("--epochs", type=int)
    g.add_argument("--batch-size", type=int, help="per worker (default 32)")
    g.add_argument("--global-batch-size", type=int, help="total over workers; must divide by their number")
    g.add_argument("--optimizer", help="any MXNet optimizer name, incl. lans, lamb, adaalter (default sgd)")
    g.add_argument("--lr", type=float, help="peak learning rate (default 0.1)")
    g.add_argument("--momentum", type=float)
    g.add_argument("--wd", type=float)
    g.add_argument("--lr-mode", choices=["cosine", "step"])
    g.add_argument("--warmup-epochs", type=float)
    g.add_argument("--lr-milestones", type=float, nargs="*", help="epochs of the step decay")
    g.add_argument("--lr-decay", type=float)
    g.add_argument("--label-smoothing", type=float)
    g.add_argument("--mixup", type=float, help="Beta(alpha, alpha) of mixup; 0 is off")
    g.add_argument("--mixup-off-epochs", type=int, help="last epochs trained without mixup")
    g.add_argument("--wd-on-bn-bias", action="store_true", help="also decay BN/LN and biases")
    g.add_argument("--last-gamma", action="store_true", help="zero-init each block's last BN gamma")
    g = p.add_argument_group("distributed")
    g.add_argument("--algorithm", help="sync, ef, local, cser or local_adaalter")
    g.add_argument("--compressor", help="none, zero, fp16, grbs, randomk, topk or sign")
    g.add_argument("--ratio", type=float)
    g.add_argument("--period", type=int)
    g.add_argument("--compressor2")
    g.add_argument("--ratio2", type=float)
    g.add_argument("--min-size", type=int, help="tensors smaller than this go uncompressed")
    g.add_argument("--compress-warmup", type=int, help="first steps uncompressed")
    g.add_argument("--profile-comm", action="store_true",
                   help="measure synchronisation time: logs sync_s and the measured scaling factor")
    g.add_argument("--link-mbit", type=float, help="link rate, to log link utilisation (with --profile-comm)")
    from gluon_suite.distributed.launch import add_elastic_arguments
    add_elastic_arguments(p, defaults=False)
    g = p.add_argument_group("run")
    g.add_argument("--seed", type=int)
    g.add_argument("--out", help="output folder")
    g.add_argument("--resume", help="none, auto (continue OUT if it holds a checkpoint) or a run folder")
    g.add_argument("--num-workers", type=int, help="data-loading processes")
    g.add_argument("--no-progress", dest="progress", action="store_false")
    g.add_argument("--publish", help="zoo store folder to publish the best checkpoint into")
    g.add_argument("--publish-name", help="zoo name of the published model (default --model)")
    g.add_argument("--publish-url", help="base URL the store is served from")
    g.add_argument("--card", help="where to write the model card (default OUT/NAME.json)")
    g.add_argument("--stop-after-epochs", type=int, help=argparse.SUPPRESS)
    return p


def load_config(path):
    import yaml
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except FileNotFoundError:
        raise UserError(f"config file {path} does not exist") from None
    except yaml.YAMLError as exc:
        raise UserError(f"config file {path} is not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise UserError(f"config file {path} must be a mapping of option: value")
    return {k.replace("-", "_"): v for k, v in data.items()}


def main(argv=None):
    args = vars(build_parser().parse_args(argv))
    config = load_config(args.pop("config")) if "config" in args else {}
    config.update(args)
    from gluon_suite.cv.recipe import train_classification
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    elastic = bool(config.get("elastic"))
    # elastic: whoever is rank 0 when something is logged prints it (the recipe checks the rank)
    log = (lambda msg: print(msg, flush=True)) if comm.rank == 0 or elastic else (lambda msg: None)
    res = train_classification(config, comm, log=log)
    if elastic:
        if res["rank"] == 0:
            sizes = " -> ".join(str(n) for _, n in res["sizes"])
            print(f"workers over the run: {sizes}; best test accuracy {res['best_acc']:.4f}")
        return 0
    if comm.rank == 0:
        last = res["history"][-1] if res["history"] else None
        if last and comm.size > 1:
            from gluon_suite.distributed.comm import traffic_line
            print(traffic_line(sum(h["wire_bytes"] for h in res["history"]),
                               sum(h["dense_wire_bytes"] for h in res["history"])))
        print(f"best test accuracy {res['best_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
