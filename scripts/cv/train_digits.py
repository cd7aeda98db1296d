#!/usr/bin/env python
"""Quick-start: train a small CNN on the embedded digits data, on one process or many.

    python scripts/cv/train_digits.py --epochs 8
    horovodrun -np 2 -H localhost:2 --gloo python scripts/cv/train_digits.py --epochs 8
"""
import os
import sys

from gluon_suite.utils import run_cli, write_json


def parse_args(argv):
    from gluon_suite.distributed import ALGORITHMS, COMPRESSORS
    from gluon_suite.distributed.launch import add_elastic_arguments
    from gluon_suite.utils.devices import add_device_arguments
    from gluon_suite.utils.validate import (ArgumentParser, choice_of, nonneg_int, output_dir, positive_float,
                                            positive_int, ratio)
    p = ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=positive_int, default=8)
    p.add_argument("--batch-size", type=positive_int, default=32, help="per worker")
    p.add_argument("--lr", type=positive_float, default=0.1)
    p.add_argument("--seed", type=nonneg_int, default=0)
    p.add_argument("--out", type=output_dir, default="runs/digits", help="folder for the log and the result")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--algorithm", type=choice_of(ALGORITHMS, "algorithm"), default="sync",
                   help="sync, ef, local or cser")
    p.add_argument("--compressor", type=choice_of(COMPRESSORS, "compressor"), default="none",
                   help="none, zero, fp16, grbs, randomk, topk or sign")
    p.add_argument("--ratio", type=ratio, default=None, help="compression ratio of --compressor")
    p.add_argument("--period", type=positive_int, default=None, help="steps between model/error syncs")
    p.add_argument("--compressor2", type=choice_of(COMPRESSORS, "compressor"), default=None,
                   help="CSER's error compressor (default: derived)")
    p.add_argument("--ratio2", type=ratio, default=None)
    add_elastic_arguments(p, defaults=True)
    add_device_arguments(p)
    return p.parse_args(argv)


def comm_rank():
    """The current rank (it changes when an elastic job resizes)."""
    import horovod.mxnet as hvd
    return hvd.rank()


def main(argv=None):
    args = parse_args(argv)
    from gluon_suite.utils.devices import resolve_devices
    ctx, dtype = resolve_devices(args.gpus, args.dtype)
    from gluon_suite.cv.quickstart import train_digits
    from gluon_suite.distributed import get_communicator

    comm = get_communicator()
    if comm.rank == 0:
        print(f"workers {comm.size}, batch {args.batch_size} per worker, "
              f"{args.batch_size * comm.size} global", flush=True)

    def report(r):
        if (comm.rank if not args.elastic else comm_rank()) == 0:
            print(f"epoch {r['epoch']:3d}  loss {r['train_loss']:.4f}  train acc {r['train_acc']:.4f}"
                  f"  test acc {r['test_acc']:.4f}  ({r['time_s']:.1f} s)", flush=True)

    result = train_digits(comm, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                          seed=args.seed, log_path=os.path.join(args.out, "log.jsonl"),
                          show_progress=not args.no_progress, on_epoch=report,
                          algorithm=args.algorithm, compressor=args.compressor, ratio=args.ratio,
                          period=args.period, compressor2=args.compressor2, ratio2=args.ratio2,
                          elastic=args.elastic, ramp_steps=args.ramp_steps, commit_every=args.commit_every,
                          ref_workers=args.ref_workers, ctx=ctx, dtype=dtype)
    if result["rank"] == 0:   # the rank at the end (an elastic job's may have changed)
        write_json(os.path.join(args.out, "result.json"), result)
        last = result["history"][-1]
        if last["workers"] > 1:
            from gluon_suite.distributed.comm import traffic_line
            print(traffic_line(last["train_wire_bytes"], last["dense_wire_bytes"]))
        print(f"final test accuracy {result['test_acc']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
