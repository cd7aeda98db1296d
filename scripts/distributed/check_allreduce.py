#!/usr/bin/env python
"""Check a Horovod job's collectives and measure allreduce throughput, per message size.

    horovodrun -np 2 -H host1:1,host2:1 --gloo python scripts/distributed/check_allreduce.py

Every worker allreduces tensors of known values; the result is checked (a wrong sum exits 1), then
throughput is reported as algorithm bandwidth (bytes / time) and bus bandwidth (the ring's
2(n-1)/n x bytes / time, what each link carried). Run it first on a new cluster.
"""
import dataclasses
import sys
import time

from gluon_suite.utils import UserError, run_cli
from gluon_suite.utils.runconfig import option


@dataclasses.dataclass
class CheckOptions:
    """What the check measures: the message sizes and the timed allreduces per size."""
    sizes_mb: list = option([0.25, 1, 4, 16, 64], float, many=True, help="message sizes in MB")
    reps: int = option(5, int, help="timed allreduces per size (after one untimed)")


def build_parser():
    """The script's flags, generated from ``CheckOptions`` (parsed with their defaults)."""
    from gluon_suite.utils.flags import build_parser as flags_parser
    return flags_parser(CheckOptions, __doc__.split("\n")[0], defaults=True)


def main(argv=None):
    a = build_parser().parse_args(argv)
    import mxnet as mx
    import numpy as np
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    n = comm.size
    x = mx.nd.full((1000,), comm.rank + 1.0)
    got = comm.allreduce(x, average=False, name="check.sum").asnumpy()
    if not np.allclose(got, n * (n + 1) / 2):
        raise UserError(f"allreduce returned {got[0]} on rank {comm.rank}, expected {n * (n + 1) / 2}")
    if comm.rank == 0:
        print(f"{n} worker(s): allreduce result checked")
        print(f"{'size MB':>8} {'time ms':>9} {'algo MB/s':>10} {'bus MB/s':>9}")
    for mb in a.sizes_mb:
        t = mx.nd.ones((max(1, int(mb * 1e6 / 4)),))
        times = []
        for r in range(a.reps + 1):
            comm.barrier(name=f"check.b.{mb}.{r}")
            t0 = time.perf_counter()
            comm.allreduce_(t, average=True, name=f"check.{mb}").wait_to_read()
            if r:
                times.append(time.perf_counter() - t0)
        s = float(np.median(times))
        nbytes = t.size * 4
        if comm.rank == 0:
            bus = 2 * (n - 1) / n * nbytes / s if n > 1 else float("nan")
            print(f"{mb:>8.2f} {s * 1e3:>9.2f} {nbytes / s / 1e6:>10.1f} {bus / 1e6:>9.1f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
