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

from gluon_suite.utils import run_cli



def build_parser():
    from gluon_suite.cv.recipe import optimizer_names, sha1_prefix, warmup_value
    from gluon_suite.distributed import ALGORITHMS, COMPRESSORS
    from gluon_suite.distributed.averaging import BN_CHOICES
    from gluon_suite.distributed.launch import add_auto_arguments, add_elastic_arguments
    from gluon_suite.model_zoo.registry import model_name
    from gluon_suite.utils.devices import add_device_arguments
    from gluon_suite.utils.validate import (ArgumentParser, choice_of, existing_dir, existing_path, float_range,
                                            fraction, nonneg_float, nonneg_int, output_dir, positive_float,
                                            positive_int, ratio, run_folder)
    p = ArgumentParser(description=__doc__.split("\n")[0],
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                       argument_default=argparse.SUPPRESS)
    p.add_argument("--config", help="YAML file of defaults (keys as the flags, with _ for -)")
    g = p.add_argument_group("model and data")
    g.add_argument("--model", type=model_name, help="registered zoo name")
    g.add_argument("--dataset", choices=["digits", "mnist5k", "cifar10", "cifar100", "rec", "folder"])
    g.add_argument("--data-dir", type=existing_path, help="local path of the data set (not needed for digits, mnist5k)")
    g.add_argument("--image-size", "--input-size", type=positive_int)
    g.add_argument("--use-pretrained", action="store_true",
                   help="start from GluonCV's weights for --model (GluonCV's store format, sha1-checked) with a "
                        "new output layer for the data's classes")
    g.add_argument("--pretrained-root", type=existing_dir, metavar="DIR",
                   help="folder of GluonCV-format weights ({model}-{sha1[:8]}.params, e.g. ~/.mxnet/models); "
                        "default $MXNET_HOME/models if set, else download into the zoo cache")
    g.add_argument("--pretrained-tag", type=sha1_prefix, metavar="HEX",
                   help="weights of your own: the file {model}-HEX.params, whose sha1 starts with HEX "
                        "(GluonCV's pretrained='HEX')")
    g = p.add_argument_group("optimisation")
    g.add_argument("--epochs", "--num-epochs", type=positive_int)
    g.add_argument("--batch-size", type=positive_int,
                   help="per device, as GluonCV's: a worker's batch is this x its --gpus")
    g.add_argument("--global-batch-size", type=positive_int,
                   help="total over all workers and devices; must divide by the worker count")
    g.add_argument("--optimizer", type=choice_of(optimizer_names, "optimizer"),
                   help="any MXNet optimizer name, incl. lans, lamb, adaalter")
    g.add_argument("--lr", type=positive_float, help="peak learning rate")
    g.add_argument("--momentum", type=fraction)
    g.add_argument("--wd", type=nonneg_float)
    g.add_argument("--lr-mode", choices=["cosine", "step"])
    g.add_argument("--warmup-epochs", type=warmup_value,
                   help="linear warm-up in epochs, or auto (default): CSER's grows with its ratio")
    g.add_argument("--lr-milestones", type=nonneg_float, nargs="*", help="epochs of the step decay")
    g.add_argument("--lr-decay", type=float_range(0, 1, low_open=True, what="a decay factor"))
    g.add_argument("--label-smoothing", type=float_range(0, 1, high_open=True, what="a fraction"), nargs="?",
                   const=0.1, help="label smoothing epsilon (bare flag: 0.1, as GluonCV's)")
    g.add_argument("--mixup", type=nonneg_float, nargs="?", const=0.2,
                   help="Beta(alpha, alpha) of mixup; 0 is off (bare flag: 0.2, GluonCV's alpha)")
    g.add_argument("--mixup-off-epochs", type=nonneg_int, help="last epochs trained without mixup")
    g.add_argument("--wd-on-bn-bias", action="store_true",
                   help="weight decay on every parameter, BN/LN and biases included (the default, as GluonCV's)")
    g.add_argument("--no-wd", dest="wd_on_bn_bias", action="store_false",
                   help="GluonCV's flag: no weight decay on BN/LN gamma and beta and on biases")
    g.add_argument("--last-gamma", action="store_true", help="zero-init each block's last BN gamma")
    g = p.add_argument_group("distributed")
    g.add_argument("--algorithm", type=choice_of(ALGORITHMS, "algorithm"),
                   help="sync, ef, local, cser or local_adaalter")
    g.add_argument("--compressor", type=choice_of(COMPRESSORS, "compressor"),
                   help="none, zero, fp16, grbs, randomk, topk or sign")
    g.add_argument("--ratio", type=ratio)
    g.add_argument("--period", type=positive_int)
    g.add_argument("--compressor2", type=choice_of(COMPRESSORS, "compressor"))
    g.add_argument("--ratio2", type=ratio)
    g.add_argument("--min-size", type=nonneg_int, help="tensors smaller than this go uncompressed")
    g.add_argument("--averaged-bn-batches", type=positive_int,
                   help="batches per worker for the averaged model's BatchNorm statistics")
    g.add_argument("--averaged-bn", type=choice_of(BN_CHOICES, "BatchNorm choice"),
                   help="BatchNorm statistics of the evaluated (worker-averaged) model: auto (default: recomputed "
                        "for algorithms with local models, else averaged), recompute, average or local")
    g.add_argument("--compress-warmup", type=nonneg_int, help="first steps uncompressed")
    g.add_argument("--profile-comm", action="store_true",
                   help="measure synchronisation time: logs sync_s and the measured scaling factor")
    g.add_argument("--link-mbit", type=positive_float, help="link rate, to log link utilisation (with --profile-comm)")
    g = p.add_argument_group("devices")
    add_device_arguments(g, defaults=False)
    add_auto_arguments(p)
    add_elastic_arguments(p)
    g = p.add_argument_group("run")
    g.add_argument("--seed", type=nonneg_int)
    g.add_argument("--out", "--save-dir", type=output_dir, help="output folder")
    g.add_argument("--resume", type=run_folder,
                   help="none, auto (continue OUT if it holds a checkpoint) or a run folder")
    g.add_argument("--num-workers", type=nonneg_int, help="data-loading processes")
    g.add_argument("--no-progress", dest="progress", action="store_false")
    g.add_argument("--stop-after-epochs", type=positive_int, help=argparse.SUPPRESS)
    from gluon_suite.model_zoo.publish import add_publish_arguments
    add_publish_arguments(p)
    from gluon_suite.cv.recipe import ClassificationConfig
    return ClassificationConfig.describe_defaults(p)   # the defaults are the configuration's


def main(argv=None):
    parser = build_parser()
    from gluon_suite.cv.recipe import ClassificationConfig
    cfg = ClassificationConfig.from_sources(vars(parser.parse_args(argv)), parser)
    from gluon_suite.cv.recipe import train_classification
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    elastic = cfg.elastic
    # elastic: whoever is rank 0 when something is logged prints it (the recipe checks the rank)
    log = (lambda msg: print(msg, flush=True)) if comm.rank == 0 or elastic else (lambda msg: None)
    from gluon_suite.utils.fileio import output_folder
    with output_folder(cfg.out):   # a run that saved nothing leaves nothing
        res = train_classification(cfg, comm, log=log)
    if res["rank"] != 0:   # the rank at the end (an elastic job's may have changed)
        return 0
    if res["history"] and res["workers"] > 1:
        from gluon_suite.distributed.comm import traffic_line
        print(traffic_line(sum(h["wire_bytes"] for h in res["history"]),
                           sum(h["dense_wire_bytes"] for h in res["history"])))
    if elastic:
        sizes = " -> ".join(str(n) for _, n in res["sizes"])
        print(f"workers over the run: {sizes}; best test accuracy {res['best_acc']:.4f}")
    else:
        print(f"best test accuracy {res['best_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
